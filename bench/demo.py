"""Accuracy of a full audit of the bundled demo KB against its expected labels."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from kb.chain import run_audit
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


def sentence_labels(
    doc_texts: dict[str, str], labelled_spans: list[tuple[str, int, int, str]], expected: list[Expected]
) -> list[str | None]:
    """The predicted label of each expected sentence, from the labelled claim spans overlapping it.

    `labelled_spans` holds (doc_id, start, end, label) for every claim that got a verdict.
    """
    spans_by_doc: dict[str, list[tuple[int, int, str]]] = {}
    for doc_id, start, end, label in labelled_spans:
        spans_by_doc.setdefault(doc_id, []).append((start, end, label))
    predicted: list[str | None] = []
    for item in expected:
        start = doc_texts.get(item.doc_id, "").find(item.sentence)
        if start < 0:
            predicted.append(None)
            continue
        end = start + len(item.sentence)
        labels = [label for s, e, label in spans_by_doc.get(item.doc_id, []) if s < end and e > start]
        predicted.append(max(labels, key=SEVERITY.__getitem__) if labels else None)
    return predicted


def score(doc_texts: dict[str, str], labelled_spans: list[tuple[str, int, int, str]], expected: list[Expected]) -> dict[str, float]:
    predicted = sentence_labels(doc_texts, labelled_spans, expected)
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


def score_result(result) -> dict[str, float]:
    claims = {c.claim_id: c for c in result.claims}
    spans = [(claims[v.claim_id].doc_id, claims[v.claim_id].start, claims[v.claim_id].end, v.label) for v in result.verdicts]
    return score({d.doc_id: d.text for d in result.documents}, spans, load_expected())


class Params(BaseModel):
    """`kbaudit bench demo` parameters."""

    depth: str = Field("D1", description="verification depth (default D1)")


def run(params: Params) -> dict[str, float]:
    settings = Settings(depth=params.depth).validate()
    result = run_audit(settings)
    metrics = score_result(result)
    metrics["seconds"] = result.seconds
    return metrics
