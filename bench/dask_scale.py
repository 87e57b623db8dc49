"""Verification fanned out over local dask workers, on a real docs history.

``kbaudit bench dask --git DIR/httpx.bundle [--workers 1,2] [--old TAG] [--revs T1,T2,T3]``
audits the bundle in git mode as ``bench speed --git`` does, through the audit flow (Prefect), once
with the thread runner and once per worker count with ``--task-runner dask`` on a local
``LocalCluster`` (loopback, one single-threaded process per worker). An untimed run first fills
one shared embedding cache, and every timed run re-verifies every claim (``full``) in a fresh
store, so what differs between the runs is where verification runs. It prints the seconds of
each run, ``speedup_<n>`` (one worker's time over n workers') and ``overhead_per_task_s`` (what
one worker adds over the thread runner, per verify-chunk task). Only verification fans out
(flows/dask_verify.py); retrieval stays in the flow's process.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

from bench import data_path
from kb.config import ConfigError, Settings


class Params(BaseModel):
    """`kbaudit bench dask` parameters."""

    git: str = Field(
        default_factory=lambda: data_path("docs-histories", "httpx.bundle"),
        description="a docs history's git bundle (default: $KBAUDIT_DATA/docs-histories/httpx.bundle)",
    )
    workers: str = Field(default="1,2", description="comma-separated dask worker counts (default 1,2)")
    old: str | None = Field(default=None, description="the release audited as the KB (default: the fourth newest)")
    revs: str | None = Field(default=None, description="comma-separated releases read as sources (default: the three after --old)")
    depth: str = Field(default="D1", description="verification depth (default D1)")
    workdir: str | None = Field(default=None, description="keep the clone and the stores here (default: a temporary folder)")


def chunks_for(claims: int, workers: int) -> int:
    """verify-chunk tasks a run of ``claims`` uncached claims sends to ``workers`` workers
    (flows/dask_verify.py: waves of at most two chunks per worker, CHUNK claims a chunk)."""
    from flows.dask_verify import CHUNK

    wave = 2 * workers * CHUNK
    tasks = 0
    for start in range(0, claims, wave):
        batch = min(wave, claims - start)
        tasks += min(batch, 2 * workers)
    return tasks


def _timed(settings: Settings) -> tuple[float, dict]:
    from flows.audit import audit, with_task_runner

    clock = time.perf_counter()
    counts = with_task_runner(audit, settings)(settings)
    return time.perf_counter() - clock, counts


def run(params: Params) -> dict[str, float]:
    from bench.speed_git import git_settings

    if not params.git:
        raise ConfigError("bench dask: pass --git BUNDLE or set KBAUDIT_DATA")
    try:
        counts = sorted({int(w) for w in params.workers.split(",") if w.strip()})
    except ValueError:
        raise ConfigError(f"bench dask: --workers {params.workers!r}: comma-separated whole numbers") from None
    if not counts or counts[0] < 1:
        raise ConfigError("bench dask: --workers needs at least one count of 1 or more")
    work = Path(params.workdir) if params.workdir else Path(tempfile.mkdtemp(prefix="kbaudit-dask-"))
    try:
        base = git_settings(Path(params.git), work, params.old, params.revs, params.depth)
        base = base.replace(embed_cache_dir=work / "embeddings", full=True)

        def settings_for(runner: str, workers: int, name: str = "") -> Settings:
            out = work / f"store-{name or runner}-{workers}"
            shutil.rmtree(out, ignore_errors=True)
            return base.replace(out=out, task_runner=runner, dask_workers=workers).validate()

        _timed(settings_for("thread", 1, "warm"))  # fills the embedding cache, starts Prefect
        thread_s, done = _timed(settings_for("thread", 1))
        claims = int(done.get("checkworthy", 0) or done.get("claims", 0) or 0)
        metrics: dict[str, float] = {"thread_s": thread_s, "claims": float(claims)}
        for n in counts:
            metrics[f"dask_{n}_s"], _ = _timed(settings_for("dask", n))
        first = metrics[f"dask_{counts[0]}_s"]
        for n in counts:
            metrics[f"speedup_{n}"] = first / metrics[f"dask_{n}_s"]
        tasks = chunks_for(claims, counts[0]) if claims else 0
        metrics["overhead_per_task_s"] = (first - thread_s) / tasks if tasks else 0.0
    finally:
        if not params.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return {k: round(v, 4) for k, v in metrics.items()}
