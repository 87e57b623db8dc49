"""Shared fixtures. The environment is set before anything imports Prefect."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

_PREFECT_HOME = tempfile.mkdtemp(prefix="kbaudit-prefect-")
os.environ["PREFECT_HOME"] = _PREFECT_HOME
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

from kb.config import DEMO_ROOT  # noqa: E402

# Freshness checks compare against "today"; pin it so results do not drift with the calendar.
DEMO_TODAY = "2026-06-01"

# The evaluation data (SciFact, VitaminC, FEVER-Lite, the drift sets) is third-party and never part
# of the repository: tests that need it find it under $KBAUDIT_DATA. A clone without it skips them;
# CI, which has the data, sets KBAUDIT_REQUIRE_DATA=1 so that a missing file fails instead.
DATA_ENV = "KBAUDIT_DATA"
REQUIRE_DATA_ENV = "KBAUDIT_REQUIRE_DATA"


def eval_data(*parts: str) -> Path:
    """The path of an evaluation data file under $KBAUDIT_DATA; skips the test when it is absent."""
    root = os.environ.get(DATA_ENV)
    path = Path(root, *parts) if root else None
    if path is not None and path.exists():
        return path
    where = f"{path}" if path is not None else f"${DATA_ENV} is not set"
    message = f"evaluation data {'/'.join(parts)} not found ({where})"
    if os.environ.get(REQUIRE_DATA_ENV) == "1":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def store_sql(out: Path, sql: str, params=None) -> list[tuple]:
    """Rows of a query on a store's views, through a read-only DuckDB connection."""
    import duckdb

    con = duckdb.connect(str(out / "kbaudit.duckdb"), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="session")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """A writable copy of the demo KB (docs and sources)."""
    target = tmp_path / "demo"
    shutil.copytree(DEMO_ROOT / "docs", target / "docs")
    shutil.copytree(DEMO_ROOT / "sources", target / "sources")
    return target


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_PREFECT_HOME, ignore_errors=True)
