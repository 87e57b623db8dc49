"""The Prefect side of the stage chain: a runner that runs each stage of `kb.chain.run_audit`
as a task of the flow run (one task run per stage call, each on a whole batch)."""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast
from uuid import UUID

from prefect import task
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from kb import progress
from kb.correct.review import apply_edits
from kb.store import Store


class ProgressArtifacts:
    """A progress listener (kb.progress) that keeps one Prefect progress artifact per stage up
    to date, so the run's page shows how far embedding, retrieval, verification and escalation
    are, with counts, rate and ETA in the description. Updates are sent at most every
    ``interval`` seconds (the first and last always)."""

    def __init__(self, interval: float = 5.0, key_prefix: str = ""):
        self.interval = interval
        self.key_prefix = key_prefix
        self._ids: dict[str, UUID] = {}
        self._sent: dict[str, float] = {}

    def __call__(self, event: progress.Event) -> None:
        now = time.monotonic()
        artifact = self._ids.get(event.stage)
        if artifact is None:
            key = re.sub(r"[^a-z0-9-]+", "-", f"{self.key_prefix}{event.stage}-progress".lower()).strip("-")
            created = create_progress_artifact(progress=event.percent, key=key, description=event.line())
            self._ids[event.stage] = cast(UUID, created)  # called from sync code: the id itself, not a coroutine
        elif event.finished or now - self._sent.get(event.stage, 0.0) >= self.interval:
            update_progress_artifact(artifact, progress=event.percent, description=event.line())
        else:
            return
        self._sent[event.stage] = now


def _with_progress(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run with a ProgressArtifacts listener: the stages that report progress (kb.progress)
    show it on the flow run's page; the others create nothing."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with progress.listening(ProgressArtifacts()):
            return fn(*args, **kwargs)

    return run


@functools.cache
def _task_of(stage: str, fn: Callable[..., Any]):
    # One task per stage function; Prefect task caching is off: kb's stage caches are the one
    # mechanism (docs/design-notes.md).
    return task(_with_progress(fn), name=stage, cache_policy=NO_CACHE)  # pyright: ignore[reportCallIssue, reportArgumentType]  # prefect's task() overloads type a positional fn with keyword options as None


def prefect_runner(stage: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """`kb.chain.StageRunner` that runs the stage as a Prefect task in the current flow run.

    Every argument is passed quoted: Prefect would otherwise walk every record of a large batch
    looking for futures."""
    return _task_of(stage, fn)(*(quote(a) for a in args), **{k: quote(v) for k, v in kwargs.items()})


def apply_task(store: Store, docs_root: Path):
    return prefect_runner("apply-edits", apply_edits, store, docs_root, actor="kbaudit run --apply")
