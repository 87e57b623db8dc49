"""`kbaudit serve`: the audit as a Prefect deployment on a cron schedule.

With no PREFECT_API_URL set, a local `prefect server start` on 127.0.0.1 is started for the
lifetime of the command (and said so); with one set, that server is used.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from cli.options import flag_values, settings_flags
from kb.config import load_settings
from kb.config.gitspec import is_git_spec

DEPLOYMENT = "kbaudit-nightly"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalServer:
    """A `prefect server start` child process on loopback."""

    def __init__(self, port: int | None = None, log_path: Path | None = None):
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}/api"
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 120.0) -> LocalServer:
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        prefect = Path(sys.executable).with_name("prefect")
        command = [str(prefect) if prefect.exists() else "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(self.port)]
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prefect server exited with status {self.process.returncode}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"prefect server did not answer on {self.url} within {timeout:.0f} s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process = None


def cmd_serve(args) -> int:
    flags = {**flag_values(args), "docs": args.docs}
    settings = load_settings(flags).validate()
    if settings.docs is not None and not settings.docs_from_git:
        settings.docs = Path(settings.docs).resolve()
    settings.sources = [s if is_git_spec(s) else Path(s).resolve() for s in settings.sources_roots]
    settings.out = settings.out.resolve()
    server = None
    # Until Prefect's runner takes SIGTERM over, SIGTERM (a process manager's stop) interrupts
    # like Ctrl-C, so that the finally below stops the local server: it runs in its own session
    # and would otherwise outlive the command (its start takes up to 2 min on a loaded machine).
    previous_sigterm = signal.signal(signal.SIGTERM, _interrupt)
    previous_sigint = signal.signal(signal.SIGINT, _stop_like_sigterm)
    try:
        if not os.environ.get("PREFECT_API_URL"):
            server = LocalServer(log_path=settings.out / "prefect-server.log")
            settings.out.mkdir(parents=True, exist_ok=True)
            print(
                f"kbaudit: PREFECT_API_URL is not set; starting a local Prefect server on {server.url} "
                f"(log: {server.log_path}); it stops when this command does",
                flush=True,
            )
            server.start()
            os.environ["PREFECT_API_URL"] = server.url
        from flows.audit import audit  # why: Prefect (~2 s) only for `serve`, not every command

        print(
            f"kbaudit: serving deployment audit/{DEPLOYMENT} on cron {args.cron!r} ({settings.docs_root} -> {settings.out}); Ctrl-C stops",
            flush=True,
        )
        audit.serve(
            name=DEPLOYMENT,
            cron=args.cron,
            parameters={"settings": settings.public_dict()},
            enforce_parameter_schema=False,
            limit=1,  # nightly runs of one store never overlap
            print_starting_message=False,
        )
    finally:
        signal.signal(signal.SIGINT, previous_sigint)
        signal.signal(signal.SIGTERM, previous_sigterm)
        if server is not None:
            server.stop()
            print("kbaudit: local Prefect server stopped", flush=True)
    return 0


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _stop_like_sigterm(signum, frame) -> None:
    """Ctrl-C takes the runner's SIGTERM path (cancel runs in flight, stop polling, return).
    Left to asyncio's own SIGINT handling, Prefect's serve loop could swallow the cancellation
    and keep polling: `kbaudit serve` then never exited (a test waited 180 s for it)."""
    # the runner's graceful shutdown (a second Ctrl-C exits), or before the runner has started,
    # the _interrupt that cmd_serve installed: a SIGTERM handler is always there to call
    handler = signal.getsignal(signal.SIGTERM)
    assert callable(handler), "cmd_serve installs a SIGTERM handler before the runner"
    handler(signal.SIGTERM, frame)


def register(sub) -> None:
    serve = sub.add_parser("serve", help="serve the audit as a scheduled Prefect deployment")
    serve.add_argument("docs", nargs="?", help="folder of KB documents (default: the demo KB)")
    settings_flags(serve, only=("sources", "out", "depth"))
    serve.add_argument("--cron", default="0 2 * * *", help='schedule (default "0 2 * * *", 02:00 daily)')
    serve.set_defaults(func=cmd_serve)
