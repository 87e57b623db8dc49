"""`kbaudit serve` against a loopback Prefect server: a scheduled run completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_scheduled_run_completes_on_a_local_server(demo_copy: Path, tmp_path: Path):
    out = tmp_path / "store"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    env["KBAUDIT_TODAY"] = "2026-06-01"
    kbaudit = Path(sys.executable).with_name("kbaudit")
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [str(kbaudit), "serve", str(demo_copy / "docs"), "--sources", str(demo_copy / "sources"),
         "--out", str(out), "--cron", "* * * * *"],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 420
        while time.monotonic() < deadline and not list((out / "runs").glob("run_id=*")):
            assert process.poll() is None, (tmp_path / "serve.log").read_text()
            time.sleep(3)
        runs = list((out / "runs").glob("run_id=*"))
        assert runs, "no scheduled run completed:\n" + (tmp_path / "serve.log").read_text()[-3000:]
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            # Prefect's runner winds down a scheduled run in flight (one starts every minute)
            # before it returns; on a loaded machine that has taken more than a minute
            process.wait(timeout=180)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    text = (tmp_path / "serve.log").read_text()
    assert "starting a local Prefect server on http://127.0.0.1:" in text
    assert "local Prefect server stopped" in text
