"""Bad and hostile inputs through one real run (depth D0, under the Prefect test harness).

One knowledge base holds every bad input at once, beside a few good demo pages and 10,000 tiny
documents, so each test below also shows that the rest of the batch was processed.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from faults.conftest import TODAY, assert_consistent, query
from faults.hostile_kb import BIG_BYTES, OVERSIZED_BYTES, PWNED, TINY, UNDATED_MTIME

pytestmark = pytest.mark.faults


def _errors(out: Path, run_id: str) -> dict[str, str]:
    return dict(query(out, "SELECT path, error FROM ingest_errors WHERE run_id = ?", [run_id]))


def _claims(out: Path, doc_id: str) -> list[str]:
    return [r[0] for r in query(out, "SELECT text FROM claims WHERE doc_id = ? ORDER BY start", [doc_id])]


def _doc_ids(out: Path) -> set[str]:
    return {r[0] for r in query(out, "SELECT doc_id FROM documents")}


def test_the_rest_of_the_batch_is_processed(hostile_run, record):
    root, out, row, seconds = hostile_run
    assert_consistent(out, runs=1)
    assert {"backups.md", "pricing.md", "rate-limits.md"} <= _doc_ids(out)
    labelled = query(out, "SELECT count(*) FROM latest_verdicts WHERE doc_id IN ('backups.md', 'pricing.md', 'rate-limits.md')")[0][0]
    assert labelled >= 20, labelled
    record(
        "inputs",
        "all of the bad inputs below in one run, beside 3 good demo pages",
        f"run completed in {seconds:.0f} s: {row['documents']} documents, {row['checkworthy']} check-worthy claims "
        f"labelled, {row['ingest_errors']} ingest_errors rows; store consistent",
    )


def test_binary_files(hostile_run, record):
    _, out, row, _ = hostile_run
    errors = _errors(out, row["run_id"])
    assert errors["logo.md"] == "binary file (contains NUL bytes)"
    assert errors["notes.txt"] == "binary file (contains NUL bytes)"
    assert not {"logo.md", "notes.txt"} & _doc_ids(out)
    record(
        "inputs",
        "binary files (PNG bytes named `.md`, a `.txt` with NUL bytes)",
        "`ingest_errors` row each: `binary file (contains NUL bytes)`; no document row",
    )


def test_invalid_utf8(hostile_run, record):
    _, out, row, _ = hostile_run
    assert _errors(out, row["run_id"])["latin1.md"] == "not valid UTF-8 (byte 0xe9 at offset 3)"
    record("inputs", "invalid UTF-8 (a Latin-1 file)", "`ingest_errors` row: `not valid UTF-8 (byte 0xe9 at offset 3)`")


def test_empty_documents(hostile_run, record):
    _, out, _, _ = hostile_run
    rows = dict(query(out, "SELECT doc_id, status FROM documents WHERE doc_id IN ('empty.md', 'blank.md', 'front-matter-only.md')"))
    assert set(rows) == {"empty.md", "blank.md", "front-matter-only.md"}
    assert query(out, "SELECT count(*) FROM claims WHERE doc_id IN ('empty.md', 'blank.md', 'front-matter-only.md')")[0][0] == 0
    record(
        "inputs",
        "empty documents (0 bytes, whitespace only, front matter only)",
        f"kept as documents with 0 claims (status {', '.join(sorted(set(rows.values())))}); no error",
    )


def test_fifty_megabyte_document(hostile_run, record):
    from kb.ingest.parse import parse_document

    root, out, row, _ = hostile_run
    raw = (root / "docs" / "big-log.md").read_bytes()
    started = time.perf_counter()
    doc = parse_document(raw, "big-log.md", "big-log.md")
    parse_seconds = time.perf_counter() - started
    assert parse_seconds < 60, parse_seconds
    assert query(out, "SELECT bytes FROM documents WHERE doc_id = 'big-log.md'")[0][0] == len(raw) >= BIG_BYTES
    assert _claims(out, "big-log.md") == ["Build log", "The Team plan keeps backups for 30 days."]
    assert (
        _errors(out, row["run_id"])["oversized.md"] == f"file is {OVERSIZED_BYTES} bytes, over the {64 * 1024 * 1024}-byte limit; skipped"
    )
    del doc
    record(
        "inputs",
        "a 50 MB document (a pasted build log in one fenced block under a line of prose)",
        f"audited: the prose claim labelled, the log skipped as code; parsed in {parse_seconds:.1f} s",
    )
    record(
        "inputs",
        "a 70 MB document (over `max_doc_bytes`, 64 MiB by default)",
        "`ingest_errors` row: `file is 73400320 bytes, over the 67108864-byte limit; skipped` (not read)",
    )


def test_ten_thousand_tiny_documents(hostile_run, record):
    _, out, row, seconds = hostile_run
    tiny = query(out, "SELECT count(*) FROM documents WHERE doc_id LIKE 'tiny/%'")[0][0]
    assert tiny == TINY
    assert query(out, "SELECT count(*) FROM claims WHERE doc_id LIKE 'tiny/%' AND checkworthy")[0][0] == 0
    assert query(out, "SELECT count(DISTINCT doc_id) FROM documents")[0][0] == row["documents"]
    record(
        "inputs",
        "10,000 tiny documents (no check-worthy claims)",
        f"all 10,000 in `documents`, one row each; the whole run took {seconds:.0f} s",
    )


def test_symlinks_leaving_the_root(hostile_run, record):
    _, out, row, _ = hostile_run
    errors = _errors(out, row["run_id"])
    assert errors["escape.md"].startswith("symlink points outside the KB root")
    assert errors["escape-folder"].startswith("symlink points outside the KB root")
    assert "inside-link.md" in _doc_ids(out)
    leaked = query(out, "SELECT count(*) FROM claims_history WHERE text LIKE '%launch code%' OR text LIKE '%31 days%'")[0][0]
    assert leaked == 0
    record(
        "inputs",
        "a symlink to a file outside the KB root, and one to a folder outside it",
        "`ingest_errors` row each: `symlink points outside the KB root (...); skipped`; nothing read through "
        "them; a link that stays inside the root is audited",
    )


def test_odd_file_names(hostile_run, record):
    _, out, _, _ = hostile_run
    ids = _doc_ids(out)
    for name in ("with space.md", "ünïcødé 文档.md", "notes..v2.md", "it's.md"):
        assert name in ids, name
        assert _claims(out, name) == ["The Enterprise plan keeps backups for 90 days."]
    assert "..hidden.md" not in ids  # a dot file, skipped like every hidden file
    record(
        "inputs",
        "file names with spaces, unicode, `..` and a quote (`it's.md`)",
        "audited under their own path as `doc_id`; `..hidden.md` is skipped as a dot file (documented rule)",
    )


def test_duplicate_document_ids(hostile_run, record):
    _, out, row, _ = hostile_run
    cafes = query(out, "SELECT doc_id, version_id FROM documents WHERE doc_id IN (?, ?) ORDER BY doc_id", ["caf\u00e9.md", "cafe\u0301.md"])
    assert len(cafes) == 2 and cafes[0][1] == cafes[1][1]  # same bytes, two documents
    ids = query(out, "SELECT count(*), count(DISTINCT claim_id) FROM claims WHERE doc_id IN (?, ?)", ["caf\u00e9.md", "cafe\u0301.md"])[0]
    assert ids == (2, 2)
    errors = _errors(out, row["run_id"])
    assert any("duplicate of source 'seat-policy'" in e for e in errors.values()), errors
    record(
        "inputs",
        "duplicate ids: `café.md` in NFC and NFD (two files, one visible name, same bytes); two sources with one `id`",
        "the two documents kept apart (distinct `claim_id`s, no duplicate rows); the second source dropped with an "
        "`ingest_errors` row `duplicate of source 'seat-policy' (same text and date, ...)`",
    )


def test_hostile_front_matter(hostile_run, record):
    root, out, row, _ = hostile_run
    errors = _errors(out, row["run_id"])
    assert errors["pyobj.md"].startswith("front matter has an unsafe or unknown YAML tag")
    assert errors["bomb.md"] == "front matter uses YAML anchors (refused: alias bombs)"
    assert errors["huge-front-matter.md"] == "front matter larger than 64 KB"
    assert not (root / PWNED).exists()
    record(
        "inputs",
        "hostile YAML front matter: `!!python/object/apply:os.system`, a billion-laughs alias bomb, 120 KB of keys",
        "`ingest_errors` row each (`unsafe or unknown YAML tag`, `uses YAML anchors (refused: alias bombs)`, "
        "`larger than 64 KB`); nothing executed",
    )


def test_html_with_scripts(hostile_run, record):
    _, out, _, _ = hostile_run
    claims = _claims(out, "page.html")
    assert claims and all("99 days" not in c and "alert" not in c and "color" not in c for c in claims), claims
    assert "The Team plan keeps backups for 30 days." in claims
    record(
        "inputs",
        "HTML with `<script>`, `<style>`, `<noscript>` and an `onerror` attribute",
        "only visible text becomes claims; script and style content never does",
    )


def test_sources_without_a_date_and_in_the_future(hostile_run, record):
    _, out, row, _ = hostile_run
    errors = _errors(out, row["run_id"])
    assert errors["future.md"] == f"future date published_at=2030-01-01: clamped to {TODAY.isoformat()}"
    dates = dict(
        query(out, "SELECT source_id, max(source_date) FROM evidence WHERE source_id IN ('starter-seats', 'starter-projects') GROUP BY 1")
    )
    assert dates == {"starter-seats": UNDATED_MTIME, "starter-projects": TODAY}, dates
    record("sources", "a source with no date", "dated by its file's modification time (`date_origin` mtime) and still used as evidence")
    record(
        "sources",
        "a source dated in the future (2030)",
        f"`ingest_errors` row `future date published_at=2030-01-01: clamped to {TODAY.isoformat()}`; used with the clamped date",
    )
