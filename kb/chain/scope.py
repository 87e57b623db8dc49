"""PR mode: the documents a `--changed-since` run audits."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from kb.chain.identity import corpus_fingerprint
from kb.chain.stages import Caches, retrieve_stage
from kb.config import Settings
from kb.errors import UsageError
from kb.ingest.git import changed_documents
from kb.ingest.walk import DOC_SUFFIXES, _ignore_spec
from kb.records import Claim, Document, SourceDoc
from kb.store import Store, rows_of


# ---- PR mode: the documents a --changed-since run audits --------------------------------
@dataclass
class RunScope:
    """What `kbaudit run DOCS --changed-since REV` audits: the KB files changed since REV (from
    git), plus the documents of claims whose evidence changed in the sources since the store's
    last full run."""

    rev: str
    commit: str
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)
    evidence_changed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def selected(self) -> set[str]:
        return set(self.changed) | set(self.evidence_changed)

    def run_fields(self, documents: list[Document]) -> dict:
        """The runs row's scope columns."""
        return {
            "scope": "changed",
            "changed_since": self.rev,
            "documents_audited": sorted(d.doc_id for d in documents),
            "documents_deleted": list(self.deleted),
        }


def _is_kb_file(root: Path, doc_id: str) -> bool:
    """Whether a path the git diff names is one that ingest would read (type, hidden, ignored)."""
    parts = doc_id.split("/")
    if any(part.startswith(".") for part in parts) or Path(doc_id).suffix.lower() not in DOC_SUFFIXES:
        return False
    spec = _ignore_spec(Path(root).resolve())
    return spec is None or not spec.match_file(doc_id)


def last_full_run(store: Store | None) -> dict | None:
    """run_id and corpus fingerprint of the store's newest full run (None: no store or none yet)."""
    if store is None or not store.run_ids():
        return None
    frame = store.query("SELECT * FROM full_runs ORDER BY run_id DESC LIMIT 1")  # an older store's runs have no corpus
    if frame.empty:
        return None
    corpus = frame.corpus.iloc[0] if "corpus" in frame.columns else None
    return {"run_id": frame.run_id.iloc[0], "corpus": None if corpus is None or corpus != corpus else str(corpus)}


def _evidence_signature(items) -> frozenset:
    return frozenset((e.passage_id, e.source_version, e.sentence, e.counterpart_of or "", e.section or "") for e in items)


def _stored_claims(store: Store, run_id: str, skip_docs: set[str]) -> list[Claim]:
    frame = store.query("SELECT * FROM claims_history WHERE run_id = ? AND checkworthy", [run_id])
    names = [f.name for f in dataclasses.fields(Claim) if f.name in frame.columns]
    claims = []
    for row in rows_of(frame.loc[:, names]):
        if row["doc_id"] in skip_docs:
            continue
        requirements = row.get("requirements")
        row["requirements"] = tuple(requirements) if requirements is not None else ()
        if row.get("freshness_days") is not None:
            row["freshness_days"] = int(row["freshness_days"])
        claims.append(Claim(**row))
    return claims


def evidence_changed_docs(
    store: Store, run_id: str, sources: list[SourceDoc], settings: Settings, caches: Caches, cache_dir: Path | None, skip_docs: set[str]
) -> list[str]:
    """Documents (other than `skip_docs`) with a claim whose evidence, retrieved from the current
    sources, differs from what the full run `run_id` found for it: a source changed, was removed,
    or a new passage now ranks among the claim's top k.

    The claims come from the store (their documents are not read); the searches land in the
    evidence cache, so the audit of those documents reuses them."""
    claims = _stored_claims(store, run_id, skip_docs)
    if not claims:
        return []
    evidence, _ = retrieve_stage(sources, claims, settings, caches, cache_dir)
    before: dict[str, list] = {}
    frame = store.query(
        "SELECT claim_id, passage_id, source_version, sentence, counterpart_of, section FROM evidence WHERE run_id = ?", [run_id]
    )
    for row in rows_of(frame):
        before.setdefault(row["claim_id"], []).append(SimpleNamespace(**row))
    return sorted(
        {c.doc_id for c in claims if _evidence_signature(evidence.get(c.claim_id, [])) != _evidence_signature(before.get(c.claim_id, []))}
    )


def changed_scope(
    settings: Settings, store: Store | None, sources: list[SourceDoc], caches: Caches | None = None, cache_dir: Path | None = None
) -> RunScope:
    """The documents a `--changed-since` run audits (see RunScope)."""
    caches = caches or Caches.at(None)
    if not settings.changed_since:
        raise UsageError("the changed-documents scope needs --changed-since REV")
    root = settings.docs_folder
    changes = changed_documents(root, settings.changed_since)
    scope = RunScope(
        rev=changes.rev,
        commit=changes.commit,
        changed=[d for d in changes.changed if _is_kb_file(root, d)],
        deleted=[d for d in changes.deleted if _is_kb_file(root, d)],
        renamed={new: old for new, old in changes.renamed.items() if _is_kb_file(root, new)},
    )
    scope.notes.append(
        f"changed since {changes.rev} ({changes.commit[:12]}): {len(scope.changed)} document(s) changed, {len(scope.deleted)} deleted"
        + "".join(f"; renamed {old} -> {new}" for new, old in sorted(scope.renamed.items()))
    )
    prior = last_full_run(store)
    if prior is None:
        scope.notes.append("no full run in the store: claims of unchanged documents were not checked for changed evidence")
    elif store is not None and prior["corpus"] != corpus_fingerprint(sources):  # a prior run implies a store
        scope.evidence_changed = [
            d
            for d in evidence_changed_docs(
                store, prior["run_id"], sources, settings, caches, cache_dir, set(scope.changed) | set(scope.deleted)
            )
            if (Path(root) / d).is_file()
        ]
        scope.notes.append(
            f"sources changed since full run {prior['run_id']}: {len(scope.evidence_changed)} unchanged document(s) audited "
            "for changed evidence" + (f" ({', '.join(scope.evidence_changed)})" if scope.evidence_changed else "")
        )
    return scope
