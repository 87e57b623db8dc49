"""Revision contrast: the claim against what changed between two dated versions of a sentence."""

from dataclasses import replace
from datetime import date

import pytest

from kb.records import Claim, Evidence
from kb.verify import Verifier, VerifierSettings
from kb.verify.additions import same_word
from kb.verify.revision import contrast
from kb.verify.slots import extract
from kb.verify.spelling import respelt


def test_claim_with_the_replaced_number_follows_the_older_version():
    c = contrast(
        "The free plan allows fewer than 51 requests per minute.",
        "The free plan allows 50 requests per minute and 3 projects.",
        "The free plan allows 60 requests per minute and 3 projects.",
    )
    assert c is not None and c.side == "older"
    assert (c.old_value, c.new_value) == ("50", "60")
    assert "'50' to '60'" in c.rationale


def test_comparator_against_the_stated_value_not_its_rounding():
    # "more than 45" is false of a version that says exactly 45
    c = contrast("The team has more than 45 wins.", "The team has 46 wins and 60 losses.", "The team has 45 wins and 60 losses.")
    assert c is not None and c.side == "older"


@pytest.mark.parametrize(
    ("claim", "older", "newer", "side"),
    [
        ("Logs are written in JSON format.",  # a word only the newer version has
         "Access logs are written in the Common Log Format by default.",
         "Access logs are written in the JSON format by default.", "newer"),
        ("The proxy was configured through the Kubernetes Ingress provider.",  # a replaced name that
         "You configure it with the Kubernetes Ingress provider and a file.",  # difflib splits into
         "You configure it with the Gateway API provider and a file.", "older"),  # delete + insert
    ],
)  # fmt: skip
def test_changed_words_decide_the_side(claim, older, newer, side):
    c = contrast(claim, older, newer)
    assert c is not None and c.side == side


def test_no_decision_when_the_change_is_not_about_the_claim_or_signals_disagree():
    # the change (port) is not what the claim says
    assert contrast("The dashboard is enabled by default.",
                    "The dashboard is enabled by default on port 8080.",
                    "The dashboard is enabled by default on port 9000.") is None  # fmt: skip
    # different sentences altogether: nothing to contrast
    assert contrast("The limit is 50.", "The limit is 50 requests.", "Support ends in March for all users of old plans.") is None
    # identical versions
    assert contrast("X is 5.", "X is 5 today.", "X is 5 today.") is None
    # the claim has both the removed and the added word
    assert contrast("Mixed or favorable reviews.", "It got mixed reviews.", "It got favorable reviews.") is None
    # a typo fixed: the same word ("converstaion" / "conversation", "langauge" / "language")
    typo = "The maintainers have been discussing the syntax in a more recent converstaion on the forum."
    assert contrast(typo, typo, typo.replace("converstaion", "conversation")) is None
    assert contrast("Pages name their langauge.", "Pages name their langauge.", "Pages name their language.") is None


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Dealing with this state can be inconvient when writing selectors.",
         "Dealing with this state can be inconvenient when writing selectors."),
        ("Similar to the pattern used for defing pre-typed hooks.", "Similar to the pattern used for defining pre-typed hooks."),
        ("Where there is no browser cache, persistance might still be a viable option.",
         "Where there is no browser cache, persistence might still be a viable option."),
        ("The default behaviour is to retry failed requests.", "The default behavior is to retry failed requests."),
    ],
)  # fmt: skip
def test_a_word_respelt_is_no_change(older, newer):
    assert contrast(older, older, newer) is None


def test_a_word_in_another_form_is_no_change():
    for claim, newer in [
        ("This command is provided only as a convenience shortcut for the most common case.",
         "This command is provided only as a convenient shortcut for the most common case."),
        ("This command runs the spider with name quotes that we have just added.",
         "This command runs the spider named quotes that we have just added."),
        ("Commands may behave slightly different when running inside a project.",
         "Commands may behave slightly differently when run inside a project."),
    ]:  # fmt: skip
        assert contrast(claim, claim, newer) is None, newer
    # words that only start alike are other words
    for claim, newer in [
        ("Set the port in the settings file.", "Set the portal in the settings file."),
        ("The import is skipped for cached modules.", "The important is skipped for cached modules."),
    ]:  # fmt: skip
        c = contrast(claim, claim, newer)
        assert c is not None and c.side == "older", newer
    assert same_word("name", "named") and same_word("different", "differently") and same_word("running", "run")
    assert not same_word("import", "important") and not same_word("time", "timeout") and not same_word("option", "optional")
    assert not same_word("make", "made") and not same_word("use", "user") and not same_word("3.9", "3.10")
    # a plural states another thing ("the most used feature" / "one of the most used features")
    assert not same_word("feature", "features") and not same_word("example", "examples")
    # ... and so does a piece of a code name in another form
    c = contrast("Call the load_config hook before start.", "Call the load_config hook before start.",
                 "Call the loaded_config hook before start.")  # fmt: skip
    assert c is not None and c.side == "older"


def test_two_words_or_a_name_are_not_a_typo():
    # both are English words: another word, another fact
    c = contrast("The cache is enabled by default.", "The cache is enabled by default.", "The cache is unable by default.")
    assert c is not None and c.side == "older"
    for a, b in [("enabled", "disabled"), ("project", "projector"), ("pytest", "protest"), ("site", "project"),
                 ("tox", "box"), ("Persistance", "persistence")]:  # fmt: skip
        assert not respelt(a, b), (a, b)
    assert respelt("flakyness", "flakiness") and respelt("lietime", "lifetime")


def test_years_after_and_before_are_bounds():
    (q,) = extract("The band was formed after 1978.").quantities
    assert (q.op, q.lo) == (">", 1978.0)
    (q,) = extract("She left before 1988.").quantities
    assert (q.op, q.hi) == ("<", 1988.0)
    # "by" stays a plain year: "a study by 2016 graduates" is no deadline
    (q,) = extract("A survey by 2016 graduates.").quantities
    assert q.op == "="
    c = contrast("The band was formed after 1978.", "The band was formed in 1979 in New York.", "The band was formed in 1978 in New York.")
    assert c is not None and c.side == "older"


def _ev(cid, sentence, day, rank):
    return Evidence(claim_id=cid, rank=rank, passage_id=f"p{rank}", source_id="page", source_version=str(day),
                    source_date=day, authority=1.0, passage=sentence, sentence=sentence,
                    score_bm25=0.0, score_dense=0.0, score_fused=0.0)  # fmt: skip


def test_verifier_labels_stale_from_the_contrast_with_the_newer_value():
    text = "The free plan allows fewer than 51 requests per minute."
    claim = Claim(claim_id="c1", doc_id="d", version_id="v", start=0, end=len(text), source_text=text, text=text)
    older = _ev("c1", "The free plan allows 50 requests per minute and 3 projects.", date(2023, 1, 1), 1)
    newer = _ev("c1", "The free plan allows 60 requests per minute and 3 projects.", date(2024, 6, 1), 2)
    v = Verifier(VerifierSettings(use_model=False))
    (stale,) = v.verify([claim], {"c1": [older, newer]}, date(2025, 1, 1))
    assert stale.label == "stale"
    assert stale.evidence_value == "60" and "revision" in stale.rationale
    # the same two versions with their dates swapped: the claim states the newest value
    older2 = _ev("c1", older.sentence, date(2024, 6, 1), 1)
    newer2 = _ev("c1", newer.sentence, date(2023, 1, 1), 2)
    (now,) = v.verify([claim], {"c1": [older2, newer2]}, date(2025, 1, 1))
    assert now.label == "supported"


def test_an_unchanged_sentence_beside_a_changed_one_is_not_a_revision():
    # the newer list changed the Free plan's limit; the Pro plan's line stands in both versions
    text = "The Pro plan allows 900 requests per minute."
    claim = Claim(claim_id="c2", doc_id="d", version_id="v", start=0, end=len(text), source_text=text, text=text)
    pro = "The Pro plan allows 600 requests per minute."
    old = _ev("c2", pro, date(2023, 1, 1), 1)
    new_pro = _ev("c2", pro, date(2024, 6, 1), 2)
    new_free = _ev("c2", "The Free plan allows 100 requests per minute.", date(2024, 6, 1), 3)
    (v,) = Verifier(VerifierSettings(use_model=False)).verify([claim], {"c2": [old, new_free, new_pro]}, date(2025, 1, 1))
    assert v.label == "contradicted" and "revision" not in v.rationale


@pytest.mark.parametrize(
    "older, newer",
    [
        ("A jwt_secret option from the Home Assistant Addon options", "A jwt_secret option from the Home Assistant Add-on options"),
        ("VSCode supports JSON schemas for automatically validating configuration files.",
         "VS Code supports JSON schemas for automatically validating configuration files."),
        ("Run the setup wizard once the plugin is installed.", "Run the set up wizard once the plug-in is installed."),
    ],
)  # fmt: skip
def test_a_word_joined_or_written_apart_is_no_change(older, newer):
    assert contrast(older, older, newer) is None
    assert contrast(newer, newer, older) is None
    claim = Claim(claim_id="c3", doc_id="d", version_id="v", start=0, end=len(older), source_text=older, text=older)
    old = _ev("c3", older, date(2023, 1, 1), 1)
    new = _ev("c3", newer, date(2024, 6, 1), 2)
    (v,) = Verifier(VerifierSettings(use_model=False)).verify([claim], {"c3": [old, new]}, date(2025, 1, 1))
    assert v.label not in ("stale", "contradicted"), v.rationale


def test_a_menu_path_written_apart_still_shows_its_renamed_entry():
    # "Addons" -> "Add-ons" is notation; the menu entry that lost a word is a change
    older = "Addon users can set it under Settings > Addons > Acme NVR > Configuration > Options."
    newer = "Add-on users can set it under Settings > Add-ons > Acme > Configuration > Options."
    c = contrast(older, older, newer)
    assert c is not None and c.side == "older" and c.old_value == "nvr"


def test_an_article_and_a_hyphen_together_are_no_revision():
    # a list line copy-edited: an article added and a word hyphenated, nothing else
    text = "MQTT connected to home assistant mosquitto addon"
    claim = Claim(claim_id="c4", doc_id="d", version_id="v", start=0, end=len(text), source_text=text, text=text)
    old = _ev("c4", text, date(2023, 1, 1), 1)
    new = _ev("c4", "MQTT connected to the Home Assistant Mosquitto Add-on", date(2024, 6, 1), 2)
    (v,) = Verifier(VerifierSettings(use_model=False)).verify([claim], {"c4": [old, new]}, date(2025, 1, 1))
    assert v.label not in ("stale", "contradicted"), v.rationale
    # the same line where a diff of the two versions placed it (a list item rewritten in place)
    text = "A jwt_secret option from the Home Assistant Addon options"
    claim = Claim(claim_id="c6", doc_id="d", version_id="v", start=0, end=len(text), source_text=text, text=text)
    old = replace(_ev("c6", text, date(2023, 1, 1), 1), passage_id="old-line")
    new = replace(_ev("c6", "A jwt_secret option from the Home Assistant Add-on options", date(2024, 6, 1), 2),
                  counterpart_of="old-line")  # fmt: skip
    (v,) = Verifier(VerifierSettings(use_model=False)).verify([claim], {"c6": [old, new]}, date(2025, 1, 1))
    assert v.label not in ("stale", "contradicted"), v.rationale
    # a clause cut from a sentence the newest version states with a name written apart
    text = "VSCode will start the docker compose file for you"
    claim = Claim(claim_id="c7", doc_id="d", version_id="v", start=0, end=len(text), source_text=text, text=text)
    old = _ev("c7", "VSCode will start the docker compose file for you and open a terminal window.", date(2023, 1, 1), 1)
    new = _ev("c7", "VS Code will start the Docker Compose file for you and open a terminal window.", date(2024, 6, 1), 2)
    (v,) = Verifier(VerifierSettings(use_model=False)).verify([claim], {"c7": [old, new]}, date(2025, 1, 1))
    assert v.label not in ("stale", "contradicted"), v.rationale
    # a flag that gained a hyphen is another flag
    text = "Disable colours with --nocolor"
    claim = Claim(claim_id="c5", doc_id="d", version_id="v", start=0, end=len(text), source_text=text, text=text)
    old = _ev("c5", text, date(2023, 1, 1), 1)
    new = _ev("c5", "Disable colours with --no-color", date(2024, 6, 1), 2)
    (v,) = Verifier(VerifierSettings(use_model=False)).verify([claim], {"c5": [old, new]}, date(2025, 1, 1))
    assert v.label in ("stale", "contradicted"), v.rationale


def test_a_dropped_history_clause_is_no_change_of_what_follows():
    older = "Since Acme 0.31.0, you can check the coverage report in the dashboard."
    newer = "You can check the coverage report in the dashboard."
    assert contrast(older, older, newer) is None
    assert contrast("Starting from 0.23.0, you can write your own plugin.", "Starting from 0.23.0, you can write your own plugin.",
                    "You can write your own plugin.") is None  # fmt: skip
    # ... but what follows still counts: a changed statement after the clause is a change
    c = contrast(older, older, "You can check the coverage report in the terminal.")
    assert c is not None and c.side == "older"
    # and a clause both versions open with is compared as any words
    c = contrast(older, older, "Since Acme 0.40.0, you can check the coverage report in the dashboard.")
    assert c is not None and c.side == "older"
