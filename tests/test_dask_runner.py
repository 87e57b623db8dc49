"""The DaskTaskRunner option: verification fans out over a local dask cluster of worker
processes and gives the thread runner's verdicts."""

from __future__ import annotations

import logging
import os
import re
import sys
from datetime import date
from pathlib import Path

import duckdb
import pytest

from kb.config import DEMO_ROOT, ConfigError, Settings, load_settings
from tests.conftest import DEMO_TODAY


# ---- settings and CLI (fast) -----------------------------------------------------------------
def test_task_runner_comes_from_env_and_flags_and_survives_public_dict(tmp_path: Path):
    env = {"KBAUDIT_TASK_RUNNER": "dask", "KBAUDIT_DASK_WORKERS": "3"}
    settings = load_settings({}, cwd=tmp_path, environ=env).validate()
    assert (settings.task_runner, settings.dask_workers) == ("dask", 3)
    flagged = load_settings({"task_runner": "tcp://10.0.0.5:8786"}, cwd=tmp_path, environ=env).validate()
    assert flagged.task_runner == "tcp://10.0.0.5:8786"
    again = Settings.from_public_dict(settings.public_dict())
    assert (again.task_runner, again.dask_workers) == ("dask", 3)
    assert load_settings({}, cwd=tmp_path, environ={}).task_runner == "thread"


@pytest.mark.parametrize(
    "flags, message",
    [
        ({"task_runner": "dusk"}, "task_runner must be thread, dask"),
        ({"task_runner": "http://host:8786"}, "task_runner must be thread, dask"),
        ({"task_runner": "dask", "dask_workers": "0"}, "dask_workers must be at least 1"),
        ({"dask_workers": "two"}, "bad value for dask_workers"),
    ],
)
def test_bad_task_runner_settings_are_clear_errors(tmp_path: Path, flags, message):
    with pytest.raises(ConfigError, match=message):
        load_settings(flags, cwd=tmp_path, environ={}).validate()


def test_scheduler_addresses_map_to_a_dask_runner():
    from flows.audit import task_runner_for

    assert task_runner_for(Settings(task_runner="thread")) is None
    assert task_runner_for(Settings(task_runner="dask://tcp://10.0.0.5:8786")).address == "tcp://10.0.0.5:8786"
    local = task_runner_for(Settings(task_runner="dask", dask_workers=3))
    assert local.address is None
    assert local.cluster_kwargs == {"n_workers": 3, "threads_per_worker": 1, "processes": True}


def test_missing_prefect_dask_is_a_clear_usage_error(tmp_path: Path, monkeypatch, capsys):
    from cli import main as cli

    monkeypatch.setattr(cli, "prepare_environment", lambda: None)  # leave os.environ to the other tests
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    run_help = capsys.readouterr().out
    assert "--task-runner" in run_help and "--dask-workers" in run_help and "kbaudit[dask]" in run_help
    monkeypatch.setitem(sys.modules, "prefect_dask", None)  # import prefect_dask now raises ImportError
    status = cli.main(["run", "--task-runner", "dask", "--out", str(tmp_path / "out"), "--today", DEMO_TODAY])
    assert status == 2
    assert "pip install 'kbaudit[dask]'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# ---- end to end (slow) -------------------------------------------------------------------------
def _verdicts(out: Path) -> dict[str, str]:
    con = duckdb.connect(str(out / "kbaudit.duckdb"), read_only=True)
    return dict(con.execute("SELECT claim_id, label FROM latest_verdicts").fetchall())


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.mark.slow
def test_dask_runner_fans_verification_out_and_matches_the_thread_runner(prefect_harness, tmp_path: Path):
    from flows.audit import audit, with_task_runner

    common = dict(docs=DEMO_ROOT / "docs", sources=[DEMO_ROOT / "sources"], today=date.fromisoformat(DEMO_TODAY))
    threaded = audit(Settings(out=tmp_path / "thread", **common))

    dask_settings = Settings(out=tmp_path / "dask", task_runner="dask", dask_workers=2, **common)
    lines = _Lines()
    kb_logger = logging.getLogger("kbaudit")
    kb_logger.addHandler(lines)
    level = kb_logger.level
    kb_logger.setLevel(logging.INFO)
    try:
        fanned = with_task_runner(audit, dask_settings)(dask_settings)
        fan_out = [line for line in lines.lines if "dask worker(s)" in line]
        again = with_task_runner(audit, dask_settings)(dask_settings)  # every verdict cached: nothing fans out
    finally:
        kb_logger.removeHandler(lines)
        kb_logger.setLevel(level)

    # Same verdict per claim, and the same run summary.
    expected = _verdicts(tmp_path / "thread")
    assert expected and _verdicts(tmp_path / "dask") == expected
    for key in ("documents", "claims", "checkworthy", "supported", "contradicted", "stale", "uncertain", "edits"):
        assert fanned[key] == threaded[key], key

    # The verify chunks ran in at least two worker processes, none of them this one.
    assert len(fan_out) == 1, lines.lines
    pids = set(re.findall(r"pid (\d+)", fan_out[0]))
    assert len(pids) >= 2, fan_out[0]
    assert str(os.getpid()) not in pids, fan_out[0]
    checkworthy = threaded["checkworthy"]
    assert re.search(rf"verify: {checkworthy} of {checkworthy} claims in ([2-9]|\d\d+) chunks", fan_out[0]), fan_out[0]

    # The verdict cache is kept by the flow: a second run reuses every verdict and sends nothing out.
    assert again["reused"] == checkworthy
    assert _verdicts(tmp_path / "dask") == expected
    assert len([line for line in lines.lines if "dask worker(s)" in line]) == 1
