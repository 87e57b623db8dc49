"""The Prefect side of the stage chain: a runner that runs each stage of `kb.chain.run_audit`
as a task of the flow run (one task run per stage call, each on a whole batch)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from kb.correct.review import apply_edits
from kb.store import Store


@functools.cache
def _task_of(stage: str, fn: Callable[..., Any]):
    # One task per stage function; Prefect task caching is off: kb's stage caches are the one
    # mechanism (docs/design-notes.md).
    return task(fn, name=stage, cache_policy=NO_CACHE)  # pyright: ignore[reportCallIssue, reportArgumentType]  # prefect's task() overloads type a positional fn with keyword options as None


def prefect_runner(stage: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """`kb.chain.StageRunner` that runs the stage as a Prefect task in the current flow run.

    Every argument is passed quoted: Prefect would otherwise walk every record of a large batch
    looking for futures."""
    return _task_of(stage, fn)(*(quote(a) for a in args), **{k: quote(v) for k, v in kwargs.items()})


def apply_task(store: Store, docs_root: Path):
    return prefect_runner("apply-edits", apply_edits, store, docs_root, actor="kbaudit run --apply")
