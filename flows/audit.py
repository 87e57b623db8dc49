"""The audit flows (plain, one shard, sharded): the lock and run id, the shard fan-out, the commit, artifacts.

The stages themselves are `kb.chain.run_audit`, each run as a Prefect task (tasks/stages.py)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import time
from collections import Counter

from prefect import flow, get_client
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.client.schemas.objects import StateType
from prefect.deployments import run_deployment

from flows.dask_verify import remote_verification, task_runner_for, with_task_runner
from kb import progress
from kb.chain import merge_counts, run_audit, runs_row
from kb.config import Settings
from kb.correct.review import writable_root
from kb.errors import ConfigError
from kb.log import logger
from kb.store import Store, new_run_id
from kb.store import remote as kb_remote
from reports.notify import notify_run
from tasks.stages import apply_task, prefect_runner

__all__ = ["audit", "audit_shard", "audit_sharded", "task_runner_for", "with_task_runner"]


def _as_settings(settings: Settings | dict) -> Settings:
    """Deployments pass settings as JSON (Settings.public_dict())."""
    settings = Settings.from_public_dict(settings) if isinstance(settings, dict) else settings
    settings = settings.for_run()
    settings.validate()
    if settings.apply:
        writable_root(settings.docs_folder)  # fail before any work if the KB may not be written
    return settings


def audit_body(settings: Settings, store: Store, run_id: str, shard: tuple[int, int] = (0, 1)) -> dict:
    """The stage chain (`kb.chain.run_audit`) for the documents of one shard, each stage a task,
    staged under the run (not yet visible). Returns the shard's counts; the caller holds the lock."""
    shard_index, shard_count = shard
    tag = f"[shard {shard_index + 1}/{shard_count}] " if shard_count > 1 else ""
    with remote_verification(settings, tag) as (verify_batch, batch_size):
        result = run_audit(
            settings, prefect_runner, store=store, run_id=run_id, shard=shard, verify_batch=verify_batch, verify_batch_size=batch_size
        )
    return result.counts


def _commit(store: Store, settings: Settings, run_id: str, counts: dict, started_at: dt.datetime, seconds: float) -> dict:
    row = runs_row(counts, settings, started_at, seconds)
    progress.check_interrupt()  # a Ctrl-C that a finalizer swallowed still stops the commit
    store.commit_run(run_id, row)
    logger.info("[6/6] store: run %s written to %s", run_id, settings.out)
    if settings.apply:
        outcomes = apply_task(store, settings.docs_folder)
        logger.info("applied edits: %s", dict(Counter(o.status for o in outcomes)) or "none accepted")
    if settings.out_url:  # a URL store: upload the run (its runs row last) from the local mirror
        remote = kb_remote.for_settings(settings)
        assert remote is not None  # out_url set
        remote.push(run_id)
    _publish_artifacts(run_id, row)
    _notify(store, settings, run_id)
    return {"run_id": run_id, **{k: v for k, v in row.items() if k not in ("started_at", "finished_at", "config")}}


def _notify(store: Store, settings: Settings, run_id: str) -> None:
    """The webhook notification, after the commit: whatever happens here is a warning, and its
    outcome is appended to the `notifications` table (the runs row is already written)."""
    try:
        row = notify_run(store, run_id, os.environ)
        if row is None:
            return
        (logger.info if row["status"] == "sent" else logger.warning)(
            "%s%s", row.pop("describe"), "" if row["status"] == "sent" else "; the run is committed"
        )
        store.append_table("notifications", [row])
        remote = kb_remote.for_settings(settings)
        if remote is not None:  # a URL store: what the run wrote goes up
            remote.push()
    except Exception as exc:  # never fail a committed run over its notification
        url = os.environ.get("KBAUDIT_NOTIFY_URL") or "\0"
        why = (str(exc).splitlines() or [""])[0].replace(url, "<KBAUDIT_NOTIFY_URL>")
        logger.warning("notification failed: %s: %s; the run is committed", type(exc).__name__, why)


@contextlib.contextmanager
def _locked_run(settings: Settings):
    """The store opened for writing for the whole run (kb.store.remote.writing: the lock, and for a URL
    store the writer lease and the mirror pulled), with a clean staging area."""
    with kb_remote.writing(Store(settings.out), kb_remote.for_settings(settings)) as store:
        removed = store.clear_stale_staging()
        if removed:
            logger.warning("removed %d unfinished run(s) from an earlier crash: %s", len(removed), ", ".join(removed))
        yield store


@flow(name="audit", validate_parameters=False)
def audit(settings: Settings | dict, run_id: str | None = None) -> dict:
    """Audit one KB folder against its sources and write a new run to the store."""
    settings = _as_settings(settings)
    with _locked_run(settings) as store:
        run_id = run_id or new_run_id()
        started_at = dt.datetime.now(dt.UTC)
        clock = time.perf_counter()
        counts = audit_body(settings, store, run_id)
        return _commit(store, settings, run_id, counts, started_at, time.perf_counter() - clock)


@flow(name="audit-shard", validate_parameters=False)
def audit_shard(settings: Settings | dict, run_id: str, shard_index: int, shard_count: int) -> dict:
    """One shard of a sharded run: stages its documents' rows under the parent's run id.

    Runs as a deployment on a work pool's workers; the parent flow holds the store lock and
    commits once every shard has finished.
    """
    settings = _as_settings(settings)
    return audit_body(settings, Store(settings.out), run_id, (shard_index, shard_count))


@flow(name="audit-sharded", validate_parameters=False)
def audit_sharded(settings: Settings | dict, shards: int = 2, deployment: str | None = None, run_id: str | None = None) -> dict:
    """Fan the documents out by hash into `shards` shards and commit them as one run.

    With `deployment` (e.g. "audit-shard/kbaudit-shard"), each shard runs as a flow run of that
    deployment on the work pool's workers; without it, the shards run here one after another.
    """
    settings = _as_settings(settings)
    if settings.changed_since:
        raise ConfigError("--changed-since audits a few documents in one process; it does not take --shards")
    with _locked_run(settings) as store:
        run_id = run_id or new_run_id()
        started_at = dt.datetime.now(dt.UTC)
        clock = time.perf_counter()
        if deployment is None:
            for i in range(shards):
                with_task_runner(audit_shard, settings)(settings.public_dict(), run_id, i, shards)
        else:
            parameters = lambda i: {"settings": settings.public_dict(), "run_id": run_id, "shard_index": i, "shard_count": shards}  # noqa: E731
            flow_runs = [run_deployment(deployment, parameters=parameters(i), timeout=0) for i in range(shards)]
            for flow_run in flow_runs:
                _wait_for(flow_run)
        # Shards may run on other machines: their counts come back through the staging folder.
        parts = store.staged_counts(run_id)
        if len(parts) != shards:
            raise RuntimeError(f"only {len(parts)} of {shards} shards staged their results for run {run_id}")
        return _commit(store, settings, run_id, merge_counts(parts), started_at, time.perf_counter() - clock)


def _wait_for(flow_run, poll_s: float = 2.0) -> None:
    """Wait for a deployment's flow run to finish; raise unless it completed."""
    with get_client(sync_client=True) as client:
        while True:
            flow_run = client.read_flow_run(flow_run.id)
            if flow_run.state and flow_run.state.is_final():
                break
            time.sleep(poll_s)
    if flow_run.state.type != StateType.COMPLETED:
        raise RuntimeError(f"shard flow run {flow_run.name} ended {flow_run.state.type.value}: {flow_run.state.message}")


def _publish_artifacts(run_id: str, row: dict) -> None:
    labels = ("supported", "contradicted", "stale", "uncertain")
    create_table_artifact(
        key="label-counts",
        table=[{"label": label, "claims": int(row[label])} for label in labels],
        description=f"Claims per label in run {run_id}",
    )
    lines = [
        f"# kbaudit run `{run_id}`",
        "",
        f"- documents: {row['documents']}, ingest errors: {row['ingest_errors']}",
        f"- claims: {row['claims']} ({row['checkworthy']} check-worthy)",
        *[f"- {label}: {row[label]}" for label in labels],
        f"- edits drafted: {row['edits']}",
        *[f"- note: {note}" for note in json.loads(row.get("notes") or "[]")],
        f"- seconds: {row['seconds']:.1f}",
    ]
    create_markdown_artifact(key="run-summary", markdown="\n".join(lines), description="kbaudit run summary")
