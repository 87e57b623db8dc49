"""Verifier end to end, rules only (D0): no model artifact needed."""

from datetime import date

from kb.records import Claim, Evidence
from kb.verify import Verifier, VerifierSettings


def _claim(cid, text):
    return Claim(claim_id=cid, doc_id="kb/getting_started.md", version_id="v", start=0, end=len(text),
                 source_text=text, text=text)  # fmt: skip


def _ev(cid, sid, day, passage, sentence, rank):
    return Evidence(claim_id=cid, rank=rank, passage_id=f"{sid}{day}{rank}", source_id=sid,
                    source_version=f"{sid}@{day}", source_date=day, authority=1.0, passage=passage,
                    sentence=sentence, score_bm25=1.0, score_dense=0.5, score_fused=0.5)  # fmt: skip


OLD, NEW = date(2022, 1, 29), date(2025, 1, 28)
OLD_PAGE = "Black can be installed by running pip install black. It requires Python 3.6.2+ to run."
NEW_PAGE = "Black can be installed by running pip install black. It requires Python 3.9+ to run."


def test_rules_only_verifier_labels_a_small_batch():
    claims = [
        _claim("a", "It requires Python 3.6.2+ to run."),
        _claim("b", "Black can be installed by running `pip install black`."),
        _claim("c", "Black reformats entire files in place."),
        _claim("d", "Black keeps 120 characters per line by default."),
    ]
    evidence = {
        "a": [_ev("a", "getting_started.md", OLD, OLD_PAGE, OLD_PAGE.split(". ")[1], 1),
              _ev("a", "getting_started.md", NEW, NEW_PAGE, NEW_PAGE.split(". ")[1], 2)],
        "b": [_ev("b", "getting_started.md", NEW, NEW_PAGE, NEW_PAGE.split(". ")[0] + ".", 1)],
        "c": [],
        "d": [_ev("d", "the_black_code_style.md", NEW, "Black defaults to 88 characters per line.",
                  "Black defaults to 88 characters per line.", 1)],
    }  # fmt: skip
    v = Verifier(VerifierSettings(use_model=False))
    out = v.verify(claims, evidence, date(2025, 6, 1))
    assert [x.claim_id for x in out] == ["a", "b", "c", "d"]
    a, b, c, d = out
    assert a.label == "stale" and (a.claim_value, a.evidence_value) == ("3.6.2+", "3.9+")
    assert a.evidence_sentence == "It requires Python 3.9+ to run."
    assert b.label == "supported" and b.tier == "rules"
    assert c.label == "uncertain" and c.action == "add a source"
    assert d.label == "contradicted" and "number: claim 120 vs evidence 88" in d.rationale
    assert v.model_error is None  # rules only never tries to load the model


def test_rules_look_at_other_sentences_of_the_passage():
    claim = _claim("a", "It requires Python 3.6.2+ to run.")
    # the retriever picked the wrong sentence of the passage; the rules find the aligned one
    e = _ev("a", "getting_started.md", NEW, NEW_PAGE, NEW_PAGE.split(". ")[0] + ".", 1)
    (v,) = Verifier(VerifierSettings(use_model=False)).verify([claim], {"a": [e]}, date(2025, 6, 1))
    assert v.label == "contradicted" and v.evidence_value == "3.9+"
