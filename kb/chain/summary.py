"""The run summary: counts, the `runs` row, and the tables a run stages in the store."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING

from kb.chain.stages import PROPOSED
from kb.config import Settings
from kb.correct.versions import run_tables
from kb.evidence.git_source import kb_commit
from kb.evidence.receipts import (
    RunEvidence,
    evidence_table,
    evidence_table_as_last_run,
)
from kb.ingest.owners import repository_info
from kb.records import LABELS, Verdict
from kb.store import Store

if TYPE_CHECKING:
    from kb.chain import AuditResult


def previous_claim_ids(store: Store | None) -> set[str]:
    if store is None or not store.run_ids():
        return set()
    return set(store.query("SELECT claim_id FROM claims").claim_id)


def redo_reasons(verdicts: list[Verdict], previous_claims: set[str], full: bool) -> dict[str, int]:
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


# ---- writing a run ---------------------------------------------------------------------
def document_rows(result: AuditResult) -> list[dict]:
    rows = []
    for doc in result.documents:
        status, score, components = result.doc_status.get(doc.doc_id, ("UNCERTAIN", 0.0, {}))
        rows.append(
            {
                "doc_id": doc.doc_id,
                "version_id": doc.version_id,
                "parent_version": None,
                "title": doc.title,
                "updated": doc.updated,
                "owner": doc.owner,
                "risk": doc.risk,
                "bytes": doc.bytes,
                "format": doc.format,
                "status": status,
                "score": score,
                "score_components": json.dumps(components, sort_keys=True),
                "owner_source": doc.owner_source,
                "review_interval_days": doc.review_interval_days,
                "verified_until": doc.verified_until,
                "review_due": doc.review_due,
            }
        )
    return rows


COUNT_KEYS = (
    "documents",
    "claims",
    "checkworthy",
    *LABELS,
    "reused",
    "escalated",
    "skipped_by_budget",
    "ingest_errors",
    "edits",
    "calls",
    "tokens",
)


def run_counts(result: AuditResult) -> dict:
    """The additive part of a runs row: shards of one run sum these."""
    esc = result.escalation
    return {
        "documents": len(result.documents),
        "claims": len(result.claims),
        "checkworthy": sum(1 for c in result.claims if c.checkworthy),
        **result.label_counts(),
        "reused": sum(1 for v in result.verdicts if v.reused),
        "escalated": esc.escalated if esc else 0,
        "skipped_by_budget": esc.skipped_by_budget if esc else 0,
        "ingest_errors": len(result.errors),
        "edits": sum(1 for e in result.edits if e.status in PROPOSED),
        "calls": esc.cost.calls if esc else 0,
        "tokens": (esc.cost.tokens_in + esc.cost.tokens_out) if esc else 0,
        "notes": (result.scope.notes if result.scope else []) + (list(esc.summary_notes) if esc else []),
        "redo_reasons": dict(result.redo_reasons),
        "seconds": result.seconds,
        "corpus": result.corpus,
        "scope": result.scope.run_fields(result.documents) if result.scope else {"scope": "full"},
    }


def merge_counts(parts: list[dict]) -> dict:
    merged: dict = {key: sum(int(p.get(key, 0)) for p in parts) for key in COUNT_KEYS}
    reasons: dict[str, int] = {}
    for part in parts:
        for why, n in part.get("redo_reasons", {}).items():
            reasons[why] = reasons.get(why, 0) + n
    merged["redo_reasons"] = reasons
    merged["notes"] = [note for part in parts for note in part.get("notes", [])]
    merged["seconds"] = max((float(p.get("seconds", 0.0)) for p in parts), default=0.0)
    merged["corpus"] = next((p["corpus"] for p in parts if p.get("corpus")), "")  # every shard reads every source
    merged["scope"] = {"scope": "full"}  # sharded runs audit every document
    return merged


def runs_row(counts: dict, settings: Settings, started_at: dt.datetime, seconds: float, status: str = "completed") -> dict:
    return {
        "started_at": started_at,
        "finished_at": dt.datetime.now(dt.UTC),
        "status": status,
        "depth": settings.depth,
        "docs_root": str(settings.docs_root),
        "sources_root": ",".join(str(s) for s in settings.sources_roots),
        "config_hash": settings.config_hash(),
        "config": json.dumps(settings.public_dict(), sort_keys=True),
        **{key: counts[key] for key in COUNT_KEYS},
        "redo_reasons": json.dumps(counts.get("redo_reasons", {}), sort_keys=True),
        "notes": json.dumps(counts.get("notes", [])),
        "seconds": seconds,
        "corpus": counts.get("corpus") or None,
        "docs_commit": docs_commit(settings),
        **counts.get("scope", {"scope": "full"}),
    }


def docs_commit(settings: Settings) -> str | None:
    """The commit the KB was read at: the rev of a ``git:`` KB, else the HEAD of the repository
    holding the KB folder (None outside git). Reports locate findings in the files at it."""
    if settings.docs_from_git:
        return kb_commit(str(settings.docs))
    root = Path(settings.docs_root)
    info = repository_info(root) if root.is_dir() else None
    return info["revision"] if info else None


def stage_tables(store: Store, run_id: str, result: AuditResult, part: str = "part-0") -> dict:
    """Write every table of this (shard of a) run to the run's staging folder; returns its counts.

    Nothing is visible until `Store.commit_run`.
    """
    # An unchanged rerun's evidence is the last run's table under this run's receipt; another
    # rerun's is read from its cached lines; a cold run's is a generator the store converts and
    # writes in row groups.
    evidence_rows = None
    if isinstance(result.evidence, RunEvidence) and len(result.receipts) == 1:
        evidence_rows = evidence_table_as_last_run(store, result.evidence, result.receipts[0])
    if evidence_rows is None:
        evidence_rows = evidence_table(result.evidence)
    if evidence_rows is None:
        evidence_rows = (e for claim_id in sorted(result.evidence) for e in result.evidence[claim_id])
    tables = {
        "documents": document_rows(result),
        "ingest_errors": result.errors,
        "claims": result.claims,
        "evidence": evidence_rows,
        "verdicts": result.verdicts,
        "edits": result.edits,
        "receipts": result.receipts,
        "lessons": result.lessons,
        **run_tables(result.documents, result.claims, result.verdicts, result.edits),
    }
    for table, rows in tables.items():
        store.write_table(run_id, table, rows, part=part)
    counts = run_counts(result)
    store.stage_counts(run_id, part, counts)
    return counts
