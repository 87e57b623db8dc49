"""Process environment that must be in place before Prefect or transformers are imported."""

from __future__ import annotations

import os
from pathlib import Path

from kb.config.urls import user_cache_dir

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
    # Prefect's state (its database, profiles, local storage) lives in the user's cache, so a run
    # leaves nothing in the folder it was started from; an explicit PREFECT_HOME wins.
    if not os.environ.get("PREFECT_HOME"):
        home = prefect_home()
        try:
            home.mkdir(parents=True, exist_ok=True)  # Prefect makes its home, not the folders above
        except OSError:
            pass  # Prefect reports the folder it cannot make
        os.environ["PREFECT_HOME"] = str(home)


def prefect_home(environ=None) -> Path:
    """``$XDG_CACHE_HOME/kbaudit/prefect`` (``~/.cache/kbaudit/prefect`` when unset)."""
    return user_cache_dir(environ) / "prefect"
