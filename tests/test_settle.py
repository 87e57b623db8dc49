"""Claims the newest corpus states as written are settled without a model on the default path;
the MiniLM-only path searches and judges them, and both give the same verdicts."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from datetime import date
from pathlib import Path

import pygit2
import pytest

from bench.speed import Params, run
from kb.chain import run_audit
from kb.claims.split import split_claims
from kb.claims.units import LEAD_IN_ATTACHED, TABLE_NOTE
from kb.config import Settings
from kb.evidence.embed import StaticEmbedder
from kb.evidence.retrieve import Retriever
from kb.evidence.sources import load_sources
from kb.ingest.parse import parse_document
from kb.records import Claim, SourceDoc
from kb.verify import Verifier, VerifierSettings, table_judgement, verifier_for
from kb.verify.policy import cell_settles_in_row, decide, settled_as_written
from tests.conftest import store_sql
from tests.test_git_sources import make_repo, release

PAGE = (
    "# Guide\n\n## Timeouts\n\nThe default timeout is 30 seconds for every request that the client sends.\n\n"
    "## Retries\n\nThe client retries a failed request three times before it gives up on the server.\n"
)


def _claim(text: str, section: str = "Guide > Timeouts", time_sensitive: bool = False) -> Claim:
    return Claim("c1", "kb.md", "v1", 0, len(text), text, text, section=section, time_sensitive=time_sensitive)


def _sources(folder: Path, pages: dict[str, tuple[str, date]]) -> list[SourceDoc]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, (text, when) in pages.items():
        (folder / name).write_text(f"---\nupdated: {when.isoformat()}\n---\n{text}", encoding="utf-8")
    found, errors = load_sources(folder, today=date(2025, 1, 1))
    assert not errors
    return found


def test_settled_claim_takes_the_sentence_without_a_search_and_gives_decides_verdict(tmp_path):
    claim = _claim("The default timeout is 30 seconds for every request that the client sends.")
    retriever = Retriever(None, first_stage=StaticEmbedder(), settle=True)  # no MiniLM: a settled claim never needs one
    retriever.index(_sources(tmp_path, {"guide.md": (PAGE, date(2024, 1, 1))}))
    found = retriever.search([claim])[claim.claim_id]
    assert retriever.settled_claims == 1 and len(found) == 1
    assert found[0].sentence == claim.source_text and found[0].score_bm25 > 0
    verdict = settled_as_written(claim, found)
    assert verdict is not None and verdict.label == "supported" and verdict.evidence_sentence == claim.source_text
    # the verdict decide() gives when it judges the passage is the same one
    judged = verifier_for(None, False).judge_pairs([claim], {claim.claim_id: found})[claim.claim_id]
    assert decide(claim, found, judged, date(2024, 2, 1)) == verdict


def test_a_newer_source_or_a_time_sensitive_claim_is_searched_not_settled(tmp_path):
    claim = _claim("The default timeout is 30 seconds for every request that the client sends.")
    notes = "# Notes on timeouts\n\nThe default timeout is now 60 seconds for every request.\n"
    retriever = Retriever(None, first_stage=StaticEmbedder(), settle=True)
    retriever.index(_sources(tmp_path / "two", {"guide.md": (PAGE, date(2024, 1, 1)), "notes.md": (notes, date(2024, 5, 1))}))
    assert retriever.settle([claim]) == {}  # a changelog dated after the page may refute it
    retriever = Retriever(None, first_stage=StaticEmbedder(), settle=True)
    retriever.index(_sources(tmp_path / "one", {"guide.md": (PAGE, date(2024, 1, 1))}))
    assert retriever.settle([_claim(claim.text, time_sensitive=True)]) == {}
    assert retriever.settle([_claim("The client retries a failed request three times before it gives up.")]) == {}


def test_the_cross_encoder_is_not_loaded_while_no_pair_needs_it(tmp_path):
    claim = _claim("The default timeout is 30 seconds for every request that the client sends.")
    retriever = Retriever(None, first_stage=StaticEmbedder(), settle=True)
    retriever.index(_sources(tmp_path, {"guide.md": (PAGE, date(2024, 1, 1))}))
    found = retriever.search([claim])
    verifier = Verifier(VerifierSettings(use_model=True, settle_as_written=True))
    (verdict,) = verifier.verify([claim], found, date(2024, 2, 1))
    assert verdict.label == "supported" and verifier.settled_as_written == 1
    # the rules settle a verbatim sentence too, past the override: no pair reaches the model
    judged = verifier.judge_pairs([claim], found)[claim.claim_id]
    assert [j.tier for j in judged] == ["rules"] and verifier.tier_counts == {"rules": 1}
    assert verifier._model is None and verifier.model_error is None


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("history")
    repo = make_repo(root, "product")
    release(repo, "v1.0.0", "2024-01-10", {"docs/guide.md": PAGE})
    release(repo, "v1.1.0", "2024-06-10", {"docs/guide.md": PAGE.replace("30 seconds", "60 seconds")})
    release(
        repo,
        "v1.2.0",
        "2024-11-10",
        {"docs/guide.md": PAGE.replace("30 seconds", "60 seconds") + "\nProxies are read from the environment.\n"},
    )
    bundle = root / "product.bundle"
    subprocess.run(["git", "-C", str(repo), "bundle", "create", str(bundle), "--all"], check=True, capture_output=True)
    return bundle


def _git_settings(bundle: Path, work: Path, **kw) -> Settings:
    clone = work / "clone.git"
    if not clone.exists():
        subprocess.run(["git", "clone", "--quiet", "--bare", str(bundle), str(clone)], check=True)
    return Settings(docs=f"git:{clone}@v1.0.0:docs", sources=[f"git:{clone}@v1.1.0,v1.2.0:docs"], today=date(2024, 11, 10),
                    full=True, **kw).validate()  # fmt: skip


@pytest.mark.slow
def test_default_path_settles_what_stands_and_labels_as_the_minilm_path(history, tmp_path):
    fast = run_audit(_git_settings(history, tmp_path), cache_dir=tmp_path / "c1")
    reference = run_audit(_git_settings(history, tmp_path, retrieval_path="minilm"), cache_dir=tmp_path / "c2")
    labels = {c.source_text: v.label for c, v in zip([c for c in fast.claims if c.checkworthy], fast.verdicts, strict=True)}
    assert labels["The default timeout is 30 seconds for every request that the client sends."] in ("stale", "contradicted")
    retries = "The client retries a failed request three times before it gives up on the server."
    assert labels[retries] == "supported"
    settled = {c.source_text for c in fast.claims if settled_as_written(c, list(fast.evidence.get(c.claim_id, [])))}
    assert retries in settled and len(fast.evidence[next(c.claim_id for c in fast.claims if c.source_text == retries)]) == 1
    assert fast.label_counts() == reference.label_counts()
    # the reference found the same sentence by searching, with the other versions beside it
    assert len(reference.evidence[next(c.claim_id for c in reference.claims if c.source_text == retries)]) > 1


@pytest.mark.slow
def test_bench_speed_git_prints_both_paths_on_a_real_history(history, tmp_path, capsys):
    (history.parent / "manifest.json").write_text(json.dumps([{"project": "product", "bundle": history.name, "docs_paths": ["docs/"]}]))
    m = run(Params(git=str(history), old="v1.0.0", revs="v1.1.0,v1.2.0"))
    for name in ("cold_claims_per_s", "cold_claims_per_s_minilm", "speedup_over_minilm", "settled_without_model_share",
                 "warm_over_cold", "peak_rss_mb", "texts_embedded", "verifier_pairs", "texts_embedded_minilm",
                 "change1pct_over_cold", "pages_changed", "speedup_over_minilm_onnx"):  # fmt: skip
        assert name in m, name
    assert m["speedup_over_minilm_onnx"] > 0 and m["cold_s_minilm_onnx"] > 0
    assert 0 < m["settled_without_model_share"] < 1 and m["warm_over_cold"] < 1
    assert m["pages_changed"] == 1 and m["change1pct_s"] > 0  # one page of a hundred, at least one
    assert m["texts_embedded"] < m["texts_embedded_minilm"] and m["verifier_pairs"] < m["verifier_pairs_minilm"]
    printed = capsys.readouterr().out
    assert "target  cold, default over the MiniLM-only path" in printed and "MiniLM-only path in ONNX Runtime" in printed
    with pytest.raises(Exception, match="no such bundle"):
        run(Params(git=str(tmp_path / "missing.bundle")))


@pytest.mark.slow
def test_bench_dask_runs_the_flow_on_one_and_two_local_workers(history, prefect_harness, tmp_path):
    from bench.dask_scale import Params as DaskParams
    from bench.dask_scale import chunks_for
    from bench.dask_scale import run as run_dask

    m = run_dask(DaskParams(git=str(history), old="v1.0.0", revs="v1.1.0,v1.2.0", workers="1,2", workdir=str(tmp_path / "w")))
    assert m["claims"] == 2 and m["thread_s"] > 0 and m["dask_1_s"] > 0 and m["dask_2_s"] > 0
    assert m["speedup_1"] == 1.0 and m["speedup_2"] > 0 and "overhead_per_task_s" in m
    # the stores hold one run each, the same labels wherever verification ran
    labels = {}
    for store in ("store-thread-1", "store-dask-1", "store-dask-2"):
        labels[store] = store_sql(tmp_path / "w" / store, "SELECT label, count(*) FROM verdicts GROUP BY label ORDER BY label")
    assert labels["store-thread-1"] == labels["store-dask-1"] == labels["store-dask-2"]
    assert chunks_for(1024, 1) == 2 and chunks_for(1025, 1) == 3 and chunks_for(3, 2) == 3


def test_one_percent_of_the_pages_changed_is_a_new_commit_on_the_old_release(history, tmp_path):
    from bench.speed_git import EDITED_SENTENCE, one_percent_changed

    clone = tmp_path / "clone.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(history), str(clone)], check=True)
    spec, pages = one_percent_changed(f"git:{clone}@v1.0.0:docs")
    assert pages == 1 and spec.startswith(f"git:{clone}@") and spec.endswith(":docs")
    repo = pygit2.Repository(str(clone))
    new = repo.revparse_single(spec.split("@", 1)[1].split(":", 1)[0])
    old = repo.revparse_single("v1.0.0").peel(pygit2.Commit)
    assert new.parents[0].id == old.id and [t.name for t in repo.references.iterator() if "v1.0.0" in t.name]
    diff = repo.diff(old.tree, new.tree)
    assert len(diff) == 1 and EDITED_SENTENCE.strip() in diff[0].text


TABLE = (
    "# Reference\n\n## Exit codes\n\n| Code | Meaning | Since |\n| --- | --- | --- |\n"
    "| `0` | the audit found nothing to report | 1.0 |\n| `3` | at least one finding needs review | {since} |\n"
)


def test_cells_of_a_row_the_newest_page_keeps_are_settled_and_a_changed_cell_is_not(tmp_path):
    doc = parse_document(TABLE.format(since="1.2").encode(), "kb.md", "kb.md")
    cells = [c for c in split_claims(doc) if c.reason.startswith(TABLE_NOTE)]
    assert len(cells) == 4
    sources = _sources(tmp_path, {"reference.md": (TABLE.format(since="1.4"), date(2024, 1, 1))})
    retriever = Retriever(None, first_stage=StaticEmbedder(), settle=True)
    retriever.index(sources)
    assert retriever.settle(cells) == {}  # a cell is settled only where the policy would read its row alone
    retriever = Retriever(None, first_stage=StaticEmbedder(), settle=True, settles_cell=cell_settles_in_row)
    retriever.index(sources)
    settled = retriever.settle(cells)
    # "1.0" alone names no fact: the policy needs it stated word for word, so it is searched
    kept = {c.source_text for c in cells if c.claim_id in settled}
    assert kept == {"the audit found nothing to report", "at least one finding needs review"}
    for claim in cells:
        found = settled.get(claim.claim_id)
        if found is None:
            continue
        assert found[0].sentence.startswith(claim.text.split(": ", 1)[0].split()[-1].strip("`"))
        verdict = settled_as_written(claim, found, table_judgement)
        assert verdict is not None and verdict.label == "supported" and verdict.tier == "rules"
        # decide() gives the same verdict when it judges the row; without a row reader nothing settles
        judged = verifier_for(None, False).judge_pairs([claim], {claim.claim_id: found})[claim.claim_id]
        assert decide(claim, found, judged, date(2024, 2, 1)) == verdict
        assert settled_as_written(claim, found) is None
    # the changed cell is not settled: its row, judged, refutes it
    (since,) = [c for c in cells if c.source_text == "1.2"]
    (meaning,) = [c for c in cells if c.source_text == "at least one finding needs review"]
    row = list(settled[meaning.claim_id])
    verifier = Verifier(VerifierSettings(use_model=False, settle_as_written=True))
    (verdict,) = verifier.verify([since], {since.claim_id: row}, date(2024, 2, 1))
    assert verifier.settled_as_written == 0 and verdict.label != "supported"
    judgement = table_judgement(since, row[0].sentence, row[0].passage, row[0].section)
    assert judgement is not None and judgement.relation == "refutes" and judgement.evidence_value == "1.4"


def test_a_cell_too_short_to_settle_is_anchored_to_its_row_and_a_changed_cell_is_searched(tmp_path):
    """A cell such as "Updates: Linux is no" names too little to be settled, and no sentence
    repeats it; but the cell's own row, kept in its place under the same headings, is what the
    KB copied: the first stage finds its evidence without the MiniLM. A cell whose row now holds
    another value is searched with it."""
    from kb.evidence.embed import Embedder

    page = (
        "# Install\n\n## Compared\n\n| | Linux | macOS |\n| --- | --- | --- |\n| Easy to install | yes | yes |\n| Updates | no | {mac} |\n"
    )
    doc = parse_document(page.format(mac="no").encode(), "kb.md", "kb.md")
    cells = {c.text: c for c in split_claims(doc) if c.reason.startswith(TABLE_NOTE)}
    kept, changed = cells["Updates: Linux is no"], cells["Updates: macOS is no"]
    sources = _sources(tmp_path / "sources", {"install.md": (page.format(mac="yes"), date(2024, 1, 1))})
    retriever = Retriever(Embedder(cache_dir=tmp_path / "cache"), first_stage=StaticEmbedder(), settle=True,
                          settles_cell=cell_settles_in_row)  # fmt: skip
    retriever.index(sources)
    found = retriever.search([kept])[kept.claim_id]
    assert retriever.settled_claims == 0 and retriever.anchored_claims == 1 and retriever.dense_scored == 0
    assert found[0].sentence == "Updates | no | yes", [e.sentence for e in found]
    retriever.search([changed])
    assert retriever.anchored_claims == 1 and retriever.dense_scored > 0


CLAUSES = (
    "# Guide\n\n## Builds\n\n"
    "The build excludes drafts, expired, and future pages by default and writes the site to the public folder.\n\n"
    "The build command accepts these flags:\n\n"
    "- `--minify` compresses the output before it is written and `--gc` removes unused cache files after the build.\n"
)


def test_clauses_whose_whole_sentence_stands_are_settled_and_those_of_a_changed_sentence_are_not(tmp_path):
    claims = [c for c in split_claims(parse_document(CLAUSES.encode(), "kb.md", "kb.md")) if c.checkworthy]
    clauses = [c for c in claims if c.sentence]
    assert {c.reason for c in clauses} == {"coordinated fact split", LEAD_IN_ATTACHED} and len(clauses) == 5
    assert all(c.source_text in c.sentence and c.source_text != c.sentence for c in clauses)
    # the newest release keeps every sentence, on another page under the same heading path
    retriever = Retriever(None, first_stage=StaticEmbedder(), settle=True)
    retriever.index(_sources(tmp_path / "moved", {"build.md": (CLAUSES, date(2024, 1, 1))}))
    settled = retriever.settle(claims)
    assert set(settled) == {c.claim_id for c in clauses}
    for claim in clauses:
        found = settled[claim.claim_id]
        assert [e.sentence for e in found] == [claim.sentence]
        verdict = settled_as_written(claim, found)
        assert verdict is not None and verdict.label == "supported" and "the sentence the claim is a clause of" in verdict.rationale
        # decide() gives the same verdict when it judges the passage
        judged = verifier_for(None, False).judge_pairs([claim], {claim.claim_id: found})[claim.claim_id]
        assert decide(claim, found, judged, date(2024, 2, 1)) == verdict
    # another clause in the first sentence: each of its facts is searched and judged; a comma
    # added to the second is no change of its words
    changed = CLAUSES.replace("future pages", "future pages and stubs").replace(" and `--gc`", ", and `--gc`")
    retriever = Retriever(None, first_stage=StaticEmbedder(), settle=True)
    retriever.index(_sources(tmp_path / "changed", {"guide.md": (changed, date(2024, 1, 1))}))
    assert set(retriever.settle(clauses)) == {c.claim_id for c in clauses if c.reason == LEAD_IN_ATTACHED}
    # the sentence standing under another heading path is another entry's; an item under the
    # same lead-in is about what the lead-in names, which no other list of the corpus opens with
    retriever = Retriever(None, first_stage=StaticEmbedder(), settle=True)
    retriever.index(_sources(tmp_path / "elsewhere", {"guide.md": (CLAUSES.replace("## Builds", "## Deploys"), date(2024, 1, 1))}))
    assert set(retriever.settle(clauses)) == {c.claim_id for c in clauses if c.reason == LEAD_IN_ATTACHED}


LISTS = (
    "# Advanced\n\n## Clients\n\n"
    "A client brings significant performance improvements over the top-level API, including:\n\n"
    "- Reduced latency across requests.\n- Reduced network congestion.\n\n"
    "## Flags\n\nThe command accepts these options on every run:\n\n- `--strict`\n"
)


def test_items_of_a_moved_page_under_the_same_lead_in_are_settled_and_a_dropped_item_is_not(tmp_path):
    items = [c for c in split_claims(parse_document(LISTS.encode(), "kb.md", "kb.md")) if c.reason == LEAD_IN_ATTACHED]
    assert [c.source_text for c in items] == ["Reduced latency across requests.", "Reduced network congestion.", "--strict"]
    # the newest release moved the lists to other pages and headings and dropped one item
    moved = {
        "clients.md": (
            "# Clients\n\nA client brings significant performance improvements over the top-level API, including:\n\n"
            "- Reduced latency across requests.\n- Fewer open sockets.\n",
            date(2024, 1, 1),
        ),
        "run.md": ("# Run\n\nThe command accepts these options on every run:\n\n- `--strict`\n", date(2024, 1, 1)),
        "build.md": ("# Build\n\nThe command accepts these options on every run:\n\n- `--strict`\n", date(2024, 1, 1)),
    }
    retriever = Retriever(None, first_stage=StaticEmbedder(), settle=True)
    retriever.index(_sources(tmp_path, moved))
    settled = retriever.settle(items)
    # "The command accepts these options ..." opens two lists of the newest release: under another heading it names neither
    (kept,) = [c for c in items if c.claim_id in settled]
    assert kept.source_text == "Reduced latency across requests."
    (found,) = settled[kept.claim_id]
    assert found.source_id == "clients.md" and found.section == "Clients"
    assert found.sentence == (
        "A client brings significant performance improvements over the top-level API, including: Reduced latency across requests."
    )
    verdict = settled_as_written(kept, [found])
    assert verdict is not None and verdict.label == "supported" and "the list item under the same lead-in" in verdict.rationale
    # the sentence alone, without the lead-in that says what it is about, settles nothing
    assert settled_as_written(kept, [replace(found, sentence="Reduced latency across requests.")]) is None


HEADINGS = "# Guide\n\n## How a Request is Handled\n\nThe app dispatches each request to its view.\n\n## When to use Quart instead\n\nQuart serves many connections.\n"


def test_a_heading_the_newest_page_keeps_under_the_same_headings_is_settled(tmp_path):
    headings = [c for c in split_claims(parse_document(HEADINGS.encode(), "kb.md", "kb.md")) if c.checkworthy and c.section == "Guide"]
    assert [c.source_text for c in headings] == ["How a Request is Handled", "When to use Quart instead"]
    # the newest page keeps the first heading where it was; the second moved under another one
    newest = HEADINGS.replace("## When to use Quart instead", "## Async\n\n### When to use Quart instead")
    retriever = Retriever(None, first_stage=StaticEmbedder(), settle=True)
    retriever.index(_sources(tmp_path, {"guide.md": (newest, date(2024, 1, 1))}))
    settled = retriever.settle(headings)
    (kept,) = [c for c in headings if c.claim_id in settled]
    assert kept.source_text == "How a Request is Handled"
    (found,) = settled[kept.claim_id]
    assert found.section == "Guide > How a Request is Handled" and found.sentence == "The app dispatches each request to its view."
    verdict = settled_as_written(kept, [found])
    assert (
        verdict is not None
        and verdict.label == "supported"
        and "the claim's words as a heading, under the same headings" in verdict.rationale
    )
    # the same sentence under another heading says nothing of this one
    assert settled_as_written(kept, [replace(found, section="Guide > Routing")]) is None
    # a claim under no heading is never another page's top-level heading
    top = replace(kept, section="", source_text="Guide")
    assert settled_as_written(top, [replace(found, section="Guide")]) is None and retriever.kept_as_heading(top) is None
