# Two entry points for a fresh machine: `make demo` and `make test`.
# Both create .venv with the local CPU build of torch first (asking pip for plain `torch`
# would download a multi-GB CUDA build), then install the project.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH := torch==2.13.0

export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1
export PREFECT_HOME := $(CURDIR)/.prefect
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 90
export HF_HUB_OFFLINE := 1

.PHONY: install demo test soak clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/kbaudit run

test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not soak"

soak: $(STAMP)
	$(BIN)/python -m pytest -q -m soak

clean:
	rm -rf $(VENV) kbaudit-out .prefect .pytest_cache
