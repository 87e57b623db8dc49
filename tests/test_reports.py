"""Reports: the reviewers' views, `kbaudit report` (text, JSON, HTML in headless Chromium), `kbaudit sql`.

Fast tests work on small stores written record by record; the slow ones share two real demo
runs (``shared_demo_store``, also used by tests/test_export.py).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from kb.records import Claim, Edit, Verdict
from kb.store import Store, new_run_id
from reports import queries as q
from reports.html import highlight, render, word_diff
from tests.conftest import DEMO_TODAY, store_sql

CHROMIUM = Path("/usr/bin/chromium")
DOCS = Path(__file__).resolve().parent.parent / "docs" / "reports.md"
SCRIPT = "<script>document.title='pwned'</script>"


# ---- a small store written record by record ----------------------------------------------
def _write_run(store: Store, labels: dict[int, str], owners: dict[str, str | None] | None = None) -> str:
    owners = owners or {"a.md": "ann", "b.md": None}
    run_id = new_run_id()
    now = dt.datetime.now(dt.UTC)
    store.write_table(
        run_id,
        "documents",
        [
            {
                "doc_id": d,
                "version_id": "v1",
                "title": f"{SCRIPT} {d}",
                "owner": o,
                "risk": "high" if d == "a.md" else None,
                "status": "PARTIAL",
                "score": 0.5,
                "score_components": "{}",
            }
            for d, o in owners.items()
        ],
    )
    claims = [
        Claim(
            claim_id=f"c{i}",
            doc_id="a.md" if i < 3 else "b.md",
            version_id="v1",
            start=10 * i,
            end=10 * i + 9,
            source_text=f"claim {i} {SCRIPT}",
            text=f"claim {i}",
        )
        for i in labels
    ]
    store.write_table(run_id, "claims", claims)
    store.write_table(
        run_id,
        "verdicts",
        [Verdict(claim_id=f"c{i}", label=label, confidence=0.9, tier="rules", rationale="r") for i, label in labels.items()],
    )
    store.write_table(
        run_id,
        "edits",
        [
            Edit(
                edit_id=f"e{i}-{run_id}",
                claim_id=f"c{i}",
                doc_id=c.doc_id,
                base_version="v1",
                start=c.start,
                end=c.end,
                old_text="costs 10 <b>",
                new_text="costs 12 <b>",
                risk="high",
                status="queued",
                reason="contradicted",
            )
            for i, c in zip(labels, claims)
            if labels[i] == "contradicted"
        ],
    )
    row = {
        "started_at": now,
        "finished_at": now,
        "status": "completed",
        "depth": "D1",
        "documents": len(owners),
        "claims": len(labels),
        "checkworthy": len(labels),
        "ingest_errors": 0,
        "edits": 0,
        "seconds": 1.0,
    }
    row.update({label: sum(1 for v in labels.values() if v == label) for label in q.LABELS})
    store.commit_run(run_id, row)
    time.sleep(0.002)  # run ids are ordered by time
    return run_id


@pytest.fixture
def two_runs(tmp_path: Path):
    store = Store(tmp_path / "out")
    first = _write_run(store, {0: "supported", 1: "contradicted", 2: "stale", 3: "supported", 5: "stale"})
    # c0 breaks, c1 is fixed, c2 is edited away (its document remains), c3 goes stale, c4 is new
    # and contradicted, c5 stays stale (no change), c6 is new and uncertain.
    second = _write_run(store, {0: "contradicted", 1: "supported", 3: "stale", 4: "contradicted", 5: "stale", 6: "uncertain"})
    return store, first, second


def test_label_trend_has_one_row_per_run_with_its_counts(two_runs):
    store, first, second = two_runs
    trend = q.rows(store, "SELECT run_id, supported, contradicted, stale, uncertain, verdicts FROM label_trend")
    assert trend == [
        {"run_id": first, "supported": 2, "contradicted": 1, "stale": 2, "uncertain": 0, "verdicts": 5},
        {"run_id": second, "supported": 1, "contradicted": 2, "stale": 2, "uncertain": 1, "verdicts": 6},
    ]
    nightly = q.rows(store, "SELECT run_id FROM label_trend_nightly")
    assert nightly == [{"run_id": second}]  # both ran tonight: the last one stands for the night


def test_changes_since_previous_names_each_kind_of_change(two_runs):
    store, first, second = two_runs
    found = q.rows(store, "SELECT run_id, previous_run_id, change, claim_id, previous_label, label FROM changes_since_previous")
    assert {(r["change"], r["claim_id"]) for r in found} == {
        ("new_contradiction", "c0"),
        ("new_contradiction", "c4"),
        ("fixed", "c1"),
        ("fixed", "c2"),
        ("newly_stale", "c3"),
        ("newly_uncertain", "c6"),
    }
    assert {(r["run_id"], r["previous_run_id"]) for r in found} == {(second, first)}
    assert next(r for r in found if r["claim_id"] == "c2")["label"] is None  # removed from its document


def test_claim_changes_of_the_first_run_treats_every_finding_as_new(two_runs):
    store, first, _ = two_runs
    found = q.changes(store, first)
    assert {(r["change"], r["claim_id"]) for r in found} == {("new_contradiction", "c1"), ("newly_stale", "c2"), ("newly_stale", "c5")}


def test_documents_and_review_queue_views(two_runs):
    store, _, _ = two_runs
    by_status = q.rows(store, "SELECT status, risk, documents, doc_ids FROM documents_by_status")
    assert by_status == [
        {"status": "PARTIAL", "risk": "high", "documents": 1, "doc_ids": ["a.md"]},
        {"status": "PARTIAL", "risk": "unset", "documents": 1, "doc_ids": ["b.md"]},
    ]
    by_owner = q.rows(store, "SELECT owner, edits, documents, high_risk FROM review_queue_by_owner")
    queue = q.rows(store, "SELECT owner, doc_id, risk FROM review_queue")
    assert by_owner == [
        {
            "owner": owner,
            "edits": len(mine),
            "documents": len({r["doc_id"] for r in mine}),
            "high_risk": sum(r["risk"] == "high" for r in mine),
        }
        for owner in sorted({r["owner"] or "(no owner)" for r in queue})
        for mine in [[r for r in queue if (r["owner"] or "(no owner)") == owner]]
    ]
    assert {"owner": "ann", "edits": 1, "documents": 1, "high_risk": 1} in by_owner
    labels = {r["doc_id"]: r for r in q.rows(store, "SELECT * FROM document_labels")}
    assert [labels["a.md"][label] for label in q.LABELS] == [1, 1, 0, 0]
    assert [labels["b.md"][label] for label in q.LABELS] == [0, 1, 2, 1]


def test_html_escapes_everything_from_the_store(two_runs):
    store, first, second = two_runs
    page = render(store)
    assert SCRIPT not in page and "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in page
    assert page.count("<script>") == 1  # ours, the filter
    assert 'id="count-contradicted" data-count="2"' in page
    assert 'id="change-fixed" data-count="2"' in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    older = render(store, first)
    assert 'id="count-contradicted" data-count="1"' in older and f'data-run="{first}"' in older


def test_highlight_and_word_diff_escape_their_parts():
    assert highlight("a <b> c. The x is 5. d", "The x is 5.") == "a &lt;b&gt; c. <mark>The x is 5.</mark> d"
    assert word_diff("costs 10 <b>", "costs 12 <b>") == "costs <del>10</del><ins>12</ins> &lt;b&gt;"


def test_report_of_an_unknown_run_is_a_usage_error(two_runs, capsys):
    from cli.main import main

    store, _, _ = two_runs
    assert main(["report", "--out", str(store.root), "--run", "nope"]) == 2
    assert "no run 'nope'" in capsys.readouterr().err
    assert main(["report", "--out", str(store.root.parent / "missing")]) == 2


# ---- two real runs of the demo KB, shared with tests/test_export.py ----------------------
_SHARED: dict = {}


def shared_demo_store(tmp_path_factory) -> dict:
    """Run the demo KB twice (with an injected hostile document; between the runs one claim is
    fixed and one broken) and return {out, docs, first, second}. Built once per test session."""
    if "out" in _SHARED:
        return _SHARED
    from flows.audit import audit
    from kb.config import DEMO_ROOT, Settings

    root = tmp_path_factory.mktemp("reports-demo")
    docs = root / "docs"
    shutil.copytree(DEMO_ROOT / "docs", docs)
    (docs / "injected.md").write_text(
        "---\n"
        f'title: "{SCRIPT} Injected"\n'
        'owner: "<img src=x onerror=\\"document.title=\'pwned\'\\">"\n'
        "---\n\n# Injected\n\n"
        f"The Pro plan allows 600 requests per minute per API key {SCRIPT}.\n",
        "utf-8",
    )
    out = root / "out"
    settings = Settings(docs=docs, sources=[DEMO_ROOT / "sources"], out=out, today=dt.date.fromisoformat(DEMO_TODAY))
    first = audit(settings)
    page = docs / "rate-limits.md"
    text = page.read_text("utf-8")
    text = text.replace("The Free plan allows 60 requests", "The Free plan allows 100 requests")  # fixed
    text = text.replace("The Pro plan allows 600 requests", "The Pro plan allows 900 requests")  # broken
    page.write_text(text, "utf-8")
    second = audit(settings)
    _SHARED.update(out=out, docs=docs, first=first, second=second)
    return _SHARED


@pytest.fixture(scope="module")
def demo(prefect_harness, tmp_path_factory):
    return shared_demo_store(tmp_path_factory)


def _dump_dom(html_file: Path, tmp_path: Path, screenshot: Path | None = None, fragment: str = "") -> str:
    flags = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--virtual-time-budget=3000",
    ]
    if screenshot:
        subprocess.run(
            flags + [f"--screenshot={screenshot}", "--window-size=1280,2400", html_file.as_uri()],
            capture_output=True,
            timeout=90,
            check=True,
        )
    result = subprocess.run(flags + ["--dump-dom", html_file.as_uri() + fragment], capture_output=True, text=True, timeout=90, check=True)
    return result.stdout


@pytest.mark.slow
def test_changes_between_the_demo_runs(demo):
    store = Store(demo["out"])
    found = q.rows(store, "SELECT change, claim_text, previous_label, label FROM changes_since_previous")
    broken = [r for r in found if "900 requests" in r["claim_text"]]
    fixed = [r for r in found if r["change"] == "fixed" and "60 requests" in r["claim_text"]]
    assert [r["change"] for r in broken] == ["new_contradiction"], found
    assert fixed and fixed[0]["previous_label"] == "stale" and fixed[0]["label"] is None, found


@pytest.mark.slow
def test_report_cli_text_and_json(demo, capsys):
    from cli.main import main

    out = str(demo["out"])
    assert main(["report", "--out", out]) == 0
    text = capsys.readouterr().out
    assert demo["second"]["run_id"] in text and "new contradiction" in text
    assert main(["report", "--out", out, "--run", demo["first"]["run_id"], "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["run_id"] == demo["first"]["run_id"] and data["supported"] == demo["first"]["supported"]
    assert set(data["changes"]) == set(q.CHANGES)


@pytest.mark.slow
def test_documented_queries_run_as_written(demo, capsys):
    """Every `kbaudit sql "..."` in docs/reports.md runs against the demo store."""
    from cli.main import main

    commands = re.findall(r"^kbaudit sql (\".*\")$", DOCS.read_text("utf-8"), flags=re.M)
    assert len(commands) >= 6
    for command in commands:
        query = shlex.split(command)[0]
        assert main(["sql", query, "--out", str(demo["out"]), "--json"]) == 0, query
        json.loads(capsys.readouterr().out)


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is absent: apt-get install -y chromium chromium-driver")
def test_html_report_renders_in_headless_chromium(demo, tmp_path):
    from cli.main import main

    html_file = tmp_path / "report.html"
    assert main(["report", "--out", str(demo["out"]), "--html", str(html_file)]) == 0
    shot = tmp_path / "report.png"
    dom = _dump_dom(html_file, tmp_path, screenshot=shot, fragment="#all")  # "#all": every document's claims open
    assert shot.stat().st_size > 10_000  # a real picture, kept with the test's tmp_path
    run = demo["second"]
    assert 'data-ready="1"' in dom  # our script ran
    assert f"<title>kbaudit report {run['run_id']}</title>" in dom  # the injected script did not
    for label in q.LABELS:
        assert re.search(rf'id="count-{label}" data-count="{run[label]}"', dom), label
    assert re.search(rf'id="count-documents" data-count="{run["documents"]}"', dom)
    assert dom.count('<tr class="doc"') == run["documents"]
    assert dom.count('<details class="claim"') == run["checkworthy"]
    assert dom.count('class="bar bar-') >= 4 and "<svg" in dom
    assert dom.count("<mark>") >= run["checkworthy"] // 2  # evidence with its aligned sentence
    assert "<del>" in dom and "<ins>" in dom  # proposed diffs
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt; Injected" in dom  # shown as text
    assert "<img src=x" not in dom and "&lt;img src=x" in dom
    assert dom.count("<script>") == 1


# ---- at scale: a synthesised run through the real store and report code ----------------------
def _report_data(page: str) -> dict:
    import base64
    import gzip

    packed = re.search(r'<div id="report-data" data-encoding="gzip\+base64" hidden>([A-Za-z0-9+/=]*)</div>', page)
    assert packed, "the drill-down data is in the page"
    return json.loads(gzip.decompress(base64.b64decode(packed.group(1))))


@pytest.fixture(scope="module")
def scale_store(tmp_path_factory):
    from bench.synthetic import build_store

    out = tmp_path_factory.mktemp("report-scale") / "out"
    counts = build_store(out, claims=5000)
    return Store(out), counts


def test_the_report_of_5000_claims_is_under_2_mb_and_holds_every_claim(scale_store):
    store, counts = scale_store
    page = render(store)
    assert len(page.encode("utf-8")) <= 2_000_000
    assert page.count("<script>") == 1 and page.count('<details class="doc-claims"') == counts["documents"]
    data = _report_data(page)
    claims = [c for doc in data["docs"] for c in doc["claims"]]
    assert len(data["docs"]) == counts["documents"] and len(claims) == counts["checkworthy"]
    assert not any("omitted" in doc for doc in data["docs"]) and 'id="left-out"' not in page
    # Passages are stored once; a finding keeps its best three, a supported claim its best one.
    assert len(data["passages"]) == len(set(data["passages"]))
    for c in claims:
        assert len(c[8]) == (1 if c[1] == "supported" else 3) and c[10] == 5 - len(c[8])
        for e in c[8]:
            assert 0 <= e[6] < e[6] + e[7] <= len(data["passages"][e[5]])  # the aligned sentence, highlighted
    # Inline code reaches the page as code runs of plain text, never as markup.
    coded = [c for c in claims if not isinstance(c[2], str)]
    assert coded and all("<code>" not in text and "`" not in text for c in coded for text, _ in c[2])


def test_what_the_report_leaves_out_it_names_the_command_for(tmp_path, monkeypatch, capsys):
    import shlex

    from bench.synthetic import build_store
    from cli.main import main
    from reports import html as report_html

    out = tmp_path / "out"
    build_store(out, claims=300)
    monkeypatch.setattr(report_html, "MAX_CLAIMS_PER_DOC", 12)
    monkeypatch.setattr(report_html, "MAX_CHANGES", 5)
    page = render(Store(out))
    data = _report_data(page)
    assert 'id="left-out"' in page and 'id="changes-left-out"' in page
    assert page.count("<tr><td>new_contradiction</td>") + page.count("<tr><td>newly_stale</td>") <= 5
    worthy = {d: n for d, n in store_sql(out, "SELECT doc_id, count(*) FROM claims WHERE checkworthy GROUP BY 1")}
    docs = [d["doc_id"] for d in q.documents(Store(out), q.resolve_run(Store(out), None))]  # the report's order
    commands = 0
    for doc_id, entry in zip(docs, data["docs"]):
        assert len(entry["claims"]) == min(12, worthy[doc_id]) and entry.get("omitted", 0) == max(0, worthy[doc_id] - 12)
        if "omitted" not in entry:
            continue
        commands += 1
        labels = [c[1] for c in entry["claims"]]
        if "supported" in labels:  # findings first: a supported claim is kept only when every finding is
            assert labels.count("supported") == 12 - sum(
                1
                for (label,) in store_sql(
                    out, "SELECT v.label FROM claims c JOIN verdicts v USING (claim_id) WHERE c.doc_id = ? AND c.checkworthy", [doc_id]
                )
                if label != "supported"
            )
        command = shlex.split(entry["more"][0])
        assert command[:2] == ["kbaudit", "sql"]
        assert main([*command[1:], "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert len(listed) == worthy[doc_id]
        assert entry["more"][1] == f"kbaudit review serve --out {shlex.quote(str(out))}"
    assert commands == 3


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is absent: apt-get install -y chromium chromium-driver")
def test_the_large_report_renders_its_claims_in_headless_chromium(scale_store, tmp_path):
    store, counts = scale_store
    html_file = tmp_path / "report.html"
    html_file.write_text(render(store), encoding="utf-8")
    closed = _dump_dom(html_file, tmp_path)
    assert 'data-ready="1"' in closed and closed.count('<details class="claim"') == 0  # rendered when opened
    dom = _dump_dom(html_file, tmp_path, fragment="#all")
    assert 'data-ready="1"' in dom
    assert dom.count('<details class="claim"') == counts["checkworthy"]
    assert dom.count("<mark>") >= counts["checkworthy"]
    assert "<code>" in dom and "&lt;code&gt;" not in dom
    # A link to one claim opens its document and the claim.
    claim = _report_data(html_file.read_text("utf-8"))["docs"][-1]["claims"][-1][0]
    one = _dump_dom(html_file, tmp_path, fragment=f"#claim-{claim}")
    assert re.search(rf'<details class="claim" id="claim-{claim}" data-label="[a-z]+" open="">', one)


def test_bench_report_prints_the_size_and_time(tmp_path, capsys):
    from cli.main import main

    assert main(["bench", "report", "--claims", "400", "--json", str(tmp_path / "r.json")]) == 0
    figures = json.loads((tmp_path / "r.json").read_text())
    assert figures["claims"] == 400 and 10_000 < figures["report_bytes"] < 400_000 and figures["report_seconds"] > 0
    assert "report_bytes" in capsys.readouterr().out
