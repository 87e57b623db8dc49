"""Accuracy of a full audit of the bundled demo KB against its expected labels."""

from __future__ import annotations

import argparse
import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from kb.config import DEMO_ROOT, Settings
from kb.records import LABELS

# When one expected sentence became several claims, the sentence takes the most serious label.
SEVERITY = {"contradicted": 3, "stale": 2, "uncertain": 1, "supported": 0}


@dataclass(frozen=True)
class Expected:
    doc_id: str
    sentence: str
    label: str
    correction: str


def load_expected(path: Path = DEMO_ROOT / "expected_labels.csv") -> list[Expected]:
    with path.open(newline="", encoding="utf-8") as handle:
        return [Expected(r["doc_id"], r["sentence"], r["label"], r.get("correction") or "") for r in csv.DictReader(handle)]


def sentence_labels(result, expected: list[Expected]) -> list[str | None]:
    """The predicted label of each expected sentence: from the claims whose span overlaps it."""
    docs = {d.doc_id: d for d in result.documents}
    verdict_of = {v.claim_id: v.label for v in result.verdicts}
    claims_by_doc: dict[str, list] = {}
    for claim in result.claims:
        claims_by_doc.setdefault(claim.doc_id, []).append(claim)
    predicted: list[str | None] = []
    for item in expected:
        doc = docs.get(item.doc_id)
        start = doc.text.find(item.sentence) if doc else -1
        if start < 0:
            predicted.append(None)
            continue
        end = start + len(item.sentence)
        labels = [
            verdict_of[c.claim_id]
            for c in claims_by_doc.get(item.doc_id, [])
            if c.claim_id in verdict_of and c.start < end and c.end > start
        ]
        predicted.append(max(labels, key=SEVERITY.__getitem__) if labels else None)
    return predicted


def score(result, expected: list[Expected]) -> dict[str, float]:
    predicted = sentence_labels(result, expected)
    gold = [e.label for e in expected]
    metrics: dict[str, float] = {
        "sentences": float(len(gold)),
        "accuracy": sum(p == g for p, g in zip(predicted, gold)) / max(len(gold), 1),
        "unmatched": float(sum(p is None for p in predicted)),
    }
    for label in LABELS:
        pairs = [(p, g) for p, g in zip(predicted, gold) if g == label]
        metrics[f"{label}_recall"] = sum(p == g for p, g in pairs) / max(len(pairs), 1)
    counts = Counter(p for p in predicted if p)
    for label in LABELS:
        metrics[f"predicted_{label}"] = float(counts.get(label, 0))
    return metrics


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--depth", default="D1", help="verification depth (default D1)")


def run(args: argparse.Namespace) -> dict[str, float]:
    from kb.pipeline import audit_in_memory

    settings = Settings(depth=getattr(args, "depth", "D1")).validate()
    result = audit_in_memory(settings)
    metrics = score(result, load_expected())
    metrics["seconds"] = result.seconds
    return metrics
