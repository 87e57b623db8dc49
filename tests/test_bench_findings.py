"""`kbaudit bench findings`: a real docs history in a git bundle, audited in git mode as a new
user would, sampled to a CSV to judge; a judged CSV scored with its interval."""

from __future__ import annotations

import csv
import dataclasses
import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.findings import Params, choose_revs, facts_recall, read_facts, rejudged, run, score, wilson
from kb.errors import ConfigError
from kb.records import Claim, Verdict
from tests.test_git_sources import make_repo, release

GUIDE_V1 = (
    "# Guide\n\nThe default timeout is 30 seconds for every request.\n\n"
    "Uploads are limited to 10 MB per file.\n\nThe client retries a failed request three times.\n"
)
GUIDE_V2 = GUIDE_V1.replace("30 seconds", "60 seconds")
GUIDE_V3 = GUIDE_V2.replace("Uploads are limited to 10 MB per file.", "Uploads are limited to 10 MB per file, in every plan.")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("histories")
    repo = make_repo(root, "product")
    release(repo, "v1.0.0", "2024-01-10", {"docs/guide.md": GUIDE_V1})
    release(repo, "v1.1.0", "2024-06-10", {"docs/guide.md": GUIDE_V2})
    release(repo, "v1.2.0", "2024-11-10", {"docs/guide.md": GUIDE_V3})
    data = root / "docs-histories"
    data.mkdir()
    subprocess.run(["git", "-C", str(repo), "bundle", "create", str(data / "product.bundle"), "--all"], check=True, capture_output=True)
    tags = [{"tag": t, "date": d} for t, d in (("v1.0.0", "2024-01-10"), ("v1.1.0", "2024-06-10"), ("v1.2.0", "2024-11-10"))]
    manifest = [{"project": "product", "bundle": "product.bundle", "docs_paths": ["docs/"], "format": "Markdown", "tags": tags}]
    (data / "manifest.json").write_text(json.dumps(manifest))
    return data


@pytest.mark.slow
def test_the_changed_default_is_a_finding_to_judge_and_the_judged_sample_scores(corpus, tmp_path):
    sample = tmp_path / "sample.csv"
    facts = tmp_path / "facts.csv"  # the changed default, and a sentence no release ever held
    facts.write_text("doc_id,old_text\nguide.md,default timeout is 30 seconds\nguide.md,Downloads are limited\n", "utf-8")
    metrics = run(Params(project="product", data=str(corpus), old="v1.0.0", sample_csv=str(sample), workdir=str(tmp_path / "w"),
                         facts=str(facts)))  # fmt: skip
    assert metrics["checkworthy"] >= 3 and metrics["findings"] >= 1, metrics
    assert (metrics["facts"], metrics["facts_found"], metrics["facts_without_claim"], metrics["facts_recall"]) == (2, 1, 1, 0.5)
    with sample.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    findings = [r for r in rows if r["kind"] == "finding"]
    assert any("30 seconds" in r["claim"] for r in findings), rows
    timeout = next(r for r in findings if "30 seconds" in r["claim"])
    assert timeout["label"] in ("stale", "contradicted") and "60 seconds" in timeout["evidence"] and timeout["verdict"] == ""
    assert timeout["newest_page"] == "docs/guide.md@v1.2.0" and "60 seconds" in timeout["newest_text"]
    supported = [r for r in rows if r["kind"] == "supported"]
    assert supported and not any("30 seconds" in r["claim"] for r in supported)

    for r in rows:  # a person's judgement: the timeout finding is real, anything else flagged is not
        r["verdict"] = ("real" if "30 seconds" in r["claim"] else "false") if r["kind"] == "finding" else "right"
    judged = tmp_path / "judged.csv"
    with judged.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    scored = score(judged)
    real = sum(1 for r in findings if "30 seconds" in r["claim"])
    assert scored["judged"] == len(findings) and scored["precision"] == round(real / len(findings), 4)
    assert scored["precision_lo"] <= scored["precision"] <= scored["precision_hi"]
    assert scored["supported_right"] == 1.0 and scored["unjudged"] == 0

    # the same audit read against the person's verdicts: every judged finding is still reported;
    # a judged claim the KB no longer has is counted apart
    gone = dict(findings[0], claim="A sentence no release of the guide holds.", verdict="false")
    with judged.open("a", newline="", encoding="utf-8") as fh:
        csv.DictWriter(fh, fieldnames=list(rows[0])).writerow(gone)
    again = run(Params(project="product", data=str(corpus), old="v1.0.0", workdir=str(tmp_path / "w"), rejudge=str(judged)))
    assert (again["rejudged"], again["rejudged_unmatched"]) == (len(findings), 1)
    assert (again["rejudged_real_kept"], again["rejudged_false_kept"]) == (real, len(findings) - real)
    assert again["rejudged_precision"] == round(real / len(findings), 4)


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("page,text\nguide.md,x\n", "not a facts file"),
        # a blank old_text would be held by every claim of its page, and count found on any finding there
        ("doc_id,old_text\nguide.md,default timeout is 30 seconds\nguide.md,\n", "row 2 has no doc_id or no old_text"),
        ("doc_id,old_text\nguide.md\n", "row 1 has no doc_id or no old_text"),
    ],
)
def test_a_facts_file_without_its_columns_or_words_is_refused(tmp_path, text, refusal):
    bad = tmp_path / "facts.csv"
    bad.write_text(text, "utf-8")
    with pytest.raises(ConfigError, match=refusal):
        run(Params(project="product", data=str(tmp_path), facts=str(bad)))


def test_a_fact_is_held_by_whole_words_only(tmp_path):
    facts_csv = tmp_path / "facts.csv"
    # saved by a spreadsheet, with a byte-order mark
    facts_csv.write_text("doc_id,old_text\nguide.md,default timeout is 3\nguide.md,`timeout` is 30\n", "utf-8-sig")
    claim = Claim("c1", "guide.md", "v1", 0, 40, "The default timeout is 30 seconds.", "The default timeout is 30 seconds.")
    stale = Verdict("c1", "stale", 0.9, "rules", "the newest release says 60 seconds")
    metrics = facts_recall(SimpleNamespace(claims=[claim], verdicts=[stale]), read_facts(facts_csv))
    # "is 3" is no word of "is 30 seconds": that fact has no claim; the markup aside, the other is found
    assert (metrics["facts"], metrics["facts_found"], metrics["facts_without_claim"]) == (2, 1, 1)


def test_wilson_interval_and_bad_judgements(tmp_path):
    lo, hi = wilson(36, 40)
    assert 0.76 < lo < 0.77 and 0.96 < hi < 0.97  # 0.90 of 40 judged
    assert wilson(0, 0) == (0.0, 0.0)
    bad = tmp_path / "bad.csv"
    bad.write_text("row,kind,label,confidence,rationale,verdict\n1,finding,stale,0.9,x,maybe\n")
    with pytest.raises(ConfigError, match="judged real or false"):
        score(bad)
    with pytest.raises(ConfigError, match="not a findings sample"):
        (tmp_path / "other.csv").write_text("a,b\n1,2\n")
        score(tmp_path / "other.csv")


def test_release_choice():
    tags = ["1.0", "1.1", "1.2", "1.3", "1.4"]
    assert choose_revs(tags, None, None) == ("1.1", ["1.2", "1.3", "1.4"])
    assert choose_revs(tags, "1.0", "1.4") == ("1.0", ["1.4"])
    with pytest.raises(ConfigError, match="not a release"):
        choose_revs(tags, "2.0", None)


@pytest.mark.parametrize(
    ("name", "precision", "judged"),
    [
        ("netbox", 0.425, 40),
        ("rollup", 0.2609, 23),
        ("scrapy", 0.625, 40),
        ("hugo", 0.4, 40),
        ("redux-toolkit", 0.1333, 30),
        ("pytest", 0.3, 40),
        ("hatch", 0.3684, 19),
        ("task", 0.45, 40),
        ("pip", 0.75, 40),
        ("flask", 0.775, 40),
        ("tox", 0.4762, 21),
        ("frigate", 0.55, 40),
        ("goreleaser", 0.65, 40),
        ("prettier", 0.6, 10),
        ("lazygit", 0.3, 40),
        ("pdm", 0.6562, 32),
        ("vitest", 0.7, 40),
        ("requests", 0.825, 40),
        ("kind", 0.2778, 18),
        ("vitepress", 0.0, 1),
        ("httpie", 0.4, 5),
        ("commands", 0.8833, 60),
        ("scrapy-2.9.0", 0.6, 40),
        ("vitest-v1.0.0", 0.25, 40),
        ("frigate-v0.10.0", 0.775, 40),
        ("pdm-2.3.0", 0.625, 40),
        ("lazygit-v0.40.0", 0.7273, 11),
        ("lazygit-v0.40.0-settings", 0.8889, 9),
        ("kind-v0.14.0", 0.7143, 35),
    ],
)
def test_the_judged_samples_score_as_documented(name, precision, judged):
    """The judged samples (docs/benchmarks.md, docs/labelling.md) score to the published figures."""
    path = Path(__file__).parent / "fixtures" / "judged" / f"{name}.csv"
    scored = score(path)
    assert (scored["precision"], scored["judged"], scored["unjudged"]) == (precision, judged, 0)
    # the interval holds the precision (its low end is 0 where no finding of the sample was real)
    assert scored["precision_lo"] <= precision < scored["precision_hi"] and scored["precision_lo"] < scored["precision_hi"]


def test_a_judged_finding_on_a_repeated_cell_is_kept_where_any_claim_so_written_is_reported():
    # a configuration table repeats "True" in row after row: the judged one is still reported
    cells = [Claim(f"c{n}", "config.md", "v1", n * 10, n * 10 + 4, "True", "True") for n in range(3)]
    verdicts = [Verdict("c0", "supported", 0.95, "rules", "exact match"), Verdict("c1", "stale", 0.75, "rules", "row"),
                Verdict("c2", "supported", 0.95, "rules", "exact match")]  # fmt: skip
    rows = [{"kind": "finding", "doc_id": "config.md", "claim": "True", "verdict": "real"}]
    kept = rejudged(SimpleNamespace(claims=cells, verdicts=verdicts), rows)
    assert (kept["rejudged"], kept["rejudged_real_kept"]) == (1, 1)
    calm = [dataclasses.replace(verdicts[1], label="supported"), *verdicts[::2]]
    assert rejudged(SimpleNamespace(claims=cells, verdicts=calm), rows)["rejudged_real_kept"] == 0


def test_a_fact_the_splitter_cut_into_parts_is_found_through_any_of_them(tmp_path):
    page = "# Contributing\n\nAll content is written in Markdown and is located in the docs/docs directory.\n\nRun `task docs`.\n"
    start = page.index("All")
    cut = page.index(" and is located")
    parts = [
        Claim("c1", "contributing.md", "v1", start, cut, "All content is written in Markdown", "All content is written in Markdown"),
        Claim("c2", "contributing.md", "v1", cut + 5, page.index("\n\nRun"), "is located in the docs/docs directory.",
              "is located in the docs/docs directory."),
        Claim("c3", "contributing.md", "v1", page.index("Run"), len(page) - 1, "Run task docs.", "Run `task docs`."),
    ]  # fmt: skip
    facts_csv = tmp_path / "facts.csv"
    facts_csv.write_text("doc_id,old_text\ncontributing.md,All content is written in Markdown and is located in the docs/docs directory.\n")
    document = SimpleNamespace(doc_id="contributing.md", text=page)
    verdicts = [Verdict("c1", "stale", 0.4, "rules", "revised"), Verdict("c2", "supported", 0.9, "rules", "exact match"),
                Verdict("c3", "supported", 0.9, "rules", "exact match")]  # fmt: skip
    metrics = facts_recall(SimpleNamespace(claims=parts, verdicts=verdicts, documents=[document]), read_facts(facts_csv))
    assert (metrics["facts_found"], metrics["facts_without_claim"]) == (1, 0)
    # neither part flagged: held, and missed
    calm = [Verdict("c1", "supported", 0.9, "rules", "exact match"), *verdicts[1:]]
    metrics = facts_recall(SimpleNamespace(claims=parts, verdicts=calm, documents=[document]), read_facts(facts_csv))
    assert (metrics["facts_found"], metrics["facts_without_claim"]) == (0, 0)


def test_a_fact_over_a_code_fence_a_link_or_a_code_span_is_held_as_a_reader_sees_it(tmp_path):
    page = (
        "# Contributing\n\nRun the test suite while developing:\n\n```bash\nhatch run dev\n```\n\n"
        "This runs locally with `task docs` (requires `nodejs` & `yarn`).\n\n"
        "It is off because [delegating the controller](https://example.org/x) is costly.\n"
    )

    def claim(claim_id: str, text: str, written: str) -> Claim:
        start = page.index(written)
        return Claim(claim_id, "contributing.md", "v1", start, start + len(written), text, written)

    claims = [
        claim("lead", "Run the test suite while developing:", "Run the test suite while developing:"),
        claim("command", "hatch run dev", "hatch run dev"),
        claim("docs", "This runs locally with task docs (requires nodejs & yarn).", "This runs locally with `task docs` (requires `nodejs` & `yarn`)."),
        claim("off", "It is off because delegating the controller is costly.", "It is off because [delegating the controller](https://example.org/x) is costly."),
    ]  # fmt: skip
    facts_csv = tmp_path / "facts.csv"
    facts_csv.write_text(
        "doc_id,old_text\ncontributing.md,Run the test suite while developing: hatch run dev\n"
        "contributing.md,This runs locally with task docs (requires nodejs & yarn).\n"
        'contributing.md,"It is off because [delegating the controller] is costly."\n'
    )
    stale = [Verdict(c.claim_id, "stale", 0.9, "rules", "removed") for c in claims]
    result = SimpleNamespace(claims=claims, verdicts=stale, documents=[SimpleNamespace(doc_id="contributing.md", text=page)])
    metrics = facts_recall(result, read_facts(facts_csv))
    assert (metrics["facts_found"], metrics["facts_without_claim"]) == (3, 0)
