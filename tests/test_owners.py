"""Owners (front matter, CODEOWNERS) and review intervals, on a KB that lives in a real git
repository: ingest, the `pages_due` view, the report (text, JSON, HTML), and the owner carried
by SARIF (validated against the schema), GitHub annotations and JUnit.

One store per module: the demo KB copied into `kb/` of a fresh `git init` repository with a
`.github/CODEOWNERS` at the repository root, some owners removed from front matter and review
fields added, audited once by the flow.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kb.ingest.owners import find_codeowners, load_codeowners, parse_codeowners, review_fields
from kb.ingest.parse import parse_document
from kb.store import Store
from reports import queries as q
from tests.conftest import DEMO_TODAY
from tests.test_formats import sarif_errors

CODEOWNERS = """\
# owners of the knowledge base
*                      @acme/docs
kb/*.md                @acme/writers
kb/pricing.md          @acme/revenue billing@acme.example
kb/regions.md
!kb/sla.md             @acme/legal   # negation: not CODEOWNERS syntax
kb/backups.md          not-an-owner
kb/on-call.md          @acme/reliability
"""
NO_OWNER = ("pricing.md", "regions.md", "on-call.md", "sla.md", "backups.md", "webhooks.md")
REVIEW = {
    "pricing.md": "review_interval: 90d",  # updated 2024-01-22: due 2024-04-21
    "sla.md": "verified_until: 2027-01-01",  # not due
    "support-hours.md": "review_interval: 30\nverified_until: 2026-05-01",  # verified_until wins: 31 days overdue
    "webhooks.md": "review_interval: soon",  # does not parse: an ingest error, the page is kept
    "deprecations.md": "verified_until: 2026-06-01",  # due on the run's day
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.fixture(scope="module")
def kb(prefect_harness, tmp_path_factory):
    from flows.audit import audit
    from kb.config import DEMO_ROOT, Settings

    repo = tmp_path_factory.mktemp("owners") / "kbrepo"
    docs = repo / "kb"
    shutil.copytree(DEMO_ROOT / "docs", docs)
    for name in NO_OWNER:
        page = docs / name
        page.write_text(re.sub(r"^owner: .*\n", "", page.read_text("utf-8"), count=1, flags=re.M), "utf-8")
    for name, lines in REVIEW.items():
        page = docs / name
        page.write_text(page.read_text("utf-8").replace("---\n", f"---\n{lines}\n", 1), "utf-8")
    (repo / ".github").mkdir()
    (repo / ".github" / "CODEOWNERS").write_text(CODEOWNERS, "utf-8")
    _git(repo.parent, "init", "-q", str(repo))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "the knowledge base")
    out = repo.parent / "out"
    audit(Settings(docs=docs, sources=[DEMO_ROOT / "sources"], out=out, today=dt.date.fromisoformat(DEMO_TODAY)))
    return {"repo": repo, "docs": docs, "out": out, "head": _git(repo, "rev-parse", "HEAD")}


def _cli(capsys, *argv) -> tuple[int, str, str]:
    from cli.main import main

    capsys.readouterr()
    code = main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


# ---- CODEOWNERS and review fields on their own -------------------------------------------------
def test_codeowners_last_match_wins_and_bad_lines_are_reported(tmp_path):
    (tmp_path / "docs" / "api").mkdir(parents=True)
    path = tmp_path / "CODEOWNERS"
    path.write_text(
        "*.md @all\n/docs/**/ref.md @api-team\ndocs/api/ @org/api  # team\n"
        "docs/api/old.md\n[abc].md @x\ndocs/ @bad owner\n/top.md you@example.com\n",
        "utf-8",
    )
    owners, errors = parse_codeowners(path, tmp_path, "CODEOWNERS")
    assert owners.owners_of(tmp_path, "docs/api/ref.md") == (("@org/api",), 3)  # last match wins
    assert owners.owners_of(tmp_path, "docs/x/ref.md") == (("@api-team",), 2)
    assert owners.owners_of(tmp_path, "docs/api/old.md") == ((), 4)  # no owners: ownership removed
    assert owners.owners_of(tmp_path, "top.md") == (("you@example.com",), 7)
    assert owners.owners_of(tmp_path, "sub/top.md") == (("@all",), 1)  # /top.md is anchored
    assert [(e.path, e.stage, e.error.split(":")[0]) for e in errors] == [
        ("CODEOWNERS", "owners", "line 5"),
        ("CODEOWNERS", "owners", "line 6"),
    ]
    assert "character range" in errors[0].error and "'owner' is not @user" in errors[1].error


def test_codeowners_in_the_kb_root_wins_over_the_repository_root(tmp_path):
    repo = tmp_path / "repo"
    (repo / "kb" / "docs").mkdir(parents=True)
    _git(tmp_path, "init", "-q", str(repo))
    (repo / "CODEOWNERS").write_text("* @repo\n", "utf-8")
    assert find_codeowners(repo / "kb") == (repo / "CODEOWNERS", repo.resolve())
    (repo / "kb" / "docs" / "CODEOWNERS").write_text("* @kb\n", "utf-8")
    assert find_codeowners(repo / "kb") == (repo / "kb" / "docs" / "CODEOWNERS", (repo / "kb").resolve())
    (repo / "kb" / "docs" / "CODEOWNERS").write_bytes(b"* @caf\xe9\n")  # Latin-1: one error, no owners
    owners, errors = load_codeowners(repo / "kb")
    assert owners.rules == () and [e.error for e in errors] == ["cannot read CODEOWNERS: not valid UTF-8"]
    assert errors[0].path == "docs/CODEOWNERS"


@pytest.mark.parametrize(
    "front, expected, problem",
    [
        ("updated: 2026-01-01\nreview_interval: 90", {"review_interval_days": 90, "review_due": dt.date(2026, 4, 1)}, None),
        (
            "updated: 2026-01-01\nreview_interval: 2w\nlast_reviewed: 2026-03-01",
            {"review_interval_days": 14, "review_due": dt.date(2026, 3, 15)},
            None,
        ),
        ("review_interval: 90d", {"review_interval_days": 90, "review_due": None}, None),  # no date: due at once
        ("updated: 2026-01-01\nreview_interval: -5", {"review_interval_days": None, "review_due": None}, "review_interval '-5'"),
        ("verified_until: next year", {"verified_until": None, "review_due": None}, "verified_until 'next year'"),
    ],
)
def test_review_fields(front, expected, problem):
    doc = parse_document(f"---\n{front}\n---\n\nText.\n".encode(), "p.md", "p.md")
    fields, errors = review_fields(doc)
    assert {k: fields[k] for k in expected} == expected
    assert [e.error.split(" is not")[0] for e in errors] == ([problem] if problem else [])


# ---- the audited git-backed KB ----------------------------------------------------------------
@pytest.mark.slow
def test_owners_come_from_front_matter_else_codeowners(kb):
    store = Store(kb["out"])
    docs = {r["doc_id"]: (r["owner"], r["owner_source"]) for r in q.rows(store, "SELECT doc_id, owner, owner_source FROM documents")}
    assert len(docs) == 15  # a bad CODEOWNERS line or review field loses no page
    source = "../.github/CODEOWNERS"
    assert docs["pricing.md"] == ("@acme/revenue billing@acme.example", f"{source}:4")
    assert docs["regions.md"] == (None, None)  # a pattern with no owners unsets ownership
    assert docs["sla.md"] == ("@acme/writers", f"{source}:3")  # the negated line is skipped
    assert docs["backups.md"] == ("@acme/writers", f"{source}:3")  # so is the one with a bad owner
    assert docs["on-call.md"] == ("@acme/reliability", f"{source}:8")
    assert docs["audit-logs.md"] == ("Security", "front_matter")
    errors = store.query("SELECT path, stage, error FROM ingest_errors ORDER BY error")
    rows = [(r.path, r.stage, r.error) for r in errors.itertuples()]
    assert (source, "owners", "line 6: negated pattern '!kb/sla.md' (CODEOWNERS has no negation); line ignored") in rows
    assert (source, "owners", "line 7: owner 'not-an-owner' is not @user, @org/team or an email address; line ignored") in rows
    assert ("webhooks.md", "front_matter", "review_interval 'soon' is not a number of days (e.g. 90 or 90d); ignored") in rows
    assert len(rows) == 3


@pytest.mark.slow
def test_pages_due_view_and_report(kb, capsys, tmp_path):
    store = Store(kb["out"])
    due = store.query("SELECT doc_id, owner, review_due, days_overdue, findings FROM pages_due")
    assert list(due.doc_id) == ["pricing.md", "support-hours.md", "deprecations.md"]
    by_doc = due.set_index("doc_id")
    assert by_doc.days_overdue["support-hours.md"] == 31 and by_doc.days_overdue["deprecations.md"] == 0
    assert str(by_doc.review_due["pricing.md"])[:10] == "2024-04-21"
    findings = store.query("SELECT count(*) AS n FROM latest_verdicts WHERE doc_id = 'pricing.md' AND label <> 'supported'").n[0]
    assert by_doc.findings["pricing.md"] == findings > 0

    code, out, _ = _cli(capsys, "report", "--out", str(kb["out"]), "--html", str(tmp_path / "r.html"))
    assert code == 0
    assert "pages due for review: 3" in out
    assert re.search(r"support-hours\.md +due 2026-05-01, 31 days overdue; owner Customer Support", out), out
    code, out, _ = _cli(capsys, "report", "--out", str(kb["out"]), "--json")
    assert [p["doc_id"] for p in json.loads(out)["pages_due"]] == ["pricing.md", "support-hours.md", "deprecations.md"]
    html = (tmp_path / "r.html").read_text("utf-8")
    table = html.split('<table id="pages-due">')[1].split("</table>")[0]
    assert [m for m in re.findall(r'data-doc="([^"]+)"', table)] == ["pricing.md", "support-hours.md", "deprecations.md"]


@pytest.mark.slow
def test_sarif_of_a_git_backed_kb(kb, capsys):
    code, out, _ = _cli(capsys, "report", "--out", str(kb["out"]), "--format", "sarif")
    assert code == 0
    doc = json.loads(out)
    assert sarif_errors(doc) == []
    run = doc["runs"][0]
    assert run["originalUriBaseIds"] == {"SRCROOT": {"uri": kb["repo"].resolve().as_uri() + "/"}}
    (vcs,) = run["versionControlProvenance"]
    assert vcs["revisionId"] == kb["head"] and vcs["mappedTo"] == {"uriBaseId": "SRCROOT"}
    # paths relative to the repository root, as code scanning resolves them
    pricing = [r for r in run["results"] if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "kb/pricing.md"]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] for r in run["results"]} == {"SRCROOT"}
    assert pricing and {r["properties"]["owner"] for r in pricing} == {"@acme/revenue billing@acme.example"}
    assert {r["properties"]["ownerSource"] for r in pricing} == {"../.github/CODEOWNERS:4"}
    assert all("Owner: @acme/revenue billing@acme.example" in r["message"]["text"] for r in pricing)


@pytest.mark.slow
def test_annotations_and_junit_carry_the_owner(kb, capsys):
    code, out, _ = _cli(capsys, "report", "--out", str(kb["out"]), "--format", "github")
    pricing = [line for line in out.splitlines() if "file=kb/pricing.md," in line]  # relative to the repository root
    assert pricing and all("owner%3A @acme/revenue billing@acme.example" in line for line in pricing)
    assert not any("file=pricing.md," in line for line in out.splitlines())
    code, out, _ = _cli(capsys, "report", "--out", str(kb["out"]), "--format", "junit")
    cases = {c.get("name"): c for c in ET.fromstring(out).iter("testcase")}
    assert cases["pricing.md"].get("file") == "kb/pricing.md"
    assert cases["pricing.md"].find("./properties/property[@name='owner']").get("value") == "@acme/revenue billing@acme.example"
    assert cases["regions.md"].find("properties") is None  # no owner


@pytest.mark.slow
def test_findings_route_to_owners(kb):
    from reports import findings as model

    found = model.load(Store(kb["out"]))
    routed = found.by_owner()
    assert "(no owner)" in routed and list(routed)[-1] == "(no owner)"
    assert {f.doc_id for f in routed["(no owner)"]} == {"regions.md"}
    assert {f.doc_id for f in routed["@acme/revenue billing@acme.example"]} == {"pricing.md"}
    assert sum(len(v) for v in routed.values()) == len(found.findings)
    assert q.pages_due(Store(kb["out"]), found.run_id)[0]["owner"] == "@acme/revenue billing@acme.example"
