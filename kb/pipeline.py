"""The audit's stages as plain functions, and the run summary.

`tasks/` wraps each stage as a Prefect task and `flows/audit.py` composes them; the benches
and notebooks call `audit_in_memory`, which chains the same functions without Prefect.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kb.claims import split_claims
from kb.config import Settings
from kb.correct import draft_edits
from kb.ingest import ingest
from kb.log import logger
from kb.records import LABELS, Claim, Document, Edit, Evidence, IngestError, SourceDoc, Verdict
from kb.store import Store

# D2 and deeper widen retrieval (DESIGN.md, "Routing by depth").
TOP_K_BY_DEPTH = {"D0": 1, "D1": 1, "D2": 10, "D3": 10, "D4": 10, "D5": 10}


@dataclass
class AuditResult:
    documents: list[Document] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    evidence: dict[str, list[Evidence]] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    errors: list[IngestError] = field(default_factory=list)
    receipts: list[dict] = field(default_factory=list)
    doc_status: dict[str, tuple[str, float, dict]] = field(default_factory=dict)
    seconds: float = 0.0

    def label_counts(self) -> dict[str, int]:
        counts = Counter(v.label for v in self.verdicts)
        return {label: counts.get(label, 0) for label in LABELS}


# ---- stages ----------------------------------------------------------------------------
def ingest_stage(settings: Settings) -> tuple[list[Document], list[IngestError]]:
    return ingest(settings.docs_root, settings.max_doc_bytes)


def split_stage(documents: list[Document]) -> tuple[list[Claim], list[IngestError]]:
    claims: list[Claim] = []
    errors: list[IngestError] = []
    for doc in documents:
        try:
            claims.extend(split_claims(doc))
        except Exception as exc:  # one document's bug must not stop the batch
            errors.append(IngestError(doc.doc_id, "claims", f"claim splitting failed: {type(exc).__name__}: {exc}"))
    return claims, errors


def sources_stage(settings: Settings) -> tuple[list[SourceDoc], list[IngestError]]:
    from kb.sources import load_sources

    sources: list[SourceDoc] = []
    errors: list[IngestError] = []
    for root in settings.sources_roots:
        found, bad = load_sources(root)
        sources.extend(found)
        errors.extend(bad)
    logger.info("loaded %d source versions (%d errors)", len(sources), len(errors))
    return sources, errors


def make_retriever(sources: list[SourceDoc], settings: Settings, cache_dir: Path | None):
    from kb.embed import Embedder
    from kb.retrieve import Retriever

    retriever = Retriever(Embedder(settings.embed_model_path, cache_dir=cache_dir))
    retriever.index(sources)
    return retriever


def retrieve_stage(retriever, claims: list[Claim], settings: Settings) -> dict[str, list[Evidence]]:
    top_k = max(settings.top_k, TOP_K_BY_DEPTH[settings.depth])
    wanted = [c for c in claims if c.checkworthy]
    return retriever.search(wanted, k=top_k)


def sign_evidence(run_id: str, evidence: dict[str, list[Evidence]], key_dir: Path) -> tuple[dict[str, list[Evidence]], dict]:
    """Sign the retrieval batch and stamp each evidence row with the receipt id."""
    from kb.receipts import canonical_rows, sign_batch

    rows = [e for claim_id in sorted(evidence) for e in evidence[claim_id]]
    inputs = json.dumps(sorted(evidence)).encode()
    receipt = sign_batch(run_id, "retriever", inputs=inputs, outputs=canonical_rows(rows), key_dir=key_dir)
    stamped = {
        claim_id: [dataclasses.replace(e, receipt_id=receipt["receipt_id"]) for e in items]
        for claim_id, items in evidence.items()
    }
    return stamped, receipt


def verify_stage(claims: list[Claim], evidence: dict[str, list[Evidence]], settings: Settings) -> list[Verdict]:
    from kb.verify import Verifier, VerifierSettings

    verifier = Verifier(VerifierSettings(model_path=settings.model_path, use_model=settings.depth != "D0"))
    wanted = [c for c in claims if c.checkworthy]
    return verifier.verify(wanted, evidence, settings.run_date)


def status_stage(documents: list[Document], claims: list[Claim], verdicts: list[Verdict]) -> dict[str, tuple[str, float, dict]]:
    from kb.verify.policy import document_status

    by_doc: dict[str, list[Claim]] = {}
    for claim in claims:
        by_doc.setdefault(claim.doc_id, []).append(claim)
    verdict_of = {v.claim_id: v for v in verdicts}
    result = {}
    for doc in documents:
        doc_claims = [c for c in by_doc.get(doc.doc_id, []) if c.claim_id in verdict_of]
        result[doc.doc_id] = document_status(doc_claims, [verdict_of[c.claim_id] for c in doc_claims])
    return result


def audit_in_memory(settings: Settings, run_id: str = "in-memory", cache_dir: Path | None = None) -> AuditResult:
    """Every stage in order, in this process, without Prefect or a store."""
    started = time.perf_counter()
    result = AuditResult()
    result.documents, result.errors = ingest_stage(settings)
    result.claims, split_errors = split_stage(result.documents)
    sources, source_errors = sources_stage(settings)
    result.errors += split_errors + source_errors
    retriever = make_retriever(sources, settings, cache_dir)
    result.evidence = retrieve_stage(retriever, result.claims, settings)
    result.verdicts = verify_stage(result.claims, result.evidence, settings)
    result.edits = draft_edits(result.documents, result.claims, result.verdicts)
    result.doc_status = status_stage(result.documents, result.claims, result.verdicts)
    result.seconds = time.perf_counter() - started
    return result


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
            }
        )
    return rows


def runs_row(result: AuditResult, settings: Settings, started_at: dt.datetime, status: str = "completed") -> dict:
    counts = result.label_counts()
    return {
        "started_at": started_at,
        "finished_at": dt.datetime.now(dt.timezone.utc),
        "status": status,
        "depth": settings.depth,
        "docs_root": str(settings.docs_root),
        "sources_root": ",".join(str(s) for s in settings.sources_roots),
        "config_hash": settings.config_hash(),
        "config": json.dumps(settings.public_dict(), sort_keys=True),
        "documents": len(result.documents),
        "claims": len(result.claims),
        "checkworthy": sum(1 for c in result.claims if c.checkworthy),
        **counts,
        "reused": sum(1 for v in result.verdicts if v.reused),
        "escalated": 0,
        "ingest_errors": len(result.errors),
        "edits": len(result.edits),
        "calls": 0,
        "tokens": 0,
        "seconds": result.seconds,
    }


def write_run(store: Store, run_id: str, result: AuditResult, settings: Settings, started_at: dt.datetime) -> dict:
    """Stage every table, then make the run visible in one step (see kb.store)."""
    evidence_rows = []
    for claim_id in sorted(result.evidence):
        for e in result.evidence[claim_id]:
            row = {**e.__dict__, "evidence_id": e.evidence_id}
            evidence_rows.append(row)
    store.write_table(run_id, "documents", document_rows(result))
    store.write_table(run_id, "ingest_errors", result.errors)
    store.write_table(run_id, "claims", result.claims)
    store.write_table(run_id, "evidence", evidence_rows)
    store.write_table(run_id, "verdicts", result.verdicts)
    store.write_table(run_id, "edits", result.edits)
    store.write_table(run_id, "receipts", result.receipts)
    row = runs_row(result, settings, started_at)
    store.commit_run(run_id, row)
    return row
