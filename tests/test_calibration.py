"""A finding's confidence is the share of findings of its kind that people judged real."""

import csv
import json
from pathlib import Path

import pytest

from bench import findings as bench_findings
from kb.chain import run_audit
from kb.config import load_settings
from kb.errors import ConfigError
from kb.verify import calibration
from kb.verify.calibration import FindingCalibration, calibrate_findings, finding_kind
from tests.conftest import DEMO_TODAY

JUDGED = Path(__file__).parent / "fixtures" / "judged"
# the samples the shipped calibration is fitted on, and those kept to score it
FITTED_ON = ("hugo", "netbox", "pytest", "redux-toolkit", "rollup", "scrapy")
SCORED_ON = ("hatch", "task", "pip", "flask", "tox", "frigate", "jupyter-book", "goreleaser", "prettier", "lazygit")


def test_the_shipped_calibration_is_what_fitting_the_judged_samples_gives(tmp_path):
    out = tmp_path / "findings.json"
    metrics = bench_findings.fit([JUDGED / f"{name}.csv" for name in FITTED_ON], out)
    assert json.loads(out.read_text()) == json.loads(calibration.SHIPPED.read_text())
    assert metrics["judged"] == 213
    shipped = calibration.load("shipped")
    assert shipped is not None and set(shipped.fitted_on) == set(FITTED_ON)
    assert not set(shipped.fitted_on) & set(SCORED_ON)


@pytest.mark.parametrize(
    ("label", "rationale", "kind"),
    [
        ("stale", "a.md: older version (2025-01-26) supports (exact match); removed in 25.3: the newest version has no counterpart",
         "stale/removed"),
        ("stale", "ci.rst: older version (2025-01-26) supports (exact match); newest version (2026-07-29) refutes (revision: the "
         "newer version changed '49' to '56'; the claim's '49' holds only for the older)", "stale/revision"),
        ("stale", "s.rst: older version (2026-01-05) supports (exact match); in the newest version (2026-08-20) that sentence was "
         "rewritten (similarity 0.09) and no longer states it: Set it.", "stale/rewritten"),
        ("stale", "p.md: older version (2025-09-02) states it verbatim; newest version (2026-05-05) revised it (similarity 0.76): "
         "When a request is received.", "stale/revised"),
        ("contradicted", "gentle_force.mdx (2025-06-08) refutes: model: refutes (p=0.59)", "contradicted/model"),
        ("contradicted", "gentle_force.mdx (2025-06-08) refutes: identifier: claim TASK_X_FORCE vs evidence TASK_X_GENTLE_FORCE",
         "contradicted/value"),
        ("stale", "e.mdx: older version (2025-01-18) supports (exact match); newest version (2025-06-08) refutes (model refutes "
         "(p=0.71) and rules agree: term: claim experiment vs evidence status)", "stale/value"),
        ("contradicted", "index.md (2026-06-13) refutes: the entry's row now reads 'x' in that place", "contradicted/row"),
        ("contradicted", "v.md (2026-08-10) refutes: extended: the evidence adds 'If set to true'", "contradicted/extended"),
    ],
)  # fmt: skip
def test_a_findings_kind_is_read_from_the_basis_its_rationale_names(label, rationale, kind):
    assert finding_kind(label, rationale) == kind
    noted = rationale + calibration.load("shipped").note(label, rationale)  # type: ignore[union-attr]
    assert finding_kind(label, noted) == kind  # the note a calibrated verdict carries is not read as its basis


def test_a_kind_judged_often_gets_its_share_and_a_rare_one_leans_on_its_labels_share():
    cal = FindingCalibration(kinds={"stale/removed": (100, 70), "stale/model": (2, 2)}, prior={"stale": 0.5})
    removed = "x.md: older version (2025-01-01) supports (exact match); removed in 2: the newest version has no counterpart"
    assert cal.confidence("stale", removed) == pytest.approx((70 + 4 * 0.5) / 104, abs=1e-3)
    model_only = "x.md: older version (2025-01-01) supports (exact match); newest version (2026-01-01) refutes (model: refutes (p=0.9))"
    assert cal.confidence("stale", model_only) == pytest.approx((2 + 2) / 6, abs=1e-3)  # two of two is not 1.0
    assert cal.confidence("stale", "something the policy never wrote") == 0.5


def test_an_audit_reports_each_finding_at_its_kinds_confidence_and_changes_no_label():
    """The demo KB audited with the shipped calibration and with none: the same labels, the same
    supported and uncertain verdicts; each finding's confidence is its kind's, its record noted."""
    raw = run_audit(load_settings({"today": DEMO_TODAY, "finding_calibration": "none"}, environ={}).validate())
    calibrated = run_audit(load_settings({"today": DEMO_TODAY}, environ={}).validate())
    shipped = calibration.load("shipped")
    assert shipped is not None
    before = {v.claim_id: v for v in raw.verdicts}
    findings = 0
    for v in calibrated.verdicts:
        old = before[v.claim_id]
        assert v.label == old.label
        if v.label in calibration.FINDINGS:
            findings += 1
            assert v.confidence == shipped.confidence(old.label, old.rationale)
            assert v.rationale == old.rationale + shipped.note(old.label, old.rationale)
            assert v.rationale.endswith("judged findings of this kind real]")
        else:
            assert v == old
    assert findings > 10
    # a reused verdict read again keeps one note, and its confidence
    again = calibrate_findings(calibrated.verdicts, shipped)
    assert again == calibrated.verdicts


def test_a_floor_reports_the_findings_of_kinds_judged_real_less_often_uncertain():
    """On the demo KB the stale findings whose value differs are of a kind judged real more often
    (0.43) than contradicted ones or revised words; a floor between them keeps only the former."""
    shipped = calibration.load("shipped")
    assert shipped is not None
    strict = run_audit(load_settings({"today": DEMO_TODAY, "min_confidence": 0.4}, environ={}).validate())
    kept = [v for v in strict.verdicts if v.label in calibration.FINDINGS]
    floored = [v for v in strict.verdicts if "below the confidence floor 0.4: read as" in v.rationale]
    assert kept and floored
    assert all(v.confidence >= 0.4 and "[stale/value:" in v.rationale for v in kept)
    assert all(v.label == "uncertain" and ("contradicted/" in v.rationale or "stale/revision" in v.rationale) for v in floored)


def test_a_judged_sample_is_scored_at_its_findings_calibrated_confidence(tmp_path):
    shipped = calibration.load("shipped")
    assert shipped is not None
    with (JUDGED / "pip.csv").open(newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["kind"] == "finding"]
    expected = [shipped.confidence(r["label"], r["rationale"]) for r in rows]
    scored = bench_findings.score(JUDGED / "pip.csv")
    assert scored["mean_confidence"] == pytest.approx(sum(expected) / len(expected), abs=1e-4)
    kept = [r["verdict"] == "real" for r, conf in zip(rows, expected) if conf >= 0.5]
    assert scored["judged_at_0.5"] == len(kept) and scored["precision_at_0.5"] == pytest.approx(sum(kept) / len(kept), abs=1e-4)
    # with no calibration the sample's own confidence column is read
    raw = bench_findings.score(JUDGED / "pip.csv", "none")
    assert raw["mean_confidence"] == pytest.approx(sum(float(r["confidence"]) for r in rows) / len(rows), abs=1e-4)


def test_a_calibration_file_that_is_missing_or_not_one_is_a_one_line_error(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_settings({"finding_calibration": str(tmp_path / "absent.json"), "today": DEMO_TODAY}, environ={}).validate()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ConfigError, match="not a kbaudit-finding-calibration-v1 file"):
        calibration.load(str(bad))
    with pytest.raises(ConfigError, match="--fit needs --fit-out"):
        bench_findings.run(bench_findings.Params(fit=str(JUDGED / "pip.csv")))


def test_on_samples_it_was_not_fitted_on_a_floor_of_one_half_raises_precision():
    """The figures docs/labelling.md gives: the ten samples pooled, at the default and at 0.5."""
    pooled = bench_findings.score([JUDGED / f"{name}.csv" for name in SCORED_ON])
    assert (pooled["judged"], pooled["precision"]) == (330, 0.6121)
    assert (pooled["judged_at_0.5"], pooled["precision_at_0.5"]) == (181, 0.7735)
    assert (pooled["judged_at_0.4"], pooled["precision_at_0.4"]) == (199, 0.7588)
    assert (pooled["judged_at_0.2"], pooled["precision_at_0.2"]) == (260, 0.6923)
    assert pooled["mean_confidence"] == 0.4451
    as_judged = bench_findings.score([JUDGED / f"{name}.csv" for name in SCORED_ON], "none")
    assert as_judged["mean_confidence"] == 0.8423  # the decisions' own confidences overstate it
