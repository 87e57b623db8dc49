"""Source loading rules: dates, versions, duplicates, bad rows (real files)."""

from __future__ import annotations

import json
import os
from datetime import date

import pytest

from kb.evidence.sources import load_sources, parse_date

TODAY = date(2025, 1, 15)


def _md(path, front: str, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}\n---\n{body}\n", encoding="utf-8")


def test_folder_front_matter_dates_and_versions(tmp_path):
    _md(
        tmp_path / "a" / "pricing-2023.md",
        "id: pricing\ntitle: Pricing\npublished_at: 2023-01-10\nauthority: 0.8",
        "The Pro plan costs $20 per month.",
    )
    _md(tmp_path / "a" / "pricing-2024.md", "id: pricing\ntitle: Pricing\nupdated: 2024-06-01", "The Pro plan costs $25 per month.")
    (tmp_path / "notes.txt").write_text("Support answers within one business day.", encoding="utf-8")
    (tmp_path / "page.html").write_text("<html><body><h1>Status</h1><p>All systems operational.</p></body></html>", encoding="utf-8")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n")  # not a source type: ignored

    sources, errors = load_sources(tmp_path, today=TODAY)

    assert errors == []
    by_id = {}
    for s in sources:
        by_id.setdefault(s.source_id, []).append(s)
    assert sorted(by_id) == ["notes.txt", "page.html", "pricing"]
    versions = sorted(by_id["pricing"], key=lambda s: s.source_date)
    assert [v.source_date for v in versions] == [date(2023, 1, 10), date(2024, 6, 1)]
    assert {v.date_origin for v in versions} == {"front_matter"}
    assert versions[0].authority == 0.8 and versions[1].authority == 1.0
    assert versions[0].source_version != versions[1].source_version
    assert versions[0].title == "Pricing"
    notes = by_id["notes.txt"][0]
    assert notes.date_origin == "mtime" and notes.source_date is not None
    assert "All systems operational" in by_id["page.html"][0].text


def test_folder_bad_sources_reported_rest_indexed(tmp_path):
    _md(tmp_path / "empty.md", "id: empty\ndate: 2024-01-01", "")
    _md(tmp_path / "baddate.md", "id: baddate\npublished_at: next tuesday", "Backups run nightly.")
    _md(tmp_path / "future.md", "id: future\npublished_at: 2031-05-05", "Version 9 ships with dark mode.")
    _md(tmp_path / "good.md", "id: good\npublished_at: 2024-02-02", "The API rate limit is 100 requests per minute.")
    _md(tmp_path / "draft.md", "id: draft\nkbaudit: {ignore: true}", "Not a source yet.")
    (tmp_path / "binary.txt").write_bytes(b"\x00\x01\x02")
    old = 1_600_000_000  # 2020-09-13
    os.utime(tmp_path / "baddate.md", (old, old))

    sources, errors = load_sources(tmp_path, today=TODAY)

    ids = {s.source_id: s for s in sources}
    assert set(ids) == {"baddate", "future", "good"}
    messages = " | ".join(e.error for e in errors)
    assert "no text" in messages and "unparsable date" in messages and "future date" in messages
    assert "opted out" in messages and "binary" in messages
    assert all(e.stage == "sources" for e in errors)
    assert ids["baddate"].date_origin == "mtime" and ids["baddate"].source_date == date(2020, 9, 13)
    assert ids["future"].source_date == TODAY  # clamped, kept
    assert ids["good"].source_date == date(2024, 2, 2)


def test_jsonl_duplicates_and_versions(tmp_path):
    rows = [
        {"id": "s1", "text": "Refunds take 5 days.", "title": "Refunds", "published_at": "2023-01-01", "url": "https://x/1"},
        {"id": "s1", "text": "Refunds take 5 days.", "title": "Refunds", "published_at": "2023-01-01"},  # exact dup
        {"id": "s1", "text": "Refunds take 3 days.", "published_at": "2024-03-01"},  # new version
        {"id": "s2", "text": "Same text.", "updated_at": "2022-01-01"},
        {"id": "s2", "text": "Same text.", "updated_at": "2023-01-01"},  # same text, newer date
        {"id": "s3", "text": "", "published_at": "2024-01-01"},  # no text
        {"id": "s4", "text": "Authority weighted.", "authority": "high"},  # bad authority
    ]
    path = tmp_path / "sources.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n{not json\n", encoding="utf-8")

    sources, errors = load_sources(path, today=TODAY)

    s1 = sorted((s for s in sources if s.source_id == "s1"), key=lambda s: s.source_date)
    assert [s.text for s in s1] == ["Refunds take 5 days.", "Refunds take 3 days."]
    assert s1[0].url == "https://x/1" and s1[0].date_origin == "field"
    s2 = [s for s in sources if s.source_id == "s2"]
    assert len(s2) == 1 and s2[0].source_date == date(2023, 1, 1)
    assert not any(s.source_id == "s3" for s in sources)
    s4 = next(s for s in sources if s.source_id == "s4")
    assert s4.authority == 1.0 and s4.date_origin == "mtime"
    messages = [e.error for e in errors]
    assert any("duplicate" in m for m in messages)
    assert any("same text under two dates" in m for m in messages)
    assert any("no text" in m for m in messages)
    assert any("malformed JSON" in m for m in messages)
    assert any("bad authority" in m for m in messages)


def test_scifact_corpus_rows_and_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    sci = tmp_path / "corpus.jsonl"
    sci.write_text(json.dumps({"doc_id": 42, "title": "T", "abstract": ["First finding.", "Second finding."]}) + "\n")
    sources, errors = load_sources(sci, today=TODAY)
    assert errors == [] and len(sources) == 1
    s = sources[0]
    assert s.source_id == "42" and s.text == "First finding. Second finding."
    assert [s.text[b.start : b.end] for b in s.blocks] == ["First finding.", "Second finding."]

    table = pa.table({"id": ["p1", "p2"], "text": ["Parquet text.", None], "published_at": ["2024-05-05", "2024-05-05"]})
    pq.write_table(table, tmp_path / "src.parquet")
    sources, errors = load_sources(tmp_path / "src.parquet", today=TODAY)
    assert [s.source_id for s in sources] == ["p1"] and sources[0].source_date == date(2024, 5, 5)
    assert len(errors) == 1 and "no text" in errors[0].error


def test_missing_path_and_parse_date():
    sources, errors = load_sources("/nonexistent/kbaudit/sources")
    assert sources == [] and len(errors) == 1
    assert parse_date("2024-03-01T10:00:00Z") == date(2024, 3, 1)
    assert parse_date("March 5, 2024") == date(2024, 3, 5)
    assert parse_date(2023) == date(2023, 1, 1)
    assert parse_date("soon") is None
