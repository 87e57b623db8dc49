"""What a finding's confidence means: how often people judged findings of its kind real.

The rules and the verifier give a stale or contradicted verdict the confidence of the judgement
that decided it, and that judgement is sure of the sentence it read, not of the finding: on
documentation nobody tuned on, findings at 0.90 were real about half the time. A finding's kind
(its label and the basis the rationale names: a sentence removed, a value differing, a word
revised, the model alone...) says far more. ``FindingCalibration`` holds, per kind, how many
findings of documentation histories were judged and how many were real, and gives a finding the
smoothed share of its kind as its confidence; ``min_confidence`` then trades findings for
precision in terms a reader can check ("0.5: findings more often real than not").

The shipped table (``weights/findings.json``) is fitted by ``kbaudit bench findings --fit`` on
judged samples (``tests/fixtures/judged``); a team can fit its own from its own judged samples
and name it in the ``finding_calibration`` setting.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from kb.errors import ConfigError
from kb.records import Verdict, replaced

FORMAT = "kbaudit-finding-calibration-v1"
SHIPPED = Path(__file__).parent / "weights" / "findings.json"
FINDINGS = ("stale", "contradicted")
# a kind judged this many times weighs as much as the label's overall share: a kind seen twice
# does not get the confidence of its two verdicts
SMOOTHING = 4.0

_NOTE = re.compile(r" \[(?:stale|contradicted)/[a-z]+: \d+ of \d+ judged findings of this kind real\]$")
# a slot rule's reading: "version: claim v3.0.0 vs evidence v4.0.0", "identifier: claim X vs evidence (absent)"
_VALUE = re.compile(r"\b[a-z][a-z -]*: claim .+? vs evidence ")
# "SOURCE (DATE) refutes: READING" (contradicted), "newest version (DATE) refutes (READING)" (stale)
_REFUTES = re.compile(r"\) refutes(?:: | \()")
# (basis, what the rationale says) for the verdicts policy.decide writes whole, checked in order
_WHOLE = (
    ("removed", "the newest version has no counterpart"),
    ("dropped", "the newest corpus shows it nowhere"),
    ("rewritten", "that sentence was rewritten"),
    ("revised", ") revised it (similarity"),
    ("changelog", "the newer changelog entry"),
    ("aged", "time-sensitive claim"),
)


def finding_kind(label: str, rationale: str) -> str:
    """``label/basis`` of a finding, read from the rationale ``kb.verify.policy`` wrote."""
    text = _NOTE.sub("", rationale or "")
    for basis, marker in _WHOLE:
        if marker in text:
            return f"{label}/{basis}"
    # a refutation: the newest version's judgement is what follows the policy's "refutes"
    reading = _REFUTES.split(text, maxsplit=1)[-1]
    if "revision:" in reading:
        basis = "revision"
    elif "entry's row" in reading:
        basis = "row"
    elif "extended:" in reading:
        basis = "extended"
    elif _VALUE.search(reading):
        basis = "value"
    elif "model" in reading:
        basis = "model"
    else:
        basis = "other"
    return f"{label}/{basis}"


@dataclass(frozen=True)
class FindingCalibration:
    """Judged and real findings per kind, and each label's share over all kinds."""

    kinds: dict[str, tuple[int, int]]  # kind -> (judged, real)
    prior: dict[str, float]  # label -> share of its findings judged real
    fitted_on: dict[str, int] = field(default_factory=dict)  # sample name -> findings judged
    smoothing: float = SMOOTHING

    def confidence(self, label: str, rationale: str) -> float:
        return self.reading(label, rationale)[0]

    def note(self, label: str, rationale: str) -> str:
        return self.reading(label, rationale)[1]

    def reading(self, label: str, rationale: str) -> tuple[float, str]:
        """A finding's calibrated confidence and the note of its kind's record, its kind read once."""
        kind = finding_kind(label, rationale)
        judged, real = self.kinds.get(kind, (0, 0))
        prior = self.prior.get(label, 0.5)
        if judged + self.smoothing == 0:
            confidence = round(prior, 3)
        else:
            confidence = round((real + self.smoothing * prior) / (judged + self.smoothing), 3)
        return confidence, f" [{kind}: {real} of {judged} judged findings of this kind real]" if judged else ""

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "smoothing": self.smoothing,
            "prior": self.prior,
            "kinds": {k: {"judged": n, "real": r} for k, (n, r) in sorted(self.kinds.items())},
            "fitted_on": self.fitted_on,
        }

    @classmethod
    def from_json(cls, data: dict, where: str) -> FindingCalibration:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ConfigError(f"finding calibration {where}: not a {FORMAT} file")
        try:
            kinds = {str(k): (int(v["judged"]), int(v["real"])) for k, v in data["kinds"].items()}
            prior = {str(k): float(v) for k, v in data["prior"].items()}
            smoothing = float(data.get("smoothing", SMOOTHING))
            fitted_on = {str(k): int(v) for k, v in data.get("fitted_on", {}).items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"finding calibration {where}: malformed ({exc})") from exc
        if smoothing < 0:
            raise ConfigError(f"finding calibration {where}: smoothing must not be negative")
        return cls(kinds=kinds, prior=prior, fitted_on=fitted_on, smoothing=smoothing)


def fit(samples: Iterable[tuple[str, Iterable[tuple[str, str, bool]]]]) -> FindingCalibration:
    """A calibration from judged samples: (name, [(label, rationale, judged real)...]) each."""
    judged: Counter[str] = Counter()
    real: Counter[str] = Counter()
    by_label: Counter[str] = Counter()
    real_by_label: Counter[str] = Counter()
    fitted_on: dict[str, int] = {}
    for name, rows in samples:
        count = 0
        for label, rationale, is_real in rows:
            if label not in FINDINGS:
                continue
            kind = finding_kind(label, rationale)
            judged[kind] += 1
            real[kind] += is_real
            by_label[label] += 1
            real_by_label[label] += is_real
            count += 1
        fitted_on[name] = count
    if not by_label:
        raise ConfigError("finding calibration: the judged samples hold no judged finding")
    prior = {label: round(real_by_label[label] / by_label[label], 4) for label in sorted(by_label)}
    return FindingCalibration(kinds={k: (judged[k], real[k]) for k in judged}, prior=prior, fitted_on=fitted_on)


@lru_cache(maxsize=8)
def _load(path: str) -> FindingCalibration:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"finding calibration {path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"finding calibration {path}: unreadable ({exc})") from exc
    return FindingCalibration.from_json(data, path)


def load(setting: str) -> FindingCalibration | None:
    """The calibration a ``finding_calibration`` setting names: ``shipped`` (the default), ``none``
    (findings keep the confidence of the judgement that decided them) or a file ``--fit`` wrote."""
    if setting == "none":
        return None
    return _load(str(SHIPPED if setting == "shipped" else Path(setting).expanduser()))


def calibrate_findings(verdicts: list[Verdict], calibration: FindingCalibration | None) -> list[Verdict]:
    """Stale and contradicted verdicts with their kind's confidence, the kind's record noted in
    the rationale. Idempotent: the note is replaced, not added again, on a reused verdict."""
    if calibration is None:
        return verdicts
    out = []
    for v in verdicts:
        if v.label in FINDINGS:
            rationale = _NOTE.sub("", v.rationale)
            confidence, note = calibration.reading(v.label, rationale)
            v = replaced(v, confidence=confidence, rationale=rationale + note)
        out.append(v)
    return out
