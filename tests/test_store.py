import datetime as dt
from pathlib import Path

import duckdb
import pytest

from kb.records import Claim, Verdict
from kb.store import Store, StoreLocked, new_run_id


def _claim(i: int) -> Claim:
    return Claim(claim_id=f"c{i}", doc_id="a.md", version_id="v1", start=0, end=5, source_text="x", text="x")


def _runs_row() -> dict:
    now = dt.datetime.now(dt.UTC)
    return {"started_at": now, "finished_at": now, "status": "completed", "depth": "D1", "claims": 2}


def _write_run(store: Store, labels: list[str]) -> str:
    run_id = new_run_id()
    store.write_table(run_id, "claims", [_claim(i) for i in range(len(labels))])
    store.write_table(
        run_id,
        "verdicts",
        [Verdict(claim_id=f"c{i}", label=label, confidence=0.9, tier="rules", rationale="r") for i, label in enumerate(labels)],
    )
    store.commit_run(run_id, _runs_row())
    return run_id


def test_runs_are_visible_only_when_committed(tmp_path: Path):
    store = Store(tmp_path / "out")
    first = _write_run(store, ["supported", "stale"])
    # A second run that crashed before commit: staged, never visible.
    crashed = new_run_id()
    store.write_table(crashed, "claims", [_claim(9)])
    frame = store.query("SELECT run_id, count(*) AS n FROM claims GROUP BY 1")
    assert frame.to_dict("records") == [{"run_id": first, "n": 2}]
    assert store.clear_stale_staging() == [crashed]


def test_latest_verdicts_has_one_row_per_claim(tmp_path: Path):
    store = Store(tmp_path / "out")
    _write_run(store, ["supported", "stale"])
    second = _write_run(store, ["supported", "contradicted"])
    rows = store.query("SELECT claim_id, label, run_id FROM latest_verdicts ORDER BY claim_id").to_dict("records")
    assert rows == [
        {"claim_id": "c0", "label": "supported", "run_id": second},
        {"claim_id": "c1", "label": "contradicted", "run_id": second},
    ]
    assert store.query("SELECT count(*) AS n FROM verdicts").n[0] == 4  # history is kept


def test_every_table_has_a_view_even_when_empty(tmp_path: Path):
    store = Store(tmp_path / "out")
    _write_run(store, ["supported"])
    con = duckdb.connect(str(tmp_path / "out" / "kbaudit.duckdb"), read_only=True)
    for view in (
        "runs",
        "documents",
        "claims",
        "evidence",
        "verdicts",
        "edits",
        "ingest_errors",
        "receipts",
        "latest_verdicts",
        "review_queue",
    ):
        con.execute(f"SELECT * FROM {view}").fetchall()


def test_second_writer_is_refused_with_a_clear_message(tmp_path: Path):
    first, second = Store(tmp_path / "out"), Store(tmp_path / "out")
    first.lock()
    try:
        with pytest.raises(StoreLocked, match="another kbaudit run is writing"):
            second.lock()
    finally:
        first.unlock()
    second.lock()
    second.unlock()


def test_review_queue_keeps_edits_of_documents_without_an_owner(tmp_path: Path):
    """Regression: an optimizer fault once dropped the ownerless document's edit from the queue."""
    from tests.test_reports import _write_run as write_report_run

    store = Store(tmp_path / "out")
    write_report_run(store, {0: "supported", 1: "contradicted", 2: "stale", 3: "supported", 5: "stale"})
    write_report_run(store, {0: "contradicted", 1: "supported", 3: "stale", 4: "contradicted", 5: "stale", 6: "uncertain"})
    rows = store.query("SELECT doc_id, owner FROM review_queue ORDER BY doc_id").to_dict("records")
    assert [r["doc_id"] for r in rows] == ["a.md", "b.md"]


def test_large_tables_are_written_in_row_groups(tmp_path: Path, monkeypatch):
    import pyarrow.parquet as pq

    import kb.store as store_module

    monkeypatch.setattr(store_module, "WRITE_CHUNK", 4)
    store = Store(tmp_path)
    run_id = new_run_id()
    assert store.write_table(run_id, "claims", (_claim(i) for i in range(10))) == 10  # a generator is fine
    assert store.write_table(run_id, "verdicts", []) == 0
    staged = store.staging(run_id)
    claims_file = pq.ParquetFile(staged / "claims" / "part-0.parquet")
    assert claims_file.metadata.num_row_groups == 3
    assert claims_file.read().column("claim_id").to_pylist() == [f"c{i}" for i in range(10)]
    assert pq.read_table(staged / "verdicts" / "part-0.parquet").num_rows == 0
    store.commit_run(run_id, _runs_row())
    assert store.query("SELECT count(*) AS n FROM claims").n[0] == 10


def test_a_commit_remakes_the_views_only_when_they_would_differ(tmp_path: Path, monkeypatch):
    """The views read their files by glob, so a run written under the same schemas is in them at
    once; remaking them reads every file's schema (more with every run kept). Anything else that
    made them, or another set of schemas, makes the next commit remake them."""
    import kb.store as store_module

    store = Store(tmp_path / "out")
    made: list[bool] = []
    make = Store._make_views
    monkeypatch.setattr(
        Store, "_make_views", lambda self, statements, mark=None: (made.append(mark is not None), make(self, statements, mark))
    )
    _write_run(store, ["supported", "stale"])
    assert made == [True]
    second = _write_run(store, ["supported", "contradicted"])
    assert made == [True]  # not remade, and the second run is in every view
    assert store.query("SELECT count(*) AS n FROM runs").n[0] == 2
    assert store.query("SELECT run_id FROM latest_verdicts WHERE claim_id = 'c1'").run_id[0] == second
    assert store.query("SELECT label FROM latest_verdicts WHERE claim_id = 'c1'").label[0] == "contradicted"

    store.refresh_views()  # e.g. after a review decision: unmarked
    _write_run(store, ["supported"])
    assert made == [True, False, True]
    _write_run(store, ["stale"])
    assert made == [True, False, True]

    monkeypatch.setattr(store_module, "_schemas_fingerprint", lambda: "a kbaudit whose tables have another column")
    _write_run(store, ["stale"])
    assert made == [True, False, True, True]
    assert store.query("SELECT count(*) AS n FROM runs").n[0] == 5


def test_an_append_only_table_has_rows_only_once_some_are_appended(tmp_path: Path):
    """A rerun skips the rejected-proposals query while no decision or event was ever recorded;
    the empty schema files every store has must not count, a damaged file must."""
    from kb.correct.review import rejected_proposals

    store = Store(tmp_path / "out")
    _write_run(store, ["supported"])
    assert list((tmp_path / "out" / "review_decisions").glob("part-schema-*.parquet"))  # the schema file is there
    assert not store.has_appended_rows("review_decisions") and not store.has_appended_rows("edit_events")
    assert rejected_proposals(store) == {}
    now = dt.datetime.now(dt.UTC)
    store.append_table("edit_events", [{"edit_id": "e1", "status": "applied", "actor": "ana", "event_at": now}])
    assert store.has_appended_rows("edit_events") and not store.has_appended_rows("review_decisions")
    (tmp_path / "out" / "review_decisions" / "part-torn.parquet").write_bytes(b"PAR1 torn")
    assert store.has_appended_rows("review_decisions")
