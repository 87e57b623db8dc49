"""`kbaudit export --format verifyloop`: one JSON per document, valid against the shipped schemas."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from kb.records import content_hash
from kb.store import Store
from kb.verifyloop import load_schema
from reports.export import export_verifyloop, file_name
from tests.test_reports import _write_run, shared_demo_store


def _validators():
    checker = jsonschema.FormatChecker()
    return (
        jsonschema.Draft202012Validator(load_schema("verifyloop-report.schema.json"), format_checker=checker),
        jsonschema.Draft202012Validator(load_schema("verifyloop-export-manifest.schema.json"), format_checker=checker),
    )


def _check(dest: Path, run_id: str) -> dict[str, dict]:
    """Validate every file under dest; return the reports by doc_id."""
    report_schema, manifest_schema = _validators()
    manifest = json.loads((dest / "manifest.json").read_text())
    manifest_schema.validate(manifest)
    assert manifest["run_id"] == run_id
    reports = {}
    for entry in manifest["documents"]:
        data = json.loads((dest / entry["file"]).read_text())
        report_schema.validate(data)
        assert data["subject"]["doc_id"] == entry["doc_id"] and data["subject"]["run_id"] == run_id
        assert len(data["gaps"]) == entry["gaps"]
        reports[entry["doc_id"]] = data
    assert sorted(p.name for p in dest.iterdir()) == sorted([e["file"] for e in manifest["documents"]] + ["manifest.json"])
    return reports


def test_file_names_are_flat_safe_and_unique():
    taken: set[str] = set()
    assert file_name("guides/setup.md", taken) == "guides__setup.md.json"
    assert file_name("../../etc/passwd", taken) == "__..__etc__passwd.json"  # no path, no leading dot
    assert file_name("guides/setup.md", taken) == f"guides__setup.md-{content_hash('guides/setup.md', 8)}.json"


def test_export_of_a_small_store_validates(tmp_path: Path):
    store = Store(tmp_path / "out")
    run_id = _write_run(store, {0: "supported", 1: "contradicted", 3: "uncertain"})
    paths = export_verifyloop(store, tmp_path / "export")
    assert [p.name for p in paths] == ["a.md.json", "b.md.json"]
    reports = _check(tmp_path / "export", run_id)
    a = reports["a.md"]
    assert [g["problem"] for g in a["gaps"]] == ["contradicted"]
    assert a["answer"] is None  # the store does not keep texts and there is no documents folder
    assert [c["label"] for c in a["claims"]] == ["supported", "contradicted"]
    assert a["corrections"][0]["new_text"] == "costs 12 <b>"


@pytest.fixture(scope="module")
def demo(prefect_harness, tmp_path_factory):
    return shared_demo_store(tmp_path_factory)


@pytest.mark.slow
def test_export_of_the_demo_runs_validates_against_the_schemas(demo, tmp_path: Path, capsys):
    from cli.main import main

    second, first = demo["second"], demo["first"]
    dest = tmp_path / "latest"
    assert main(["export", "--format", "verifyloop", "--out", str(demo["out"]), "--dest", str(dest)]) == 0
    assert "exported" in capsys.readouterr().out
    reports = _check(dest, second["run_id"])
    assert len(reports) == second["documents"]
    assert sum(len([c for c in r["claims"] if c["label"]]) for r in reports.values()) == second["checkworthy"]
    every_gap = sum(len(r["gaps"]) for r in reports.values())
    assert every_gap == second["contradicted"] + second["stale"] + second["uncertain"]

    rate = reports["rate-limits.md"]
    assert rate["answer"] == (demo["docs"] / "rate-limits.md").read_text("utf-8")
    assert rate["verification_depth"] == second["depth"] and rate["status"]
    # Every evidence row carries the signed receipt of its retrieval batch.
    receipts = {r["receipt_id"]: r for r in rate["tool_receipts"]}
    assert rate["evidence"] and all(e["receipt_id"] in receipts for e in rate["evidence"])
    assert all(r["signature"] and len(r["signature"]) == 64 for r in receipts.values())
    ids = {e["evidence_id"] for e in rate["evidence"]}
    assert all(set(c["evidence_ids"]) <= ids for c in rate["claims"])
    # A stale or contradicted claim with a slot correction shows up in the corrected text.
    if any(c["status"] != "needs_rewrite" for c in rate["corrections"]):
        assert rate["corrected_answer"] and rate["corrected_answer"] != rate["answer"]

    # The first run audited an older version of rate-limits.md: its text is no longer available.
    older = tmp_path / "first"
    assert (
        main(["export", "--format", "verifyloop", "--out", str(demo["out"]), "--run", first["run_id"], "--dest", str(older), "--json"]) == 0
    )
    assert len(json.loads(capsys.readouterr().out)["files"]) == first["documents"]
    old = _check(older, first["run_id"])
    assert old["rate-limits.md"]["answer"] is None and old["backups.md"]["answer"] is not None
    assert old["injected.md"]["subject"]["title"].startswith("<script>")  # data, kept as written
