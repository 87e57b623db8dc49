"""Receipts: sign, verify, detect tampering; canonical evidence bytes survive a Parquet round trip."""

from __future__ import annotations

import stat
from dataclasses import replace
from datetime import date

import pytest

from kb.evidence.receipts import KEY_ENV, KEY_FILE, canonical_rows, sign_batch, verify_receipt
from kb.records import Evidence


def _evidence(rank: int, score: float) -> Evidence:
    return Evidence(
        claim_id="c1",
        rank=rank,
        passage_id=f"p{rank}",
        source_id="pricing",
        source_version="v1",
        source_date=date(2024, 6, 1),
        authority=1.0,
        passage="The Pro plan costs $25 per month.",
        sentence="The Pro plan costs $25 per month.",
        score_bm25=3.25,
        score_dense=0.71234567,
        score_fused=score,
    )


@pytest.fixture(autouse=True)
def no_env_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)


def test_sign_and_verify_with_key_file(tmp_path):
    row = sign_batch("run-1", "retrieve", b"claims", b"evidence", tmp_path)
    assert set(row) == {"receipt_id", "run_id", "tool", "input_hash", "output_hash", "created_at", "signature"}
    key = tmp_path / KEY_FILE
    assert key.exists() and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert verify_receipt(row, b"claims", b"evidence", tmp_path)
    again = sign_batch("run-1", "retrieve", b"claims", b"evidence", tmp_path)
    assert key.read_bytes() and verify_receipt(again, b"claims", b"evidence", tmp_path)


def test_tampering_is_detected(tmp_path):
    row = sign_batch("run-1", "retrieve", b"claims", b"evidence", tmp_path)
    assert not verify_receipt(row, b"claims", b"evidence!", tmp_path)  # outputs altered
    assert not verify_receipt(row, b"claimz", b"evidence", tmp_path)  # inputs altered
    assert not verify_receipt({**row, "tool": "llm"}, b"claims", b"evidence", tmp_path)
    assert not verify_receipt({**row, "signature": "0" * 64}, b"claims", b"evidence", tmp_path)
    assert not verify_receipt({k: v for k, v in row.items() if k != "signature"}, b"claims", b"evidence", tmp_path)
    other = tmp_path / "other"
    assert not verify_receipt(row, b"claims", b"evidence", other)  # a different key


def test_env_key_takes_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "s3cret")
    row = sign_batch("run-1", "retrieve", b"i", b"o", tmp_path)
    assert not (tmp_path / KEY_FILE).exists()
    assert verify_receipt(row, b"i", b"o", tmp_path)
    monkeypatch.setenv(KEY_ENV, "another")
    assert not verify_receipt(row, b"i", b"o", tmp_path)


def test_evidence_rows_verify_after_parquet_round_trip(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [_evidence(1, 0.0327), _evidence(2, 0.0161)]
    signed = sign_batch("run-1", "retrieve", b"claims", canonical_rows(rows), tmp_path)
    table = pa.Table.from_pylist([{**r.__dict__, "receipt_id": signed["receipt_id"]} for r in rows])
    pq.write_table(table, tmp_path / "evidence.parquet")
    back = pq.read_table(tmp_path / "evidence.parquet").to_pylist()[::-1]  # order does not matter
    assert verify_receipt(signed, b"claims", canonical_rows(back), tmp_path)
    back[0]["sentence"] = "The Pro plan costs $20 per month."
    assert not verify_receipt(signed, b"claims", canonical_rows(back), tmp_path)
    assert canonical_rows([replace(rows[0], score_fused=0.5)]) != canonical_rows(rows[:1])


def test_streamed_digest_signs_the_same_bytes(tmp_path):
    """sign_evidence hashes the canonical lines as it goes; the receipt must verify against the
    full canonical bytes exactly as before."""
    from kb.evidence.receipts import canonical_digest

    rows = [_evidence(r, 0.5 / r) for r in range(1, 6)] + [replace(_evidence(1, 0.2), claim_id="c2", passage="ünïcode ✓")]
    data = canonical_rows(rows)
    assert canonical_digest(rows) == __import__("hashlib").sha256(data).hexdigest()
    assert canonical_digest([]) == __import__("hashlib").sha256(canonical_rows([])).hexdigest()
    row = sign_batch("run-1", "retriever", b"ids", None, tmp_path, outputs_hash=canonical_digest(rows))
    assert verify_receipt(row, b"ids", data, tmp_path)
    assert not verify_receipt(row, b"ids", canonical_rows(rows[:-1]), tmp_path)


def test_cached_evidence_reads_back_as_the_rows_and_lines_it_was_stored_from():
    """The retrieval cache keeps each row as its canonical line; what it reads back must be the
    same rows, and encode to the same lines, or a rerun's receipt would not verify later."""
    import math
    import pickle

    from kb.evidence.receipts import EvidenceRows, canonical_line, decode_evidence, encode_evidence

    tricky = [0.1 + 0.2, 1e-300, 5e-324, 2 / 3, 0.6666666865348816, -0.0, 1e16, 123456789.123456789]
    rows = [replace(_evidence(r, score), score_dense=tricky[-r]) for r, score in enumerate(tricky, start=1)]
    rows.append(
        replace(
            _evidence(9, 0.5),
            source_date=None,
            passage='ünïcode ✓ "quoted"\nsecond line\u2028after a line separator\ttab',
            source_rev="3f2a9c1",
            source_kind="changelog",
            counterpart_of="p0",
            section="Install > Linux",
            removed_in="v2.0",
        )
    )
    stored = encode_evidence(rows)
    back = decode_evidence(stored)
    assert isinstance(back, EvidenceRows) and back == rows and [type(r) for r in back] == [Evidence] * len(rows)
    assert back.lines == [canonical_line(r) for r in back] == [canonical_line(r) for r in rows]
    assert encode_evidence(back) == stored  # the rows with their lines encode the same as a plain list
    assert pickle.loads(pickle.dumps(back)).lines == back.lines  # Prefect and Dask pass results by pickle

    with_nan = decode_evidence(encode_evidence([replace(rows[0], score_dense=math.nan)]))
    assert math.isnan(with_nan[0].score_dense) and canonical_line(with_nan[0]) == with_nan.lines[0]
    empty = decode_evidence(encode_evidence([]))
    assert empty == [] and empty.lines == []


def test_run_evidence_decodes_a_claims_cached_rows_only_when_asked_for():
    """A rerun's evidence keeps cached rows as their cache text: the lines and the verdict digest
    come from the text, and equal what the decoded rows give."""
    from kb.evidence.receipts import RunEvidence, canonical_line, encode_evidence, verdict_digest

    cached = [_evidence(1, 0.5), replace(_evidence(2, 0.25), source_date=None, counterpart_of="p1", removed_in="v2")]
    fresh = [replace(_evidence(1, 0.4), claim_id="c2")]
    evidence = RunEvidence(["c1", "c2", "c3"], [encode_evidence(cached), fresh, encode_evidence([])])
    assert list(evidence) == ["c1", "c2", "c3"] and len(evidence) == 3 and "c1" in evidence and "c9" not in evidence
    assert evidence._text.keys() == {"c1", "c3"}  # nothing decoded by asking for keys, lines or digests
    assert evidence.lines("c1") == [canonical_line(r) for r in cached] and evidence.lines("c3") == []
    assert evidence.verdict_digest("c1") == verdict_digest(cached) and evidence.verdict_digest("c2") == verdict_digest(fresh)
    assert evidence._text.keys() == {"c1", "c3"}
    assert evidence["c1"] == cached and evidence["c3"] == [] and evidence.get("c9") is None
    assert evidence.verdict_digest("c1") == verdict_digest(evidence["c1"]) and evidence.lines("c1") == evidence["c1"].lines
    assert verdict_digest(cached[::-1]) == verdict_digest(cached)  # the set of rows, not their order
    assert verdict_digest([replace(cached[0], score_dense=0.1), cached[1]]) == verdict_digest(cached)  # not the scores
    assert verdict_digest([replace(cached[0], sentence="Other."), cached[1]]) != verdict_digest(cached)


def test_signing_stamps_cached_rows_and_hashes_the_lines_they_were_read_with(tmp_path):
    from kb.chain import sign_evidence
    from kb.evidence.receipts import RunEvidence, canonical_digest, encode_evidence

    fresh = [replace(_evidence(1, 0.4), claim_id="c2")]
    cached = [_evidence(1, 0.5), _evidence(2, 0.25)]
    evidence = RunEvidence(["c1", "c2"], [encode_evidence(cached), fresh])
    stamped, receipt = sign_evidence("run-1", evidence, tmp_path)
    assert evidence._text.keys() == {"c1"}  # signed from the cached lines, not decoded
    rows = stamped["c1"] + stamped["c2"]
    assert {r.receipt_id for r in rows} == {receipt["receipt_id"]} and fresh[0].receipt_id == ""  # a plain list is copied
    assert receipt["output_hash"] == canonical_digest(rows) == canonical_digest([*cached, *fresh])
    assert verify_receipt(receipt, b'["c1", "c2"]', canonical_rows(rows), tmp_path)
    plain, again = sign_evidence("run-1", {"c1": cached, "c2": fresh}, tmp_path)  # a dict of rows (VerifyLoop, tests)
    assert again["output_hash"] == receipt["output_hash"] and {r.receipt_id for r in plain["c1"]} == {again["receipt_id"]}


def test_a_rerun_evidence_table_read_from_lines_equals_the_rows_converted():
    from kb.evidence.receipts import RunEvidence, encode_evidence, evidence_table
    from kb.store import to_arrow

    giant = "A sentence that goes on. " * 50_000  # over the JSON reader's 1 MB block
    cached = [_evidence(1, 0.5), replace(_evidence(2, 0.25), source_date=None, passage=giant, source_rev="abc1234", removed_in="v2")]
    claim_ids = [f"c{i}" for i in range(12)] + ["c99", "c50"]
    values = [encode_evidence([replace(r, claim_id=c) for r in cached]) for c in claim_ids[:12]]
    values += [[replace(_evidence(1, 0.125), claim_id="c99")], encode_evidence([])]  # a new search, a claim with no evidence
    evidence = RunEvidence(claim_ids, values)
    evidence.stamp("r-run")
    assert evidence["c3"][0].receipt_id == "r-run"  # one claim decoded before the table is read
    table = evidence_table(evidence)
    assert table is not None
    rows = [e for claim_id in sorted(evidence) for e in evidence[claim_id]]
    assert {r.receipt_id for r in rows} == {"r-run"} and table.equals(to_arrow("evidence", rows))
    mostly_new = RunEvidence(["c1", "c2"], [encode_evidence(cached), [_evidence(1, 0.5)] * 3])
    assert evidence_table(mostly_new) is None and evidence_table(RunEvidence([], [])) is None
    assert evidence_table({"c1": cached}) is None  # plain rows: converted by the store instead
