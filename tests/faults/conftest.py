"""Shared fixtures of the fault suite (`pytest -m faults`).

Every test records the fault it tried and the outcome it asserted through ``record``; the rows
are written to ``.pytest_cache/d/faults/results.json`` at the end of the session, and
``tests/faults/make_table.py`` renders them as ``docs/faults.md``.

Runs are kept cheap: depth D0 unless the fault needs the deep verifier, small knowledge bases,
one Prefect test harness for the whole session, and a store whose stage and embedding caches
are copied into each new store, so a rerun of the same inputs does not load a model again.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import pytest

from kb.config import DEMO_ROOT, Settings

TODAY = date(2026, 6, 1)
REPO = Path(__file__).resolve().parents[2]
INJECT = Path(__file__).with_name("inject.py")
# A few demo pages: enough claims to reach every stage, few enough to keep runs short.
SMALL_DOCS = ("backups.md", "pricing.md", "rate-limits.md")

_RESULTS: list[dict] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or report.failed:
        item.stash.setdefault(_REPORTS, {})[report.when] = report


_REPORTS = pytest.StashKey[dict]()


@pytest.fixture
def record(request):
    """``record(category, case, outcome)``: what this test tried and what it asserted.

    The row is kept with the test's result (passed / failed), so the table never claims an
    outcome that the suite did not show.
    """
    rows: list[dict] = []
    started = time.perf_counter()

    def add(category: str, case: str, outcome: str) -> None:
        rows.append({"category": category, "case": case, "outcome": outcome})

    yield add
    call = request.node.stash.get(_REPORTS, {}).get("call")
    if call is not None and hasattr(call, "wasxfail"):
        status = "xfail"  # a known bug, reported; the outcome text says what happens instead
    else:
        status = "passed" if call is not None and call.passed else "failed"
    for row in rows or [{"category": "?", "case": request.node.name, "outcome": "(no outcome recorded)"}]:
        _RESULTS.append({**row, "test": request.node.nodeid, "status": status, "seconds": round(time.perf_counter() - started, 1)})


_STARTED = time.perf_counter()


def pytest_sessionfinish(session, exitstatus):
    if not _RESULTS or getattr(session.config, "cache", None) is None:
        return
    folder = session.config.cache.mkdir("faults")
    results = {"wall_seconds": round(time.perf_counter() - _STARTED), "rows": _RESULTS}
    (folder / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", "utf-8")


# ---- knowledge bases and stores --------------------------------------------------------------
def small_kb(target: Path, docs=SMALL_DOCS) -> Path:
    """A few demo pages in `target/docs` (the demo sources are read in place)."""
    (target / "docs").mkdir(parents=True, exist_ok=True)
    for name in docs:
        shutil.copy(DEMO_ROOT / "docs" / name, target / "docs" / name)
    return target / "docs"


def settings_for(docs: Path, out: Path, **kw) -> Settings:
    return Settings(docs=docs, sources=kw.pop("sources", [DEMO_ROOT / "sources"]), out=out,
                    depth=kw.pop("depth", "D0"), today=TODAY, **kw)  # fmt: skip


@pytest.fixture(scope="session")
def base_store(prefect_harness, tmp_path_factory):
    """One completed D0 run of the small KB: (docs folder, store folder, summary row).

    Tests copy it (``copy_store``) rather than run again; the copy's caches make a rerun of the
    same inputs reuse every stage result.
    """
    from flows.audit import audit

    root = tmp_path_factory.mktemp("base")
    docs = small_kb(root)
    row = audit(settings_for(docs, root / "out"))
    return docs, root / "out", row


@pytest.fixture(scope="session")
def hostile_run(prefect_harness, tmp_path_factory):
    from faults.hostile_kb import build_hostile_kb
    from flows.audit import audit

    root = tmp_path_factory.mktemp("hostile")
    docs, sources = build_hostile_kb(root)
    started = time.perf_counter()
    row = audit(settings_for(docs, root / "out", sources=[sources]))
    return root, root / "out", row, time.perf_counter() - started


def copy_store(base: Path, target: Path) -> Path:
    """A copy of a store: its runs, and its caches (a rerun of the same inputs reuses them)."""
    shutil.copytree(base, target)
    return target


def snapshot(out: Path) -> dict[str, bytes]:
    """Every published file of a store (relative path -> bytes), staging and caches left out."""
    files = {}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        if path.is_file() and not rel.startswith((".staging/", "cache/", ".lock")) and rel != "kbaudit.duckdb":
            files[rel] = path.read_bytes()
    return files


def query(out: Path, sql: str, params: list | None = None) -> list[tuple]:
    import duckdb

    con = duckdb.connect(str(out / "kbaudit.duckdb"), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def assert_consistent(out: Path, runs: int, clean: bool = True) -> None:
    """The store reads, holds `runs` completed runs, and each run's rows are whole: one verdict
    per check-worthy claim, no duplicate ids, every visible row belonging to a completed run.
    `clean`: no staging folder and no partition of an unfinished run is left either."""
    assert query(out, "SELECT count(*) FROM runs")[0][0] == runs
    for run_id, checkworthy, ingest_errors in query(out, "SELECT run_id, checkworthy, ingest_errors FROM runs"):
        verdicts, distinct = query(out, "SELECT count(*), count(DISTINCT claim_id) FROM verdicts WHERE run_id = ?", [run_id])[0]
        assert verdicts == distinct == checkworthy, (run_id, verdicts, distinct, checkworthy)
        claims = query(out, "SELECT count(*), count(DISTINCT claim_id) FROM claims_history WHERE run_id = ?", [run_id])[0]
        assert claims[0] == claims[1], f"duplicate claim ids in run {run_id}"
        assert query(out, "SELECT count(*) FROM ingest_errors WHERE run_id = ?", [run_id])[0][0] == ingest_errors
    if clean:
        assert not any((out / ".staging").glob("*")), "a staging folder was left"
        complete = {f"run_id={r}" for (r,) in query(out, "SELECT run_id FROM runs")}
        assert {p.name for p in out.glob("*/run_id=*")} <= complete, "partitions of an unfinished run were left"


# ---- the command line ------------------------------------------------------------------------
def cli(*args: str, capsys) -> tuple[int, str, str]:
    """`kbaudit ARGS` in this process (the read-only commands are cheap to call here)."""
    from cli.main import main

    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def cli_env(tmp_path: Path, **extra: str) -> dict:
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}  # fmt: skip
    env.update(extra)
    return env


def spawn(args: list[str], log: Path, env: dict, cwd: Path) -> subprocess.Popen:
    """`kbaudit ARGS` in a child process, through tests/faults/inject.py (KBAUDIT_FAULT in env)."""
    handle = log.open("wb")
    return subprocess.Popen([sys.executable, str(INJECT), *args], stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=cwd)


def wait_for(log: Path, marker: str, process: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while marker not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"never saw {marker!r}:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.1)
