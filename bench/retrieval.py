"""Retrieval benchmark on SciFact-format data: both retrieval paths side by side, one process.

``kbaudit bench retrieval --claims claims_dev.jsonl --corpus corpus.jsonl [--limit N] [--paths both|static+minilm] [--json OUT]``

For every claim with gold evidence abstracts, the abstracts are ranked (one passage per abstract,
the best one) by BM25 alone, dense alone and the hybrid, all from one scoring pass, first on the
default path (static first stage, the MiniLM on the candidates), then on the MiniLM-only path
(names prefixed ``minilm_``). Metrics:

- ``{hybrid,bm25,dense,static,first}_recall@{1,3,10}``: mean fraction of a claim's gold
  abstracts in the top k (``static``: the static cosine alone; ``first``: the first-stage fusion).
- ``{...}_mrr``: mean reciprocal rank of the first gold abstract (within the top 100).
- ``passages_per_s``: passages over the index + search time, from scratch (empty embedding
  cache; on the default path the MiniLM embeds its candidates during the search).
- ``claims_per_s``: ``Retriever.search`` throughput (claim embedding included, k=5, with
  sentence alignment).
- ``dense_scored`` / ``dense_scored_fraction``: passages the MiniLM embedded on the default path.
- ``rss_mb`` / ``peak_rss_mb``: after the default path (it runs first); ``minilm_*`` after both.
- ``speedup_over_minilm``: the MiniLM-only path's index + search time over the default path's.
- ``floor_s``: the MiniLM embedding floor: the passage texts embedded once, no cache, in the
  same run (``--floor-sample f``: a fraction, scaled up); ``index_over_floor`` = index time / floor.
- ``index_overhead_s`` / ``overhead_over_floor``: the warm-cache index time of the default path
  (everything but the MiniLM) and its ratio to the floor.
- ``rerun_over_first``: a second index + search with the warm embedding cache (new Embedder and
  Retriever, as a new process would build them) / the first index + search.
"""

from __future__ import annotations

import json
import logging
import random
import tempfile
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from kb.evidence.embed import Embedder, StaticEmbedder
from kb.evidence.retrieve import Retriever, build_passages
from kb.evidence.sources import load_sources
from kb.records import Claim

log = logging.getLogger("kbaudit.bench.retrieval")
RECALL_AT = (1, 3, 10)
DEPTH = 100


class Params(BaseModel):
    """`kbaudit bench retrieval` parameters."""

    claims: str = Field(description="SciFact-format claims JSONL (id, claim, evidence)")
    corpus: str = Field(description="SciFact corpus JSONL (doc_id, title, abstract) or any sources path")
    limit: int | None = Field(default=None, description="only the first N claims with evidence")
    cache_dir: str | None = Field(default=None, description="embedding cache folder, must start empty (default: a fresh temporary one)")
    paths: Literal["both", "static+minilm"] = Field(
        default="both",
        description="both (default): the default path and the MiniLM-only path side by side; static+minilm: the default path only",
    )
    static_model: str | None = Field(default=None, description="first-stage model folder (default: the shipped static model)")
    minilm_cache: str | None = Field(
        default=None,
        description="embedding cache for the MiniLM-only path's passage vectors (kept between runs; its index time then adds the floor)",
    )
    floor_sample: float = Field(
        default=1.0,
        description="embed this random fraction of the texts for the floor and scale the time up (default 1.0: all of them)",
    )
    rerank_candidates: int = Field(
        default=50, ge=1, description="candidates per claim the MiniLM scores on the two-stage path (default 50, as the setting)"
    )


def load_claims(path: str | Path, limit: int | None = None) -> list[tuple[str, str, set[str]]]:
    """(claim id, claim text, gold abstract ids) for the claims that have evidence."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            gold = {str(d) for d in (row.get("evidence") or {})}
            if gold:
                out.append((str(row["id"]), row["claim"], gold))
            if limit and len(out) >= limit:
                break
    return out


def ranked_sources(retriever: Retriever, rankings: list[list[int]]) -> list[list[str]]:
    return [[retriever.passages[j].source_id for j in r] for r in rankings]


def score_rankings(ranked: list[list[str]], gold: list[set[str]], prefix: str) -> dict[str, float]:
    n = max(1, len(gold))
    out = {}
    for k in RECALL_AT:
        out[f"{prefix}_recall@{k}"] = sum(len(g & set(r[:k])) / len(g) for r, g in zip(ranked, gold)) / n
    mrr = 0.0
    for r, g in zip(ranked, gold):
        for i, sid in enumerate(r, start=1):
            if sid in g:
                mrr += 1.0 / i
                break
    out[f"{prefix}_mrr"] = mrr / n
    return out


def _index_and_search(embedder, sources, claims: list[Claim], settings: dict, first_stage=None):
    t0 = time.perf_counter()
    retriever = Retriever(embedder, first_stage=first_stage, **settings)
    retriever.index(sources)
    t1 = time.perf_counter()
    retriever.search(claims, k=5)
    t2 = time.perf_counter()
    return retriever, t1 - t0, t2 - t1


def _rss_mb() -> float:
    """Current resident memory (Linux /proc; elsewhere the peak so far)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return _peak_rss_mb()


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _quality(retriever: Retriever, queries: list[str], gold: list[set[str]], modes: tuple[str, ...], prefix: str = "") -> dict[str, float]:
    rankings = retriever.rank(queries, k=DEPTH, modes=modes, max_per_source=1)
    out: dict[str, float] = {}
    for mode in modes:
        out.update(score_rankings(ranked_sources(retriever, rankings[mode]), gold, prefix + mode))
    return out


def run(params: Params, settings: dict | None = None) -> dict[str, float]:
    """The figures; `settings`: keyword arguments for every Retriever built (default: its own)."""
    settings = {"rerank": params.rerank_candidates, **(settings or {})}  # no first stage: rerank is unused
    sources, errors = load_sources(params.corpus)
    items = load_claims(params.claims, params.limit)
    claims = [Claim(claim_id=cid, doc_id="bench", version_id="bench", start=0, end=0, source_text=t, text=t) for cid, t, _ in items]
    gold = [g for _, _, g in items]
    queries = [c.text for c in claims]
    static_path = params.static_model
    minilm_cache = params.minilm_cache

    tmp = None
    cache_dir = params.cache_dir
    if cache_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="kbaudit-bench-")
        cache_dir = tmp.name
    try:
        # The floor: the exact texts the MiniLM-only index embeds, once, no cache. The model is
        # loaded before any timing, and shared, so neither path pays for loading it.
        floor = Embedder(backend="torch")
        model = floor.model
        probe = Retriever(floor, **settings)
        texts = list(dict.fromkeys(probe.index_text(p, s) for src in sources for p, s in build_passages(src, probe.window, probe.stride)))
        fraction = min(1.0, max(0.0, float(params.floor_sample or 1.0)))
        sample = texts if fraction >= 1.0 else random.Random(0).sample(texts, max(1, round(fraction * len(texts))))
        log.info("floor: embedding %d of %d passage texts", len(sample), len(texts))
        t0 = time.perf_counter()
        floor.embed_uncached(sample)
        floor_s = (time.perf_counter() - t0) * len(texts) / len(sample)
        log.info("floor: %.1f s (scaled to all texts)", floor_s)

        # The default path: static first stage over every passage, the MiniLM on candidates.
        first = Embedder(cache_dir=cache_dir)
        first._model = model
        _ = first.runner  # the ONNX export and session, before timing, as the model is loaded
        static = StaticEmbedder(static_path)
        _ = static.model  # loaded before timing, as the MiniLM is
        retriever, index_s, search_s = _index_and_search(first, sources, claims, settings, first_stage=static)
        log.info("static+minilm: index %.1f s, search %.1f s (%d passages, %d scored by the MiniLM)",
                 index_s, search_s, len(retriever.passages), retriever.dense_scored)  # fmt: skip
        rss, peak = _rss_mb(), _peak_rss_mb()
        metrics = _quality(retriever, queries, gold, ("hybrid", "bm25", "dense", "static", "first"))
        dense_scored = retriever.dense_scored  # after ranking to depth 100 as well
        log.info("quality: %s", json.dumps({k: round(v, 4) for k, v in metrics.items()}))

        second = Embedder(cache_dir=cache_dir)  # a new process: cache from disk, model not loaded
        _, re_index_s, re_search_s = _index_and_search(second, sources, claims, settings, first_stage=StaticEmbedder(static_path))
        log.info("second run: index %.1f s, search %.1f s", re_index_s, re_search_s)

        n_pass = len(retriever.passages)
        del retriever
        total_s = index_s + search_s
        if params.paths == "both":
            # The MiniLM-only path, same process. With --minilm-cache its passage vectors may come
            # from an earlier run; its index time then adds the floor (the model time it skipped).
            mini = Embedder(cache_dir=minilm_cache or Path(cache_dir) / "minilm-only", backend="torch")
            mini._model = model
            mini_retriever, m_index_s, m_search_s = _index_and_search(mini, sources, claims, settings)
            warm = mini.texts_embedded < len(texts) // 2
            if warm:
                m_index_s += floor_s
            log.info(
                "minilm: index %.1f s%s, search %.1f s",
                m_index_s,
                " (floor added: vectors from --minilm-cache)" if warm else "",
                m_search_s,
            )
            m_total_s = m_index_s + m_search_s
            metrics.update(_quality(mini_retriever, queries, gold, ("hybrid", "bm25", "dense"), prefix="minilm_"))
            metrics.update(
                {
                    "minilm_index_s": m_index_s,
                    "minilm_search_s": m_search_s,
                    "minilm_cache_warm": float(warm),
                    "minilm_passages_per_s": n_pass / m_total_s if m_total_s else 0.0,
                    "minilm_claims_per_s": len(claims) / m_search_s if m_search_s else 0.0,
                    "minilm_index_over_floor": m_index_s / floor_s if floor_s else 0.0,
                    "minilm_rss_mb": _rss_mb(),
                    "minilm_peak_rss_mb": _peak_rss_mb(),
                    "speedup_over_minilm": m_total_s / total_s if total_s else 0.0,
                }
            )
        else:
            # the MiniLM-only index costs the floor plus the same non-model work
            metrics["speedup_over_minilm_estimate"] = (floor_s + re_index_s) / total_s if total_s else 0.0
    finally:
        if tmp is not None:
            tmp.cleanup()

    metrics.update(
        {
            "claims": float(len(claims)),
            "sources": float(len(sources)),
            "source_errors": float(len(errors)),
            "passages": float(n_pass),
            "dense_scored": float(dense_scored),
            "dense_scored_fraction": dense_scored / n_pass if n_pass else 0.0,
            "floor_s": floor_s,
            "floor_sample": fraction,
            "index_s": index_s,
            "search_s": search_s,
            "rerun_s": re_index_s + re_search_s,
            # everything indexing does besides the MiniLM (warm-cache index time)
            "index_overhead_s": re_index_s,
            "overhead_over_floor": re_index_s / floor_s if floor_s else 0.0,
            "passages_per_s": n_pass / total_s if total_s else 0.0,
            "claims_per_s": len(claims) / search_s if search_s else 0.0,
            "index_over_floor": index_s / floor_s if floor_s else 0.0,
            "rerun_over_first": (re_index_s + re_search_s) / total_s,
            "rerun_model_loaded": float(second._model is not None),
            "rss_mb": rss,
            "peak_rss_mb": peak,
        }
    )
    print(targets(metrics))
    return metrics


def targets(m: dict[str, float]) -> str:
    """The issue's targets against this run's figures, one line each."""
    rows: list[tuple[str, float, bool | None]] = [  # None: a figure with no target, shown as info
        ("hybrid recall@10 >= 0.95 (static+minilm)", m["hybrid_recall@10"], m["hybrid_recall@10"] >= 0.95),
        ("hybrid recall@3 >= 0.85 (static+minilm)", m["hybrid_recall@3"], m["hybrid_recall@3"] >= 0.85),
        ("hybrid recall@10 above bm25 and dense", m["hybrid_recall@10"],
         m["hybrid_recall@10"] > max(m["bm25_recall@10"], m["dense_recall@10"])),
    ]  # fmt: skip
    if "speedup_over_minilm" in m:
        rows.append(("index + search speed-up over minilm", m["speedup_over_minilm"], None))
        rows.append(
            (
                "hybrid recall@10 within 0.01 of minilm's",
                m["hybrid_recall@10"],
                m["hybrid_recall@10"] >= m["minilm_hybrid_recall@10"] - 0.01,
            )
        )
    return "\n".join(f"target  {name:<44}{value:>8.3f}  {'' if ok is None else 'met' if ok else 'NOT met'}" for name, value, ok in rows)
