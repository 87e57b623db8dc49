"""What a cached stage result depends on: the versions of the code behind each stage, the
corpus, the retrieval settings and a verdict's inputs (part of every cache key)."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import kb.claims.classify
import kb.claims.rewrite
import kb.claims.split
import kb.claims.text
import kb.claims.units
import kb.evidence.bm25
import kb.evidence.embed
import kb.evidence.passages
import kb.evidence.retrieve
import kb.evidence.versions
import kb.verify
from kb.config import Settings
from kb.evidence.embed import first_stage_id
from kb.ingest.parse import parser_modules
from kb.records import Claim, SourceDoc
from kb.store.cache import code_version, key_of

# D2 and deeper widen retrieval (docs/deep-verifier.md, "Routing by depth").
TOP_K_BY_DEPTH = {"D0": 1, "D1": 1, "D2": 10, "D3": 10, "D4": 10, "D5": 10}


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
    return code_version(*parser_modules(), kb.claims.split, kb.claims.units, kb.claims.rewrite, kb.claims.classify, kb.claims.text)


@functools.cache
def retriever_version() -> str:
    # the sentence splitter cuts passages into the sentences evidence is aligned by
    return code_version(
        kb.evidence.retrieve, kb.evidence.passages, kb.evidence.bm25, kb.evidence.versions, kb.evidence.embed, kb.claims.text
    )


@functools.cache
def verifier_version() -> str:
    """The verifier's code and its shipped weights' manifest: a new model invalidates verdicts."""
    return _tree_version(Path(kb.verify.__file__).parent, ("*.py", "weights/*.json"))


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


def retrieval_identity(settings: Settings) -> tuple:
    """What the evidence depends on besides the code and the corpus: the path, its models and,
    on the two-stage path, its candidate count."""
    if settings.retrieval_path != "static+minilm":
        return settings.retrieval_path, None, settings.embed_model_path
    first = first_stage_id(settings.static_model_path)
    return settings.retrieval_path, first, settings.embed_model_path, settings.rerank_candidates


def top_k_for(settings: Settings) -> int:
    return max(settings.top_k, TOP_K_BY_DEPTH[settings.depth])


def verdict_key(claim: Claim, evidence_digest: str, settings: Settings) -> str:
    """Everything a verdict depends on: the claim, its evidence set (``verdict_digest``), the
    verifier, and for time-sensitive claims the date (freshness is relative to it)."""
    return key_of(
        "verdict",
        claim.claim_id,
        claim.text,
        claim.sentence,
        list(claim.requirements),
        claim.time_sensitive,
        claim.freshness_days,
        evidence_digest,
        verifier_version(),
        settings.model_path,
        settings.depth == "D0",
        settings.run_date.isoformat() if claim.time_sensitive else None,
    )
