"""Every finding located, from any KB source: SARIF, GitHub annotations and JUnit carry the file's
path relative to the repository root and the line and column of the claim in the file as the run
read it, and SARIF fixes that apply to that file.

The repository is built with the git CLI in tmp_path: three releases of pages in four formats
(MkDocs admonitions, MyST, reStructuredText, HTML inside Markdown); later releases change each
page's value and add lines above it, so a location taken from the work tree (the newest release)
instead of the rev audited would point at the wrong line.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import date
from pathlib import Path

import pytest

from kb.chain import audit_and_commit
from kb.config import Settings
from kb.store import Store
from reports import findings as model
from reports import github, junit, sarif
from tests.test_formats import cut, sarif_errors
from tests.test_git_sources import git, make_repo, release

pytestmark = pytest.mark.slow

TODAY = date(2025, 6, 1)


def pages(release_no: int, values: dict[str, str]) -> dict[str, str | bytes | None]:
    """The docs of one release: ``release_no`` lines of news on top of every page."""
    news = "".join(f"Release {n} brought small fixes to the documentation pages.\n\n" for n in range(1, release_no))
    return {
        "docs/admonitions.md": f"# Limits\n\n{news}"
        '!!! note "Request limits"\n'
        f"    The default timeout is {values['timeout']} seconds for every request.\n\n"
        "    Uploads are limited to 10 MB per file.\n"
        # a fact the later releases drop: its drafted edit deletes the sentence
        + ("\nThe legacy parser stays available for one more release.\n" if release_no == 1 else ""),
        "docs/myst.md": f"---\ntitle: Workers\n---\n# Workers\n\n{news}"
        f"```{{note}}\nThe scheduler starts {values['workers']} worker processes by default.\n```\n",
        "docs/guide.rst": f"Guide\n=====\n\n{news}.. note::\n\n   The cache keeps entries for {values['days']} days before they expire.\n",
        "docs/retention.md": f"# Retention\n\n{news}"
        f'<div class="callout">\n  <p>Audit logs are retained for {values["retention"]} days in the console.</p>\n</div>\n',
    }


V1 = {"timeout": "30", "workers": "4", "days": "7", "retention": "90"}
V2 = {"timeout": "60", "workers": "8", "days": "14", "retention": "180"}


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """The KB of release v1.0.0 read from git, audited against every release's docs."""
    root = tmp_path_factory.mktemp("locations")
    repo = make_repo(root)
    release(repo, "v1.0.0", "2024-01-10", pages(1, V1))
    release(repo, "v2.0.0", "2024-06-01", pages(2, V2))
    release(repo, "v3.0.0", "2024-11-01", pages(3, V2))
    out = root / "store"
    settings = Settings(
        docs=f"git:{repo}@v1.0.0:docs", sources=[f"git:{repo}@tags:docs"], out=out, depth="D0", today=TODAY, full=True
    ).validate()
    _, row = audit_and_commit(settings, Store(out))
    return {"repo": repo, "out": out, "row": row, "commit": git(repo, "rev-parse", "v1.0.0^{commit}")}


def at_v1(audited, path: str) -> str:
    return git(audited["repo"], "show", f"v1.0.0:{path}") + "\n"  # git show drops the last newline


def first_words(claim: str, n: int = 3) -> str:
    return " ".join(claim.split()[:n])


def test_sarif_of_a_kb_read_from_git_points_into_the_files_at_that_rev(audited):
    assert audited["row"]["docs_commit"] == audited["commit"]
    doc = sarif.to_sarif(model.load(Store(audited["out"])))
    assert sarif_errors(doc) == []
    run = doc["runs"][0]
    assert run["originalUriBaseIds"] == {"SRCROOT": {"uri": Path(audited["repo"]).resolve().as_uri() + "/"}}
    (provenance,) = run["versionControlProvenance"]
    assert provenance["revisionId"] == audited["commit"] and provenance["revisionTag"] == "v1.0.0"
    assert provenance["properties"] == {"rev": "v1.0.0"}
    results = [r for r in run["results"] if r["properties"]["label"] in ("stale", "contradicted")]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results} == set(pages(1, V1))
    fixed, deleted = set(), 0
    for r in results:
        location = r["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "SRCROOT"
        path = location["artifactLocation"]["uri"]
        text = at_v1(audited, path)
        claim = r["properties"]["claim"]
        region = location["region"]
        line = text.split("\n")[region["startLine"] - 1]
        assert line[region["startColumn"] - 1 :].startswith(first_words(claim)), (path, region, line)
        assert r["properties"]["locationBasis"] == "git_rev"
        assert re.search(r"\(\d{4}-\d\d-\d\d, rev v[123]\.0\.0\)", r["message"]["text"]), r["message"]["text"]  # the tag, not a hash
        for fix in r.get("fixes", []):
            (change,) = fix["artifactChanges"]
            assert change["artifactLocation"] == location["artifactLocation"]
            (rep,) = change["replacements"]
            old, new = cut(text, rep["deletedRegion"]), rep["insertedContent"]["text"]
            if new:
                assert f'Replace "{old}" with "{new}"' in fix["description"]["text"]
            else:
                assert fix["description"]["text"].startswith(f'Delete "{old}"') and "legacy parser" in old
                deleted += 1
            start = text.index(old, len("\n".join(text.split("\n")[: rep["deletedRegion"]["startLine"] - 1])))
            patched = text[:start] + new + text[start + len(old) :]
            assert claim.replace(old, new) in patched and claim not in patched
            fixed.add(path)
    assert fixed == set(pages(1, V1)), "every page's stale value has a drafted edit as a SARIF fix"
    assert deleted == 1  # the removed fact's deletion is a fix too


def test_annotations_and_junit_carry_the_same_path_line_and_column(audited):
    found = model.load(Store(audited["out"]))
    by_claim = {r["properties"]["claim"]: r["locations"][0]["physicalLocation"] for r in sarif.to_sarif(found)["runs"][0]["results"]}
    lines = github.render(found).splitlines()[:-1]
    assert len(lines) == len(by_claim)
    for line in lines:
        m = re.match(r"^::(error|warning|notice) (?P<props>[^:]*)::(?P<msg>.*)$", line)
        assert m, line
        props = dict(p.split("=", 1) for p in m.group("props").split(","))
        quoted = re.search(r': "(.*?)"%0A', m.group("msg"))
        assert quoted, m.group("msg")
        claim = quoted.group(1)
        loc = by_claim[claim]
        assert props["file"] == loc["artifactLocation"]["uri"]
        assert (int(props["line"]), int(props["col"])) == (loc["region"]["startLine"], loc["region"]["startColumn"])
        text = at_v1(audited, props["file"])
        assert text.split("\n")[int(props["line"]) - 1][int(props["col"]) - 1 :].startswith(first_words(claim))
    root = ET.fromstring(junit.render(found, per_claim=True))
    suite_props = {p.get("name"): p.get("value") for p in root.findall("./testsuite/properties/property")}
    assert suite_props == {"kb.revision": audited["commit"], "kb.tag": "v1.0.0", "kb.rev": "v1.0.0"}
    located = 0
    for case in root.iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            continue
        assert case.get("file") in pages(1, V1)
        m = re.match(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): ", failure.text or "")
        assert m and m.group("path") == case.get("file"), failure.text
        text = at_v1(audited, m.group("path"))
        assert text.split("\n")[int(m.group("line")) - 1][int(m.group("col")) - 1 :].startswith(first_words(case.get("name") or ""))
        located += 1
    assert located >= 4


def test_report_command_renders_the_git_kb_with_its_locations(audited, capsys):
    from cli.main import main

    code = main(["report", "--out", str(audited["out"]), "--format", "sarif"])
    raw = capsys.readouterr().out
    assert code == 0
    run = json.loads(raw)["runs"][0]
    assert "git%3A" not in raw and "KBROOT" not in raw
    assert all("region" in r["locations"][0]["physicalLocation"] for r in run["results"])


def test_a_folder_kb_in_a_work_tree_and_its_changed_since_run(audited, tmp_path):
    """Full run of the work tree's docs (HEAD: a commit on main after v3.0.0 that put the old
    timeout back), then the page edited: the full run's finding still points into the file as
    HEAD holds it; a --changed-since HEAD run's into the edited work-tree file."""
    repo = audited["repo"]
    page = repo / "docs" / "admonitions.md"
    page.write_text(page.read_text("utf-8").replace("60 seconds", "30 seconds"), "utf-8")
    git(repo, "commit", "-q", "-am", "timeout back to 30", when="2024-12-01")
    head = git(repo, "rev-parse", "HEAD")
    out = tmp_path / "store"
    settings = Settings(docs=repo / "docs", sources=[f"git:{repo}@tags:docs"], out=out, depth="D0", today=TODAY, full=True)
    audit_and_commit(settings.validate(), Store(out))
    committed = git(repo, "show", "HEAD:docs/admonitions.md") + "\n"
    page.write_text("# Limits\n\nA line added on top.\n\n" + committed.split("\n", 2)[2], "utf-8")

    def timeout_finding() -> tuple[dict, dict]:
        doc = sarif.to_sarif(model.load(Store(out)))
        assert sarif_errors(doc) == []
        run = doc["runs"][0]
        (r,) = [r for r in run["results"] if "timeout" in r["properties"]["claim"]]
        return run, r

    run, r = timeout_finding()
    (provenance,) = run["versionControlProvenance"]
    assert provenance["revisionId"] == head and provenance["branch"] == "main" and "revisionTag" not in provenance
    location = r["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "docs/admonitions.md", "uriBaseId": "SRCROOT"}
    assert r["properties"]["locationBasis"] == "git_rev"  # the work tree changed since: the file at HEAD
    line = committed.split("\n")[location["region"]["startLine"] - 1]
    assert line[location["region"]["startColumn"] - 1 :].startswith("The default timeout")
    assert r.get("fixes"), r

    audit_and_commit(settings.replace(changed_since="HEAD", full=False).validate(), Store(out))
    _, r = timeout_finding()
    location = r["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "docs/admonitions.md" and r["properties"]["locationBasis"] == "kb_file"
    line = page.read_text("utf-8").split("\n")[location["region"]["startLine"] - 1]
    assert line[location["region"]["startColumn"] - 1 :].startswith("The default timeout")
    for fix in r.get("fixes", []):
        (rep,) = fix["artifactChanges"][0]["replacements"]
        assert cut(page.read_text("utf-8"), rep["deletedRegion"]) in r["properties"]["claim"]


def test_verifyloop_export_of_a_git_kb_has_the_pages_text_and_statuses_say_nothing_was_written(audited, tmp_path):
    from reports.export import export_verifyloop

    export_verifyloop(Store(audited["out"]), tmp_path / "export")
    report = json.loads((tmp_path / "export" / "admonitions.md.json").read_text("utf-8"))
    assert report["answer"] == at_v1(audited, "docs/admonitions.md")  # the page at v1.0.0, not the work tree's
    assert "60 seconds" in report["corrected_answer"]
    statuses = {r[0] for r in Store(audited["out"]).query("SELECT status FROM documents").itertuples(index=False)}
    assert "CORRECTED" not in statuses and statuses <= {"CORRECTABLE", "EDITS_ACCEPTED", "HUMAN_REVIEW_REQUIRED", "FAILED"}
    manifest = json.loads((tmp_path / "export" / "manifest.json").read_text("utf-8"))
    assert {d["status"] for d in manifest["documents"]} <= {"CORRECTED", "HUMAN_REVIEW_REQUIRED", "FAILED"}  # VerifyLoop's codes
