"""Cost of full, 1%-changed and unchanged runs on a synthetic KB built from the SciFact corpus
(with ``--git BUNDLE``: a real docs history audited in git mode, see bench.speed_git).

The KB: Markdown pages of 10 sentences each, taken from SciFact abstracts (about one page in
five has a number changed, so the verifier meets contradictions); the sources: the whole
SciFact corpus. Every figure comes from one process, so the ratios compare like with like:

- full run: a fresh store, every stage computed (embedding cache empty), with the default
  retrieval path (static first stage + MiniLM on the candidates);
- the same full run with the MiniLM-only path, in a second fresh store (``--paths both``, the
  default): ``speedup_over_minilm`` is the ratio of the two runs' claims/s;
- 1% change: one sentence edited in 1% of the pages, then a run against the first store;
- no change: the same inputs again;
- with ``--floor``: the embedding floor (the claim and passage texts embedded once with the
  MiniLM in torch, no cache).
"""

from __future__ import annotations

import json
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from bench import data_path
from kb.chain import AuditResult, audit_and_commit
from kb.config import ConfigError, Settings
from kb.evidence.embed import Embedder
from kb.evidence.retrieve import Retriever, build_passages
from kb.evidence.sources import load_sources
from kb.store import Store

SENTENCES_PER_PAGE = 10
# The paths compared: the default (static first stage, the MiniLM in ONNX Runtime on the
# candidates, the verifier in ONNX Runtime) and the MiniLM-only path as it was before either
# (torch on every passage and for the verifier). Retrieval path, embed and verifier backend.
PATHS = {"static+minilm": ("static+minilm", "onnx"), "minilm": ("minilm", "torch")}


class Params(BaseModel):
    """`kbaudit bench speed` parameters."""

    claims: int = Field(default=2000, description="claims in the synthetic KB (default 2000)")
    corpus: str = Field(
        default_factory=lambda: data_path("scifact", "corpus.jsonl"),
        description="SciFact corpus.jsonl, the sources (default: $KBAUDIT_DATA/scifact/corpus.jsonl)",
    )
    depth: str = Field(default="D1", description="verification depth (default D1)")
    workdir: str | None = Field(default=None, description="keep the KB and store here (default: a temporary folder)")
    seed: int = 13
    corpus_extra: int | None = Field(
        default=None,
        description="sources: only the abstracts the KB was built from plus this many others (default: the whole corpus)",
    )
    full_only: bool = Field(
        default=False,
        description="only the full run: claims/s and peak RSS at sizes where the floor and reruns would take too long",
    )
    paths: Literal["both", "static+minilm", "minilm"] = Field(
        default="both",
        description="retrieval paths to run: both (default: the default path, then the MiniLM-only path, side by side) or one",
    )
    floor: bool = Field(default=False, description="also measure the MiniLM embedding floor (slow: every text embedded once more)")
    warm_embeddings: str | None = Field(
        default=None,
        description="copy this embedding cache (a store's cache/embeddings) in first; the run is then not a cold full run",
    )
    git: str | None = Field(
        default=None,
        description="a docs history's git bundle: audit it in git mode (cold, warm, and on the MiniLM-only path) instead of the synthetic KB",
    )
    old: str | None = Field(default=None, description="with --git: the release audited as the KB (default: the fourth newest)")
    revs: str | None = Field(
        default=None, description="with --git: comma-separated releases read as sources (default: the three after --old)"
    )
    rerank_candidates: int = Field(
        default=50, ge=1, description="candidates per claim the MiniLM scores on the two-stage path (default 50, as the setting)"
    )


def _page(sentences: list[str], title: str) -> str:
    body = "\n\n".join(sentences)
    return f"---\ntitle: {json.dumps(title)}\nupdated: 2024-01-01\n---\n\n# {title}\n\n{body}\n"


def build_kb(corpus: Path, claims: int, folder: Path, seed: int) -> tuple[list[Path], set]:
    """Pages of SciFact sentences; some with a number changed. Returns the page paths and the
    ids of the abstracts used."""
    rng = random.Random(seed)
    abstracts = []
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            sentences = [s.strip() for s in row["abstract"] if 40 <= len(s.strip()) <= 300]
            if sentences:
                abstracts.append((row["doc_id"], row["title"], sentences))
    rng.shuffle(abstracts)
    folder.mkdir(parents=True, exist_ok=True)
    pages: list[Path] = []
    pool = iter(abstracts * (claims // (len(abstracts) * 3) + 2))
    made = 0
    used = set()
    while made < claims:
        doc_id, title, sentences = next(pool)
        used.add(doc_id)
        chosen = sentences[:SENTENCES_PER_PAGE]
        if rng.random() < 0.2:
            chosen = [re.sub(r"\b(\d+)\b", lambda m: str(int(m.group(1)) + 7), s, count=1) for s in chosen]
        path = folder / f"page-{len(pages):06d}.md"
        path.write_text(_page(chosen, title[:120]), encoding="utf-8")
        pages.append(path)
        made += len(chosen)
    return pages, used


def subset_corpus(corpus: Path, keep: set, extra: int, target: Path, seed: int) -> Path:
    """The abstracts in `keep` plus `extra` others, as a corpus file of the same format."""
    rng = random.Random(seed + 2)
    lines = corpus.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if json.loads(line)["doc_id"] in keep]
    others = [line for line in lines if json.loads(line)["doc_id"] not in keep]
    kept += rng.sample(others, min(extra, len(others)))
    target.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return target


def change_pages(pages: list[Path], fraction: float, seed: int) -> int:
    rng = random.Random(seed + 1)
    chosen = rng.sample(pages, max(1, int(len(pages) * fraction)))
    for path in chosen:
        text = path.read_text(encoding="utf-8")
        path.write_text(text.rstrip("\n") + "\n\nThis page was revised after review in 2025.\n", encoding="utf-8")
    return len(chosen)


def change_pages_back(pages: list[Path]) -> None:
    """Undo change_pages, so a second path audits the same KB as the first full run."""
    tail = "\n\nThis page was revised after review in 2025.\n"
    for path in pages:
        text = path.read_text(encoding="utf-8")
        if text.endswith(tail):
            path.write_text(text[: -len(tail)] + "\n", encoding="utf-8")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _startup_seconds() -> float:
    """Fixed cost of any run: a new interpreter importing the flow (Prefect, torch, the stages)."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import flows.audit, kb.chain, kb.evidence.retrieve, kb.verify"], check=True)
    return time.perf_counter() - started


def _timed_run(settings, store) -> tuple[float, AuditResult]:
    clock = time.perf_counter()
    result, _ = audit_and_commit(settings, store)
    return time.perf_counter() - clock, result


def _minilm_encodings(store_dir: Path) -> int:
    """Texts the MiniLM embedded into a store's embedding cache (passages and claims)."""
    import numpy as np

    total = 0
    for shard in (store_dir / "cache" / "embeddings").glob("*/shard-*.npz"):
        with np.load(shard) as z:
            total += int(z["keys"].shape[0])
    return total


def run(params: Params) -> dict[str, float]:
    import datetime as dt

    if params.git:
        from bench.speed_git import run_git

        return run_git(params.git, params.old, params.revs, params.depth, params.workdir, params.rerank_candidates)
    if not params.corpus:
        raise ConfigError("bench speed: pass --corpus (SciFact corpus.jsonl) or set KBAUDIT_DATA to the evaluation data folder")
    corpus = Path(params.corpus)
    if not corpus.is_file():
        raise ConfigError(f"SciFact corpus not found: {corpus} (pass --corpus)")
    if params.warm_embeddings and not params.full_only:
        raise ConfigError("--warm-embeddings needs --full-only: a warm cache would make the full-run ratios meaningless")
    work = Path(params.workdir) if params.workdir else Path(tempfile.mkdtemp(prefix="kbaudit-speed-"))
    docs, out = work / "kb", work / "store"
    for folder in (docs, out, work / "store-minilm"):
        shutil.rmtree(folder, ignore_errors=True)
    pages, used = build_kb(corpus, params.claims, docs, params.seed)
    if params.corpus_extra is not None:
        corpus = subset_corpus(corpus, used, params.corpus_extra, work / "corpus.jsonl", params.seed)
    paths = ("static+minilm", "minilm") if params.paths == "both" else (params.paths,)
    retrieval_path, backend = PATHS[paths[0]]
    base = Settings(
        docs=docs,
        sources=[corpus],
        out=out,
        depth=params.depth,
        today=dt.date(2026, 1, 1),
        retrieval_path=retrieval_path,
        embed_backend=backend,
        verifier_backend=backend,
        rerank_candidates=params.rerank_candidates,
    ).validate()
    if params.warm_embeddings:
        shutil.copytree(Path(params.warm_embeddings), out / "cache" / "embeddings")
    store = Store(out)

    # The default path first, so the peak RSS read after it is its own.
    full_s, result = _timed_run(base, store)
    claim_texts = [c.text for c in result.claims if c.checkworthy]
    n = len(claim_texts)
    metrics: dict[str, float] = {
        "claims": float(n),
        "pages": float(len(pages)),
        "static_first_stage": 1.0 if paths[0] == "static+minilm" else 0.0,
        "full_s": full_s,
        "claims_per_s": n / full_s,
        "cold_claims_per_s": n / full_s,
        "minilm_encodings": float(_minilm_encodings(out)),
        "peak_rss_mb": _peak_rss_mb(),
        "warm_embeddings": 1.0 if params.warm_embeddings else 0.0,
    }
    del result

    if not params.full_only:
        changed = change_pages(pages, 0.01, params.seed)
        change_s, _ = _timed_run(base, store)
        nochange_s, nochange = _timed_run(base, store)
        metrics.update(
            {
                "pages_changed": float(changed),
                "change1pct_over_full": change_s / full_s,
                "nochange_over_full": nochange_s / full_s,
                "nochange_reused": float(sum(v.reused for v in nochange.verdicts)),
            }
        )
        del nochange
        change_pages_back(pages)

    if len(paths) > 1:
        retrieval_path, backend = PATHS[paths[1]]
        other = base.replace(
            out=work / "store-minilm", retrieval_path=retrieval_path, embed_backend=backend, verifier_backend=backend
        ).validate()
        other_s, _ = _timed_run(other, Store(other.out))
        metrics.update(
            {
                "full_s_minilm": other_s,
                "cold_claims_per_s_minilm": n / other_s,
                "speedup_over_minilm": other_s / full_s,
                "minilm_encodings_minilm": float(_minilm_encodings(other.out)),
                "peak_rss_mb_both": _peak_rss_mb(),
            }
        )

    if params.floor:
        # The floor: the same texts (claims, and passages as the retriever indexes them) embedded
        # once with the MiniLM and no cache.
        sources, _ = load_sources(corpus, today=base.run_date)
        shape = Retriever(None)
        passage_texts = [Retriever.index_text(p, sents) for src in sources for p, sents in build_passages(src, shape.window, shape.stride)]
        embedder = Embedder(base.embed_model_path, backend="torch")
        texts = claim_texts + passage_texts
        clock = time.perf_counter()
        embedder.embed_uncached(texts)
        metrics["floor_s"] = time.perf_counter() - clock
        metrics["floor_texts"] = float(len(texts))
        metrics["full_over_floor"] = full_s / metrics["floor_s"]
    if not params.full_only:
        metrics["startup_s"] = _startup_seconds()
    if not params.workdir:
        shutil.rmtree(work, ignore_errors=True)
    print(targets(metrics))
    return metrics


def targets(m: dict) -> str:
    rows = []
    if "speedup_over_minilm" in m:
        rows.append(
            ("cold full run: claims/s over the MiniLM-only path >= 5 (stretch 10)", m["speedup_over_minilm"], m["speedup_over_minilm"] >= 5)
        )
    if "change1pct_over_full" in m:
        rows.append(("1% of pages changed, over the full run <= 0.03", m["change1pct_over_full"], m["change1pct_over_full"] <= 0.03))
        rows.append(("no change, over the full run <= 0.015", m["nochange_over_full"], m["nochange_over_full"] <= 0.015))
    if m.get("claims", 0) >= 50000:
        rows.append(("peak RSS of the full run <= 3000 MB", m["peak_rss_mb"], m["peak_rss_mb"] <= 3000))
    return "\n".join(f"target  {name:<72}{value:>10.3f}  {'met' if ok else 'NOT met'}" for name, value, ok in rows)
