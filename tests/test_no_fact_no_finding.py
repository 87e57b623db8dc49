"""A finding needs a fact that changed: a release note keeps stating what its release did, and a
condition cut from its sentence states nothing at all."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from kb.records import Judgement
from kb.verify.policy import decide, underspecified
from tests.test_policy import TODAY, claim, ev

EXACT = Judgement("supports", 0.99, "rules", "exact match")
NEWER_VALUE = Judgement("refutes", 0.93, "rules", "version: claim 10.5.0 vs evidence 11.8.0", "10.5.0", "11.8.0")


def _entries(text: str, later: str):
    old = replace(ev("changes.md#1.2", date(2021, 6, 4), text), source_kind="changelog")
    new = replace(ev("changes.md#1.5.0", date(2023, 7, 26), later, rank=2), source_kind="changelog")
    return [old, new]


def test_a_release_notes_entry_stays_true_of_its_release():
    text, later = "Updated highlight.js to 10.5.0.", "Both themes had highlight.js updated to 11.8.0."
    v = decide(claim(text, doc_id="about/release-notes.md"), _entries(text, later), [EXACT, NEWER_VALUE], TODAY)
    assert v.label == "supported", v
    # the same sentence on a guide page is a fact of today: the later entry changed it
    v = decide(claim(text, doc_id="user-guide/styling.md"), _entries(text, later), [EXACT, NEWER_VALUE], TODAY)
    assert v.label == "stale" and v.evidence_value == "11.8.0", v


def test_a_condition_cut_from_its_sentence_states_nothing():
    for text in ("When you run the init command", "If more than one theme is defined as entry points",
                 "unless the cache is warm"):  # fmt: skip
        assert underspecified(text), text
    # the whole sentence, its main clause after a comma, or a sentence that ends, is a statement
    for text in ("When you run the init command, the tool asks for an interpreter",
                 "If you have go 1.17+ installed go install example.com/tool is all you need!",
                 "Once the build is done the server reloads the page."):  # fmt: skip
        assert not underspecified(text), text
    refuted = Judgement("refutes", 0.88, "model", "model: refutes (p=0.88)")
    v = decide(claim("When you run the init command"), [ev("scripts.md", sentence="post_init: Run after init")], [refuted], TODAY)
    assert v.label == "uncertain", v


def test_a_copy_edit_is_no_revision():
    from kb.verify.revision import contrast
    from tests.test_policy import NEW, OLD

    # "which" -> "that": the newest version still states the claim
    text = "It is best to use keys which are available on all keyboards."
    old = ev("themes.md", OLD, text)
    new = ev("themes.md", NEW, "It is best to use keys that are available on all keyboards.", rank=2)
    v = decide(claim(text), [old, new], [EXACT, Judgement("nei", 0.6, "model", "model: nei (p=0.60)")], TODAY)
    assert v.label != "stale", v
    # ... but a word that changes the fact still revises it
    changed = ev("themes.md", NEW, "It is best to use keys which are available on most keyboards.", rank=2)
    v = decide(claim(text), [old, changed], [EXACT, Judgement("nei", 0.6, "model", "model: nei (p=0.60)")], TODAY)
    assert v.label == "stale", v
    # a name written out with its namespace is the same name
    said = "Plugins listen to the signals of the same name."
    assert contrast(said, said, "Plugins listen to the pdm.signals of the same name.") is None
    renamed = contrast(said, said, "Plugins listen to the pdm.events of the same name.")
    assert renamed is not None and renamed.side == "older"
