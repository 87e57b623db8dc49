"""Output formats of `kbaudit run` / `kbaudit report`: SARIF 2.1.0 (schema-validated), GitHub
workflow commands, JUnit XML, text and JSON, all read back from a real store.

One store per module: the demo KB (a copy outside any git repository) audited by the flow, then
audited again by `kbaudit run --format sarif --output FILE` after one sentence was edited.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from kb.store import Store
from reports import findings as model
from reports.github import escape_data, escape_property
from tests.conftest import DEMO_TODAY

REPO = Path(__file__).resolve().parent.parent
# SARIF 2.1.0's published schema (OASIS), vendored so that a clone validates offline.
SCHEMA = REPO / "tests" / "fixtures" / "schemas" / "sarif-schema-2.1.0.json"


EDITED = ("The Pro plan allows 600 requests per minute per API key.", "The Pro plan allows 900 requests per minute per API key.")


def sarif_errors(doc: dict) -> list[str]:
    schema = json.loads(SCHEMA.read_text("utf-8"))
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{list(e.path)}: {e.message[:200]}" for e in validator.iter_errors(doc)]


def cut(text: str, region: dict) -> str:
    """text[region] for a SARIF region (1-based lines and code-point columns, end exclusive)."""
    lines = text.split("\n")
    offset = lambda line, col: sum(len(x) + 1 for x in lines[: line - 1]) + col - 1  # noqa: E731
    return text[offset(region["startLine"], region["startColumn"]) : offset(region["endLine"], region["endColumn"])]


@pytest.fixture(scope="module")
def demo(prefect_harness, tmp_path_factory):
    from cli.main import main
    from flows.audit import audit
    from kb.config import DEMO_ROOT, Settings

    root = tmp_path_factory.mktemp("formats-demo")
    docs = root / "docs"
    shutil.copytree(DEMO_ROOT / "docs", docs)
    out = root / "out"
    settings = Settings(docs=docs, sources=[DEMO_ROOT / "sources"], out=out, today=dt.date.fromisoformat(DEMO_TODAY))
    first = audit(settings)
    page = docs / "rate-limits.md"
    page.write_text(page.read_text("utf-8").replace(*EDITED), "utf-8")
    sarif_file = root / "ci" / "second.sarif"
    code = main(
        [
            "run",
            str(docs),
            "--sources",
            str(DEMO_ROOT / "sources"),
            "--out",
            str(out),
            "--today",
            DEMO_TODAY,
            "--format",
            "sarif",
            "--output",
            str(sarif_file),
        ]
    )
    runs = Store(out).run_ids()
    return {
        "root": root,
        "docs": docs,
        "out": out,
        "first": first["run_id"],
        "second": runs[-1],
        "sarif_file": sarif_file,
        "run_exit": code,
    }


def _report(demo, capsys, *flags) -> tuple[int, str, str]:
    from cli.main import main

    capsys.readouterr()
    code = main(["report", "--out", str(demo["out"]), *flags])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---- SARIF -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_run_writes_valid_sarif_with_one_result_per_finding(demo):
    assert demo["run_exit"] == 0  # no --fail-on: the exit status is unchanged by the format
    doc = json.loads(demo["sarif_file"].read_text("utf-8"))
    assert sarif_errors(doc) == []
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == list(model.KINDS)
    assert all(r["help"]["text"] and r["shortDescription"]["text"] for r in run["tool"]["driver"]["rules"])
    store = Store(demo["out"])
    expected = store.query(
        "SELECT count(*) AS n FROM latest_verdicts v JOIN claims c USING (claim_id) WHERE c.checkworthy AND v.label <> 'supported'"
    ).n[0]
    assert len(run["results"]) == expected > 40
    assert run["automationDetails"]["id"] == f"kbaudit/{demo['second']}"
    assert run["originalUriBaseIds"]["KBROOT"]["uri"] == demo["docs"].resolve().as_uri() + "/"
    assert "versionControlProvenance" not in run  # the copy is in no git repository


@pytest.mark.slow
def test_sarif_regions_point_at_the_claims_span_and_the_fix_applies(demo):
    doc = json.loads(demo["sarif_file"].read_text("utf-8"))
    store = Store(demo["out"])
    spans = {r.claim_id: (r.start, r.end) for r in store.query('SELECT claim_id, start, "end" FROM claims').itertuples()}
    fixed = 0
    for result in doc["runs"][0]["results"]:
        loc = result["locations"][0]["physicalLocation"]
        text = (demo["docs"] / loc["artifactLocation"]["uri"]).read_text("utf-8")
        start, end = spans[result["properties"]["claimId"]]
        assert cut(text, loc["region"]) == text[start:end], result["message"]["text"]
        assert result["properties"]["locationBasis"] == "kb_file"
        evidence = result["properties"]["evidence"]
        first = evidence[0]
        assert (
            f'Evidence: {first["source"]} ({first["date"]}, version {first["sourceVersion"][:8]}): "{first["sentence"].strip()}"'
            in result["message"]["text"]
        )
        for fix in result.get("fixes", []):
            (change,) = fix["artifactChanges"]
            (rep,) = change["replacements"]
            old = cut(text, rep["deletedRegion"])
            new = rep["insertedContent"]["text"]
            assert old and old in text and old != new
            assert (f'Replace "{old}" with "{new}"' if new else f'Delete "{old}"') in fix["description"]["text"]
            fixed += 1
    assert fixed >= 20  # the demo's queued and auto-accepted edits


@pytest.mark.slow
def test_fingerprints_are_stable_across_runs(demo, capsys):
    _, first, _ = _report(demo, capsys, "--run", demo["first"], "--format", "sarif")
    second = demo["sarif_file"].read_text("utf-8")

    def fp(raw):
        return {r["properties"]["claim"]: r["partialFingerprints"]["kbauditFinding/v1"] for r in json.loads(raw)["runs"][0]["results"]}  # noqa: E731

    a, b = fp(first), fp(second)
    same = set(a) & set(b)
    assert len(same) >= len(a) - 2
    assert all(a[claim] == b[claim] for claim in same)
    assert demo["first"] not in first.split('"automationDetails"')[0]  # the run id is not in the rules/fingerprints
    assert EDITED[1] in b and EDITED[0] not in b  # the edited claim is a new finding with its own fingerprint
    assert b[EDITED[1]] not in a.values()
    new = [r for r in json.loads(second)["runs"][0]["results"] if r.get("baselineState") == "new"]
    assert [r["properties"]["claim"] for r in new] == [EDITED[1]]


@pytest.mark.slow
def test_fail_on_sets_levels_and_exit_status(demo, capsys):
    code, raw, _ = _report(demo, capsys, "--format", "sarif", "--fail-on", "contradicted")
    assert code == 1
    results = json.loads(raw)["runs"][0]["results"]
    assert {r["level"] for r in results if r["properties"]["label"] == "contradicted"} == {"error"}
    assert {r["level"] for r in results if r["properties"]["label"] != "contradicted"} == {"note"}
    code, raw, _ = _report(demo, capsys, "--format", "sarif")
    assert code == 0
    levels = {(r["ruleId"], r["level"]) for r in json.loads(raw)["runs"][0]["results"]}
    assert ("contradicted", "error") in levels and ("stale", "warning") in levels and ("uncertain", "note") in levels


# ---- GitHub annotations ----------------------------------------------------------------------------
def test_github_escaping():
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


ANNOTATION = re.compile(r"^::(error|warning|notice) (?P<props>[^:]*)::(?P<msg>.*)$")


def _unescape(s: str) -> str:
    return s.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


@pytest.mark.slow
def test_github_annotations(demo, capsys):
    code, raw, _ = _report(demo, capsys, "--format", "github", "--fail-on", "contradicted,stale")
    assert code == 1
    lines = raw.splitlines()
    annotations = [ANNOTATION.match(line) for line in lines[:-1]]
    assert all(annotations), [line for line, m in zip(lines, annotations) if not m][:2]
    assert lines[-1].startswith(f"kbaudit run {demo['second']}:")
    spans = {r.source_text: (r.doc_id, r.start, r.end) for r in Store(demo["out"]).query("SELECT * FROM claims").itertuples()}
    kinds = {m.group(1) for m in annotations}
    assert kinds == {"error", "notice"}
    for m in annotations:
        props = dict(p.split("=", 1) for p in m.group("props").split(","))
        msg = _unescape(m.group("msg"))
        assert "\n" not in m.group("msg") and "\r" not in m.group("msg")
        claim = re.search(r'\): "(.*)"\n', msg).group(1)
        doc_id, start, end = spans[claim]
        assert props["file"] == doc_id
        text = (demo["docs"] / doc_id).read_text("utf-8")
        region = {
            "startLine": int(props["line"]),
            "startColumn": int(props["col"]),
            "endLine": int(props["endLine"]),
            "endColumn": int(props["endColumn"]),
        }
        assert cut(text, region) == text[start:end]
        assert _unescape(props["title"]).startswith("kbaudit ")
    assert len(annotations) == len(json.loads(demo["sarif_file"].read_text("utf-8"))["runs"][0]["results"])


# ---- JUnit -------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_junit_per_document_and_per_claim(demo, capsys):
    store = Store(demo["out"])
    code, raw, _ = _report(demo, capsys, "--format", "junit")
    assert code == 0
    root = ET.fromstring(raw)
    cases = root.findall("./testsuite/testcase")
    documents = store.query("SELECT doc_id, owner FROM documents ORDER BY doc_id")
    assert [c.get("name") for c in cases] == list(documents.doc_id)
    failing_docs = set(
        store.query(
            "SELECT DISTINCT v.doc_id FROM latest_verdicts v JOIN claims c USING (claim_id) "
            "WHERE c.checkworthy AND v.label IN ('contradicted', 'stale')"
        ).doc_id
    )
    assert {c.get("name") for c in cases if c.find("failure") is not None} >= failing_docs
    assert int(root.get("failures")) == sum(c.find("failure") is not None for c in cases)
    pricing = next(c for c in cases if c.get("name") == "pricing.md")
    assert pricing.find("./properties/property[@name='owner']").get("value") == documents.set_index("doc_id").owner["pricing.md"]
    assert "stale" in pricing.find("failure").text and "Evidence: " in pricing.find("failure").text

    code, raw, _ = _report(demo, capsys, "--format", "junit", "--junit-per-claim", "--fail-on", "contradicted")
    assert code == 1
    root = ET.fromstring(raw)
    cases = root.findall("./testsuite/testcase")
    labels = store.query("SELECT v.label, c.source_text FROM latest_verdicts v JOIN claims c USING (claim_id) WHERE c.checkworthy")
    assert len(cases) == len(labels)
    failed = [c for c in cases if c.find("failure") is not None]
    assert len(failed) == int((labels.label == "contradicted").sum())
    one = failed[0]
    assert one.find("failure").get("type") == "contradicted"
    assert one.get("name").strip() in one.find("failure").text and "Evidence: " in one.find("failure").text


# ---- text, JSON, bad input ---------------------------------------------------------------------------
@pytest.mark.slow
def test_json_alias_and_text(demo, capsys, tmp_path):
    _, by_alias, _ = _report(demo, capsys, "--json")
    _, by_format, _ = _report(demo, capsys, "--format", "json")
    assert by_alias == by_format and json.loads(by_alias)["run_id"] == demo["second"]
    target = tmp_path / "deep" / "report.json"
    code, out, _ = _report(demo, capsys, "--format", "json", "--output", str(target))
    assert code == 0 and json.loads(target.read_text("utf-8")) == json.loads(by_format)
    assert out.startswith(f"kbaudit run {demo['second']}") and "since " in out


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags, message",
    [
        (["--junit-per-claim"], "--junit-per-claim needs --format junit"),
        (["--json", "--format", "sarif"], "cannot be combined with --format sarif"),
        (["--format", "sarif", "--run", "nope"], "no run 'nope'"),
        (["--format", "github", "--fail-on", "wrong"], "--fail-on takes labels"),
        (["--format", "sarif", "--output", "{tmp}"], "is a folder"),
    ],
)
def test_bad_flags_are_one_line_usage_errors(demo, capsys, tmp_path, flags, message):
    flags = [f.replace("{tmp}", str(tmp_path)) for f in flags]
    code, out, err = _report(demo, capsys, *flags)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert Store(demo["out"]).run_ids()[-1] == demo["second"]  # nothing written, nothing lost
