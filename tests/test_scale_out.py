"""Two shards on two process workers of a work pool give the same verdicts as one run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from cli.serve import LocalServer
from tests.conftest import DEMO_TODAY

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _verdicts(out: Path) -> dict[str, str]:
    con = duckdb.connect(str(out / "kbaudit.duckdb"), read_only=True)
    return dict(con.execute("SELECT claim_id, label FROM latest_verdicts").fetchall())


def test_two_shards_on_two_workers_match_an_unsharded_run(demo_copy: Path, tmp_path: Path):
    server = LocalServer(log_path=tmp_path / "server.log").start()
    env = {
        **os.environ,
        "PREFECT_API_URL": server.url,
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "KBAUDIT_TODAY": DEMO_TODAY,
        "PREFECT_WORKER_QUERY_SECONDS": "2",
        # INFO, whatever an earlier test left in os.environ: the workers' logs prove who ran what.
        "PREFECT_LOGGING_LEVEL": "INFO",
    }
    workers: list[subprocess.Popen] = []
    try:
        subprocess.run(
            [str(BIN / "prefect"), "work-pool", "create", "kbaudit-pool", "--type", "process"],
            env=env,
            check=True,
            capture_output=True,
            timeout=120,
        )
        deploy = (
            "from prefect import Flow; "
            f"Flow.from_source(source={str(REPO)!r}, entrypoint='flows/audit.py:audit_shard')"
            ".deploy(name='kbaudit-shard', work_pool_name='kbaudit-pool', build=False, push=False, "
            "enforce_parameter_schema=False, print_next_steps=False)"
        )
        subprocess.run([sys.executable, "-c", deploy], env=env, check=True, capture_output=True, timeout=120)
        for i in range(2):
            log = (tmp_path / f"worker-{i}.log").open("wb")
            workers.append(
                subprocess.Popen(
                    [str(BIN / "prefect"), "worker", "start", "--pool", "kbaudit-pool", "--limit", "1", "--name", f"worker-{i}"],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    cwd=REPO,
                )
            )

        # Both workers must be polling before the shards are scheduled, or on a loaded machine
        # the first one up takes both shards in turn.
        deadline = time.monotonic() + 180
        while not all("started!" in (tmp_path / f"worker-{i}.log").read_text() for i in range(2)):
            assert time.monotonic() < deadline, "workers did not start"
            time.sleep(1)
        common = [str(demo_copy / "docs"), "--sources", str(demo_copy / "sources"), "--json"]
        sharded = subprocess.run(
            [
                str(BIN / "kbaudit"),
                "run",
                *common,
                "--out",
                str(tmp_path / "sharded"),
                "--shards",
                "2",
                "--deployment",
                "audit-shard/kbaudit-shard",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert sharded.returncode == 0, sharded.stderr[-3000:]
        single = subprocess.run(
            [str(BIN / "kbaudit"), "run", *common, "--out", str(tmp_path / "single")], env=env, capture_output=True, text=True, timeout=900
        )
        assert single.returncode == 0, single.stderr[-3000:]
    finally:
        for worker in workers:
            os.killpg(worker.pid, signal.SIGTERM)
        for worker in workers:
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                # a Prefect worker has been seen to hang in its own SIGTERM forwarding on a loaded
                # machine; it is Prefect's process and its shard is done: stop it hard
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
        server.stop()

    sharded_summary, single_summary = json.loads(sharded.stdout), json.loads(single.stdout)
    for key in ("documents", "claims", "checkworthy", "supported", "contradicted", "stale", "uncertain"):
        assert sharded_summary[key] == single_summary[key], key
    assert _verdicts(tmp_path / "sharded") == _verdicts(tmp_path / "single")
    con = duckdb.connect(str(tmp_path / "sharded" / "kbaudit.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
    assert con.execute("SELECT count(*) FROM receipts").fetchone()[0] == 2  # one signed batch per shard
    # Each worker ran one shard: a process worker streams its flow run's output (the shard's own
    # progress lines) into its log; the worker's "submitting" line goes there too when its
    # logger prints at INFO.
    shards_seen = set()
    for i in range(2):
        log = (tmp_path / f"worker-{i}.log").read_text()
        ran = set(re.findall(r"\[shard (\d)/2\]", log))
        assert ran or f"Worker 'worker-{i}' submitting flow run" in log, f"worker-{i} ran nothing:\n{log[-2000:]}"
        shards_seen |= ran
    assert shards_seen in (set(), {"1", "2"})
