"""Arrow schemas of every Parquet table in the store (the one place they are defined).

Tables are hive-partitioned by ``run_id`` (the folder name), so ``run_id`` is not a column
inside the files; DuckDB and pyarrow add it from the path.
"""

from __future__ import annotations

import pyarrow as pa

_STR = pa.string()
_STRS = pa.list_(pa.string())

SCHEMAS: dict[str, pa.Schema] = {
    "runs": pa.schema(
        [
            ("started_at", pa.timestamp("us", tz="UTC")),
            ("finished_at", pa.timestamp("us", tz="UTC")),
            ("status", _STR),
            ("depth", _STR),
            ("docs_root", _STR),
            ("sources_root", _STR),
            ("config_hash", _STR),
            ("config", _STR),  # JSON of the public settings (no secrets)
            ("documents", pa.int64()),
            ("claims", pa.int64()),
            ("checkworthy", pa.int64()),
            ("supported", pa.int64()),
            ("contradicted", pa.int64()),
            ("stale", pa.int64()),
            ("uncertain", pa.int64()),
            ("reused", pa.int64()),
            ("redo_reasons", _STR),  # JSON: reason -> claims verified again for it
            ("escalated", pa.int64()),
            ("skipped_by_budget", pa.int64()),  # claims the escalation budget left at their cheaper verdict
            ("notes", _STR),  # JSON list of run notes (e.g. "no deep verifier configured: ...")
            ("ingest_errors", pa.int64()),
            ("edits", pa.int64()),
            ("calls", pa.int64()),
            ("tokens", pa.int64()),
            ("seconds", pa.float64()),
            # "full" (every document) or "changed" (kbaudit run --changed-since: docs/ci.md); the
            # views that show the KB's current state read the newest full run only
            ("scope", _STR),
            ("changed_since", _STR),  # the revision a changed-scope run compared against
            ("documents_audited", _STRS),  # changed scope: the doc ids it audited
            ("documents_deleted", _STRS),  # changed scope: doc ids deleted since the revision
            ("corpus", _STR),  # fingerprint of the source versions the run read
            # the commit the KB was read at (git:REPO@REV:PATH), or the HEAD of the repository
            # holding the KB folder; null outside git and in stores written before it
            ("docs_commit", _STR),
        ]
    ),
    "documents": pa.schema(
        [
            ("doc_id", _STR),
            ("version_id", _STR),
            ("parent_version", _STR),
            ("title", _STR),
            ("updated", pa.date32()),
            ("owner", _STR),
            ("risk", _STR),
            ("bytes", pa.int64()),
            ("format", _STR),
            ("status", _STR),
            ("score", pa.float64()),
            ("score_components", _STR),  # JSON
            ("owner_source", _STR),  # front_matter | <CODEOWNERS file>:<line> (kb.ingest.owners)
            ("review_interval_days", pa.int64()),
            ("verified_until", pa.date32()),
            ("review_due", pa.date32()),  # the day the page falls due for review (kb.ingest.owners)
        ]
    ),
    "ingest_errors": pa.schema([("path", _STR), ("stage", _STR), ("error", _STR)]),
    "claims": pa.schema(
        [
            ("claim_id", _STR),
            ("doc_id", _STR),
            ("version_id", _STR),
            ("start", pa.int64()),
            ("end", pa.int64()),
            ("source_text", _STR),
            ("text", _STR),
            ("checkworthy", pa.bool_()),
            ("reason", _STR),
            ("type", _STR),
            ("risk", _STR),
            ("time_sensitive", pa.bool_()),
            ("freshness_days", pa.int64()),
            ("requirements", _STRS),
            ("section", _STR),
            ("sentence", _STR),  # Claim.sentence: the whole sentence a clause was cut from
        ]
    ),
    "evidence": pa.schema(
        [
            ("evidence_id", _STR),
            ("claim_id", _STR),
            ("rank", pa.int64()),
            ("passage_id", _STR),
            ("source_id", _STR),
            ("source_version", _STR),
            ("source_date", pa.date32()),
            ("authority", pa.float64()),
            ("passage", _STR),
            ("sentence", _STR),
            ("score_bm25", pa.float64()),
            ("score_dense", pa.float64()),
            ("score_fused", pa.float64()),
            ("receipt_id", _STR),
            ("counterpart_of", _STR),
            ("section", _STR),
            ("source_rev", _STR),  # git rev of the source version; absent in stores written before it
            ("source_kind", _STR),  # null: a page; changelog | spec; absent in older stores
            ("removed_in", _STR),  # the newest version (rev or date) that dropped this sentence; absent in older stores
            ("renamed", _STR),  # terms renamed across the newest release that this sentence states the claim with; absent in older stores
        ]
    ),
    "verdicts": pa.schema(
        [
            ("claim_id", _STR),
            ("label", _STR),
            ("confidence", pa.float64()),
            ("tier", _STR),
            ("rationale", _STR),
            ("gap_type", _STR),
            ("gap_severity", _STR),
            ("action", _STR),
            ("evidence_ids", _STRS),
            ("claim_value", _STR),
            ("evidence_value", _STR),
            ("evidence_sentence", _STR),
            ("reused", pa.bool_()),
        ]
    ),
    "edits": pa.schema(
        [
            ("edit_id", _STR),
            ("claim_id", _STR),
            ("doc_id", _STR),
            ("base_version", _STR),
            ("start", pa.int64()),
            ("end", pa.int64()),
            ("old_text", _STR),
            ("new_text", _STR),
            ("risk", _STR),
            ("status", _STR),
            ("reason", _STR),
        ]
    ),
    "receipts": pa.schema(
        [
            ("receipt_id", _STR),
            ("tool", _STR),
            ("input_hash", _STR),
            ("output_hash", _STR),
            ("created_at", _STR),
            ("signature", _STR),
        ]
    ),
    # ---- corrections, versions, review (kb.correct.draft, kb.correct.versions, kb.correct.review) ----
    # What the correction step knows about each edit: how it was drafted, its re-verification,
    # the evidence it rests on and the risk factors (one row per `edits` row of the run).
    "edit_details": pa.schema(
        [
            ("edit_id", _STR),
            ("claim_id", _STR),
            ("doc_id", _STR),
            ("method", _STR),  # slot | rewrite | none
            ("label_before", _STR),
            ("confidence_before", pa.float64()),
            ("label_after", _STR),
            ("confidence_after", pa.float64()),
            ("rationale_after", _STR),
            ("claim_value", _STR),
            ("evidence_value", _STR),
            ("evidence_sentence", _STR),
            ("evidence_source", _STR),
            ("evidence_date", pa.date32()),
            ("evidence_authority", pa.float64()),
            ("evidence_key", _STR),
            ("proposal_key", _STR),
            ("risk_score", pa.float64()),
            ("risk_factors", _STR),  # JSON
            ("draft_text", _STR),
        ]
    ),
    # Document versions the run accepted into the store (auto-accepted edits); content included.
    "versions": pa.schema(
        [
            ("version_id", _STR),
            ("parent_version", _STR),
            ("doc_id", _STR),
            ("edit_ids", _STRS),
            ("bytes", pa.int64()),
            ("content", _STR),
        ]
    ),
    "diffs": pa.schema(
        [
            ("version_id", _STR),
            ("parent_version", _STR),
            ("doc_id", _STR),
            ("edit_ids", _STRS),
            ("unified_diff", _STR),
            ("changes", _STR),  # JSON list: edit_id, claim_id, start, end, old, new, label before/after
            ("score_before", pa.float64()),
            ("score_after", pa.float64()),
        ]
    ),
    # Append-only (outside runs): review decisions, edit status events, files written by apply.
    "review_decisions": pa.schema(
        [
            ("edit_id", _STR),
            ("decision", _STR),  # approve | reject
            ("reviewer", _STR),
            ("note", _STR),
            ("decided_at", pa.timestamp("us", tz="UTC")),
            ("origin", _STR),  # cli | import:<file> | web
            # An approval with the reviewer's own text (edit-then-approve), and what the verifier
            # concluded when it re-checked that text against the edit's evidence; null otherwise.
            ("new_text", _STR),
            ("check_label", _STR),
            ("check_confidence", pa.float64()),
            ("check_rationale", _STR),
        ]
    ),
    "edit_events": pa.schema(
        [
            ("edit_id", _STR),
            ("doc_id", _STR),
            ("status", _STR),  # applying | applied | conflicted
            ("base_version", _STR),
            ("version_id", _STR),  # the file's version the event produced (or found, on conflict)
            ("actor", _STR),
            ("note", _STR),
            ("event_at", pa.timestamp("us", tz="UTC")),
        ]
    ),
    "applied_versions": pa.schema(
        [
            ("version_id", _STR),
            ("parent_version", _STR),
            ("doc_id", _STR),
            ("path", _STR),
            ("edit_ids", _STRS),
            ("unified_diff", _STR),
            ("actor", _STR),
            ("applied_at", pa.timestamp("us", tz="UTC")),
        ]
    ),
    # What the deep verifier found wrong (kb.escalate.lessons): read by the next run to look harder at
    # similar claims. Written by the run that found the discrepancy.
    "lessons": pa.schema(
        [
            ("lesson_id", _STR),
            ("claim_id", _STR),
            ("doc_id", _STR),
            ("claim_type", _STR),
            ("lesson", _STR),
            ("mistake", _STR),
            ("correction", _STR),
            ("trigger", _STR),  # "type|stemmed content words" (kb.escalate.lessons.matches)
            ("found_on", pa.date32()),
        ]
    ),
    # The outcome of each run's webhook notification (reports.webhook), appended after the run's
    # commit: the runs row is written before the notification is sent.
    "notifications": pa.schema(
        [
            ("run_id", _STR),
            ("status", _STR),  # sent | failed | skipped
            ("format", _STR),  # slack | json
            ("target", _STR),  # scheme://host of the webhook, never the full URL (a secret)
            ("attempts", pa.int64()),
            ("http_status", pa.int64()),
            ("error", _STR),
            ("findings", pa.int64()),
            ("owners", pa.int64()),
            ("seconds", pa.float64()),
            ("sent_at", pa.timestamp("us", tz="UTC")),
        ]
    ),
}

# Tables written outside runs, one file per append (not hive-partitioned by run).
APPEND_ONLY: tuple[str, ...] = ("review_decisions", "edit_events", "applied_versions", "notifications")
RUN_TABLES = tuple(t for t in SCHEMAS if t not in APPEND_ONLY)
TABLES = tuple(SCHEMAS)
