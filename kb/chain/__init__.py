"""The audit's one stage chain (`run_audit`), its stages as plain functions, and the run summary.

`run_audit` is what every audit runs: the Prefect flow (with a runner from `tasks/` that makes
each stage a task), the benches, `kbaudit verify` and `VerifyLoop` (with `run_here`).
"""

from __future__ import annotations

import datetime as dt
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kb import progress
from kb.chain.identity import corpus_fingerprint, retrieval_identity, top_k_for, verdict_key
from kb.chain.memory import GC_YOUNG_THRESHOLD, fewer_collections
from kb.chain.scope import RunScope, changed_scope, evidence_changed_docs, last_full_run
from kb.chain.stages import (
    PROPOSED,
    CachedVerifier,
    Caches,
    VerifyBatch,
    correct_stage,
    escalate_stage,
    ingest_stage,
    make_retriever,
    retrieve_and_sign,
    retrieve_stage,
    sign_evidence,
    sources_stage,
    split_stage,
    status_stage,
    verify_stage,
)
from kb.chain.summary import COUNT_KEYS, document_rows, merge_counts, previous_claim_ids, redo_reasons, run_counts, runs_row, stage_tables
from kb.config import Settings
from kb.correct.review import rejected_proposals
from kb.escalate.lessons import load_lessons
from kb.escalate.route import DEEP_DEPTHS, EscalationResult
from kb.ingest.parse import keep_parsed_blocks, save_parsed_blocks
from kb.log import logger
from kb.records import LABELS, Claim, Document, Edit, Evidence, IngestError, Verdict
from kb.store import Store, new_run_id
from kb.verify import calibration
from kb.verify.policy import apply_confidence_floor

__all__ = [
    "audit_and_commit",
    "AuditResult",
    "CachedVerifier",
    "Caches",
    "changed_scope",
    "corpus_fingerprint",
    "correct_stage",
    "COUNT_KEYS",
    "document_rows",
    "escalate_stage",
    "evidence_changed_docs",
    "fewer_collections",
    "GC_YOUNG_THRESHOLD",
    "ingest_stage",
    "last_full_run",
    "make_retriever",
    "merge_counts",
    "previous_claim_ids",
    "PROPOSED",
    "redo_reasons",
    "retrieval_identity",
    "retrieve_and_sign",
    "retrieve_stage",
    "run_audit",
    "run_counts",
    "run_here",
    "runs_row",
    "RunScope",
    "sign_evidence",
    "sources_stage",
    "split_stage",
    "stage_tables",
    "StageRunner",
    "status_stage",
    "top_k_for",
    "verdict_key",
    "verify_stage",
    "VerifyBatch",
]


@dataclass
class AuditResult:
    documents: list[Document] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    evidence: Mapping[str, list[Evidence]] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    errors: list[IngestError] = field(default_factory=list)
    receipts: list[dict] = field(default_factory=list)
    doc_status: dict[str, tuple[str, float, dict]] = field(default_factory=dict)
    redo_reasons: dict[str, int] = field(default_factory=dict)
    escalation: EscalationResult | None = None
    lessons: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    counts: dict = field(default_factory=dict)  # the staged counts (run_counts), when a store was given
    corpus: str = ""  # corpus_fingerprint of the sources read
    scope: RunScope | None = None  # a --changed-since run's selection; None: every document

    def label_counts(self) -> dict[str, int]:
        counts = Counter(v.label for v in self.verdicts)
        return {label: counts.get(label, 0) for label in LABELS}


# ---- the one chain -------------------------------------------------------------------------
class StageRunner(Protocol):
    """How one stage call executes: ``runner(stage_name, function, *args, **kwargs)``.

    `run_here` calls the function in this process; the Prefect layer (tasks/) supplies a runner
    that runs it as a task of the flow run, so every stage shows up in Prefect.
    """

    def __call__(self, stage: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any: ...


def run_here(stage: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


_EPHEMERAL_KEYS: tempfile.TemporaryDirectory | None = None


def _ephemeral_key_dir() -> Path:
    """A run with neither store nor cache still signs its evidence, with a key for this process."""
    global _EPHEMERAL_KEYS
    if _EPHEMERAL_KEYS is None:
        _EPHEMERAL_KEYS = tempfile.TemporaryDirectory(prefix="kbaudit-keys-")
    return Path(_EPHEMERAL_KEYS.name)


def _batches(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)] or [[]]


@fewer_collections
def run_audit(
    settings: Settings,
    runner: StageRunner = run_here,
    *,
    store: Store | None = None,
    run_id: str | None = None,
    shard: tuple[int, int] = (0, 1),
    cache_dir: Path | None = None,
    documents: list[Document] | None = None,
    keep_claim: Callable[[Claim], bool] | None = None,
    verify_batch: VerifyBatch | None = None,
    verify_batch_size: int = 512,
) -> AuditResult:
    """Every stage of an audit, in order: ingest, split, sources, retrieve + sign, verify,
    escalate, correct (rejected drafts suppressed), document status; with a store, the tables are
    staged under ``run_id`` (not yet visible: the caller commits with ``Store.commit_run``).

    This is what the flow, the benches, ``kbaudit verify`` and ``VerifyLoop`` run.

    - ``store``: the store the run belongs to: its lessons, rejected proposals and previous claims
      are read, its ``cache/`` is the cache and its ``keys/`` sign the evidence. The caller holds
      its lock.
    - ``cache_dir``: with no store, where the embedding and stage caches live (None: in memory).
    - ``documents``: audit these instead of ingesting ``settings.docs_root`` (``VerifyLoop``).
    - ``keep_claim``: claims it returns False for are left out after splitting.
    - ``verify_batch``: verifies one batch of uncached claims elsewhere (the Dask fan-out), in
      batches of ``verify_batch_size``; the verdict cache stays here.
    """
    # One function on purpose: the order of the stage calls is the chain, read top to bottom.
    settings = settings.for_run()
    shard_index, shard_count = shard
    tag = f"[shard {shard_index + 1}/{shard_count}] " if shard_count > 1 else ""
    clock = time.perf_counter()
    finding_calibration = calibration.load(settings.finding_calibration)  # a bad file stops the run before any work
    run_id = run_id or "unstored"
    if store is not None:
        cache_dir = store.root / "cache"
    key_dir = store.root / "keys" if store is not None else (cache_dir / "keys" if cache_dir else _ephemeral_key_dir())
    caches = Caches.at(cache_dir / "stages" if cache_dir else None, read=not settings.full)
    keep_parsed_blocks(cache_dir / "stages" if cache_dir and not settings.full else None)
    result = AuditResult()

    sources, source_errors = runner("load-sources", sources_stage, settings)
    if settings.changed_since and documents is None:  # PR mode: only what changed (RunScope)
        scope = result.scope = runner("changed-scope", changed_scope, settings, store, sources, caches, cache_dir)
        for note in scope.notes:
            logger.info("%s%s", tag, note)
    result.corpus = corpus_fingerprint(sources)
    if documents is None:
        result.documents, result.errors = runner("ingest", ingest_stage, settings, shard, result.scope)
    else:
        result.documents = list(documents)
    save_parsed_blocks()  # the sources' pages and the KB's are read: later parses are not kept
    logger.info("%s[1/6] ingest: %d documents, %d errors", tag, len(result.documents), len(result.errors))
    for batch in _batches(result.documents, settings.shard_size):
        claims, errors = runner("split-claims", split_stage, batch, caches, settings.claims)
        result.claims += claims
        result.errors += errors
    if keep_claim is not None:
        result.claims = [c for c in result.claims if keep_claim(c)]
    logger.info("%s[2/6] claims: %d (%d check-worthy)", tag, len(result.claims), sum(c.checkworthy for c in result.claims))

    if shard_index == 0:  # every shard reads every source; one reports their errors
        result.errors += source_errors
    result.evidence, receipt, searches_reused = runner(
        "retrieve", retrieve_and_sign, sources, result.claims, settings, caches, run_id, cache_dir, key_dir
    )
    result.receipts = [receipt]
    logger.info(
        "%s[3/6] retrieve: %d source versions, evidence for %d claims (%d searches reused)",
        tag,
        len(sources),
        len(result.evidence),
        searches_reused,
    )

    if verify_batch is None:
        result.verdicts = runner("verify", verify_stage, result.claims, result.evidence, settings, caches)
    else:  # each batch is sent out by verify_batch itself (as tasks of its own), from the caller's context
        result.verdicts = verify_stage(result.claims, result.evidence, settings, caches, verify_batch, verify_batch_size)
    # The store's claim ids say why a verdict was redone: read only when one was (an unchanged
    # rerun redoes none, and the query reads every run's claims). Staged tables are not visible yet.
    redone = not settings.full and any(not v.reused for v in result.verdicts)
    result.redo_reasons = redo_reasons(result.verdicts, previous_claim_ids(store) if redone else set(), settings.full)
    logger.info(
        "%s[4/6] verify: %s; reused %d verdicts, redone: %s",
        tag,
        result.label_counts(),
        sum(v.reused for v in result.verdicts),
        result.redo_reasons or "none",
    )

    # only the deep verifier reads lessons (escalate routes nothing below D3)
    lessons = load_lessons(store) if store is not None and settings.depth in DEEP_DEPTHS else []
    escalation: EscalationResult = runner("escalate", escalate_stage, result.claims, result.evidence, result.verdicts, settings, lessons)
    result.escalation = escalation
    result.verdicts, result.lessons = escalation.verdicts, escalation.lessons
    # after escalation, on cached and fresh verdicts alike: the calibration and the floor are a
    # reading of the verdicts, not part of them, so changing either redoes nothing
    result.verdicts = calibration.calibrate_findings(result.verdicts, finding_calibration)
    result.verdicts = apply_confidence_floor(result.verdicts, settings.min_confidence)
    for note in escalation.summary_notes:
        logger.info("%s%s", tag, note)

    suppressed = rejected_proposals(store) if store is not None and store.run_ids() else {}
    result.edits = runner(
        "correct", correct_stage, result.documents, result.claims, result.verdicts, result.evidence, settings, suppressed, caches
    )
    result.doc_status = runner("document-status", status_stage, result.documents, result.claims, result.verdicts, result.edits)
    logger.info("%s[5/6] corrections: %s", tag, dict(Counter(e.status for e in result.edits)) or "none needed")
    result.seconds = time.perf_counter() - clock
    if store is not None:
        result.counts = runner("stage-tables", stage_tables, store, run_id, result, f"part-{shard_index}")
    return result


def audit_and_commit(settings: Settings, store: Store) -> tuple[AuditResult, dict]:
    """A whole run without Prefect, as the flow makes it: the store locked, the chain staged under
    a new run id, then the run committed (made visible). Returns the result and the runs row."""
    run_id = new_run_id()
    started_at = dt.datetime.now(dt.UTC)
    store.lock()
    try:
        result = run_audit(settings, store=store, run_id=run_id)
        row = runs_row(result.counts, settings, started_at, result.seconds)
        progress.check_interrupt()  # a Ctrl-C that a finalizer swallowed still stops the commit
        store.commit_run(run_id, row)
    finally:
        store.unlock()
    return result, row
