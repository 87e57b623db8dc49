"""The audit flows: ingest -> split -> retrieve -> verify -> escalate -> correct -> store (plain, one shard, sharded)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import time
from collections import Counter

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact
# Large batches are passed quoted: Prefect would otherwise walk every record looking for futures.
from prefect.utilities.annotations import quote

from kb.store import remote as kb_remote
from kb.config import ConfigError, Settings
from kb.log import logger
from kb.escalate.lessons import load_lessons
from kb.chain import AuditResult, Caches, merge_counts, runs_row, verify_stage
from kb.correct.review import rejected_proposals, writable_root
from kb.store import Store, new_run_id
from tasks.stages import (
    apply_task,
    correct_task,
    escalate_task,
    ingest_task,
    retrieve_task,
    sources_task,
    split_task,
    status_task,
    verify_chunk_task,
    verify_task,
    stage_task,
    VerifyChunk,
)


def _batches(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)] or [[]]


def _as_settings(settings: Settings | dict) -> Settings:
    """Deployments pass settings as JSON (Settings.public_dict())."""
    settings = Settings.from_public_dict(settings) if isinstance(settings, dict) else settings
    settings.validate()
    if settings.apply:
        writable_root(settings.docs_root)  # fail before any work if the KB may not be written
    return settings


# ---- the task runner: threads (the decorators' default) or a dask cluster for verification ----
def task_runner_for(settings: Settings):
    """The Prefect task runner `settings.task_runner` names; None for "thread" (the flows' own)."""
    if settings.task_runner == "thread":
        return None
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise ConfigError(
            f"task runner {settings.task_runner!r} needs prefect-dask, which is not installed: pip install 'kbaudit[dask]'"
        ) from None
    if settings.task_runner == "dask":  # a temporary local cluster, one single-threaded process per worker
        return DaskTaskRunner(cluster_kwargs={"n_workers": settings.dask_workers, "threads_per_worker": 1, "processes": True})
    return DaskTaskRunner(address=settings.task_runner.removeprefix("dask://"))


def with_task_runner(flow_, settings: Settings):
    """`flow_` with the task runner the settings ask for: the @flow decorators fix the thread
    runner, so a run that wants dask is started as `with_task_runner(audit, settings)(...)`."""
    runner = task_runner_for(settings)
    return flow_ if runner is None else flow_.with_options(task_runner=runner)


def _verify(claims, evidence, settings: Settings, caches: Caches, tag: str = "") -> list:
    """The verify stage: in this process (thread runner), or fanned out over a dask cluster.

    Only verification fans out. Retrieval stays here: `retrieve_stage` builds one index over all
    sources (BM25 and passage embeddings) before it can search, so a chunk per worker would
    rebuild the whole index on every worker, and the retrieval batch is signed as one receipt.
    """
    if settings.task_runner == "thread":
        return verify_task(quote(claims), quote(evidence), settings, caches)
    from prefect.context import FlowRunContext
    from prefect_dask import DaskTaskRunner

    context = FlowRunContext.get()
    if context is not None and isinstance(context.task_runner, DaskTaskRunner):
        return _fan_out_verify(context.task_runner, claims, evidence, settings, caches, tag)
    # Started without with_task_runner() (a deployment runs the flow with its decorator's thread
    # runner): a cluster (or the scheduler connection) for this stage only.
    with task_runner_for(settings) as runner:
        return _fan_out_verify(runner, claims, evidence, settings, caches, tag)


def _fan_out_verify(runner, claims, evidence, settings: Settings, caches: Caches, tag: str) -> list:
    """`kb.chain.verify_stage` with its batches verified on the cluster: the verdict cache is read
    and written here (so workers need no shared filesystem), and the claims it does not answer go out
    in waves of about two chunks per worker (at most 512 claims a chunk), each chunk a
    `verify-chunk` task; each wave's verdicts are cached as soon as it is done (resume).

    A verdict depends on its claim and evidence only, not on the rest of the batch (the model's
    batched call can differ in float rounding, never enough to move a label in our tests), so
    the verdicts, gathered in claim order, are the thread runner's.
    """
    if settings.task_runner == "dask":
        slots = settings.dask_workers
    else:  # an existing scheduler: two chunks per worker thread
        slots = sum(runner.client.nthreads().values())
        if not slots:
            logger.warning("%sthe dask scheduler at %s has no workers yet; the verify tasks wait for one", tag, runner.address)
    slots = max(slots, 1)
    remote = dataclasses.replace(settings, llm_api_key=None)  # verification needs no secret: keep it off the wire
    workers: Counter = Counter()

    def verify_on_workers(batch: list) -> list:
        size = -(-len(batch) // min(len(batch), 2 * slots))
        chunks = [batch[i : i + size] for i in range(0, len(batch), size)]
        with _api_for_workers(settings, tag):
            futures = [
                # what `verify_chunk_task.submit(...)` does with the flow's own task runner
                runner.submit(verify_chunk_task, {
                    "chunk": VerifyChunk(chunk, {c.claim_id: evidence[c.claim_id] for c in chunk if c.claim_id in evidence}),
                    "settings": remote,
                })
                for chunk in chunks
            ]
        verdicts = []
        for future in futures:
            chunk_verdicts, worker = future.result()
            verdicts += chunk_verdicts
            workers[worker] += 1
        return verdicts

    verdicts = verify_stage(claims, evidence, settings, caches, verify_batch=verify_on_workers, batch_size=2 * slots * 512)
    if workers:
        logger.info("%s[4/6] verify: %d of %d claims in %d chunks on %d dask worker(s): %s", tag,
                    sum(not v.reused for v in verdicts), len(verdicts), sum(workers.values()), len(workers),
                    ", ".join(f"{w} ({n} chunks)" for w, n in sorted(workers.items())))
    return verdicts


@contextlib.contextmanager
def _api_for_workers(settings: Settings, tag: str):
    """The workers report their task runs to the Prefect API in the context each task carries.
    With no PREFECT_API_URL this flow runs on an ephemeral server that the context does not name,
    and each worker would start a server of its own: name this one."""
    from prefect import get_client
    from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

    if get_current_settings().api.url:
        yield
        return
    with get_client(sync_client=True) as client:
        url = str(client.api_url)
    if settings.task_runner != "dask":
        logger.warning("%sno PREFECT_API_URL: dask workers on other machines cannot reach this run's Prefect "
                       "server at %s; set PREFECT_API_URL to a server they can reach", tag, url)
    with temporary_settings(updates={PREFECT_API_URL: url}):
        yield


def audit_body(settings: Settings, store: Store, run_id: str, shard: tuple[int, int] = (0, 1)) -> dict:
    """Every stage for the documents of one shard, staged under the run (not yet visible).

    Returns the shard's counts (kb.chain.run_counts). The caller holds the store lock.
    """
    shard_index, shard_count = shard
    part = f"part-{shard_index}"
    clock = time.perf_counter()
    result = AuditResult()
    cache_dir = settings.out / "cache"
    caches = Caches.at(cache_dir / "stages", read=not settings.full)
    previous_claims = _previous_claim_ids(store)
    tag = f"[shard {shard_index + 1}/{shard_count}] " if shard_count > 1 else ""

    result.documents, result.errors = ingest_task(settings, shard)
    logger.info("%s[1/6] ingest: %d documents, %d errors", tag, len(result.documents), len(result.errors))
    for batch in _batches(result.documents, settings.shard_size):
        claims, errors = split_task(quote(batch), caches)
        result.claims += claims
        result.errors += errors
    checkworthy = sum(1 for c in result.claims if c.checkworthy)
    logger.info("%s[2/6] claims: %d (%d check-worthy)", tag, len(result.claims), checkworthy)

    sources, source_errors = sources_task(settings)
    if shard_index == 0:  # every shard reads every source; one reports their errors
        result.errors += source_errors
    result.evidence, receipt, searches_reused = retrieve_task(
        quote(sources), quote(result.claims), settings, caches, run_id, cache_dir, settings.out / "keys"
    )
    result.receipts = [receipt]
    logger.info(
        "%s[3/6] retrieve: %d source versions, evidence for %d claims (%d searches reused)",
        tag, len(sources), len(result.evidence), searches_reused,
    )

    result.verdicts = _verify(result.claims, result.evidence, settings, caches, tag)
    result.redo_reasons = _redo_reasons(result.verdicts, previous_claims, settings.full)
    logger.info("%s[4/6] verify: %s; reused %d verdicts, redone: %s", tag, result.label_counts(),
                sum(v.reused for v in result.verdicts), result.redo_reasons or "none")
    result.escalation = escalate_task(
        quote(result.claims), quote(result.evidence), quote(result.verdicts), settings, quote(load_lessons(store))
    )
    result.verdicts, result.lessons = result.escalation.verdicts, result.escalation.lessons
    for note in result.escalation.summary_notes:
        logger.info("%s%s", tag, note)
    suppressed = rejected_proposals(store) if store.run_ids() else {}
    result.edits = correct_task(
        quote(result.documents), quote(result.claims), quote(result.verdicts), quote(result.evidence), settings, quote(suppressed)
    )
    result.doc_status = status_task(quote(result.documents), quote(result.claims), quote(result.verdicts))
    logger.info("%s[5/6] corrections: %s", tag, dict(Counter(e.status for e in result.edits)) or "none needed")

    result.seconds = time.perf_counter() - clock
    return stage_task(store, run_id, quote(result), part)


def _commit(store: Store, settings: Settings, run_id: str, counts: dict, started_at: dt.datetime, seconds: float) -> dict:
    row = runs_row(counts, settings, started_at, seconds)
    store.commit_run(run_id, row)
    logger.info("[6/6] store: run %s written to %s", run_id, settings.out)
    if settings.apply:
        outcomes = apply_task(store, settings.docs_root)
        logger.info("applied edits: %s", dict(Counter(o.status for o in outcomes)) or "none accepted")
    if settings.out_url:  # a URL store: upload the run (its runs row last) from the local mirror
        kb_remote.for_settings(settings).push(run_id)
    _publish_artifacts(run_id, row)
    return {"run_id": run_id, **{k: v for k, v in row.items() if k not in ("started_at", "finished_at", "config")}}


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
        started_at = dt.datetime.now(dt.timezone.utc)
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
    from prefect.deployments import run_deployment
    from prefect.states import StateType

    settings = _as_settings(settings)
    with _locked_run(settings) as store:
        run_id = run_id or new_run_id()
        started_at = dt.datetime.now(dt.timezone.utc)
        clock = time.perf_counter()
        if deployment is None:
            for i in range(shards):
                with_task_runner(audit_shard, settings)(settings.public_dict(), run_id, i, shards)
        else:
            parameters = lambda i: {"settings": settings.public_dict(), "run_id": run_id, "shard_index": i, "shard_count": shards}  # noqa: E731
            flow_runs = [run_deployment(deployment, parameters=parameters(i), timeout=0) for i in range(shards)]
            for flow_run in flow_runs:
                _wait_for(flow_run, StateType)
        # Shards may run on other machines: their counts come back through the staging folder.
        parts = store.staged_counts(run_id)
        if len(parts) != shards:
            raise RuntimeError(f"only {len(parts)} of {shards} shards staged their results for run {run_id}")
        return _commit(store, settings, run_id, merge_counts(parts), started_at, time.perf_counter() - clock)


def _wait_for(flow_run, state_types, poll_s: float = 2.0) -> None:
    """Wait for a deployment's flow run to finish; raise unless it completed."""
    from prefect import get_client

    with get_client(sync_client=True) as client:
        while True:
            flow_run = client.read_flow_run(flow_run.id)
            if flow_run.state and flow_run.state.is_final():
                break
            time.sleep(poll_s)
    if flow_run.state.type != state_types.COMPLETED:
        raise RuntimeError(f"shard flow run {flow_run.name} ended {flow_run.state.type.value}: {flow_run.state.message}")


def _previous_claim_ids(store: Store) -> set[str]:
    if not store.run_ids():
        return set()
    return set(store.query("SELECT claim_id FROM claims").claim_id)


def _redo_reasons(verdicts, previous_claims: set[str], full: bool) -> dict[str, int]:
    """Why each claim that was not reused had to be verified again."""
    reasons: dict[str, int] = {}
    for verdict in verdicts:
        if verdict.reused:
            continue
        if full:
            reason = "full run requested"
        elif verdict.claim_id not in previous_claims:
            reason = "new or edited claim"
        else:
            reason = "evidence, verifier or date changed"
        reasons[reason] = reasons.get(reason, 0) + 1
    return reasons


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
