"""Labelling policy over dated evidence, gaps and document status."""

import dataclasses
from datetime import date

import pytest

from kb.claims.units import COMMAND_NOTE, LEAD_IN_ATTACHED
from kb.errors import ConfigError
from kb.records import Claim, Evidence, Judgement, Verdict
from kb.verify.calibration import finding_kind
from kb.verify.policy import COMMAND_GONE, STATUSES, decide, document_status, verifyloop_status
from kb.verifyloop import STATUSES as VERIFYLOOP_CODES
from tests.conftest import DEMO_TODAY

TODAY = date(2025, 6, 1)


def claim(text="It requires Python 3.6.2+ to run.", **kw) -> Claim:
    base = dict(claim_id="c1", doc_id="doc.md", version_id="v1", start=0, end=len(text), source_text=text, text=text)
    base.update(kw)
    return Claim(**base)


def ev(source_id="getting_started.md", day=date(2025, 1, 28), sentence="", rank=1) -> Evidence:
    return Evidence(
        claim_id="c1", rank=rank, passage_id=f"{source_id}@{day}#{rank}", source_id=source_id,
        source_version=f"{source_id}@{day}", source_date=day, authority=1.0, passage=sentence,
        sentence=sentence, score_bm25=1.0, score_dense=0.5, score_fused=0.5,
    )  # fmt: skip


def placed(old: Evidence, sentence: str, rank: int = 2) -> Evidence:
    """A newest-version passage that a diff of the two versions put where ``old`` stood."""
    return dataclasses.replace(ev(old.source_id, NEW, rank=rank, sentence=sentence), counterpart_of=old.passage_id)


SUP = Judgement("supports", 0.99, "rules", "exact match")
REF = Judgement("refutes", 0.93, "rules", "version: claim 3.6.2+ vs evidence 3.9+", "3.6.2+", "3.9+")
NEI = Judgement("nei", 0.8, "model", "model: nei")
OLD, NEW = date(2022, 1, 29), date(2025, 1, 28)


def test_older_version_supports_newer_refutes_is_stale_with_newer_value():
    e_old = ev(day=OLD, sentence="It requires Python 3.6.2+ to run.")
    e_new = ev(day=NEW, sentence="It requires Python 3.9+ to run.", rank=2)
    v = decide(claim(), [e_old, e_new], [SUP, REF], TODAY)
    assert v.label == "stale"
    assert (v.claim_value, v.evidence_value) == ("3.6.2+", "3.9+")
    assert v.evidence_sentence == "It requires Python 3.9+ to run."
    assert v.gap_type == "technical" and v.action == "update to the newer value"
    assert v.evidence_ids == (e_old.evidence_id, e_new.evidence_id)


def test_newest_version_supports_is_supported_even_if_older_refuted():
    v = decide(claim(), [ev(day=OLD), ev(day=NEW, rank=2)], [REF, SUP], TODAY)
    assert v.label == "supported" and v.gap_type is None


def test_refuted_without_temporal_explanation_is_contradicted():
    v = decide(claim(), [ev(day=NEW)], [REF], TODAY)
    assert v.label == "contradicted"
    assert v.evidence_value == "3.9+" and v.gap_type == "technical"
    # both versions refute: still contradicted (the claim was never true)
    v = decide(claim(), [ev(day=OLD), ev(day=NEW, rank=2)], [REF, REF], TODAY)
    assert v.label == "contradicted"


def test_older_support_from_another_source_does_not_make_stale():
    v = decide(claim(), [ev("other.md", day=OLD), ev(day=NEW, rank=2)], [SUP, REF], TODAY)
    assert v.label == "uncertain" and "disagree" in v.rationale  # two current sources disagree


def test_sources_that_disagree_give_uncertain():
    v = decide(claim(), [ev("a.md"), ev("b.md", rank=2)], [Judgement("supports", 0.9, "model", "m"), REF], TODAY)
    assert v.label == "uncertain"
    assert v.gap_type == "systemic" and v.action == "human review"


def test_strong_support_beats_weak_refutation():
    weak = Judgement("refutes", 0.7, "rules", "term: claim tags vs evidence labels", "tags", "labels")
    v = decide(claim(), [ev("a.md"), ev("b.md", rank=2)], [SUP, weak], TODAY)
    assert v.label == "supported"


def test_no_evidence_and_irrelevant_evidence_are_uncertain_with_gaps():
    v = decide(claim(), [], [], TODAY)
    assert v.label == "uncertain" and v.gap_type == "systemic" and v.action == "add a source"
    v = decide(claim(), [ev()], [NEI], TODAY)
    assert v.label == "uncertain" and v.gap_type == "technical" and v.action == "retrieve deeper"
    low = Judgement("supports", 0.3, "model", "model: supports (p=0.30)")
    v = decide(claim(), [ev()], [low], TODAY)
    assert v.label == "uncertain" and "low confidence" in v.rationale


def test_only_old_version_supports_newest_silent_is_uncertain():
    v = decide(claim(), [ev(day=OLD), ev(day=NEW, rank=2)], [SUP, NEI], TODAY)
    assert v.label == "uncertain" and "older version" in v.rationale


def test_a_command_only_an_old_version_shows_is_stale_unless_elided_or_scaffolding():
    # a sentence gone from its page may live on in other words; a command has no other words
    for text, label in (("widget run dev", "stale"), ("widget config show ...", "uncertain"), ("cd widget", "uncertain")):
        c = claim(text, reason=COMMAND_NOTE)
        v = decide(c, [ev(day=OLD, sentence=text), ev(day=NEW, rank=2, sentence="widget test")], [SUP, NEI], TODAY)
        assert v.label == label, (text, v)
        assert (COMMAND_GONE in v.rationale) is (label == "stale"), v
    assert finding_kind("stale", decide(claim("widget run dev", reason=COMMAND_NOTE), [ev(day=OLD), ev(day=NEW, rank=2)],
                                        [SUP, NEI], TODAY).rationale) == "stale/dropped"  # fmt: skip


def test_a_command_no_release_shows_stays_stale_when_the_model_refutes_it_through_another_sentence():
    # the model reads a sentence about settings as refuting "widget run lint:fmt"; the two are not
    # counterparts, so the refutation says nothing of the command, which no release shows any more
    c = claim("widget run lint:fmt", reason=COMMAND_NOTE)
    model_ref = Judgement("refutes", 0.9, "model", "model: refutes (p=0.90)")
    evidence = [ev(day=OLD, sentence=c.text), ev(day=NEW, rank=2, sentence="Settings for every tool live in widget.toml.")]
    v = decide(c, evidence, [SUP, model_ref], TODAY)
    assert v.label == "stale" and COMMAND_GONE in v.rationale, v
    # the newest corpus still showing it elsewhere keeps it, and prose keeps the uncertain reading
    shown = ev("other.md", day=NEW, rank=3, sentence=c.text)
    assert decide(c, [*evidence, shown], [SUP, model_ref, NEI], TODAY).label != "stale"
    prose = claim("The formatter is run with widget run lint:fmt.")
    v = decide(prose, [ev(day=OLD, sentence=prose.text), evidence[1]], [SUP, model_ref], TODAY)
    assert v.label == "uncertain" and "not its counterpart" in v.rationale, v


def test_a_removed_sentence_whose_flags_the_newest_corpus_names_nowhere_is_stale_through_another_sentence():
    # the model reads "lint-* scripts are used by widget check" as refuting the removed sentence;
    # the two are not counterparts, but no newest passage names --formatter or --linter: removed
    c = claim("The format-* scripts correspond to the --formatter flag while the lint-* scripts correspond to the --linter flag.")
    model_ref = Judgement("refutes", 0.92, "model", "model: refutes (p=0.92)")
    old = dataclasses.replace(ev(day=OLD, sentence=c.text), removed_in="v1.18.0")
    other = ev(day=NEW, rank=2, sentence="The lint-* scripts are used by widget check while the format-* scripts are used by widget fmt.")
    v = decide(c, [old, other], [SUP, model_ref], TODAY)
    assert v.label == "stale" and "removed in v1.18.0" in v.rationale and "--formatter, --linter" in v.rationale, v
    # a newest passage still naming one of them keeps the uncertain reading, as does a sentence
    # with no flag, or one whose sentence the newest version still has a counterpart of
    named = ev("cli.md", day=NEW, rank=3, sentence="Pass --linter to run only the linter.")
    assert "not its counterpart" in decide(c, [old, other, named], [SUP, model_ref, NEI], TODAY).rationale
    prose = claim("The format scripts correspond to the formatter while the lint scripts correspond to the linter.")
    old_prose = dataclasses.replace(ev(day=OLD, sentence=prose.text), removed_in="v1.18.0")
    assert "not its counterpart" in decide(prose, [old_prose, other], [SUP, model_ref], TODAY).rationale
    kept = dataclasses.replace(old, removed_in="")
    assert "not its counterpart" in decide(c, [kept, other], [SUP, model_ref], TODAY).rationale


def test_a_reworded_lead_in_says_nothing_of_the_items_of_its_list():
    # "The full list of hooks is:" was reworded; the rules read the item's claim against it as a
    # revision ('follow' only in the older version), but the item stands in the newest list
    item = "useQuery (endpoint-specific)"
    c = claim(f"The full list of hooks follows: {item}", source_text=item, sentence=item, reason=LEAD_IN_ATTACHED)
    older = ev(day=OLD, sentence=f"The full list of hooks follows: {item}")
    lead_in = ev(day=NEW, rank=2, sentence="The full list of hooks generated by createApi is:")
    revision = Judgement("refutes", 0.8, "rules", "revision: the claim says 'follow', which only the older version has")
    v = decide(c, [older, lead_in], [SUP, revision], TODAY)
    assert v.label == "uncertain" and "not its counterpart" in v.rationale, v
    # a value of the lead-in the slot rules read is a change of the item's claim
    value = Judgement("refutes", 0.9, "rules", "version: claim 1.9 vs evidence 2.0", "1.9", "2.0")
    assert decide(c, [older, lead_in], [SUP, value], TODAY).label == "stale"
    # and the same reading of a sentence that is no lead-in, or of a claim that is no list item, pairs as before
    sentence = dataclasses.replace(lead_in, sentence="The full list of hooks generated by createApi is below.")
    assert decide(c, [older, sentence], [SUP, revision], TODAY).label == "stale"
    plain = claim(older.sentence)
    assert decide(plain, [older, lead_in], [SUP, revision], TODAY).label == "stale"


def test_only_old_version_supports_and_its_sentence_was_rewritten_is_stale():
    c = claim("By default, Traefik uses Jaeger as tracing backend.")
    old = ev("tracing.md", OLD, sentence=c.text)
    new_sentence = "Traefik uses OpenTelemetry, an open standard designed for distributed tracing."
    rewritten = placed(old, new_sentence)
    v = decide(c, [old, rewritten], [SUP, NEI], TODAY)
    assert v.label == "stale" and "rewritten" in v.rationale and new_sentence in v.rationale
    assert v.evidence_sentence == new_sentence and v.action == "rewrite from the newer source"
    # the same sentence without the diff's word that it stands in the old one's place
    v = decide(c, [old, dataclasses.replace(rewritten, counterpart_of="")], [SUP, NEI], TODAY)
    assert v.label == "uncertain" and "no longer states it" in v.rationale
    # a claim with too little context is not judged from a rewrite
    short = claim("Optional, Default=1")
    old_short = ev("entrypoints.md", OLD, sentence=short.text)
    new_short = placed(old_short, "Optional, Default=MaxInt-1")
    assert decide(short, [old_short, new_short], [SUP, NEI], TODAY).label == "uncertain"


def test_a_diff_counterpart_pairs_a_model_refutation_for_stale():
    c = claim("By default, Traefik uses Jaeger as tracing backend.")
    model_ref = Judgement("refutes", 0.9, "model", "model: refutes (p=0.90)")
    old = ev("tracing.md", OLD, sentence=c.text)
    unrelated = placed(old, "Spans are exported over gRPC to the collector.")
    assert decide(c, [old, unrelated], [SUP, model_ref], TODAY).label == "stale"


def test_a_rewrite_stands_when_the_model_refutes_through_another_sentence():
    # the newest version refutes only through a sentence that is not the old one's counterpart,
    # but the diff placed a rewritten sentence where the old one stood: stale as rewritten
    c = claim("The Accept-Encoding request header contains gzip.")
    old = ev("compress.md", OLD, sentence=c.text)
    rewritten = placed(old, "The Accept-Encoding request header contains gzip, and/or *, and/or br.")
    elsewhere = ev("compress.md", NEW, rank=3, sentence="Responses smaller than 1024 bytes are not compressed.")
    model_ref = Judgement("refutes", 0.55, "model", "model: refutes (p=0.55)")
    v = decide(c, [old, rewritten, elsewhere], [SUP, NEI, model_ref], TODAY)
    assert v.label == "stale" and "rewritten" in v.rationale and v.evidence_sentence == rewritten.sentence
    # without the diff's placement it stays a refutation from an unrelated sentence
    v = decide(c, [old, dataclasses.replace(rewritten, counterpart_of=""), elsewhere], [SUP, NEI, model_ref], TODAY)
    assert v.label == "uncertain" and "not its counterpart" in v.rationale


def test_freshness_counts_from_when_the_source_was_last_known_current():
    # the newest version of a source this run read is current today, however long ago it was
    # last edited: its support of a time-sensitive claim does not age (before, a page last
    # edited more than the window ago made every "currently ..." sentence on it stale)
    c = claim("The service currently runs in 12 data centres.", time_sensitive=True, freshness_days=90)
    v = decide(c, [ev(day=date(2023, 3, 1))], [SUP], TODAY)
    assert v.label == "supported"
    # a source last known current long ago (a snapshot taken then) ages from that date
    v = decide(c, [ev(day=date(2023, 3, 1))], [SUP], TODAY, known_current={"getting_started.md": date(2025, 1, 28)})
    assert v.label == "stale" and "window 90 days" in v.rationale and v.gap_type == "systemic"
    assert "last known current on 2025-01-28" in v.rationale
    v = decide(c, [ev(day=date(2023, 3, 1))], [SUP], TODAY, known_current={"getting_started.md": date(2025, 5, 1)})
    assert v.label == "supported"
    # the explicit argument overrides the claim's window
    v = decide(c, [ev()], [SUP], TODAY, freshness_days=365, known_current={"getting_started.md": date(2025, 1, 28)})
    assert v.label == "supported"
    # a claim that is not time-sensitive never goes stale by age
    v = decide(claim(), [ev(day=date(2001, 1, 1))], [SUP], TODAY, known_current={"getting_started.md": date(2001, 1, 1)})
    assert v.label == "supported"


def test_gap_severity_follows_risk_and_undecidable_types():
    v = decide(claim(risk="high"), [ev()], [REF], TODAY)
    assert v.gap_severity == "high" and v.action == "human review"
    v = decide(claim(type="speculative"), [ev()], [NEI], TODAY)
    assert v.label == "uncertain" and v.gap_type == "undecidable"


def _v(cid, label, conf=0.9, value="x", **kw):
    return Verdict(claim_id=cid, label=label, confidence=conf, tier="rules", rationale="r", evidence_value=value,
                   gap_type=None if label == "supported" else "technical",
                   action=None if label == "supported" else "a", **kw)  # fmt: skip


def test_document_status():
    cs = [claim(claim_id=f"c{i}") for i in range(4)]
    st, score, comps = document_status(cs, [_v(f"c{i}", "supported") for i in range(4)])
    assert st == "VERIFIED" and score > 0.9 and comps["claim_support"] == 1.0
    st, _, _ = document_status(cs, [_v("c0", "uncertain")] + [_v(f"c{i}", "supported") for i in range(1, 4)])
    assert st == "PARTIAL"
    st, _, _ = document_status(cs, [_v(f"c{i}", "uncertain") for i in range(3)] + [_v("c3", "supported")])
    assert st == "UNCERTAIN"
    st, _, comps = document_status(cs, [_v("c0", "stale")] + [_v(f"c{i}", "supported") for i in range(1, 4)])
    assert st == "CORRECTABLE" and comps["contradiction"] == 0.75  # nothing accepted, nothing written
    st, _, _ = document_status(cs, [_v("c0", "stale")] + [_v(f"c{i}", "supported") for i in range(1, 4)], accepted={"c0"})
    assert st == "EDITS_ACCEPTED"  # accepted into the store; the file is not written
    two = [_v("c0", "stale"), _v("c1", "contradicted")] + [_v(f"c{i}", "supported") for i in range(2, 6)]
    six = [claim(claim_id=f"c{i}") for i in range(6)]
    assert document_status(six, two, accepted={"c0"})[0] == "CORRECTABLE"  # one edit still waits for review
    assert [verifyloop_status(s) for s in STATUSES] == [
        "VERIFIED", "PARTIAL", "CORRECTED", "CORRECTED", "UNCERTAIN", "FAILED", "HUMAN_REVIEW_REQUIRED"
    ]  # fmt: skip
    assert set(map(verifyloop_status, STATUSES)) == set(VERIFYLOOP_CODES)
    st, _, _ = document_status(cs, [_v("c0", "contradicted", value=None)] + [_v(f"c{i}", "supported") for i in range(1, 4)])
    assert st == "HUMAN_REVIEW_REQUIRED"
    st, score, comps = document_status(cs, [_v(f"c{i}", "contradicted") for i in range(3)] + [_v("c3", "supported")])
    assert st == "FAILED" and score < 0.6
    assert set(comps) == {"claim_support", "evidence_quality", "contradiction", "uncertainty_handling"}
    risky = [claim(claim_id="c0", risk="high")] + cs[1:]
    st, _, _ = document_status(risky, [_v("c0", "stale")] + [_v(f"c{i}", "supported") for i in range(1, 4)])
    assert st == "HUMAN_REVIEW_REQUIRED"


def test_newest_version_revised_a_verbatim_statement_is_stale():
    c = claim("If not specified, HTTP routers will accept requests from all defined entry points.")
    old = ev("routing.md", OLD, sentence=c.text)
    new = ev("routing.md", NEW, rank=2,
             sentence="If not specified, HTTP routers will accept requests from all EntryPoints in the list of default EntryPoints.")  # fmt: skip
    v = decide(c, [old, new], [SUP, NEI], TODAY)
    assert v.label == "stale" and "revised" in v.rationale
    assert v.evidence_sentence == new.sentence and v.action == "rewrite from the newer source"
    # an unrelated newest sentence is no revision: the claim is only no longer stated
    other = ev("routing.md", NEW, rank=2, sentence="Routers can be attached to several entry points.")
    v = decide(c, [old, other], [SUP, NEI], TODAY)
    assert v.label == "uncertain"


def test_a_statement_that_only_lost_its_history_opening_is_supported():
    # the newest version drops the release the feature came in and states the rest word for word
    c = claim("Since Acme 0.31.0, you can check your coverage report in the dashboard.")
    old = ev("coverage.md", OLD, sentence=c.text)
    new = ev("coverage.md", NEW, rank=2, sentence="You can check your coverage report in the dashboard.")
    v = decide(c, [old, new], [SUP, NEI], TODAY)
    assert v.label == "supported" and "history clause" in v.rationale, v
    # ... and a change in the rest is still a revision
    changed = ev("coverage.md", NEW, rank=2, sentence="You can check your coverage report in the terminal.")
    assert decide(c, [old, changed], [SUP, NEI], TODAY).label == "stale"


def test_a_statement_another_source_still_holds_with_another_way_added_is_not_revised():
    # the claim's own page now reads "number or percentage"; a reference page's row was revised
    # around the same words: the statement stands, with another way beside it
    c = claim("Maximum number of worker threads.")
    old_row = ev("cli.md", OLD, sentence="--maxThreads <workers> | Maximum number of worker threads")
    new_row = ev("cli.md", NEW, rank=2, sentence="--maxThreads <workers> | Maximum number or percentage of worker threads to use")
    page = ev("config.md", NEW, rank=3, sentence="Maximum number or percentage of worker threads.")
    loose = Judgement("supports", 0.92, "rules", "claim terms covered (coverage 1.00)")
    verbatim = Judgement("supports", 0.97, "rules", "claim appears verbatim in the evidence")
    assert decide(c, [old_row, new_row, page], [verbatim, loose, loose], TODAY).label == "supported"
    # without the page, the row alone was revised
    assert decide(c, [old_row, new_row], [verbatim, loose], TODAY).label == "stale"


def test_a_statement_the_newest_version_still_holds_is_not_revised_by_another_cut():
    # the newest version keeps the list item word for word, but its passages are cut elsewhere,
    # so the sentence nearest the item runs two items together: not a revision
    item = "The network error ratio (NetworkErrorRatio)"
    c = claim(f"The expression option can check three different metrics: {item}", source_text=item)
    old = ev("circuitbreaker.md", OLD, sentence=item)
    numbers = Judgement("supports", 0.84, "rules", "numbers only agree: three ~ three")
    new = ev("circuitbreaker.md", NEW, rank=2, sentence="The expression option can check three different metrics:")
    new = dataclasses.replace(new, passage=f"{c.text} The status code ratio (ResponseCodeRatio)")
    assert decide(c, [old, new], [SUP, numbers], TODAY).label == "supported"
    # the same cut without the item: the newest version did revise it
    moved = dataclasses.replace(new, passage="The expression option can check three different metrics: "
                                "The network error ratio (NetworkErrors) The status code ratio (ResponseCodeRatio)")  # fmt: skip
    assert decide(c, [old, moved], [SUP, numbers], TODAY).label == "stale"


def test_claim_without_context_is_not_contradicted_by_another_page():
    c = claim('Required, Default="127.0.0.1:8500"')
    ref = Judgement("refutes", 0.79, "rules", "number: claim 8500 vs evidence 8125", "8500", "8125")
    v = decide(c, [ev("datadog.md")], [ref], TODAY)
    assert v.label == "uncertain" and v.gap_type == "technical"
    # with the older version of the same page stating it, the change is still stale
    v = decide(c, [ev("consul.md", OLD), ev("consul.md", NEW, rank=2)], [SUP, ref], TODAY)
    assert v.label == "stale"


def test_model_stale_needs_counterpart_sentences():
    c = claim("By default, Traefik uses Jaeger as tracing backend.")
    model_ref = Judgement("refutes", 0.9, "model", "model: refutes (p=0.90)")
    old = ev("tracing.md", OLD, sentence=c.text)
    revised = ev("tracing.md", NEW, rank=2, sentence="By default, Traefik uses OpenTelemetry as tracing backend.")
    assert decide(c, [old, revised], [SUP, model_ref], TODAY).label == "stale"
    unrelated = ev("tracing.md", NEW, rank=2, sentence="Spans are exported over gRPC to the collector.")
    v = decide(c, [old, unrelated], [SUP, model_ref], TODAY)
    assert v.label == "uncertain" and "not its counterpart" in v.rationale


def test_verbatim_statement_outweighs_a_model_refutation_elsewhere():
    model_ref = Judgement("refutes", 0.9, "model", "model: refutes (p=0.90)")
    v = decide(claim(), [ev("a.md"), ev("b.md", rank=2)], [SUP, model_ref], TODAY)
    assert v.label == "supported"
    # a rules slot conflict from another current source still makes them disagree
    v = decide(claim(), [ev("a.md"), ev("b.md", rank=2)], [SUP, REF], TODAY)
    assert v.label == "uncertain"


def test_disagreement_with_a_clear_side():
    weak_sup = Judgement("supports", 0.54, "model", "model: supports (p=0.54)")
    v = decide(claim(), [ev("a.md"), ev("b.md", rank=2)], [weak_sup, REF], TODAY)
    assert v.label == "contradicted" and v.evidence_value == "3.9+"


def test_short_complete_sentence_is_judged_like_any_claim():
    """Few informative words make a fragment ("Optional, Default=0s", "If depth is set to 2")
    vague; a short whole sentence ("Diwali is a festival.") is not."""
    from kb.verify.policy import underspecified

    assert underspecified("Optional, Default=0s") and underspecified("If depth is set to 2")
    assert underspecified("this option will be ignored")
    assert not underspecified("Diwali is a festival.") and not underspecified("In 2004 Paramore formed.")
    # irregular and short past tenses, and a sentence that ends inside a quotation
    assert not underspecified("Augustus died.") and not underspecified("Tenacious D began in 1994.")
    assert not underspecified('Chapman\'s nickname is "Dog."')
    assert underspecified("Session recordings.") and underspecified("Default: 5s.")
    loose = Judgement("supports", 0.92, "rules", "claim terms covered (coverage 1.00)")
    other_page = ev(source_id="festivals.md", sentence="Diwali is a festival of lights.")
    assert decide(claim("Diwali is a festival."), [other_page], [loose], TODAY).label == "supported"
    fragment = claim("Optional, Default=0s")
    assert decide(fragment, [ev(source_id="other.md", sentence="Optional, Default=5s")], [loose], TODAY).label == "uncertain"


def test_a_change_of_notation_only_is_no_revision():
    c = claim('Widgets and "add-on"s can be loaded from the plugins folder.')
    old = ev("widgets.md", OLD, sentence=c.text)
    respelled = ev("widgets.md", NEW, rank=2, sentence="Widgets and add-ons can be loaded from the plugins folder.")
    # the newest version states it nearly as written, with nothing of value changed: supported by it
    same = decide(c, [old, respelled], [SUP, NEI], TODAY)
    assert same.label == "supported" and same.evidence_sentence == respelled.sentence, same
    # a changed word is still a revision
    reworded = ev("widgets.md", NEW, rank=2, sentence="Widgets and add-ons can be loaded from the extensions folder.")
    assert decide(c, [old, reworded], [SUP, NEI], TODAY).label == "stale"


def test_the_confidence_floor_turns_weaker_findings_uncertain():
    """`min_confidence` is an operating point: on the demo KB a floor leaves only the findings at
    or above it, the others uncertain with their reading kept, and no finding is added."""
    from kb.chain import run_audit
    from kb.config import load_settings

    base = run_audit(load_settings({"today": DEMO_TODAY}, environ={}).validate())
    floor = 0.8
    strict = run_audit(load_settings({"today": DEMO_TODAY, "min_confidence": floor}, environ={}).validate())
    before = {v.claim_id: v for v in base.verdicts}
    findings = ("stale", "contradicted")
    assert any(v.label in findings and v.confidence < floor for v in base.verdicts)  # the demo has weaker findings
    for v in strict.verdicts:
        old = before[v.claim_id]
        if old.label in findings and old.confidence < floor:
            assert v.label == "uncertain" and f"below the confidence floor {floor:g}: read as {old.label}" in v.rationale
        else:
            assert v.label == old.label
    assert sum(v.label in findings for v in strict.verdicts) < sum(v.label in findings for v in base.verdicts)
    with pytest.raises(ConfigError):
        load_settings({"min_confidence": 1.5}, environ={})


def test_only_the_model_refuting_a_fragment_is_no_contradiction():
    """A table cell or a list item of a few words states nothing a sentence-pair model can refute:
    the model alone reading a row against "Expand all files" leaves it uncertain, while the same
    refutation of a sentence about the same subject still contradicts it."""
    model_ref = Judgement("refutes", 0.58, "model", "model: refutes (p=0.58)")
    row = ev("keybindings.md", NEW, sentence="= | Expand all files | Expand all directories in the file tree")
    cell = claim("Key =: Action is Expand all files", source_text="Expand all files")
    v = decide(cell, [row], [model_ref], TODAY)
    assert v.label == "uncertain" and "fragment" in v.rationale, v.rationale
    sentence = claim("The sidebar shows every open file at once.")
    now = ev("ui.md", NEW, sentence="The sidebar shows only the current file.")
    assert decide(sentence, [now], [model_ref], TODAY).label == "contradicted"


def test_the_model_refuting_a_sentence_the_claim_holds_word_for_word_is_no_contradiction():
    """A table cell of several sentences against one of them, as the newest README writes it: the
    claim states that sentence itself, so the model's refutation of the pair is its own error. A
    sentence the claim does not hold still contradicts it; a few words it holds are no sentence."""
    model_ref = Judgement("refutes", 0.63, "model", "model: refutes (p=0.63)")
    cell = ("Pass either a username:password pair or a token as the argument. If you only specify a "
            "username (-a username), you will be prompted for the password before the request is sent.")  # fmt: skip
    row = claim(f"Flag --auth, -a: Arguments is {cell}", source_text=cell)
    held = ev(
        "README.md",
        NEW,
        sentence="If you only specify a username (-a username), you will be prompted for the password before the request is sent.",
    )
    v = decide(row, [held], [model_ref], TODAY)
    assert v.label == "uncertain" and "holds word for word" in v.rationale, v.rationale
    sidebar = claim("The sidebar shows every open file at once in the order they were opened.")
    part = ev("ui.md", NEW, sentence="The sidebar shows every open file at once.")
    assert "holds word for word" in decide(sidebar, [part], [model_ref], TODAY).rationale
    other = ev("ui.md", NEW, sentence="The sidebar shows every open file at once in the order they were saved.")
    assert decide(sidebar, [other], [model_ref], TODAY).label == "contradicted"
    few = ev("ui.md", NEW, sentence="every open file at once")
    assert "holds word for word" not in decide(sidebar, [few], [model_ref], TODAY).rationale
