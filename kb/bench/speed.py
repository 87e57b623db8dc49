"""Cost of full, 1%-changed and unchanged runs on a synthetic KB built from the SciFact corpus.

The KB: Markdown pages of 10 sentences each, taken from SciFact abstracts (about one page in
five has a number changed, so the verifier meets contradictions); the sources: the whole
SciFact corpus. Every figure comes from one process, so the ratios compare like with like:

- full run: a fresh store, every stage computed (embedding cache empty);
- embedding floor: the same claim and passage texts embedded once with the same model;
- 1% change: one sentence edited in 1% of the pages, then a run against the same store;
- no change: the same inputs again.
"""

from __future__ import annotations

import argparse
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

from kb.chain import AuditResult, run_audit, runs_row
from kb.config import ConfigError, Settings
from kb.evidence.embed import Embedder
from kb.evidence.retrieve import Retriever, build_passages
from kb.evidence.sources import load_sources
from kb.store import Store, new_run_id

SENTENCES_PER_PAGE = 10
DEFAULT_CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "scifact" / "corpus.jsonl"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--claims", type=int, default=2000, help="claims in the synthetic KB (default 2000)")
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="SciFact corpus.jsonl (the sources)")
    parser.add_argument("--depth", default="D1", help="verification depth (default D1)")
    parser.add_argument("--workdir", help="keep the KB and store here (default: a temporary folder)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--corpus-extra", type=int, default=None,
        help="sources: only the abstracts the KB was built from plus this many others (default: the whole corpus)",
    )
    parser.add_argument(
        "--full-only", action="store_true",
        help="only the full run: claims/s and peak RSS at sizes where the floor and reruns would take too long",
    )
    parser.add_argument(
        "--warm-embeddings", default=None,
        help="copy this embedding cache (a store's cache/embeddings) in first; the run is then not a cold full run",
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


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _startup_seconds() -> float:
    """Fixed cost of any run: a new interpreter importing the flow (Prefect, torch, the stages)."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import flows.audit, kb.chain, kb.evidence.retrieve, kb.verify"], check=True)
    return time.perf_counter() - started


def run(args: argparse.Namespace) -> dict[str, float]:
    import datetime as dt

    corpus = Path(args.corpus)
    if not corpus.is_file():
        raise ConfigError(f"SciFact corpus not found: {corpus} (pass --corpus)")
    if args.warm_embeddings and not args.full_only:
        raise ConfigError("--warm-embeddings needs --full-only: a warm cache would make the full-run ratios meaningless")
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="kbaudit-speed-"))
    docs, out = work / "kb", work / "store"
    shutil.rmtree(work / "kb", ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    pages, used = build_kb(corpus, args.claims, docs, args.seed)
    if args.warm_embeddings:
        shutil.copytree(Path(args.warm_embeddings), out / "cache" / "embeddings")
    if args.corpus_extra is not None:
        corpus = subset_corpus(corpus, used, args.corpus_extra, work / "corpus.jsonl", args.seed)
    settings = Settings(docs=docs, sources=[corpus], out=out, depth=args.depth, today=dt.date(2026, 1, 1)).validate()
    store = Store(out)

    def timed_run() -> tuple[float, AuditResult]:
        started_at = dt.datetime.now(dt.UTC)
        clock = time.perf_counter()
        run_id = new_run_id()
        store.lock()
        try:  # what the flow does, less Prefect: the chain stages the run, then it is committed
            result = run_audit(settings, store=store, run_id=run_id)
            store.commit_run(run_id, runs_row(result.counts, settings, started_at, result.seconds))
        finally:
            store.unlock()
        return time.perf_counter() - clock, result

    full_s, result = timed_run()
    claim_texts = [c.text for c in result.claims if c.checkworthy]
    if args.full_only:
        metrics = {
            "claims": float(len(claim_texts)),
            "pages": float(len(pages)),
            "full_s": full_s,
            "claims_per_s": len(claim_texts) / full_s,
            "peak_rss_mb": _peak_rss_mb(),
            "warm_embeddings": 1.0 if args.warm_embeddings else 0.0,
        }
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
        return metrics

    # The floor: the same texts (claims, and passages as the retriever indexes them) embedded
    # once with the same model and no cache.
    sources, _ = load_sources(corpus, today=settings.run_date)
    shape = Retriever(None)
    passage_texts = [
        Retriever.index_text(p, sents) for src in sources for p, sents in build_passages(src, shape.window, shape.stride)
    ]
    embedder = Embedder(settings.embed_model_path)
    texts = claim_texts + passage_texts
    clock = time.perf_counter()
    embedder.embed_uncached(texts)
    floor_s = time.perf_counter() - clock

    changed = change_pages(pages, 0.01, args.seed)
    change_s, _ = timed_run()
    nochange_s, nochange = timed_run()
    metrics = {
        "claims": float(len(claim_texts)),
        "source_versions": float(len(sources)),
        "pages": float(len(pages)),
        "pages_changed": float(changed),
        "full_s": full_s,
        "floor_s": floor_s,
        "floor_texts": float(len(texts)),
        "claims_per_s": len(claim_texts) / full_s,
        "full_over_floor": full_s / floor_s,
        "change1pct_over_full": change_s / full_s,
        "nochange_over_full": nochange_s / full_s,
        "nochange_reused": float(sum(v.reused for v in nochange.verdicts)),
        "startup_s": _startup_seconds(),
        "peak_rss_mb": _peak_rss_mb(),
    }
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return metrics
