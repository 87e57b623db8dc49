"""The stages of the chain as plain functions, and the stage caches they share."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kb import progress
from kb.chain.identity import corpus_fingerprint, retrieval_identity, retriever_version, splitter_version, top_k_for, verdict_key
from kb.claims.split import split_claims
from kb.config import ClaimSettings, Settings
from kb.config.gitspec import with_kb_release
from kb.correct.draft import DraftEdit, draft_edits
from kb.escalate.route import escalate
from kb.evidence.embed import Embedder, first_stage_for
from kb.evidence.git_source import ingest_git, pages_kept_after
from kb.evidence.receipts import (
    EVIDENCE_CACHE_FORMAT,
    RunEvidence,
    decode_evidence,
    digest_of_lines,
    encode_evidence,
    evidence_lines,
    evidence_verdict_digest,
    sign_batch,
)
from kb.evidence.retrieve import Retriever
from kb.evidence.sources import load_sources
from kb.ingest.walk import ingest, shard_of
from kb.log import logger
from kb.records import Claim, Document, Evidence, IngestError, SourceDoc, Verdict, replaced
from kb.store.cache import ResultCache, key_of
from kb.verify import verifier_for
from kb.verify.policy import cell_settles_in_row, document_status

if TYPE_CHECKING:
    from kb.chain.scope import RunScope


# Edit statuses that reach a reviewer or a new version (dropped and suppressed drafts do not).
PROPOSED = ("auto", "queued", "needs_rewrite")


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
        widened, kb_rev = with_kb_release(root, str(settings.docs)) if isinstance(root, str) else (root, None)
        found, bad = load_sources(widened, today=settings.run_date)
        if kb_rev is not None:
            found = pages_kept_after(found, kb_rev)
        sources.extend(found)
        errors.extend(bad)
    logger.info("loaded %d source versions (%d errors)", len(sources), len(errors))
    return sources, errors


def settles_as_written(settings: Settings) -> bool:
    """Whether the run settles claims its newest corpus states as written without a model (the
    default path); the MiniLM-only path searches and judges every claim, as the reference."""
    return settings.retrieval_path == "static+minilm"


def make_retriever(sources: list[SourceDoc], settings: Settings, cache_dir: Path | None):
    cache = settings.embed_cache_dir or cache_dir
    first = first_stage_for(settings.static_model_path, cache) if settings.retrieval_path == "static+minilm" else None
    embedder = Embedder(settings.embed_model_path, cache_dir=cache, backend=settings.embed_backend)
    settle = settles_as_written(settings)
    retriever = Retriever(
        embedder, first_stage=first, rerank=settings.rerank_candidates, index_cache=cache, settle=settle,
        settles_cell=cell_settles_in_row if settle else None,
    )  # fmt: skip
    retriever.index(sources)
    return retriever


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
    keys = [
        key_of("evidence", c.claim_id, c.text, c.sentence, k, corpus, retriever_version(), EVIDENCE_CACHE_FORMAT, *identity) for c in wanted
    ]
    # cached searches stay as their cache text (RunEvidence decodes a claim's rows when asked)
    found = caches.evidence.get_encoded_many(keys) if caches.read else {}
    todo = sum(1 for key in keys if key not in found)

    with progress.track("retrieval", todo, "claims") as bar:

        def compute(indexes: list[int]) -> list[list[Evidence]]:
            nonlocal retriever
            if retriever is None:
                retriever = make_retriever(sources, settings, cache_dir)
            batch = [wanted[i] for i in indexes]
            result = retriever.search(batch, k=k, on_batch=bar.update, on_skip=bar.skip)
            # plain lists: their canonical lines are made when stored and again when signed, so
            # that a cold run does not hold every row's line beside the index (+95 MB at 10,000 claims)
            return [result.get(c.claim_id, []) for c in batch]

        results, computed = caches.lookup(caches.evidence, keys, compute, batch_size=2000, found=found)
    if retriever is not None and retriever.first_stage is not None:
        logger.info(
            "two-stage retrieval: %d of %d claims settled as written (no search), %d repeat a source sentence (no MiniLM pass);"
            " the MiniLM embedded %d of %d passages",
            retriever.settled_claims, len(computed), retriever.anchored_claims, retriever.dense_scored, len(retriever.passages),
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
            verifier = verifier_for(settings.model_path, settings.depth != "D0", settles_as_written(settings), settings.verifier_backend)
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
                self._verifier = verifier_for(
                    self.settings.model_path, self.settings.depth != "D0", settles_as_written(self.settings), self.settings.verifier_backend
                )
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


def status_stage(
    documents: list[Document], claims: list[Claim], verdicts: list[Verdict], edits: list | None = None
) -> dict[str, tuple[str, float, dict]]:
    """Each document's status, score and components (kb.verify.policy.document_status); with the
    run's edits, a document whose every finding's edit was accepted is EDITS_ACCEPTED."""
    by_doc: dict[str, list[Claim]] = {}
    for claim in claims:
        by_doc.setdefault(claim.doc_id, []).append(claim)
    verdict_of = {v.claim_id: v for v in verdicts}
    accepted = {e.claim_id for e in edits or () if e.status == "auto"}
    result = {}
    for doc in documents:
        doc_claims = [c for c in by_doc.get(doc.doc_id, []) if c.claim_id in verdict_of]
        result[doc.doc_id] = document_status(doc_claims, [verdict_of[c.claim_id] for c in doc_claims], accepted)
    return result
