"""Corrections (kb.correct.draft) and versions (kb.correct.versions) on the real demo documents.

The verifier here is a stand-in with the contract of `kb.verify.Verifier` (supported when the
claim text is an evidence sentence), so these tests pin down the correction logic alone; the
demo cycle in tests/test_review.py runs the real one.
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import json
import re
from datetime import date
from pathlib import Path

import pytest

from kb.claims.split import split_claims
from kb.config import DEMO_ROOT
from kb.correct.draft import CorrectionSettings, aligned_slot, change_size, draft_edits, edit_risk, replace_slot
from kb.correct.versions import run_tables, splice
from kb.ingest.walk import ingest
from kb.records import Claim, Document, Evidence, Verdict, content_hash

TODAY = date(2026, 6, 1)


# ---- a stand-in verifier and demo verdicts (shared with test_review) -----------------------
class EchoVerifier:
    """Supported when the claim text is one of its evidence sentences, else contradicted."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def verify(self, claims: list[Claim], evidence: dict[str, list[Evidence]], today: date) -> list[Verdict]:
        self.calls.append([c.text for c in claims])
        out = []
        for c in claims:
            sentences = {e.sentence.replace("`", "") for e in evidence.get(c.claim_id, [])}
            label = "supported" if c.text.replace("`", "") in sentences else "contradicted"
            out.append(Verdict(c.claim_id, label, 0.95, "rules", f"echo: {label}"))
        return out


def expected_corrections() -> list[dict]:
    with open(DEMO_ROOT / "expected_labels.csv", newline="", encoding="utf-8") as f:
        return [r for r in csv.DictReader(f) if r["correction"]]


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+(?:[.,:/-]\w+)*|[^\w\s]", text)


def slot_values(sentence: str, correction: str) -> tuple[str, str]:
    """The differing slot of two sentences, as a slot-comparing verifier reports it."""
    a, b = _tokens(sentence), _tokens(correction)
    ops = [op for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"]
    _, i1, i2, j1, j2 = ops[0][0], ops[0][1], ops[-1][2], ops[0][3], ops[-1][4]
    return " ".join(a[i1:i2]), " ".join(b[j1:j2])


def claim_at(claims: list[Claim], doc: Document, sentence: str) -> Claim | None:
    pos = doc.text.find(sentence)
    for c in claims:
        if c.doc_id == doc.doc_id and c.checkworthy and c.start <= pos < c.end:
            return c
    return None


def demo_audit(docs_root: Path, authority: float = 1.0):
    """Documents, claims, evidence and verdicts for a KB folder, as an audit of the demo would
    label it: an expected wrong sentence is contradicted or stale (its evidence says the
    correction), a corrected sentence is supported, every other claim is uncertain."""
    docs, _ = ingest(docs_root, 10**8)
    by_id = {d.doc_id: d for d in docs}
    claims = [c for d in docs for c in split_claims(d)]
    evidence: dict[str, list[Evidence]] = {}
    verdicts: dict[str, Verdict] = {}
    for row in expected_corrections():
        doc = by_id.get(row["doc_id"])
        if doc is None:
            continue
        for sentence, label in ((row["sentence"], row["label"]), (row["correction"], "supported")):
            claim = claim_at(claims, doc, sentence)
            if claim is None:
                continue
            passage_id = content_hash(row["correction"])
            evidence[claim.claim_id] = [
                Evidence(
                    claim.claim_id,
                    1,
                    passage_id,
                    "src",
                    "v2",
                    date(2025, 3, 1),
                    authority,
                    row["correction"],
                    row["correction"],
                    1.0,
                    1.0,
                    1.0,
                )
            ]
            ev_id = evidence[claim.claim_id][0].evidence_id
            if label == "supported":
                verdicts[claim.claim_id] = Verdict(claim.claim_id, "supported", 0.95, "rules", "matches", evidence_ids=(ev_id,))
            else:
                old, new = slot_values(row["sentence"], row["correction"])
                verdicts[claim.claim_id] = Verdict(
                    claim.claim_id,
                    label,
                    0.95,
                    "rules",
                    f"{old} vs {new}",
                    evidence_ids=(ev_id,),
                    claim_value=old,
                    evidence_value=new,
                    evidence_sentence=row["correction"],
                )
    for c in claims:
        if c.checkworthy and c.claim_id not in verdicts:
            verdicts[c.claim_id] = Verdict(c.claim_id, "uncertain", 0.5, "rules", "no evidence")
    return docs, claims, evidence, list(verdicts.values())


# ---- slot replacement ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, old, new, expected",
    [
        ("The Pro plan guarantees 99.9% monthly uptime.", "99.9 %", "99.5 %", "The Pro plan guarantees 99.5% monthly uptime."),
        ("API v2 will be retired on 2025-12-31.", "2025 - 12 - 31", "2026 - 03 - 31", "API v2 will be retired on 2026-03-31."),
        ("The recovery point objective is 1 hour.", "1 hour", "15 minutes", "The recovery point objective is 15 minutes."),
        ("Announced at least 7 days in advance.", "at least 7 days", "at least 14 days", "Announced at least 14 days in advance."),
        ("The Free plan includes up to 3 users.", "up to 3", "5", "The Free plan includes up to 5 users."),
        ("Requires Python 3.9 or later.", "3.9 or later", "3.10", "Requires Python 3.10 or later."),
        ("It costs $49 per user.", "49", "59", "It costs $59 per user."),
        (
            "Returned in the `X-RateLimit-Remaining` header.",
            "X-RateLimit-Remaining",
            "X-Nimbus-Quota-Remaining",
            "Returned in the `X-Nimbus-Quota-Remaining` header.",
        ),
    ],
)
def test_replace_slot_keeps_the_rest_of_the_sentence(text, old, new, expected):
    assert replace_slot(text, old, new) == expected


def test_replace_slot_refuses_absent_or_ambiguous_values():
    assert replace_slot("Backups run every 6 hours and keep 6 copies.", "6", "4") is None
    assert replace_slot("Backups run every 6 hours.", "8", "4") is None
    assert replace_slot("Version 16 is out.", "1", "2") is None  # whole tokens only


def test_risk_grows_with_each_factor():
    doc = Document("a.md", "v1", "/a.md", "markdown", "x", "A")
    claim = Claim("c1", "a.md", "v1", 0, 1, "x", "x", risk="low")
    verdict = Verdict("c1", "stale", 0.95, "rules", "")
    level, points, _ = edit_risk(claim, doc, verdict, old_text="runs every 6 hours", new_text="runs every 4 hours")
    assert (level, points) == ("low", 0)
    assert edit_risk(dataclasses.replace(claim, risk="high"), doc, verdict)[0] == "high"
    assert edit_risk(claim, dataclasses.replace(doc, risk="high"), verdict)[0] == "high"
    assert edit_risk(claim, dataclasses.replace(doc, meta={"kbaudit": {"auto_accept": False}}), verdict)[0] == "high"
    assert edit_risk(claim, doc, dataclasses.replace(verdict, confidence=0.5))[0] == "high"
    assert edit_risk(claim, doc, verdict, authority=0.5, edits_in_doc=6)[0] == "high"
    big = edit_risk(claim, doc, verdict, old_text="a b c", new_text="one two three four five six seven eight")
    assert big[2]["change_size"] == 2.0 and change_size("a b c", "a x c") == 1


# ---- drafting on the demo --------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo():
    return demo_audit(DEMO_ROOT / "docs")


def test_every_demo_correction_is_drafted_reverified_and_correct(demo):
    docs, claims, evidence, verdicts = demo
    verifier = EchoVerifier()
    edits = draft_edits(docs, claims, verdicts, evidence, verifier=verifier, today=TODAY)
    assert len(verifier.calls) == 1, "drafts are re-verified in one batch"
    by_id = {d.doc_id: d for d in docs}
    expected = {(r["doc_id"], r["sentence"]): r["correction"] for r in expected_corrections()}
    correct = 0
    for e in edits:
        assert e.status in ("auto", "queued"), (e.old_text, e.status, e.reason)
        assert e.label_after == "supported" and "re-verified as supported" in e.reason
        assert by_id[e.doc_id].text[e.start : e.end] == e.old_text
        correct += expected.get((e.doc_id, e.old_text)) == e.new_text
    print(f"\ndemo corrections (stand-in verdicts): {correct}/{len(expected)} correct")
    assert correct == len(expected) == len(edits) == 40


def test_a_draft_that_does_not_verify_is_dropped_with_its_reason(demo):
    docs, claims, evidence, verdicts = demo
    wrong = [dataclasses.replace(v, evidence_value="7") if v.evidence_value == "5" else v for v in verdicts]
    edits = draft_edits(docs, claims, wrong, evidence, verifier=EchoVerifier(), today=TODAY)
    dropped = [e for e in edits if e.status == "dropped"]
    assert dropped and all("re-verified as contradicted" in e.reason for e in dropped)
    assert all(e.label_after == "contradicted" for e in dropped)
    # No evidence given: nothing can be re-verified, so nothing is proposed.
    assert {e.status for e in draft_edits(docs, claims, verdicts)} == {"dropped"}


def test_without_named_slots_the_evidence_sentence_is_aligned(demo):
    docs, claims, evidence, verdicts = demo
    unnamed = [dataclasses.replace(v, claim_value=None, evidence_value=None) for v in verdicts]
    edits = draft_edits(docs, claims, unnamed, evidence, verifier=EchoVerifier(), today=TODAY)
    expected = {(r["doc_id"], r["sentence"]): r["correction"] for r in expected_corrections()}
    assert sum(expected.get((e.doc_id, e.old_text)) == e.new_text for e in edits) == 40
    assert aligned_slot("Audit logs are retained for 1 year.", "Audit logs are retained for 2 years.") == ("1 year", "2 years")
    assert aligned_slot("Audit logs are retained for 1 year.", "Logs of every kind are kept until 2027 at least.") is None


def test_no_slot_means_needs_rewrite_with_the_evidence(demo):
    docs, claims, evidence, verdicts = demo
    vague = "The retention policy was rewritten in 2025 for all plans and all regions."
    bare = [dataclasses.replace(v, claim_value=None, evidence_value=None, evidence_sentence=vague) for v in verdicts]
    edits = draft_edits(docs, claims, bare, evidence, verifier=EchoVerifier(), today=TODAY)
    assert {e.status for e in edits} == {"needs_rewrite"}
    assert all(e.new_text == e.old_text and vague in e.reason for e in edits)
    # ...unless the deep verifier wrote a final text, which is re-verified like a slot swap.

    @dataclasses.dataclass(frozen=True)
    class DeepVerdict(Verdict):
        corrected_text: str | None = None

    fixes = {v.claim_id: v.evidence_sentence for v in verdicts}
    deep = [DeepVerdict(**{**dataclasses.asdict(v), "corrected_text": fixes[v.claim_id]}) for v in bare]
    edits = draft_edits(docs, claims, deep, evidence, verifier=EchoVerifier(), today=TODAY)
    assert {e.method for e in edits} == {"rewrite"} and {e.status for e in edits} <= {"auto", "queued"}


def test_rejected_proposals_are_suppressed_until_the_evidence_changes(demo):
    docs, claims, evidence, verdicts = demo
    first = draft_edits(docs, claims, verdicts, evidence, verifier=EchoVerifier(), today=TODAY)
    rejected = {first[0].proposal_key: "rejected by ann"}
    again = draft_edits(docs, claims, verdicts, evidence, verifier=EchoVerifier(), today=TODAY, suppressed=rejected)
    assert [e.status for e in again if e.claim_id == first[0].claim_id] == ["suppressed"]
    assert sum(e.status == "suppressed" for e in again) == 1
    newer = {k: [dataclasses.replace(e, source_version="v3", passage_id="p-new") for e in v] for k, v in evidence.items()}
    changed = draft_edits(docs, claims, verdicts, newer, verifier=EchoVerifier(), today=TODAY, suppressed=rejected)
    assert [e.status for e in changed if e.claim_id == first[0].claim_id] != ["suppressed"]


def test_risk_decides_auto_or_queued(demo):
    docs, claims, evidence, verdicts = demo
    edits = draft_edits(docs, claims, verdicts, evidence, verifier=EchoVerifier(), today=TODAY)
    assert {e.status for e in edits if e.risk == "low"} == {"auto"}
    assert {e.status for e in edits if e.risk != "low"} == {"queued"}
    low_authority = demo_audit(DEMO_ROOT / "docs", authority=0.5)
    edits = draft_edits(*low_authority[:2], low_authority[3], low_authority[2], verifier=EchoVerifier(), today=TODAY)
    assert all(e.status == "queued" and "evidence_authority" in json.loads(e.risk_factors) for e in edits)
    everything = CorrectionSettings(auto_accept=("low", "medium", "high"))
    edits = draft_edits(docs, claims, verdicts, evidence, verifier=EchoVerifier(), today=TODAY, correction=everything)
    assert {e.status for e in edits} == {"auto"}


def test_versions_and_diffs_of_auto_accepted_edits(demo):
    docs, claims, evidence, verdicts = demo
    edits = draft_edits(docs, claims, verdicts, evidence, verifier=EchoVerifier(), today=TODAY)
    tables = run_tables(docs, claims, verdicts, edits)
    assert len(tables["edit_details"]) == len(edits)
    by_id = {d.doc_id: d for d in docs}
    auto_docs = {e.doc_id for e in edits if e.status == "auto"}
    assert {v["doc_id"] for v in tables["versions"]} == auto_docs
    for version, diff in zip(tables["versions"], tables["diffs"]):
        doc = by_id[version["doc_id"]]
        assert version["parent_version"] == doc.version_id
        assert version["version_id"] == content_hash(version["content"].encode())
        auto = [e for e in edits if e.doc_id == doc.doc_id and e.status == "auto"]
        assert sorted(version["edit_ids"]) == sorted(e.edit_id for e in auto)
        assert all(f"-{e.old_text}" in diff["unified_diff"] or e.old_text in diff["unified_diff"] for e in auto)
        assert [c["new"] for c in json.loads(diff["changes"])] == [e.new_text for e in sorted(auto, key=lambda e: e.start)]
        assert diff["score_after"] > diff["score_before"]


def test_splice_skips_overlaps_and_moved_text():
    from kb.records import Edit

    a = Edit("a", "c", "d", "v", 0, 5, "hello", "HELLO", "low", "auto", "")
    b = Edit("b", "c", "d", "v", 3, 8, "lo wo", "LO WO", "low", "auto", "")
    c = Edit("c", "c", "d", "v", 6, 11, "xxxxx", "yyyyy", "low", "auto", "")
    text, taken, skipped = splice("hello world", [a, b, c])
    assert text == "HELLO world" and [e.edit_id for e in taken] == ["a"] and len(skipped) == 2
