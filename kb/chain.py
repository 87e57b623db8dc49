"""The audit's one stage chain (`run_audit`), its stages as plain functions, and the run summary.

`run_audit` is what every audit runs: the Prefect flow (with a runner from `tasks/` that makes
each stage a task), the benches, `kbaudit verify` and `VerifyLoop` (with `run_here`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import gc
import hashlib
import json
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Protocol

import kb.claims.split
import kb.evidence.embed
import kb.evidence.retrieve
import kb.ingest.common
import kb.ingest.front_matter
import kb.ingest.html_blocks
import kb.ingest.markdown
import kb.ingest.markdown_containers
import kb.ingest.markdown_inline
import kb.ingest.offsets
import kb.ingest.parse
import kb.ingest.rst
from kb import progress
from kb.claims.split import split_claims
from kb.config import ClaimSettings, Settings
from kb.correct.draft import DraftEdit, draft_edits
from kb.correct.review import rejected_proposals
from kb.correct.versions import run_tables
from kb.errors import UsageError
from kb.escalate.lessons import load_lessons
from kb.escalate.route import DEEP_DEPTHS, EscalationResult, escalate
from kb.evidence.embed import Embedder, first_stage_for, first_stage_id
from kb.evidence.git_source import ingest_git
from kb.evidence.receipts import (
    EVIDENCE_CACHE_FORMAT,
    RunEvidence,
    decode_evidence,
    digest_of_lines,
    encode_evidence,
    evidence_lines,
    evidence_table,
    evidence_table_as_last_run,
    evidence_verdict_digest,
    sign_batch,
)
from kb.evidence.retrieve import Retriever
from kb.evidence.sources import load_sources
from kb.ingest.git import changed_documents
from kb.ingest.walk import DOC_SUFFIXES, _ignore_spec, ingest, shard_of
from kb.log import logger
from kb.records import LABELS, Claim, Document, Edit, Evidence, IngestError, SourceDoc, Verdict, replaced
from kb.store import Store, new_run_id, rows_of
from kb.store.cache import ResultCache, code_version, key_of
from kb.verify import verifier_for
from kb.verify.policy import document_status

# Edit statuses that reach a reviewer or a new version (dropped and suppressed drafts do not).
PROPOSED = ("auto", "queued", "needs_rewrite")

# While any audit runs, the cycle collector's youngest generation waits for this many new
# objects instead of 700. A run builds hundreds of thousands of small records that live until it
# ends and are freed by reference counting; each collection walked them and found nothing to
# free (an unchanged rerun of the speed bench's KB: 4.1 s at 700, 3.6-3.9 s at 100,000).
GC_YOUNG_THRESHOLD = 100_000


class _FewerCollections(contextlib.ContextDecorator):
    """The collector's thresholds raised while any audit runs (audits can run in threads at
    once: the first to start raises them, the last to end puts them back)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._saved = gc.get_threshold()

    def __enter__(self) -> None:
        with self._lock:
            if self._running == 0:
                self._saved = gc.get_threshold()
                gc.set_threshold(max(self._saved[0], GC_YOUNG_THRESHOLD), *self._saved[1:])
            self._running += 1

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                gc.set_threshold(*self._saved)


fewer_collections = _FewerCollections()

# D2 and deeper widen retrieval (docs/deep-verifier.md, "Routing by depth").
TOP_K_BY_DEPTH = {"D0": 1, "D1": 1, "D2": 10, "D3": 10, "D4": 10, "D5": 10}


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


# ---- versions of the code behind each stage (part of every cache key) --------------------
def _tree_version(folder: Path, patterns: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for pattern in patterns:
        for path in sorted(folder.glob(pattern)):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@functools.cache
def splitter_version() -> str:
    # every module a page's parse goes through: a change in any of them can change its claims
    parser = (kb.ingest.parse, kb.ingest.front_matter, kb.ingest.offsets, kb.ingest.common, kb.ingest.markdown,
              kb.ingest.markdown_containers, kb.ingest.markdown_inline, kb.ingest.html_blocks, kb.ingest.rst)  # fmt: skip
    return code_version(*parser, kb.claims.split)


@functools.cache
def retriever_version() -> str:
    return code_version(kb.evidence.retrieve, kb.evidence.embed)


@functools.cache
def verifier_version() -> str:
    """The verifier's code and its shipped weights' manifest: a new model invalidates verdicts."""
    return _tree_version(Path(__file__).parent / "verify", ("*.py", "weights/*.json"))


def corpus_fingerprint(sources: list[SourceDoc]) -> str:
    # a deletion is part of the corpus; the 4-tuple of a source still present is kept, so
    # fingerprints of stores written before deletions were marked still match
    # Stored in every runs row and compared with earlier runs' (PR mode): its form must not change
    # with the cache keys', so it has this digest of its own.
    versions = sorted(
        (s.source_id, s.source_version, str(s.source_date), s.authority, *([s.deleted_in] if s.deleted_in else [])) for s in sources
    )
    blob = json.dumps([versions], sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


# ---- stages ----------------------------------------------------------------------------
@dataclass
class Caches:
    """The stage caches of one store (all in memory when there is no store)."""

    claims: ResultCache
    evidence: ResultCache
    verdicts: ResultCache
    read: bool = True  # False for --full: recompute everything (results are still stored)

    @classmethod
    def at(cls, folder: Path | None, read: bool = True) -> Caches:
        evidence = ResultCache(folder, "evidence", codec=(encode_evidence, decode_evidence))
        return cls(ResultCache(folder, "claims"), evidence, ResultCache(folder, "verdicts"), read)

    def lookup(self, cache: ResultCache, keys: list[str], compute, batch_size: int, found: dict | None = None) -> tuple[list, set[int]]:
        """Cached values for keys; the rest computed in batches, each stored as soon as it is done
        (so a crash loses at most the batch in flight). A None result (a failure) is not stored.
        ``found``: the cached values, when the caller has looked them up already.

        Returns the values in key order and the indexes that were computed.
        """
        if found is None:
            found = cache.get_many(keys) if self.read else {}
        found = dict(found)
        missing = [i for i, k in enumerate(keys) if k not in found]
        for start in range(0, len(missing), batch_size):
            chunk = missing[start : start + batch_size]
            fresh = dict(zip((keys[i] for i in chunk), compute(chunk)))
            cache.put_many({k: v for k, v in fresh.items() if v is not None})
            found.update(fresh)
        return [found[k] for k in keys], set(missing)


def ingest_stage(
    settings: Settings, shard: tuple[int, int] = (0, 1), scope: RunScope | None = None
) -> tuple[list[Document], list[IngestError]]:
    """The KB's documents (of one shard; with a scope, only the documents it selects: the rest
    are not even read)."""
    shard_index, shard_count = shard
    selected = scope.selected if scope is not None else None

    def select(doc_id: str) -> bool:
        return (shard_count == 1 or shard_of(doc_id, shard_count) == shard_index) and (selected is None or doc_id in selected)

    everything = shard_count == 1 and selected is None
    if settings.docs_from_git:
        return ingest_git(str(settings.docs), settings.max_doc_bytes, select=None if everything else select)
    if everything:
        return ingest(settings.docs_folder, settings.max_doc_bytes)
    return ingest(settings.docs_folder, settings.max_doc_bytes, select=select)


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


def split_stage(
    documents: list[Document], caches: Caches | None = None, settings: ClaimSettings | None = None
) -> tuple[list[Claim], list[IngestError]]:
    caches = caches or Caches.at(None)
    settings = settings or ClaimSettings()
    errors: list[IngestError] = []
    # Non-default [claims] settings are part of the key; the defaults keep the keys of earlier stores.
    knobs = None if settings == ClaimSettings() else settings.model_dump(mode="json")

    def compute(indexes: list[int]) -> list[list[Claim] | None]:
        out = []
        for i in indexes:
            doc = documents[i]
            try:
                out.append(split_claims(doc, settings))
            except Exception as exc:  # one document's bug must not stop the batch
                errors.append(IngestError(doc.doc_id, "claims", f"claim splitting failed: {type(exc).__name__}: {exc}"))
                out.append(None)
        return out

    keys = [key_of("claims", d.doc_id, d.version_id, splitter_version(), *([knobs] if knobs else [])) for d in documents]
    per_doc, _ = caches.lookup(caches.claims, keys, compute, batch_size=200)
    claims = [c for doc_claims in per_doc if doc_claims for c in doc_claims]
    return claims, errors


def sources_stage(settings: Settings) -> tuple[list[SourceDoc], list[IngestError]]:
    sources: list[SourceDoc] = []
    errors: list[IngestError] = []
    for root in settings.sources_roots:
        found, bad = load_sources(root, today=settings.run_date)
        sources.extend(found)
        errors.extend(bad)
    logger.info("loaded %d source versions (%d errors)", len(sources), len(errors))
    return sources, errors


def make_retriever(sources: list[SourceDoc], settings: Settings, cache_dir: Path | None):
    cache = settings.embed_cache_dir or cache_dir
    first = first_stage_for(settings.static_model_path, cache) if settings.retrieval_path == "static+minilm" else None
    embedder = Embedder(settings.embed_model_path, cache_dir=cache, backend=settings.embed_backend)
    retriever = Retriever(embedder, first_stage=first, rerank=settings.rerank_candidates, index_cache=cache)
    retriever.index(sources)
    return retriever


def retrieval_identity(settings: Settings) -> tuple:
    """What the evidence depends on besides the code and the corpus: the path, its models and,
    on the two-stage path, its candidate count."""
    if settings.retrieval_path != "static+minilm":
        return settings.retrieval_path, None, settings.embed_model_path
    first = first_stage_id(settings.static_model_path)
    return settings.retrieval_path, first, settings.embed_model_path, settings.rerank_candidates


def top_k_for(settings: Settings) -> int:
    return max(settings.top_k, TOP_K_BY_DEPTH[settings.depth])


def retrieve_stage(
    sources: list[SourceDoc], claims: list[Claim], settings: Settings, caches: Caches | None = None, cache_dir: Path | None = None
) -> tuple[RunEvidence, int]:
    """Evidence for every check-worthy claim; the index is built only if some claim needs a search.

    Returns the evidence and how many claims reused a cached search (same claim, same corpus).
    """
    caches = caches or Caches.at(None)
    wanted = [c for c in claims if c.checkworthy]
    k = top_k_for(settings)
    corpus = corpus_fingerprint(sources)
    retriever = None

    identity = retrieval_identity(settings)
    keys = [key_of("evidence", c.claim_id, c.text, k, corpus, retriever_version(), EVIDENCE_CACHE_FORMAT, *identity) for c in wanted]
    # cached searches stay as their cache text (RunEvidence decodes a claim's rows when asked)
    found = caches.evidence.get_encoded_many(keys) if caches.read else {}
    todo = sum(1 for key in keys if key not in found)

    with progress.track("retrieval", todo, "claims") as bar:

        def compute(indexes: list[int]) -> list[list[Evidence]]:
            nonlocal retriever
            if retriever is None:
                retriever = make_retriever(sources, settings, cache_dir)
            batch = [wanted[i] for i in indexes]
            result = retriever.search(batch, k=k, on_batch=bar.update)
            # plain lists: their canonical lines are made when stored and again when signed, so
            # that a cold run does not hold every row's line beside the index (+95 MB at 10,000 claims)
            return [result.get(c.claim_id, []) for c in batch]

        results, computed = caches.lookup(caches.evidence, keys, compute, batch_size=2000, found=found)
    if retriever is not None and retriever.first_stage is not None:
        logger.info(
            "two-stage retrieval: %d of %d claims repeat a source sentence (no MiniLM pass); the MiniLM embedded %d of %d passages",
            retriever.anchored_claims, len(computed), retriever.dense_scored, len(retriever.passages),
        )  # fmt: skip
    return RunEvidence([c.claim_id for c in wanted], results), len(keys) - len(computed)


def sign_evidence(run_id: str, evidence: Mapping[str, list[Evidence]], key_dir: Path) -> tuple[RunEvidence, dict]:
    """Sign the retrieval batch and stamp each evidence row with the receipt id."""
    lines = sorted(line for claim_id in evidence for line in evidence_lines(evidence, claim_id))
    inputs = json.dumps(sorted(evidence)).encode()
    receipt = sign_batch(run_id, "retriever", inputs=inputs, outputs=None, key_dir=key_dir, outputs_hash=digest_of_lines(lines))
    if not isinstance(evidence, RunEvidence):
        evidence = RunEvidence(list(evidence), list(evidence.values()))
    evidence.stamp(receipt["receipt_id"])
    return evidence, receipt


def retrieve_and_sign(
    sources: list[SourceDoc], claims: list[Claim], settings: Settings, caches: Caches, run_id: str, cache_dir: Path | None, key_dir: Path
) -> tuple[RunEvidence, dict, int]:
    """The retrieve stage with its receipt: evidence (stamped), the signed receipt, searches reused."""
    evidence, reused = retrieve_stage(sources, claims, settings, caches, cache_dir)
    stamped, receipt = sign_evidence(run_id, evidence, key_dir)
    return stamped, receipt, reused


def verdict_key(claim: Claim, evidence_digest: str, settings: Settings) -> str:
    """Everything a verdict depends on: the claim, its evidence set (``verdict_digest``), the
    verifier, and for time-sensitive claims the date (freshness is relative to it)."""
    return key_of(
        "verdict",
        claim.claim_id,
        claim.text,
        list(claim.requirements),
        claim.time_sensitive,
        claim.freshness_days,
        evidence_digest,
        verifier_version(),
        settings.model_path,
        settings.depth == "D0",
        settings.run_date.isoformat() if claim.time_sensitive else None,
    )


VerifyBatch = Callable[[list[Claim], Mapping[str, list[Evidence]]], list[Verdict]]


def verify_stage(
    claims: list[Claim],
    evidence: Mapping[str, list[Evidence]],
    settings: Settings,
    caches: Caches | None = None,
    verify_batch: VerifyBatch | None = None,
    batch_size: int = 512,
) -> list[Verdict]:
    """A verdict per check-worthy claim: cached ones reused, the rest verified in batches.

    ``verify_batch(claims, evidence) -> verdicts`` (same order) verifies one batch of uncached claims;
    default: in this process with the run's verifier (the Dask runner passes one that fans the
    batch out over its workers, the cache staying here)."""
    caches = caches or Caches.at(None)
    wanted = [c for c in claims if c.checkworthy]
    verifier = None

    def verify_here(batch: list[Claim], evidence: Mapping[str, list[Evidence]]) -> list[Verdict]:
        nonlocal verifier
        if verifier is None:
            verifier = verifier_for(settings.model_path, settings.depth != "D0")
        verdicts = {
            v.claim_id: v for v in verifier.verify(batch, {c.claim_id: evidence.get(c.claim_id, []) for c in batch}, settings.run_date)
        }
        return [verdicts[c.claim_id] for c in batch]

    verify_batch = verify_batch or verify_here
    keys = [verdict_key(c, evidence_verdict_digest(evidence, c.claim_id), settings) for c in wanted]
    found = caches.verdicts.get_many(keys) if caches.read else {}

    with progress.track("verification", sum(1 for key in keys if key not in found), "claims") as bar:

        def compute(indexes: list[int]) -> list[Verdict]:
            verdicts = verify_batch([wanted[i] for i in indexes], evidence)
            bar.update(len(indexes))
            return verdicts

        results, computed = caches.lookup(caches.verdicts, keys, compute, batch_size, found=found)
    return [replaced(v, reused=i not in computed) for i, v in enumerate(results)]


def escalate_stage(
    claims: list[Claim],
    evidence: Mapping[str, list[Evidence]],
    verdicts: list[Verdict],
    settings: Settings,
    lessons: list[dict] | None = None,
):
    """Depth D3+: send low-confidence or high-risk claims to the deep verifier, within the budget."""
    return escalate([c for c in claims if c.checkworthy], evidence, verdicts, settings, settings.run_date, lessons)


class CachedVerifier:
    """The run's verifier behind the verdict cache, for re-verifying drafted corrections: a draft
    is a claim with new text, so its verdict has a key of its own (`verdict_key`), and an
    unchanged draft of an unchanged claim is not verified again on every run. Re-verifying the
    drafts of every contradicted or stale claim was most of a warm run's time (bench pr)."""

    def __init__(self, settings: Settings, caches: Caches):
        self.settings, self.caches, self._verifier = settings, caches, None

    def verify(self, claims: list[Claim], evidence: Mapping[str, list[Evidence]], today) -> list[Verdict]:
        def compute(indexes: list[int]) -> list[Verdict]:
            if self._verifier is None:
                self._verifier = verifier_for(self.settings.model_path, self.settings.depth != "D0")
            batch = [claims[i] for i in indexes]
            found = {v.claim_id: v for v in self._verifier.verify(batch, {c.claim_id: evidence.get(c.claim_id, []) for c in batch}, today)}
            return [found[c.claim_id] for c in batch]

        keys = [key_of("draft", verdict_key(c, evidence_verdict_digest(evidence, c.claim_id), self.settings)) for c in claims]
        verdicts, _ = self.caches.lookup(self.caches.verdicts, keys, compute, batch_size=512)
        return verdicts


def correct_stage(
    documents: list[Document],
    claims: list[Claim],
    verdicts: list[Verdict],
    evidence: Mapping[str, list[Evidence]],
    settings: Settings,
    suppressed: dict[str, str] | None = None,
    caches: Caches | None = None,
) -> list[DraftEdit]:
    """Draft, re-verify and risk-rate one edit per contradicted or stale claim (kb.correct.draft)."""
    verifier = CachedVerifier(settings, caches) if caches is not None else None
    return draft_edits(
        documents, claims, verdicts, evidence, settings=settings, verifier=verifier, today=settings.run_date, suppressed=suppressed
    )


def status_stage(documents: list[Document], claims: list[Claim], verdicts: list[Verdict]) -> dict[str, tuple[str, float, dict]]:
    by_doc: dict[str, list[Claim]] = {}
    for claim in claims:
        by_doc.setdefault(claim.doc_id, []).append(claim)
    verdict_of = {v.claim_id: v for v in verdicts}
    result = {}
    for doc in documents:
        doc_claims = [c for c in by_doc.get(doc.doc_id, []) if c.claim_id in verdict_of]
        result[doc.doc_id] = document_status(doc_claims, [verdict_of[c.claim_id] for c in doc_claims])
    return result


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
    settings = settings.for_run()
    shard_index, shard_count = shard
    tag = f"[shard {shard_index + 1}/{shard_count}] " if shard_count > 1 else ""
    clock = time.perf_counter()
    run_id = run_id or "unstored"
    if store is not None:
        cache_dir = store.root / "cache"
    key_dir = store.root / "keys" if store is not None else (cache_dir / "keys" if cache_dir else _ephemeral_key_dir())
    caches = Caches.at(cache_dir / "stages" if cache_dir else None, read=not settings.full)
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
    for note in escalation.summary_notes:
        logger.info("%s%s", tag, note)

    suppressed = rejected_proposals(store) if store is not None and store.run_ids() else {}
    result.edits = runner(
        "correct", correct_stage, result.documents, result.claims, result.verdicts, result.evidence, settings, suppressed, caches
    )
    result.doc_status = runner("document-status", status_stage, result.documents, result.claims, result.verdicts)
    logger.info("%s[5/6] corrections: %s", tag, dict(Counter(e.status for e in result.edits)) or "none needed")
    result.seconds = time.perf_counter() - clock
    if store is not None:
        result.counts = runner("stage-tables", stage_tables, store, run_id, result, f"part-{shard_index}")
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
        **counts.get("scope", {"scope": "full"}),
    }


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
