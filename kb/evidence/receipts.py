"""Signed receipts: proof that a batch of outputs came from a tool run and was not altered.

``sign_batch(run_id, tool, inputs, outputs, key_dir)`` returns a ``receipts`` row::

    {receipt_id, run_id, tool, input_hash, output_hash, created_at, signature}

- ``input_hash`` / ``output_hash``: sha256 (hex) of the exact bytes given.
- ``created_at``: UTC, ISO 8601 with microseconds and a ``Z`` (a string; a ``datetime`` read
  back from Parquet is normalised to the same string when verifying).
- ``receipt_id``: a content hash of the other fields, so it is stable and unique per batch.
- ``signature``: HMAC-SHA256 (hex) over ``receipt_id, run_id, tool, input_hash, output_hash,
  created_at``, one per line, with the receipt key.

The key: the environment variable ``KBAUDIT_RECEIPT_KEY`` if set (its UTF-8 bytes), else the file
``<key_dir>/receipt.key`` (32 random bytes, hex), created on first use with mode 0600. The key is
never written to the store or logs.

``verify_receipt(row, inputs, outputs, key_dir)`` recomputes everything and says whether the
row, the inputs and the outputs are exactly what was signed.

``canonical_rows(rows)`` turns evidence rows (dicts or dataclasses, e.g. ``Evidence``) into
canonical bytes (sorted keys, dates as ISO strings, numpy scalars as Python numbers, rows in a
sorted order, ``receipt_id`` left out), so a batch signed when written can be verified after a
round trip through Parquet/DuckDB.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import io
import json
import math
import os
import secrets
from collections.abc import Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, cast

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from kb.ingest.walk import shard_of
from kb.records import Evidence, as_row, content_hash, field_names, is_record, replaced
from kb.store.cache import key_of
from kb.store.schema import SCHEMAS

KEY_ENV = "KBAUDIT_RECEIPT_KEY"
KEY_FILE = "receipt.key"
FIELDS = ("receipt_id", "run_id", "tool", "input_hash", "output_hash", "created_at")


def _load_key(key_dir: Path | str) -> bytes:
    env = os.environ.get(KEY_ENV)
    if env:
        return env.encode("utf-8")
    path = Path(key_dir) / KEY_FILE
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it first: use theirs
        return path.read_bytes().strip()
    with os.fdopen(fd, "wb") as fh:
        fh.write(secrets.token_hex(32).encode("ascii"))
    return path.read_bytes().strip()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _timestamp(value) -> str:
    to_pydatetime = getattr(value, "to_pydatetime", None)  # pandas Timestamp
    if to_pydatetime is not None:
        value = to_pydatetime()
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return str(value)


def _message(row: dict) -> bytes:
    return "\n".join(str(row[f]) if f != "created_at" else _timestamp(row[f]) for f in FIELDS).encode("utf-8")


def sign_batch(run_id: str, tool: str, inputs: bytes, outputs: bytes | None, key_dir: Path | str, outputs_hash: str | None = None) -> dict:
    """A signed ``receipts`` row for one batch (see the module docstring). ``outputs_hash``:
    the outputs' sha256 (hex) when the caller has it instead of the bytes (canonical_digest)."""
    created_at = _timestamp(datetime.now(UTC))
    in_h = _sha256(inputs)
    if outputs_hash is None and outputs is None:
        raise TypeError("sign_batch needs the outputs or their hash")
    out_h = outputs_hash if outputs_hash is not None else _sha256(outputs or b"")
    row = {
        "receipt_id": content_hash(f"{run_id}|{tool}|{in_h}|{out_h}|{created_at}"),
        "run_id": str(run_id),
        "tool": str(tool),
        "input_hash": in_h,
        "output_hash": out_h,
        "created_at": created_at,
    }
    row["signature"] = hmac.new(_load_key(key_dir), _message(row), hashlib.sha256).hexdigest()
    return row


def verify_receipt(row: dict, inputs: bytes, outputs: bytes, key_dir: Path | str) -> bool:
    """True when ``row`` is a genuine receipt for exactly these ``inputs`` and ``outputs``."""
    try:
        if row["input_hash"] != _sha256(inputs) or row["output_hash"] != _sha256(outputs):
            return False
        expected_id = content_hash(
            f"{row['run_id']}|{row['tool']}|{row['input_hash']}|{row['output_hash']}|{_timestamp(row['created_at'])}"
        )
        if row["receipt_id"] != expected_id:
            return False
        mac = hmac.new(_load_key(key_dir), _message(row), hashlib.sha256).hexdigest()
        return hmac.compare_digest(mac, str(row["signature"]))
    except (KeyError, TypeError):
        return False


# ---------------------------------------------------------------- canonical bytes


_SCALARS = (str, int, bool)


def _plain(value):
    kind = type(value)
    if value is None or kind in _SCALARS:  # most fields: returned as they are, at once
        return value
    if kind is float:  # every evidence row's scores: not through the record and numpy checks
        return _plain_float(value)
    if kind is date:
        return value.isoformat()
    if is_record(value):
        return _plain(as_row(value))
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalar
        try:
            value = value.item()
        except (TypeError, ValueError):
            pass
    to_pydatetime = getattr(value, "to_pydatetime", None)  # pandas Timestamp
    if to_pydatetime is not None:
        value = to_pydatetime()
    if isinstance(value, datetime):
        if value.time() == datetime.min.time() and value.tzinfo is None:
            return value.date().isoformat()
        return _timestamp(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, float):
        return _plain_float(value)
    if isinstance(value, (list, tuple)) or (hasattr(value, "tolist") and not isinstance(value, (str, bytes))):
        tolist = getattr(value, "tolist", None)  # numpy arrays
        seq = tolist() if tolist is not None else value
        return [_plain(v) for v in seq]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _plain_float(value: float) -> float | str | None:
    if math.isnan(value):
        return None
    return float(repr(value)) if math.isfinite(value) else str(value)


def canonical_rows(rows, exclude: tuple[str, ...] = ("receipt_id",), columns: tuple[str, ...] | None = None) -> bytes:
    """Canonical bytes for a batch of rows (order-independent).

    ``columns``: only these fields (sign and verify with the same ones); else every field but
    ``exclude``. A missing column reads as null.
    """
    return ("\n".join(_canonical_lines(rows, exclude, columns))).encode("utf-8")


def canonical_digest(rows, exclude: tuple[str, ...] = ("receipt_id",), columns: tuple[str, ...] | None = None) -> str:
    """``sha256(canonical_rows(rows)).hexdigest()`` without building the joined bytes: a run's
    evidence is hundreds of MB as one string, and its join and encoded copy would double it."""
    return digest_of_lines(_canonical_lines(rows, exclude, columns))


def digest_of_lines(lines: list[str]) -> str:
    """The digest of canonical lines already sorted (what ``canonical_digest`` hashes)."""
    h = hashlib.sha256()
    for i, line in enumerate(lines):
        if i:
            h.update(b"\n")
        h.update(line.encode("utf-8"))
    return h.hexdigest()


def canonical_line(row, exclude: tuple[str, ...] = ("receipt_id",), columns: tuple[str, ...] | None = None) -> str:
    """One row's canonical line: ``canonical_rows`` is these lines, sorted, joined by newlines."""
    if is_record(row):
        # a record's fields straight to their plain values (_plain converts nested records)
        names = field_names(row) if columns is None else columns
        d = {k: _plain(getattr(row, k, None)) for k in names if k not in exclude}
    else:
        d = dict(cast(Mapping[str, Any], row))
        if columns is not None:
            d = {k: d.get(k) for k in columns}
        d = {k: _plain(v) for k, v in d.items() if k not in exclude}
    return json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _canonical_lines(rows, exclude: tuple[str, ...], columns: tuple[str, ...] | None) -> list[str]:
    lines = [canonical_line(r, exclude, columns) for r in rows]
    lines.sort()
    return lines


# ---------------------------------------------------------------- evidence in the stage cache


class EvidenceRows(list):
    """One claim's evidence rows with each row's canonical line, in rank order.

    The retrieval cache stores evidence as these lines, so an unchanged rerun signs its batch
    from the lines it read instead of encoding every row again (a third of such a run's time
    went there)."""

    lines: list[str]

    @classmethod
    def _with_lines(cls, rows: list[Evidence], lines: list[str]) -> EvidenceRows:
        made = cls(rows)
        made.lines = lines
        return made

    def stamped(self, receipt_id: str) -> EvidenceRows:
        """The rows with their receipt id set in place. They belong to the run that holds them
        (``decode_evidence`` made them for it), so no one else sees the change; a copy of each,
        as ``records.replaced`` makes, cost more than signing the batch. The lines stay: the
        run's evidence table is read from them (``evidence_table``)."""
        for row in self:
            row.__dict__["receipt_id"] = receipt_id
        return self


_EVIDENCE_FLOATS = tuple(f.name for f in dataclasses.fields(Evidence) if f.type == "float")
# Part of every retrieval cache key: rows stored under other fields, or in another layout, are
# never read back.
EVIDENCE_CACHE_FORMAT = content_hash("digest+lines|" + "|".join(field_names(Evidence)))


def lines_of(rows: list[Evidence]) -> list[str]:
    """A claim's canonical lines, in rank order: those read with the rows, else made now."""
    return rows.lines if isinstance(rows, EvidenceRows) else [canonical_line(r) for r in rows]


def verdict_digest(rows: list[Evidence]) -> str:
    """What a claim's verdict depends on of its evidence, as one key: each row's passage, source
    version and date, sentence, counterpart, section and removal, in any row order (not the
    scores, nor the receipt)."""
    return key_of(
        sorted(
            (e.passage_id, e.source_version, str(e.source_date), e.sentence, e.counterpart_of, e.section, e.removed_in, e.renamed)
            for e in rows
        )
    )


def encode_evidence(rows: list[Evidence]) -> str:
    """A claim's evidence for the cache: its ``verdict_digest``, then its canonical lines, one
    per row (JSON escapes newlines), so a rerun keys its verdicts without decoding the rows."""
    return "\n".join([verdict_digest(rows), *lines_of(rows)])


# An ``encode_evidence`` text is its digest line, then one line per row: these read its parts
# without copying the lines out first (a rerun reads some 60 MB of such text).
def _digest_of_text(text: str) -> str:
    end = text.find("\n")
    return text if end < 0 else text[:end]


def _lines_of_text(text: str) -> list[str]:
    return text.split("\n")[1:]


def _body(text: str) -> str:
    """The canonical lines as one string."""
    return text.partition("\n")[2]


def decode_evidence(text: str) -> EvidenceRows:
    """``encode_evidence`` read back: the same Evidence records, receipt_id empty as before signing."""
    lines = _lines_of_text(text)
    if not lines:
        return EvidenceRows._with_lines([], [])
    rows = []
    new = object.__new__
    for fields in orjson.loads("[" + ",".join(lines) + "]"):  # one parse per claim, not per row
        if fields["source_date"] is not None:
            fields["source_date"] = date.fromisoformat(fields["source_date"])
        for name in _EVIDENCE_FLOATS:
            if fields[name] is None:  # the canonical form writes NaN as null
                fields[name] = math.nan
        fields["receipt_id"] = ""
        row = new(Evidence)
        object.__setattr__(row, "__dict__", fields)  # as records.replaced: no per-field frozen __setattr__
        rows.append(row)
    return EvidenceRows._with_lines(rows, lines)


class RunEvidence(Mapping[str, list[Evidence]]):
    """A run's evidence by claim id, in the claims' order. Rows read from the retrieval cache stay
    in their cached text until someone asks for them.

    An unchanged rerun signs the rows' lines, keys each verdict by the claim's ``verdict_digest``
    and reads its evidence table from the lines; only the claims whose edits are drafted need
    their rows, and decoding every claim's rows was a tenth of such a run. Once signed
    (``stamp``), rows come out with the run's receipt id."""

    def __init__(self, claim_ids: list[str], values: list[list[Evidence] | str]):
        """``values``: per claim, its fresh rows or its cached ``encode_evidence`` text."""
        self._order = list(claim_ids)
        self._rows: dict[str, list[Evidence]] = {}
        self._text: dict[str, str] = {}
        for claim_id, value in zip(claim_ids, values):
            if isinstance(value, str):
                self._text[claim_id] = value
            else:
                self._rows[claim_id] = value
        self.receipt_id = ""

    def __getitem__(self, claim_id: str) -> list[Evidence]:
        rows = self._rows.get(claim_id)
        if rows is None:
            rows = decode_evidence(self._text.pop(claim_id))  # KeyError: not a claim of the run
            if self.receipt_id:
                rows.stamped(self.receipt_id)
            self._rows[claim_id] = rows
        return rows

    def __contains__(self, claim_id: object) -> bool:
        return claim_id in self._rows or claim_id in self._text

    def __iter__(self):
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    @property
    def fresh_rows(self) -> int:
        """Rows that came with no cached line (a new search), so far."""
        return sum(len(rows) for rows in self._rows.values() if not isinstance(rows, EvidenceRows))

    def lines(self, claim_id: str) -> list[str]:
        """The claim's canonical lines, in rank order, without decoding cached rows."""
        text = self._text.get(claim_id)
        return lines_of(self._rows.get(claim_id, [])) if text is None else _lines_of_text(text)

    def row_count(self, claim_id: str) -> int:
        text = self._text.get(claim_id)
        return len(self._rows.get(claim_id, [])) if text is None else text.count("\n")

    def verdict_digest(self, claim_id: str) -> str:
        text = self._text.get(claim_id)
        return _digest_of_text(text) if text is not None else verdict_digest(self._rows.get(claim_id, []))

    def stamp(self, receipt_id: str) -> None:
        """Give every row the run's receipt id: cached rows in place (they belong to this run),
        new rows as copies; rows decoded later get it as they are."""
        self.receipt_id = receipt_id
        for claim_id, rows in self._rows.items():
            if isinstance(rows, EvidenceRows):
                rows.stamped(receipt_id)
            else:
                self._rows[claim_id] = [replaced(e, receipt_id=receipt_id) for e in rows]

    def table_parts(self, claim_id: str) -> tuple[str, int, list[str] | None]:
        """For ``evidence_table``: the claim's lines as one string, their count, and the rows'
        receipt ids (None: all the run's, the rows not decoded)."""
        text = self._text.get(claim_id)
        if text is not None:
            return _body(text), text.count("\n"), None
        rows = self._rows.get(claim_id, [])
        return "\n".join(lines_of(rows)), len(rows), [r.receipt_id for r in rows]


def evidence_lines(evidence: Mapping[str, list[Evidence]], claim_id: str) -> list[str]:
    """A claim's canonical lines from a run's evidence (cached rows not decoded) or a plain dict."""
    return evidence.lines(claim_id) if isinstance(evidence, RunEvidence) else lines_of(evidence.get(claim_id, []))


def evidence_verdict_digest(evidence: Mapping[str, list[Evidence]], claim_id: str) -> str:
    """A claim's ``verdict_digest`` from a run's evidence (read from the cache text) or a plain dict."""
    if isinstance(evidence, RunEvidence):
        return evidence.verdict_digest(claim_id)
    return verdict_digest(evidence.get(claim_id, []))


def evidence_table(evidence: Mapping[str, list[Evidence]]) -> pa.Table | None:
    """A run's evidence as an Arrow table (``SCHEMAS["evidence"]``, claims in sorted order) read
    from the rows' canonical lines by Arrow's JSON reader, when most rows came from the cache
    with their lines (a rerun); None otherwise: turning a cold run's rows into lines first would
    cost more than converting the rows. Receipt ids are the rows' own, evidence ids computed."""
    if not isinstance(evidence, RunEvidence):
        return None
    claim_ids = sorted(evidence)
    parts = [evidence.table_parts(c) for c in claim_ids]
    total = sum(n for _, n, _ in parts)
    if total == 0 or evidence.fresh_rows * 10 > total:
        return None
    receipt_ids: list[str] = []
    for _, n, ids in parts:
        receipt_ids.extend([evidence.receipt_id] * n if ids is None else ids)
    blob = "\n".join(body for body, n, _ in parts if n).encode("utf-8")
    # a block must hold the longest line: a claim's lines together are at least as long, and
    # four bytes a character bound their UTF-8
    longest = max(len(body) for body, _, _ in parts) * 4 + 1
    schema = SCHEMAS["evidence"]
    as_read = pa.schema(
        [f.with_type(pa.string()) if f.type == pa.date32() else f for f in schema if f.name not in ("evidence_id", "receipt_id")]
    )
    table = pa_json.read_json(
        io.BytesIO(blob),
        read_options=pa_json.ReadOptions(block_size=max(1 << 20, longest)),
        parse_options=pa_json.ParseOptions(explicit_schema=as_read, unexpected_field_behavior="error"),
    )
    del blob
    evidence_ids = [content_hash(f"{c}|{p}") for c, p in zip(table.column("claim_id").to_pylist(), table.column("passage_id").to_pylist())]
    columns = {
        "evidence_id": pa.array(evidence_ids, pa.string()),
        "receipt_id": pa.array(receipt_ids, pa.string()),
        **{name: table.column(name) for name in table.column_names},
    }
    columns["source_date"] = pc.cast(columns["source_date"], pa.date32())
    return pa.table({name: columns[name] for name in schema.names}, schema=schema)


def evidence_table_as_last_run(store, evidence: RunEvidence, receipt: dict) -> pa.Table | None:
    """The newest committed run's evidence table with this run's receipt id, when that run signed
    the very rows this run did (one retrieval receipt with this run's output hash, one evidence
    file, the same claims in the same order); None otherwise.

    An unchanged rerun otherwise turns some 60,000 cached lines back into columns (0.6-0.75 s on
    the speed bench's KB) to write the table the last run wrote. If that run's file was altered
    after it was signed, this run's copy fails ``verify_stored_evidence`` as that run's does."""
    run_ids = store.run_ids()
    if not run_ids:
        return None
    last = run_ids[-1]
    receipts_files = sorted((store.root / "receipts" / f"run_id={last}").glob("*.parquet"))
    evidence_files = sorted((store.root / "evidence" / f"run_id={last}").glob("*.parquet"))
    if len(evidence_files) != 1 or not receipts_files:
        return None
    try:
        signed = [
            r for f in receipts_files for r in pq.read_table(f, columns=["tool", "output_hash"]).to_pylist() if r["tool"] == "retriever"
        ]
        if len(signed) != 1 or signed[0]["output_hash"] != receipt["output_hash"]:
            return None
        table = pq.read_table(evidence_files[0])
    except (OSError, pa.ArrowInvalid, KeyError):
        return None
    schema = SCHEMAS["evidence"]
    if table.schema != schema:  # a store written before a column was added: convert the lines instead
        return None
    claim_ids = sorted(evidence)
    counts = [evidence.row_count(c) for c in claim_ids]
    if table.num_rows != sum(counts) or table.column("claim_id").to_pylist() != [c for c, n in zip(claim_ids, counts) for _ in range(n)]:
        return None
    ids = pa.array([receipt["receipt_id"]] * table.num_rows, pa.string())
    return table.set_column(schema.get_field_index("receipt_id"), schema.field("receipt_id"), ids)


# ---------------------------------------------------------------- a run's stored evidence


def verify_stored_evidence(store, run_id: str | None = None) -> list[str]:
    """Re-verify the evidence rows a run stored against the retrieval receipts it signed.

    ``store`` is a ``kb.store.Store``; ``run_id`` defaults to the newest run. For each
    ``retriever`` receipt of the run, the evidence rows stamped with it are turned back into
    canonical bytes and checked with ``verify_receipt``, with the inputs rebuilt from the run's
    check-worthy claims (one batch per shard when the run was sharded). Returns one line per
    problem (an altered, added or removed evidence row, a forged or altered receipt, evidence
    under no receipt); an empty list means every stored batch is exactly what was signed.
    """
    run_id = run_id or (store.run_ids() or [None])[-1]
    if run_id is None:
        return ["the store has no completed run"]
    con = store.connect(read_only=True)
    try:

        def rows(sql: str) -> list[dict]:
            return con.sql(sql, params=[run_id]).to_arrow_table().to_pylist()

        receipts = rows("SELECT * FROM receipts WHERE run_id = ? AND tool = 'retriever'")
        evidence = rows("SELECT * EXCLUDE (run_id) FROM evidence WHERE run_id = ?")
        claims = rows("SELECT claim_id, doc_id FROM claims_history WHERE run_id = ? AND checkworthy")
    finally:
        con.close()
    problems = []
    if not receipts:
        return [f"run {run_id} has no retrieval receipt"] if evidence else []
    shards = len(receipts)
    inputs_by_hash = {}
    for shard in range(shards):
        ids = sorted(c["claim_id"] for c in claims if shards == 1 or shard_of(c["doc_id"], shards) == shard)
        data = json.dumps(ids).encode()
        inputs_by_hash[_sha256(data)] = data
    by_receipt: dict[str, list[dict]] = {}
    for row in evidence:
        by_receipt.setdefault(row.get("receipt_id") or "", []).append(row)
        if row.get("evidence_id") != content_hash(f"{row.get('claim_id')}|{row.get('passage_id')}"):
            problems.append(
                f"evidence row {row.get('evidence_id')} (claim {row.get('claim_id')}, rank {row.get('rank')}): "
                "its id does not match its claim and passage"
            )
    key_dir = Path(store.root) / "keys"
    for receipt in receipts:
        batch = by_receipt.pop(receipt["receipt_id"], [])
        outputs = canonical_rows(batch, exclude=("receipt_id", "evidence_id"))
        inputs = inputs_by_hash.get(receipt["input_hash"], b"")
        if verify_receipt(receipt, inputs, outputs, key_dir):
            continue
        where = f"receipt {receipt['receipt_id']} ({len(batch)} evidence rows)"
        if _sha256(outputs) != receipt["output_hash"]:
            problems.append(f"{where}: the stored evidence rows differ from what was signed (a row was altered, added or removed)")
        elif _sha256(inputs) != receipt["input_hash"]:
            problems.append(f"{where}: the claims it was signed for are not the run's check-worthy claims")
        else:
            problems.append(f"{where}: the receipt itself was altered or forged (its id or signature does not verify)")
    for receipt_id, batch in by_receipt.items():
        problems.append(f"{len(batch)} evidence rows carry receipt {receipt_id or '(none)'}, which is not a receipt of run {run_id}")
    return problems
