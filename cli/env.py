"""Process environment that must be in place before Prefect or transformers are imported."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULTS = {
    # Offline by default: no analytics, no model hub.
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    # A loaded machine is slow to start Prefect's ephemeral server.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
    "PREFECT_LOGGING_EXTRA_LOGGERS": "kbaudit",
    # Task-state chatter and HTTP calls to the local API drown the progress lines.
    "PREFECT_LOGGING_LEVEL": "WARNING",
}

QUIET_LOGGERS = ("httpx", "httpcore", "bm25s", "sentence_transformers", "transformers")


def prepare_environment() -> None:
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
    # Project-local Prefect state, unless the user points Prefect elsewhere.
    os.environ.setdefault("PREFECT_HOME", str(Path.cwd() / ".prefect"))
