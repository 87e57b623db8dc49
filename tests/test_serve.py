"""`kbaudit serve` against a loopback Prefect server: a scheduled run completes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _start_serve(demo_copy: Path, tmp_path: Path, *extra: str) -> subprocess.Popen:
    """`kbaudit serve` on the demo into tmp_path/store, with no PREFECT_API_URL (so it starts its
    own local server), in its own session, logging to tmp_path/serve.log."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    env["KBAUDIT_TODAY"] = "2026-06-01"
    kbaudit = Path(sys.executable).with_name("kbaudit")
    with (tmp_path / "serve.log").open("wb") as log:
        return subprocess.Popen(
            [str(kbaudit), "serve", str(demo_copy / "docs"), "--sources", str(demo_copy / "sources"),
             "--out", str(tmp_path / "store"), *extra],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path, start_new_session=True,
        )  # fmt: skip


def test_scheduled_run_completes_on_a_local_server(demo_copy: Path, tmp_path: Path):
    out = tmp_path / "store"
    process = _start_serve(demo_copy, tmp_path, "--cron", "* * * * *")
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


def _processes_serving(port: int) -> list[int]:
    """Pids whose command line is a `prefect server start` on this port."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"server" in argv and b"start" in argv and str(port).encode() in argv:
            pids.append(int(entry.name))
    return pids


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_stopping_serve_while_the_local_server_starts_stops_it(demo_copy: Path, tmp_path: Path, stop_signal):
    log_path = tmp_path / "serve.log"
    process = _start_serve(demo_copy, tmp_path)
    port = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (port and _processes_serving(port)):
            found = re.search(r"starting a local Prefect server on http://127\.0\.0\.1:(\d+)/", log_path.read_text())
            port = int(found.group(1)) if found else None
            assert process.poll() is None, log_path.read_text()
            time.sleep(0.2)
        assert port and _processes_serving(port), "the local server never started:\n" + log_path.read_text()
        assert "serving deployment" not in log_path.read_text()  # still starting: the case under test
        os.killpg(process.pid, stop_signal)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        leftover = _processes_serving(port) if port else []
        for pid in leftover:
            os.killpg(pid, signal.SIGKILL)  # the server leads its own session
    assert not leftover, "the local Prefect server outlived `kbaudit serve`:\n" + log_path.read_text()
    text = log_path.read_text()
    assert "local Prefect server stopped" in text
    assert "interrupted" in text
