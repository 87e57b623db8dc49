"""The audit flow end to end on the demo KB, under a real Prefect test harness."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from bench.demo import load_expected, score
from kb.config import Settings
from kb.records import LABELS
from tests.conftest import DEMO_TODAY

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo_runs(prefect_harness, tmp_path_factory):
    """Two audits of the same demo KB (with two bad files added) into one store."""
    from datetime import date

    from flows.audit import audit

    root = tmp_path_factory.mktemp("demo")
    from kb.config import DEMO_ROOT

    shutil.copytree(DEMO_ROOT / "docs", root / "docs")
    (root / "docs" / "logo.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (root / "docs" / "latin1.md").write_bytes("Caf\xe9 opens at 9.".encode("latin-1"))
    out = root / "out"
    settings = Settings(docs=root / "docs", sources=[DEMO_ROOT / "sources"], out=out, today=date.fromisoformat(DEMO_TODAY))
    first = audit(settings)
    second = audit(settings)
    return out, first, second


def _con(out: Path):
    return duckdb.connect(str(out / "kbaudit.duckdb"), read_only=True)


def test_demo_meets_all_four_labels(demo_runs):
    out, first, _ = demo_runs
    for label in LABELS:
        assert first[label] > 0, f"no {label} claim in the demo run: {first}"
    assert sum(first[label] for label in LABELS) == first["checkworthy"]


def test_rerun_gives_same_ids_and_labels(demo_runs):
    out, first, second = demo_runs
    con = _con(out)
    per_run = con.execute(
        "SELECT run_id, list(claim_id || ':' || label ORDER BY claim_id) FROM verdicts GROUP BY run_id ORDER BY run_id"
    ).fetchall()
    assert [r[0] for r in per_run] == [first["run_id"], second["run_id"]]
    assert per_run[0][1] == per_run[1][1]
    rows, distinct = con.execute("SELECT count(*), count(DISTINCT claim_id) FROM latest_verdicts").fetchone()
    assert rows == distinct == first["checkworthy"]


def test_bad_documents_become_ingest_errors_and_the_run_goes_on(demo_runs):
    out, first, _ = demo_runs
    errors = dict(_con(out).execute("SELECT path, error FROM ingest_errors WHERE run_id = ?", [first["run_id"]]).fetchall())
    assert set(errors) == {"logo.md", "latin1.md"}
    assert first["documents"] == 15


def test_readme_duckdb_one_liner(demo_runs):
    out, _, _ = demo_runs
    code = f"import duckdb; print(duckdb.connect({str(out / 'kbaudit.duckdb')!r}).sql('select label, count(*) from latest_verdicts group by 1'))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "supported" in result.stdout


def test_demo_accuracy_against_expected_labels(demo_runs):
    """Prints the figure that the issue notes report; later work raises the floor."""
    out, first, _ = demo_runs
    con = _con(out)
    root = Path(con.execute("SELECT docs_root FROM runs LIMIT 1").fetchone()[0])
    spans = con.execute("SELECT c.doc_id, c.start, c.end, v.label FROM claims c JOIN latest_verdicts v USING (claim_id)").fetchall()
    texts = {doc_id: (root / doc_id).read_text("utf-8") for doc_id in {s[0] for s in spans}}
    metrics = score(texts, spans, load_expected())
    print(f"\ndemo accuracy: {metrics['accuracy']:.3f} over {int(metrics['sentences'])} sentences; {metrics}")
    assert metrics["unmatched"] == 0
    assert metrics["accuracy"] >= 0.90  # the shipped verifier's accuracy floor


def test_sigkill_mid_run_then_rerun_matches_an_uninterrupted_run(demo_runs, tmp_path):
    """Kill a run after verification (held before its store commit), re-run: the store holds exactly
    one run whose verdicts equal the uninterrupted run's, and the finished batches are reused."""
    import os
    import signal
    import time

    from prefect.settings import PREFECT_API_URL

    reference_out, first, _ = demo_runs
    con = _con(reference_out)
    docs_root = Path(con.execute("SELECT docs_root FROM runs LIMIT 1").fetchone()[0])
    sources = con.execute("SELECT sources_root FROM runs LIMIT 1").fetchone()[0]
    expected = dict(con.execute("SELECT claim_id, label FROM verdicts WHERE run_id = ?", [first["run_id"]]).fetchall())

    out = tmp_path / "store"
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "cli.main", "run", str(docs_root), "--sources", sources, "--out", str(out), "--today", DEMO_TODAY]
    log_path = tmp_path / "killed.log"
    # the run holds before its store commit (every batch verified) until killed: a run that ends
    # within a poll of its verify stage would otherwise race the kill
    held = [sys.executable, str(Path(__file__).parent / "faults" / "inject.py"), *command[3:]]
    hold = {**env, "KBAUDIT_FAULT": f"hold-before-commit:{tmp_path / 'never'}"}
    with log_path.open("wb") as log:
        process = subprocess.Popen(held, stdout=log, stderr=subprocess.STDOUT, env=hold)
        deadline = time.monotonic() + 300
        while "FAULT-POINT before-commit" not in log_path.read_text(errors="replace"):
            assert process.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.2)
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert not list((out / "runs").glob("run_id=*")), "a killed run must not become visible"

    rerun = subprocess.run(command + ["--json"], capture_output=True, text=True, env=env, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    import json

    summary = json.loads(rerun.stdout)
    assert summary["reused"] == summary["checkworthy"]  # the killed run's verified batch was kept
    con = _con(out)
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
    rows, distinct = con.execute("SELECT count(*), count(DISTINCT claim_id) FROM verdicts").fetchone()
    assert rows == distinct
    assert dict(con.execute("SELECT claim_id, label FROM verdicts").fetchall()) == expected
    assert not list((out / ".staging").glob("*")), "the unfinished run's staging folder was not cleaned"


def test_check_receipts_flags_an_evidence_row_altered_after_the_run(demo_runs, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cli.main import main

    out, _, second = demo_runs
    copy = tmp_path / "store"
    shutil.copytree(out, copy)
    assert main(["check-receipts", "--out", str(copy)]) == 0
    part = next((copy / "evidence" / f"run_id={second['run_id']}").glob("*.parquet"))
    table = pq.read_table(part)
    passages = table.column("passage").to_pylist()
    passages[0] = passages[0] + " (edited by hand)"
    pq.write_table(
        table.set_column(table.schema.get_field_index("passage"), "passage", pa.array(passages, table.schema.field("passage").type)), part
    )
    assert main(["check-receipts", "--out", str(copy)]) == 1


def test_every_readme_query_runs_as_written(demo_runs):
    """README's `kbaudit sql "..."` examples run against a demo store and return rows."""
    import re

    from cli.main import main

    out, _, _ = demo_runs
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    queries = re.findall(r'^\.venv/bin/kbaudit sql "(.+)"$', readme, flags=re.M)
    assert len(queries) >= 3
    con = _con(out)
    for query in queries:
        assert main(["sql", query, "--out", str(out)]) == 0, query
        rows = con.execute(query).fetchall()
        if "changes_since_previous" in query:
            assert rows == [], "the fixture's two runs are identical: nothing changed"
        else:
            assert rows, f"no rows: {query}"
