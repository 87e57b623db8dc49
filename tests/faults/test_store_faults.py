"""Faults while a run writes its store: a full disk, SIGKILL, a corrupt file, two runs at once."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from faults.conftest import (
    assert_consistent,
    cli,
    cli_env,
    copy_store,
    query,
    settings_for,
    snapshot,
    spawn,
    wait_for,
)
from kb.config import DEMO_ROOT
from kb.store import Store

pytestmark = pytest.mark.faults


def _run_args(docs: Path, out: Path) -> list[str]:
    return ["run", str(docs), "--sources", str(DEMO_ROOT / "sources"), "--out", str(out), "--depth", "D0", "--today", "2026-06-01"]


def _labels(out: Path, run_id: str) -> dict[str, str]:
    return dict(query(out, "SELECT claim_id, label FROM verdicts WHERE run_id = ?", [run_id]))


def _fail_on_call(n: int, real, when=lambda *a, **k: True):
    """A stand-in for `real` that raises ENOSPC on the n-th call that `when` accepts."""
    calls = []

    def fake(*args, **kwargs):
        if when(*args, **kwargs):
            calls.append(args)
            if len(calls) == n:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)

    return fake


@pytest.mark.parametrize("where", ["write_table", "commit"])
def test_disk_full_part_way(base_store, tmp_path, monkeypatch, capsys, record, where):
    """ENOSPC on the 5th staged table file, or on the 4th table moved into place at commit."""
    import kb.store
    from flows.audit import audit

    docs, base, first = base_store
    out = copy_store(base, tmp_path / "out")
    before = snapshot(out)
    if where == "write_table":
        # the store stages each table through a ParquetWriter, one row group per call
        monkeypatch.setattr(kb.store.pq.ParquetWriter, "write_table", _fail_on_call(5, pq.ParquetWriter.write_table))
    else:
        committed = lambda src, dst, *a, **k: ".staging" in str(src) and ".staging" not in str(dst)  # noqa: E731
        monkeypatch.setattr(kb.store.os, "replace", _fail_on_call(4, os.replace, committed))
    code, _, err = cli(*_run_args(docs, out), capsys=capsys)
    monkeypatch.undo()

    assert code == 3 and "kbaudit: run failed: OSError: [Errno 28] No space left on device" in err, err
    line = err.strip().splitlines()[-1]
    assert Store(out).run_ids() == [first["run_id"]]
    assert_consistent(out, runs=1, clean=False)
    assert {k: v for k, v in snapshot(out).items() if "run_id=" not in k or first["run_id"] in k} == before
    code, stdout, _ = cli("sql", "SELECT count(*) AS n FROM verdicts", "--out", str(out), capsys=capsys)
    assert code == 0 and str(first["checkworthy"]) in stdout

    second = audit(settings_for(docs, out))
    assert_consistent(out, runs=2)
    assert _labels(out, second["run_id"]) == _labels(out, first["run_id"])
    what = (
        "a full disk (ENOSPC) on the 5th table file the run stages"
        if where == "write_table"
        else "a full disk (ENOSPC) while the commit moves the 4th table into place"
    )
    record(
        "faults",
        what,
        f"exit 3, `{line}`; the store still shows only the previous run, its files unchanged; "
        "the rerun succeeds and removes the failed run's partial files",
    )


def test_sigkill_during_retrieval_then_rerun(base_store, tmp_path, record):
    from flows.audit import audit

    docs, base, first = base_store
    out = tmp_path / "out"
    out.mkdir()
    shutil.copytree(base / "cache" / "embeddings", out / "cache" / "embeddings")  # no stage results: retrieval runs
    log = tmp_path / "killed.log"
    process = spawn(_run_args(docs, out), log, cli_env(tmp_path, KBAUDIT_FAULT="stall-in-retrieval"), tmp_path)
    wait_for(log, "FAULT-POINT retrieval", process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert Store(out).run_ids() == []

    rerun = audit(settings_for(docs, out))
    assert_consistent(out, runs=1)
    assert _labels(out, rerun["run_id"]) == _labels(base, first["run_id"])
    record(
        "faults",
        "SIGKILL during retrieval, then a rerun",
        "no run visible after the kill; the rerun completes with the same labels as an uninterrupted run; no staging left",
    )


def test_sigkill_during_store_commit_then_rerun(base_store, tmp_path, record):
    from flows.audit import audit

    docs, base, first = base_store
    out = copy_store(base, tmp_path / "out")
    log = tmp_path / "killed.log"
    process = spawn(_run_args(docs, out), log, cli_env(tmp_path, KBAUDIT_FAULT="stall-in-commit"), tmp_path)
    wait_for(log, "FAULT-POINT commit", process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    run_ids = Store(out).run_ids()
    partial = {p.name for p in out.glob("*/run_id=*")} - {f"run_id={r}" for r in run_ids}
    assert len(partial) == 1, partial  # three of its tables moved into place, no runs row
    assert run_ids == [first["run_id"]]
    assert_consistent(out, runs=1, clean=False)
    assert query(out, "SELECT DISTINCT run_id FROM claims") == [(first["run_id"],)]

    rerun = audit(settings_for(docs, out))
    assert_consistent(out, runs=2)
    assert query(out, "SELECT DISTINCT run_id FROM claims") == [(rerun["run_id"],)]
    record(
        "faults",
        "SIGKILL during the store commit (3 tables moved into place, no `runs` row yet), then a rerun",
        "the half-committed run stays invisible (views show only the previous run); the rerun completes, "
        "becomes the newest run, and removes the half-committed partitions",
    )


def test_two_runs_on_one_store_at_once(base_store, tmp_path, capsys, record):
    docs, base, first = base_store
    out = copy_store(base, tmp_path / "out")
    flag = tmp_path / "go"
    log_a, log_b = tmp_path / "a.log", tmp_path / "b.log"
    a = spawn(_run_args(docs, out), log_a, cli_env(tmp_path, KBAUDIT_FAULT=f"hold-before-commit:{flag}"), tmp_path)
    try:
        wait_for(log_a, "FAULT-POINT before-commit", a)
        b = spawn(_run_args(docs, out), log_b, cli_env(tmp_path), tmp_path)
        assert b.wait(timeout=240) == 3
        refused = log_b.read_text(errors="replace").strip().splitlines()[-1]
        assert refused.startswith(f"kbaudit: error: another kbaudit run is writing to {out} (pid {a.pid})"), refused
        edit = query(out, "SELECT edit_id FROM review_queue LIMIT 1")[0][0]
        code, _, err = cli("review", "approve", edit, "--out", str(out), "--reviewer", "qa", capsys=capsys)
        assert code == 3 and "another kbaudit run is writing" in err, err
    finally:
        flag.touch()
    assert a.wait(timeout=240) == 0, log_a.read_text(errors="replace")[-3000:]
    assert_consistent(out, runs=2)
    record(
        "faults",
        "two runs started on one store at once (and a review decision during a run)",
        f"the second exits 3 at once: `{refused.split(' (pid')[0].replace(str(out), '<store>')} (pid N); wait for it to finish`; "
        "`review approve` during the run exits 3 the same way; the first run completes; store consistent",
    )


def test_corrupt_parquet_file_in_the_store(base_store, tmp_path, capsys, record):
    from flows.audit import audit
    from kb.store import StoreError

    docs, base, first = base_store
    out = copy_store(base, tmp_path / "out")
    second = audit(settings_for(docs, out))
    bad = out / "verdicts" / f"run_id={second['run_id']}" / "part-0.parquet"
    bad.write_bytes(bad.read_bytes()[:100])  # a torn write
    before = snapshot(out)

    code, _, err = cli("sql", "SELECT label, count(*) FROM verdicts GROUP BY 1", "--out", str(out), capsys=capsys)
    assert code == 2 and str(bad) in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    sql_line = err.strip().replace(str(out), "<store>")
    code, stdout, err = cli("sql", "SELECT count(*) AS n FROM claims", "--out", str(out), capsys=capsys)
    assert code == 0, err  # tables that are not damaged still read

    report_code, _, err = cli("report", "--out", str(out), capsys=capsys)
    assert report_code != 0 and str(bad) in err and "Traceback" not in err, err
    report_line = err.strip().splitlines()[0].replace(str(out), "<store>")
    report_more = " followed by DuckDB's `LINE 1: ...` lines" if len(err.strip().splitlines()) > 1 else ""

    with pytest.raises(StoreError, match="store is damaged") as refused:
        audit(settings_for(docs, out))
    assert str(bad) in str(refused.value)
    assert Store(out).run_ids() == [first["run_id"], second["run_id"]]
    code, _, err = cli("review", "approve", "abcdef123456", "--out", str(out), capsys=capsys)
    assert code == 3 and "store is damaged" in err, err  # no decision is written to a damaged store
    assert snapshot(out) == before, "the refused run changed the store"

    # The fix the message asks for: move the damaged file away. A torn cache shard is dropped.
    bad.rename(tmp_path / "damaged.parquet")
    shard = sorted((out / "cache" / "stages" / "verdicts").glob("*.parquet"))[0]
    shard.write_bytes(b"PAR1 torn")
    third = audit(settings_for(docs, out))
    assert third["run_id"] in Store(out).run_ids()
    assert query(out, "SELECT count(*) FROM verdicts WHERE run_id = ?", [third["run_id"]])[0][0] == third["checkworthy"]
    assert query(out, "SELECT count(*) FROM verdicts WHERE run_id = ?", [first["run_id"]])[0][0] == first["checkworthy"]
    record(
        "faults",
        "a corrupt (torn) Parquet file in the store",
        f"`kbaudit sql` exits 2: `{sql_line[:150]}...` (names the file); `kbaudit report` exits {report_code}: "
        f"`{report_line[:150]}...`{report_more}; the next run refuses before committing anything: "
        f"`store is damaged: <file> is not a readable Parquet file ...` (exit 3; `review approve` too); no run lost; once the file is moved "
        "away the next run succeeds (a torn cache shard is dropped and recomputed)",
    )


def test_store_folder_copied_elsewhere(base_store, tmp_path, capsys, record):
    """A restored backup: the copy must read its own files, not the original's."""
    docs, base, first = base_store
    out = copy_store(base, tmp_path / "restored")
    part = out / "evidence" / f"run_id={first['run_id']}" / "part-0.parquet"
    table = pq.read_table(part)
    pq.write_table(table.slice(0, 5), part)  # the copy now differs from the original
    code, stdout, err = cli("sql", "SELECT count(*) AS n FROM evidence", "--out", str(out), "--json", capsys=capsys)
    assert code == 0 and json.loads(stdout) == [{"n": 5}], stdout + err
    assert query(base, "SELECT count(*) FROM evidence")[0][0] == table.num_rows
    record(
        "faults",
        "a store folder copied or moved elsewhere (a restored backup), then read",
        "the copy reads its own files: its views are rebuilt for the new folder on first use "
        "(they named the old folder's absolute paths, so a copy silently read the original)",
    )
