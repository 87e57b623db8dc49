"""``kbaudit bench claims``: claim-splitting throughput and accuracy on the labelled fixture.

Metrics (one flat dict, as every bench writes with ``--json``):

- ``sentences_per_s``: sentences split per second by ``split_claims`` over a synthetic corpus
  (parsing excluded; the count is the number of sentences ``sentence_spans`` finds).
- ``boundary_precision`` / ``boundary_recall``: claims matched to the expected claims of
  ``tests/fixtures/claims/expected.jsonl`` by (file, normalised source text), as multisets.
  Heading blocks are left out on both sides.
- ``type_accuracy`` / ``time_sensitivity_accuracy``: over matched claims that are check-worthy in
  the expected file (a question has no meaningful type).
- ``checkworthy_accuracy``: over all matched claims.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, Field

from kb.claims.split import split_claims
from kb.claims.text import sentence_spans
from kb.ingest.parse import parse_document

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "claims"

_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def load_expected(fixture_dir: Path) -> list[dict]:
    path = fixture_dir / "expected.jsonl"
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def predict(fixture_dir: Path) -> list[dict]:
    rows = []
    for path in sorted(fixture_dir.iterdir()):
        if path.suffix == ".jsonl" or not path.is_file():
            continue
        doc = parse_document(path.read_bytes(), path.name, str(path))
        headings = {(b.start, b.end) for b in doc.blocks if b.kind == "heading"}
        for c in split_claims(doc):
            if (c.start, c.end) in headings:
                continue
            rows.append(
                {
                    "file": path.name,
                    "source_text": c.source_text,
                    "text": c.text,
                    "checkworthy": c.checkworthy,
                    "type": c.type,
                    "time_sensitive": c.time_sensitive,
                    "start": c.start,
                    "end": c.end,
                }
            )
    return rows


def evaluate(expected: list[dict], predicted: list[dict]) -> tuple[dict[str, float], list[str]]:
    """Boundary precision/recall and label accuracies; also a list of human-readable mismatches."""
    pool: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in expected:
        pool[(row["file"], _norm(row["source_text"]))].append(row)
    matched: list[tuple[dict, dict]] = []
    unmatched_pred: list[dict] = []
    for row in predicted:
        key = (row["file"], _norm(row["source_text"]))
        if pool.get(key):
            matched.append((pool[key].pop(0), row))
        else:
            unmatched_pred.append(row)
    missed = [r for rows in pool.values() for r in rows]
    n_match = len(matched)
    precision = n_match / len(predicted) if predicted else 0.0
    recall = n_match / len(expected) if expected else 0.0
    worthy = [(e, p) for e, p in matched if e["checkworthy"]]
    type_ok = sum(1 for e, p in worthy if e["type"] == p["type"])
    ts_ok = sum(1 for e, p in worthy if bool(e["time_sensitive"]) == bool(p["time_sensitive"]))
    cw_ok = sum(1 for e, p in matched if bool(e["checkworthy"]) == bool(p["checkworthy"]))
    notes = [f"extra:  {r['file']}: {r['source_text']!r}" for r in unmatched_pred]
    notes += [f"missed: {r['file']}: {r['source_text']!r}" for r in missed]
    for e, p in worthy:
        if e["type"] != p["type"]:
            notes.append(f"type:   {e['file']}: {e['source_text']!r}: expected {e['type']}, got {p['type']}")
        if bool(e["time_sensitive"]) != bool(p["time_sensitive"]):
            notes.append(f"time:   {e['file']}: {e['source_text']!r}: expected {e['time_sensitive']}")
    metrics = {
        "boundary_precision": round(precision, 4),
        "boundary_recall": round(recall, 4),
        "type_accuracy": round(type_ok / len(worthy), 4) if worthy else 0.0,
        "time_sensitivity_accuracy": round(ts_ok / len(worthy), 4) if worthy else 0.0,
        "checkworthy_accuracy": round(cw_ok / n_match, 4) if n_match else 0.0,
        "expected_claims": float(len(expected)),
        "predicted_claims": float(len(predicted)),
    }
    return metrics, notes


def throughput(fixture_dir: Path, min_sentences: int = 20_000) -> tuple[float, int]:
    """Sentences per second of ``split_claims`` on the fixture documents, repeated."""
    docs = []
    for path in sorted(fixture_dir.iterdir()):
        if path.suffix == ".jsonl" or not path.is_file():
            continue
        docs.append(parse_document(path.read_bytes(), path.name, str(path)))
    per_round = sum(len(sentence_spans(b.text)) for d in docs for b in d.blocks if b.kind != "table_row")
    per_round += sum(1 for d in docs for b in d.blocks if b.kind == "table_row")
    rounds = max(1, -(-min_sentences // max(per_round, 1)))
    t0 = time.perf_counter()
    for _ in range(rounds):
        for doc in docs:
            split_claims(doc)
    elapsed = time.perf_counter() - t0
    total = per_round * rounds
    return (total / elapsed if elapsed > 0 else float("inf")), total


class Params(BaseModel):
    """`kbaudit bench claims` parameters."""

    fixture: Path = Field(FIXTURE_DIR, description="folder with documents and expected.jsonl")
    sentences: int = Field(20_000, description="sentences to split for the throughput figure")
    show_errors: bool = Field(False, description="print the claims that do not match the fixture")


def run(params: Params) -> dict[str, float]:
    fixture = params.fixture
    metrics, notes = evaluate(load_expected(fixture), predict(fixture))
    rate, total = throughput(fixture, params.sentences)
    if params.show_errors:
        for line in notes:
            print(line)
    return {"sentences_per_s": round(rate, 1), "sentences": float(total), **metrics}
