"""The `audit` flow: ingest -> split -> retrieve -> verify -> correct -> store."""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from kb.config import Settings
from kb.log import logger
from kb.pipeline import AuditResult, Caches
from kb.review import rejected_proposals, writable_root
from kb.store import Store, new_run_id
from tasks.stages import (
    apply_task,
    correct_task,
    ingest_task,
    retrieve_task,
    sources_task,
    split_task,
    status_task,
    verify_task,
    write_task,
)


def _shards(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)] or [[]]


@flow(name="audit", validate_parameters=False)
def audit(settings: Settings | dict, run_id: str | None = None) -> dict:
    """Audit one KB folder against its sources and write a new run to the store.

    `settings` may be a dict (Settings.public_dict()), as a deployment passes it.
    """
    if isinstance(settings, dict):
        settings = Settings.from_public_dict(settings)
    settings.validate()
    if settings.apply:
        writable_root(settings.docs_root)  # fail before any work if the KB may not be written
    store = Store(settings.out)
    store.lock()
    try:
        removed = store.clear_stale_staging()
        if removed:
            logger.warning("removed %d unfinished run(s) from an earlier crash: %s", len(removed), ", ".join(removed))
        run_id = run_id or new_run_id()
        started_at = dt.datetime.now(dt.timezone.utc)
        clock = time.perf_counter()
        result = AuditResult()
        cache_dir = settings.out / "cache"
        caches = Caches.at(cache_dir / "stages", read=not settings.full)
        previous_claims = _previous_claim_ids(store)

        result.documents, result.errors = ingest_task(settings)
        logger.info("[1/6] ingest: %d documents, %d errors", len(result.documents), len(result.errors))
        for shard in _shards(result.documents, settings.shard_size):
            claims, errors = split_task(shard, caches)
            result.claims += claims
            result.errors += errors
        checkworthy = sum(1 for c in result.claims if c.checkworthy)
        logger.info("[2/6] claims: %d (%d check-worthy)", len(result.claims), checkworthy)

        sources, source_errors = sources_task(settings)
        result.errors += source_errors
        result.evidence, receipt, searches_reused = retrieve_task(
            sources, result.claims, settings, caches, run_id, cache_dir, settings.out / "keys"
        )
        result.receipts = [receipt]
        logger.info(
            "[3/6] retrieve: %d source versions, evidence for %d claims (%d searches reused)",
            len(sources), len(result.evidence), searches_reused,
        )

        result.verdicts = verify_task(result.claims, result.evidence, settings, caches)
        result.redo_reasons = _redo_reasons(result.verdicts, previous_claims, settings.full)
        logger.info("[4/6] verify: %s; reused %d verdicts, redone: %s", result.label_counts(),
                    sum(v.reused for v in result.verdicts), result.redo_reasons or "none")
        suppressed = rejected_proposals(store) if store.run_ids() else {}
        result.edits = correct_task(result.documents, result.claims, result.verdicts, result.evidence, settings, suppressed)
        result.doc_status = status_task(result.documents, result.claims, result.verdicts)
        counts = Counter(e.status for e in result.edits)
        logger.info("[5/6] corrections: %s", dict(counts) or "none needed")

        result.seconds = time.perf_counter() - clock
        row = write_task(store, run_id, result, settings, started_at)
        logger.info("[6/6] store: run %s written to %s", run_id, settings.out)
        if settings.apply:
            outcomes = apply_task(store, settings.docs_root)
            logger.info("applied edits: %s", dict(Counter(o.status for o in outcomes)) or "none accepted")
        _publish_artifacts(run_id, row)
        return {"run_id": run_id, **{k: v for k, v in row.items() if k not in ("started_at", "finished_at", "config")}}
    finally:
        store.unlock()


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
        f"- seconds: {row['seconds']:.1f}",
    ]
    create_markdown_artifact(key="run-summary", markdown="\n".join(lines), description="kbaudit run summary")
