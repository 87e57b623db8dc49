"""A contradiction needs evidence about the claim's own subject: a refutation only the model read
into a sentence unlike the claim, or into a changelog entry about another issue, is no finding."""

from __future__ import annotations

from datetime import date

from kb.records import Judgement
from kb.verify.policy import decide
from tests.test_policy import TODAY, claim, ev

MODEL_REFUTES = Judgement("refutes", 0.88, "model", "model: refutes (p=0.88)")


def test_a_model_refutation_of_a_sentence_about_something_else_is_no_contradiction():
    for text, sentence in (
        # another changelog entry, another fix
        ("Fix internal API links to pluggy objects.", "fix plugin links"),
        # the same words, another issue
        ("#8796: Fixed internal error when skipping doctests.", "fix #628: fixed internal UnicodeDecodeError when doctests contain unicode."),
        # another feature's summary
        ("Just as Client allows you to call directly into WSGI web applications, AsyncClient allows you to call directly "
         "into ASGI web applications.", "Ability to make requests directly to WSGI applications or ASGI applications."),
    ):  # fmt: skip
        v = decide(claim(text), [ev("changes.md", date(2025, 1, 28), sentence)], [MODEL_REFUTES], TODAY)
        assert v.label == "uncertain" and "not about the claim" in v.rationale, (text, v)


def test_a_refutation_about_the_claim_still_contradicts():
    text = "The default timeout is 30 seconds for every request."
    # the model alone, on a close copy of the claim
    close = "The default timeout is 60 seconds for every request."
    v = decide(claim(text), [ev("guide.md", date(2025, 1, 28), close)], [MODEL_REFUTES], TODAY)
    assert v.label == "contradicted", v
    # the rules found the changed value, however unlike the sentence is
    far = "Requests now wait up to 60 seconds."
    rule = Judgement("refutes", 0.88, "model", "model refutes (p=0.88) and rules agree: duration", "30 seconds", "60 seconds")
    v = decide(claim(text), [ev("guide.md", date(2025, 1, 28), far)], [rule], TODAY)
    assert v.label == "contradicted" and v.evidence_value == "60 seconds", v
    # the same subject in another order: the claim's words, another value
    reordered = "Backups are kept for 30 days on the Team plan."
    v = decide(claim("The Team plan keeps backups for 14 days."), [ev("policy.md", date(2025, 1, 28), reordered)], [MODEL_REFUTES], TODAY)
    assert v.label == "contradicted", v
    # the same issue, another wording
    v = decide(claim("#8796: Fixed internal error when skipping doctests."),
               [ev("changes.md", date(2025, 1, 28), "Fix #8796: skipping a doctest crashes with an internal error.")],
               [MODEL_REFUTES], TODAY)  # fmt: skip
    assert v.label == "contradicted", v


def test_another_options_line_neither_contradicts_nor_makes_stale():
    # the model reads another option's line, worded alike, as a denial of the claim's
    flag = claim("--coverage.all=false turns the inclusion of untested files off.")
    line = "CLI: --coverage.clean, --coverage.clean=false turns the cleaning of results off."
    v = decide(flag, [ev("coverage.md", date(2025, 1, 28), line)], [MODEL_REFUTES], TODAY)
    assert v.label == "uncertain", v
    # an older version stated the claim; the newest refutes only through another function's line
    renamed = claim("client.setTest was renamed to client.startCurrentRun in this release.")
    old = ev("migration.md", date(2024, 6, 1), renamed.text)
    other = ev("migration.md", date(2025, 1, 28), "deps.optimizer.web was renamed to deps.optimizer.client in this release.", rank=2)
    exact = Judgement("supports", 0.99, "rules", "exact match")
    v = decide(renamed, [old, other], [exact, MODEL_REFUTES], TODAY)
    assert v.label == "uncertain", v
    # the claim's own function, renamed again, is still a change (the rules name the values)
    again = ev("migration.md", date(2025, 1, 28), "client.setTest was renamed to client.runCurrent in this release.", rank=2)
    rule = Judgement("refutes", 0.85, "rules", "identifier: claim client.startCurrentRun vs evidence client.runCurrent",
                     "client.startCurrentRun", "client.runCurrent")  # fmt: skip
    v = decide(renamed, [old, again], [exact, rule], TODAY)
    assert v.label == "stale", v


def test_a_changelog_entrys_issue_label_is_not_part_of_its_statement():
    from kb.verify import Verifier, VerifierSettings
    from tests.test_verifier import NEW, _claim, _ev

    entry = _claim("a", "#9488: If custom subclasses of nodes override the __init__ method, they should take **kwargs.")
    page = "Constructors of nodes. If custom subclasses of nodes override the __init__ method, they should take **kwargs."
    e = _ev("a", "deprecations.md", NEW, page, "If custom subclasses of nodes override the __init__ method, they should take **kwargs.", 1)
    v = Verifier(VerifierSettings(use_model=False))
    (j,) = v.judge_pairs([entry], {"a": [e]})["a"]
    assert j.relation == "supports" and j.confidence >= 0.95, j
    (out,) = v.verify([entry], {"a": [e]}, date(2025, 6, 1))
    assert out.label == "supported", out
    # only the label goes: the rest of the statement is still compared
    changed = "If custom subclasses of nodes override the __init__ method, they should take **opts."
    other = _ev("a", "deprecations.md", NEW, changed, changed, 1)
    (j,) = v.judge_pairs([entry], {"a": [other]})["a"]
    assert j is None or j.relation != "supports", j
