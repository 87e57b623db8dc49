"""The review cycle on a copy of the demo KB, with real files, a real store and real DuckDB.

`_run` writes a run the way the audit flow does (tables staged, then committed), with the
demo's verdicts as an audit labels them (tests/test_correct.py) and a stand-in verifier, so the
review mechanics are tested in seconds; `test_demo_cycle_through_the_audit_flow` runs the same
cycle through the real flow and verifier.
"""

from __future__ import annotations

import datetime as dt
import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from cli.main import main as cli
from kb.config import ConfigError
from kb.correct import review
from kb.correct.draft import draft_edits
from kb.correct.versions import run_tables
from kb.records import content_hash
from kb.store import Store, new_run_id
from tests.conftest import store_sql
from tests.test_correct import TODAY, EchoVerifier, demo_audit, expected_corrections

ROOT = Path(__file__).resolve().parent.parent


def _run(store: Store, docs_root: Path):
    """One audit run of docs_root into the store; returns (run_id, edits)."""
    docs, claims, evidence, verdicts = demo_audit(docs_root)
    edits = draft_edits(docs, claims, verdicts, evidence, verifier=EchoVerifier(), today=TODAY, suppressed=review.rejected_proposals(store))
    run_id = new_run_id()
    store.write_table(
        run_id,
        "documents",
        [
            {"doc_id": d.doc_id, "version_id": d.version_id, "title": d.title, "owner": d.owner, "risk": d.risk, "bytes": d.bytes}
            for d in docs
        ],
    )
    store.write_table(run_id, "claims", claims)
    store.write_table(run_id, "verdicts", verdicts)
    store.write_table(run_id, "edits", edits)
    for table, rows in run_tables(docs, claims, verdicts, edits).items():
        store.write_table(run_id, table, rows)
    store.lock()
    try:
        now = dt.datetime.now(dt.UTC)
        row = {
            "started_at": now,
            "finished_at": now,
            "status": "completed",
            "depth": "D1",
            "docs_root": str(docs_root),
            "edits": len(edits),
        }
        store.commit_run(run_id, row)
    finally:
        store.unlock()
    return run_id, edits


def _files(docs: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(docs.glob("*.md"))}


@pytest.fixture
def kb_store(demo_copy):
    out = demo_copy / "out"
    store = Store(out)
    run_id, edits = _run(store, demo_copy / "docs")
    return store, demo_copy / "docs", out, edits


def test_review_cycle_run_decide_apply_run_again(kb_store, tmp_path, capsys):
    store, docs, out, edits = kb_store
    queued = [e for e in edits if e.status == "queued"]
    auto = [e for e in edits if e.status == "auto"]
    assert len(queued) >= 4 and auto, [e.status for e in edits]
    assert store_sql(out, "SELECT count(*) FROM review_queue")[0][0] == len(queued)

    # Decide: two approvals on the command line, one rejection, one approval by import.
    approve, reject, imported = queued[:2], queued[2], queued[3]
    assert cli(["review", "approve", approve[0].edit_id, approve[1].edit_id[:8], "--out", str(out), "--reviewer", "ann"]) == 0
    assert cli(["review", "reject", reject.edit_id, "--note", "the wiki is right", "--out", str(out), "--reviewer", "bob"]) == 0
    sheet = tmp_path / "decisions.csv"
    pd.DataFrame([{"edit_id": imported.edit_id, "decision": "Approved", "note": "from the sheet"}]).to_csv(sheet, index=False)
    assert cli(["review", "import", str(sheet), "--out", str(out), "--reviewer", "cy"]) == 0
    with pytest.raises(SystemExit) as usage:  # --note is required to reject
        cli(["review", "reject", queued[4].edit_id, "--out", str(out)])
    assert usage.value.code == 2
    assert cli(["review", "approve", "nosuchedit", "--out", str(out)]) == 2

    capsys.readouterr()
    assert cli(["review", "list", "--json", "--out", str(out)]) == 0
    listed = {r["edit_id"] for r in json.loads(capsys.readouterr().out)}
    assert listed == {e.edit_id for e in queued} - {e.edit_id for e in (*approve, reject, imported)}
    assert cli(["review", "show", reject.edit_id, "--out", str(out)]) == 0
    assert "the wiki is right" in capsys.readouterr().out

    # Apply: a dry run writes nothing; the real one writes auto-accepted and approved edits only.
    before = _files(docs)
    assert cli(["review", "apply", "--dry-run", "--out", str(out)]) == 0
    assert _files(docs) == before
    assert cli(["review", "apply", "--out", str(out), "--reviewer", "ann"]) == 0
    after = _files(docs)
    accepted = [*auto, *approve, imported]
    for e in accepted:
        assert e.new_text in after[e.doc_id].decode() and e.old_text not in after[e.doc_id].decode()
    for e in [reject, *queued[4:]]:
        assert e.old_text in after[e.doc_id].decode()
    states = dict(store_sql(out, "SELECT edit_id, state FROM edit_state"))
    assert {states[e.edit_id] for e in accepted} == {"applied"}
    assert states[reject.edit_id] == "rejected"
    written = store_sql(out, "SELECT doc_id, version_id FROM applied_versions")
    assert {d for d, _ in written} == {e.doc_id for e in accepted}
    assert all(content_hash(after[d]) == v for d, v in written)

    # Run again: the applied claims are supported, the rejected edit is not proposed again,
    # the undecided ones are still queued.
    run2, edits2 = _run(store, docs)
    fixed = {e.new_text for e in accepted}
    supported = store_sql(
        out, "SELECT c.source_text FROM verdicts v JOIN claims c USING (claim_id) WHERE v.run_id = ? AND v.label = 'supported'", [run2]
    )
    assert fixed <= {r[0] for r in supported} | {e.new_text for e in accepted if "`" in e.new_text}
    again = [e for e in edits2 if e.claim_id == reject.claim_id]
    assert [e.status for e in again] == ["suppressed"] and "bob" in again[0].reason
    assert not any(e.claim_id in {a.claim_id for a in accepted} for e in edits2)
    assert {e.claim_id for e in edits2 if e.status == "queued"} == {e.claim_id for e in queued[4:]}
    assert store_sql(out, "SELECT count(*) FROM review_queue")[0][0] == len(queued) - 4

    # Every step is in DuckDB.
    steps = [r[0] for r in store_sql(out, "SELECT state FROM edit_history WHERE edit_id = ? ORDER BY happened_at", [approve[0].edit_id])]
    assert steps == ["queued", "approved", "applying", "applied"]
    assert store_sql(out, "SELECT reviewer, origin FROM review_decisions WHERE edit_id = ?", [imported.edit_id]) == [
        ("cy", "import:decisions.csv")
    ]
    origins = {r[0] for r in store_sql(out, "SELECT origin FROM version_history")}
    assert origins == {"run", "applied"}


def test_conflict_when_the_document_changed_after_the_draft(kb_store):
    store, docs, out, edits = kb_store
    edit = next(e for e in edits if e.status == "queued")
    review.decide(store, [edit.edit_id], "approve", reviewer="ann")
    path = docs / edit.doc_id
    human = path.read_bytes() + b"\nA line someone added by hand.\n"
    path.write_bytes(human)
    outcomes = review.apply_edits(store, actor="ann")
    assert path.read_bytes() == human, "a conflicted document must not be overwritten"
    conflicted = [o for o in outcomes if o.status == "conflicted"]
    assert {e for o in conflicted for e in o.edit_ids} == {
        e.edit_id for e in edits if e.doc_id == edit.doc_id and e.status in ("auto", "queued") and (e.status == "auto" or e is edit)
    }
    assert "document changed" in conflicted[0].reason
    state = store_sql(out, "SELECT state, state_note FROM edit_state WHERE edit_id = ?", [edit.edit_id])[0]
    assert state[0] == "conflicted" and "drafted against" in state[1]
    assert store_sql(out, "SELECT count(*) FROM applied_versions WHERE doc_id = ?", [edit.doc_id])[0][0] == 0
    # Applied or conflicted edits take no further decisions.
    with pytest.raises(ConfigError):
        review.decide(store, [edit.edit_id], "approve")


def test_apply_refuses_the_bundled_demo_and_bad_decision_files(kb_store, tmp_path):
    store, docs, out, edits = kb_store
    from kb.config import DEMO_ROOT

    with pytest.raises(ConfigError, match="bundled demo"):
        review.apply_edits(store, DEMO_ROOT / "docs")
    bad = tmp_path / "bad.csv"
    bad.write_text("id,verdict\nx,y\n")
    with pytest.raises(ConfigError, match="edit_id"):
        review.import_decisions(store, bad)
    sheet = tmp_path / "d.parquet"
    queued = [e for e in edits if e.status == "queued"]
    pd.DataFrame(
        [{"edit_id": queued[0].edit_id, "decision": "approve", "note": ""}, {"edit_id": queued[1].edit_id, "decision": "maybe", "note": ""}]
    ).to_parquet(sheet)
    with pytest.raises(ConfigError, match="maybe"):
        review.import_decisions(store, sheet)
    assert store_sql(out, "SELECT count(*) FROM review_decisions")[0][0] == 0, "a bad file imports nothing"


CRASHING_APPLY = textwrap.dedent(
    """
    import os, signal, sys
    import kb.correct.review as review
    from kb.store import Store

    original, count = review.write_atomic, [0]

    def write_then_die(path, data):
        count[0] += 1
        if count[0] == int(sys.argv[2]):
            # killed in the middle of writing this file's temporary copy
            with open(path.parent / f".{path.name}.x{review.TMP_SUFFIX}", "wb") as f:
                f.write(data[: len(data) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
        original(path, data)

    review.write_atomic = write_then_die
    review.apply_edits(Store(sys.argv[1]), actor="crash-test")
    """
)


def test_a_killed_apply_leaves_every_file_old_or_new_and_the_next_apply_finishes(kb_store):
    store, docs, out, edits = kb_store
    review.decide(store, [e.edit_id for e in edits if e.status == "queued"], "approve", reviewer="ann")
    plan = review.apply_edits(store, dry_run=True)
    new_hash = {o.doc_id: o.version_after for o in plan if o.status == "would_apply"}
    assert len(new_hash) >= 4
    before = _files(docs)
    proc = subprocess.run([sys.executable, "-c", CRASHING_APPLY, str(out), "3"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    now = _files(docs)
    changed = {d for d in now if now[d] != before[d]}
    assert len(changed) == 2
    for doc_id, data in now.items():
        assert data == before[doc_id] or content_hash(data) == new_hash[doc_id], f"{doc_id} is neither old nor new"
    assert list(docs.glob(f".*{review.TMP_SUFFIX}")), "the half-written temporary file is left beside, not in place"
    assert {r[0] for r in store_sql(out, "SELECT DISTINCT state FROM edit_state WHERE state LIKE 'appl%'")} == {"applying"}

    outcomes = review.apply_edits(store, actor="ann")
    assert {o.doc_id for o in outcomes if o.status == "recovered"} == changed
    assert not list(docs.glob(f".*{review.TMP_SUFFIX}"))
    final = _files(docs)
    assert all(content_hash(final[d]) == h for d, h in new_hash.items())
    assert not store_sql(out, "SELECT * FROM edit_state WHERE state = 'applying'")


def test_an_external_sigkill_at_any_moment_leaves_old_or_new_files(kb_store):
    store, docs, out, edits = kb_store
    review.decide(store, [e.edit_id for e in edits if e.status == "queued"], "approve", reviewer="ann")
    new_hash = {o.doc_id: o.version_after for o in review.apply_edits(store, dry_run=True) if o.status == "would_apply"}
    before = _files(docs)
    slow = CRASHING_APPLY.replace("count[0] += 1", "count[0] += 1; __import__('time').sleep(0.15)")
    proc = subprocess.Popen([sys.executable, "-c", slow, str(out), "0"], cwd=ROOT)
    try:
        for _ in range(600):  # kill it once the first file has changed
            if any(p.read_bytes() != before[p.name] for p in docs.glob("*.md")):
                break
            if proc.poll() is not None:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "apply finished before it could be killed"
    for doc_id, data in _files(docs).items():
        assert data == before[doc_id] or content_hash(data) == new_hash[doc_id]


# ---- the same cycle through the real audit flow and verifier ---------------------------------
@pytest.mark.slow
def test_demo_cycle_through_the_audit_flow(prefect_harness, demo_copy):
    verify = pytest.importorskip("kb.verify")
    if not hasattr(verify, "Verifier"):
        pytest.skip("the verifier (kb.verify.Verifier) has not landed yet")
    from datetime import date

    from flows.audit import audit
    from kb.config import Settings
    from tests.conftest import DEMO_TODAY, store_sql

    out = demo_copy / "out"
    docs = demo_copy / "docs"
    settings = Settings(docs=docs, sources=[demo_copy / "sources"], out=out, today=date.fromisoformat(DEMO_TODAY))
    first = audit(settings)
    store = Store(out)
    rows = store_sql(out, "SELECT edit_id, doc_id, old_text, new_text, status FROM edit_state WHERE run_id = ?", [first["run_id"]])
    expected = {(r["doc_id"], r["sentence"]): r["correction"] for r in expected_corrections()}
    proposed = [r for r in rows if r[4] in ("auto", "queued")]
    correct = sum(expected.get((r[1], r[2])) == r[3] for r in proposed)
    print(
        f"\ndemo corrections through the real pipeline: {correct} correct of {len(expected)} expected "
        f"({len(proposed)} proposed, {sum(r[4] == 'needs_rewrite' for r in rows)} need a rewrite, "
        f"{sum(r[4] == 'dropped' for r in rows)} dropped)"
    )
    queued = [r for r in proposed if r[4] == "queued"]
    assert len(queued) >= 2 and correct >= 1
    review.decide(store, [queued[0][0]], "approve", reviewer="ann")
    review.decide(store, [queued[1][0]], "reject", reviewer="bob", note="not now")
    outcomes = review.apply_edits(store, actor="ann")
    applied = {e for o in outcomes if o.status == "applied" for e in o.edit_ids}
    assert queued[0][0] in applied
    second = audit(settings)
    texts = {r[3] for r in proposed if r[0] in applied}
    labels = dict(
        store_sql(
            out, "SELECT c.source_text, v.label FROM verdicts v JOIN claims c USING (claim_id) WHERE v.run_id = ?", [second["run_id"]]
        )
    )
    assert all(labels.get(t) == "supported" for t in texts if t in labels), {t: labels.get(t) for t in texts}
    rejected_claim = store_sql(out, "SELECT claim_id FROM edits WHERE edit_id = ?", [queued[1][0]])[0][0]
    again = store_sql(out, "SELECT status FROM edits WHERE run_id = ? AND claim_id = ?", [second["run_id"], rejected_claim])
    assert again in ([], [("suppressed",)])
    assert store_sql(out, "SELECT count(*) FROM edit_history")[0][0] > len(rows)
