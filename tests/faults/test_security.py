"""Hostile values reaching the HTML report and SQL, and evidence altered after a run."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from faults.conftest import cli, copy_store, query
from kb.evidence.receipts import verify_stored_evidence
from kb.store import Store

pytestmark = pytest.mark.faults

XSS_DOC = "<img src=x onerror=alert(1)>.md"


def test_html_report_escapes_hostile_names_and_fields(hostile_run, tmp_path, capsys, record):
    _, out, row, _ = hostile_run
    target = tmp_path / "report.html"
    code, stdout, err = cli("report", "--out", str(out), "--html", str(target), capsys=capsys)
    assert code == 0, err
    page = target.read_text("utf-8")
    assert "&lt;img src=x onerror=alert(1)&gt;.md" in page  # the document is in the report, as text
    for raw in ("<img src=x", "<script>alert", "<b onmouseover", "onerror=alert(1)>"):
        assert raw not in page, raw
    assert page.count("<script") == 1  # the report's own script only
    record(
        "security",
        "an HTML-report XSS attempt: a file named `<img src=x onerror=alert(1)>.md`, "
        "`owner: <script>...</script>`, a `<b onmouseover=...>` title (`kbaudit report --html`)",
        "every value is escaped (`&lt;img src=x onerror=alert(1)&gt;.md`); the page has only its own `<script>`, "
        "and a Content-Security-Policy",
    )


def test_sql_injection_through_cli_filters(hostile_run, capsys, record):
    _, out, row, _ = hostile_run
    o = ("--out", str(out))
    code, listing, _ = cli("review", "list", *o, "--json", capsys=capsys)
    assert code == 0 and listing.strip() not in ("", "[]")  # the queue has edits to leak
    code, stdout, err = cli("review", "list", *o, "--doc", "x' OR 1=1 --", capsys=capsys)
    assert code == 0 and "review queue is empty" in stdout, stdout + err
    code, stdout, err = cli("review", "list", *o, "--doc", "it's.md", "--json", capsys=capsys)
    assert code == 0, err  # a real id with a quote is just a value
    code, _, err = cli("report", *o, "--run", "x'; DROP VIEW runs; --", capsys=capsys)
    assert code == 2 and err.startswith("kbaudit: error:") and "Traceback" not in err, err
    report_line = err.strip().replace(str(out), "<store>")
    code, _, err = cli("sql", "DROP VIEW runs", *o, capsys=capsys)
    assert code == 2, err
    assert query(out, "SELECT count(*) FROM runs")[0][0] == 1  # the views are intact
    code, stdout, _ = cli("report", *o, "--run", row["run_id"], capsys=capsys)
    assert code == 0
    record(
        "security",
        'SQL injection through CLI filters: `review list --doc "x\' OR 1=1 --"`, '
        '`report --run "x\'; DROP VIEW runs; --"`, `sql "DROP VIEW runs"`',
        f"the filter is a bound parameter (empty queue, exit 0); `report` exits 2: `{report_line}`; "
        "`sql` opens the store read-only (exit 2); every view intact",
    )


def test_a_rerun_signs_the_evidence_it_read_from_the_cache(base_store, tmp_path):
    """A rerun signs the evidence the retrieval cache kept (its canonical lines): the rows it
    stores must verify against that receipt, and be the first run's rows under a new receipt."""
    from faults.conftest import settings_for
    from flows.audit import audit

    docs, base, first = base_store
    out = copy_store(base, tmp_path / "out")
    second = audit(settings_for(docs, out))
    store = Store(out)
    assert 0 < second["reused"] == second["checkworthy"], second
    assert verify_stored_evidence(store, second["run_id"]) == []

    def rows(run_id: str) -> list[dict]:
        table = pq.read_table(out / "evidence" / f"run_id={run_id}" / "part-0.parquet").drop_columns(["receipt_id"])
        return sorted(table.to_pylist(), key=lambda r: (r["claim_id"], r["rank"]))

    assert rows(second["run_id"]) == rows(first["run_id"])
    receipt_ids = query(out, "SELECT DISTINCT receipt_id FROM evidence WHERE run_id = ?", [second["run_id"]])
    assert len(receipt_ids) == 1 and receipt_ids != query(
        out, "SELECT DISTINCT receipt_id FROM evidence WHERE run_id = ?", [first["run_id"]]
    )


def test_an_unchanged_rerun_takes_the_last_runs_evidence_table_only_when_it_signed_the_same_rows(base_store, tmp_path):
    """An unchanged rerun writes the last run's evidence file under its own receipt id rather than
    turning the cached lines into columns again. It must do so only for the rows that run signed,
    and an alteration of that file must not vanish into the copy: the rerun's evidence is flagged."""
    from faults.conftest import settings_for
    from flows.audit import audit
    from kb.chain import Caches, ingest_stage, retrieve_and_sign, sources_stage, split_stage
    from kb.evidence.receipts import evidence_table_as_last_run

    docs, base, first = base_store
    out = copy_store(base, tmp_path / "out")
    store, settings, caches = Store(out), settings_for(docs, out), Caches.at(out / "cache" / "stages")
    documents, _ = ingest_stage(settings)
    claims, _ = split_stage(documents, caches, settings.claims)
    sources, _ = sources_stage(settings)
    evidence, receipt, reused = retrieve_and_sign(sources, claims, settings, caches, "r", out / "cache", out / "keys")
    assert reused == len(evidence) > 0 and evidence._text  # every search cached, no row decoded
    table = evidence_table_as_last_run(store, evidence, receipt)
    stored = pq.read_table(out / "evidence" / f"run_id={first['run_id']}" / "part-0.parquet")
    assert table is not None and set(table.column("receipt_id").to_pylist()) == {receipt["receipt_id"]}
    assert table.drop_columns(["receipt_id"]).equals(stored.drop_columns(["receipt_id"]))
    assert evidence_table_as_last_run(store, evidence, {**receipt, "output_hash": "0" * 64}) is None  # other rows signed

    part = out / "evidence" / f"run_id={first['run_id']}" / "part-0.parquet"
    rows = stored.to_pylist()
    rows[3]["sentence"] = rows[3]["sentence"] + " (edited)"
    pq.write_table(stored.from_pylist(rows, schema=stored.schema), part)
    second = audit(settings)
    problems = verify_stored_evidence(store, second["run_id"])
    assert len(problems) == 1 and "stored evidence rows differ from what was signed" in problems[0], problems


def test_evidence_altered_after_the_run_is_flagged(base_store, tmp_path, record):
    _, base, first = base_store
    out = copy_store(base, tmp_path / "out")
    store = Store(out)
    assert verify_stored_evidence(store, first["run_id"]) == []

    part = out / "evidence" / f"run_id={first['run_id']}" / "part-0.parquet"
    original = pq.read_table(part)
    rows = original.to_pylist()
    rows[3]["sentence"] = rows[3]["sentence"].replace("30", "300") if "30" in rows[3]["sentence"] else rows[3]["sentence"] + " (edited)"
    pq.write_table(original.from_pylist(rows, schema=original.schema), part)
    problems = verify_stored_evidence(store, first["run_id"])
    assert len(problems) == 1 and "stored evidence rows differ from what was signed" in problems[0], problems

    pq.write_table(original, part)  # the evidence back; now the receipt's signature is forged
    receipts = out / "receipts" / f"run_id={first['run_id']}" / "part-0.parquet"
    table = pq.read_table(receipts)
    forged = table.to_pylist()
    forged[0]["signature"] = "0" * 64
    pq.write_table(table.from_pylist(forged, schema=table.schema), receipts)
    problems = verify_stored_evidence(store, first["run_id"])
    assert len(problems) == 1 and "receipt itself was altered or forged" in problems[0], problems
    record(
        "security",
        "an evidence row altered after the run (one sentence rewritten in the Parquet file); a forged receipt signature",
        "`kb.evidence.receipts.verify_stored_evidence` flags the run's retrieval batch: `the stored evidence rows differ "
        "from what was signed`; and the forged receipt: `the receipt itself was altered or forged`; "
        "the untouched store verifies clean",
    )
