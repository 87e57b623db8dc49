"""A newer sentence that keeps the claim's words and only adds beside them (another list item, a
modifier, an alias) or inflects a word otherwise ("in details" -> "in detail") still states the claim; a lead-in with a bold line in front of it, or a
subject named for its "It", is still the claim's lead-in and states none of its items."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from kb.chain import run_audit
from kb.config import Settings
from kb.verify import Verifier, VerifierSettings, is_lead_in_of
from kb.verify.additions import added_beside
from kb.verify.rewording import restated
from kb.verify.rules import judge_rules
from tests.test_git_sources import make_repo, release, two_releases
from tests.test_verifier import NEW, _claim, _ev, _StubModel

PAGE = """# Responses

## Encodings

In this case any content encoding that the server has applied such as gzip, deflate, or brotli will not be decoded.

If the brotli package is installed, then the brotli response encoding will also be supported.

## Lifespan

It is not in the scope of the client to trigger lifespan events of your app.

## Proxies

See the documentation on HTTP_PROXY, HTTPS_PROXY, ALL_PROXY for more information.

Each proxy format is described in details on the proxy reference page.

The client passes exactly the same connection object to every hook that it calls.

## Limits

The default timeout is 30 seconds for every request that the client sends.

The export step writes its results as JSON, CSV and YAML files in the output folder.
"""

GROWN = (
    PAGE.replace("gzip, deflate, or brotli", "gzip, deflate, brotli, or zstd")
    .replace("will also be supported", "will be supported")
    .replace("trigger lifespan events", "trigger ASGI lifespan events")
    .replace("ALL_PROXY for", "ALL_PROXY and NO_PROXY for")
    .replace("in details", "in detail")
    .replace("exactly the same", "the exact same")
    .replace("30 seconds", "60 seconds")
    .replace("JSON, CSV and YAML files", "JSON and YAML files")
)
ADDED = {
    "In this case any content encoding that the server has applied such as gzip, deflate, or brotli will not be decoded.",
    "If the brotli package is installed, then the brotli response encoding will also be supported.",
    "It is not in the scope of the client to trigger lifespan events of your app.",
    "See the documentation on HTTP_PROXY, HTTPS_PROXY, ALL_PROXY for more information.",
    "Each proxy format is described in details on the proxy reference page.",
    "The client passes exactly the same connection object to every hook that it calls.",
}


@pytest.fixture(scope="module")
def grown(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("grown")
    repo = make_repo(root, "product")
    release(repo, "v1.0.0", "2024-01-10", {"docs/responses.md": PAGE})
    release(repo, "v1.1.0", "2024-06-10", {"docs/responses.md": PAGE, "docs/about.md": "# About\n\nThe client is a library.\n"})
    release(repo, "v1.2.0", "2024-11-10", {"docs/responses.md": GROWN})
    bundle = root / "product.bundle"
    subprocess.run(["git", "-C", str(repo), "bundle", "create", str(bundle), "--all"], check=True, capture_output=True)
    clone = root / "clone.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(bundle), str(clone)], check=True)
    return clone


def test_words_added_beside_the_claim_are_no_drift_and_changed_facts_still_are(grown, tmp_path):
    settings = Settings(docs=f"git:{grown}@v1.0.0:docs", sources=[f"git:{grown}@v1.1.0,v1.2.0:docs"],
                        today=date(2024, 11, 10), full=True).validate()  # fmt: skip
    result = run_audit(settings, cache_dir=tmp_path / "cache")
    verdicts = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    for text in ADDED:
        v = verdicts[text]
        assert v.label == "supported", (text, v)
        assert v.evidence_sentence and v.evidence_sentence != text, v  # the newest sentence is the evidence
    # a changed number and a dropped item are still findings
    timeout = verdicts["The default timeout is 30 seconds for every request that the client sends."]
    assert timeout.label == "stale" and timeout.evidence_value and "60" in timeout.evidence_value, timeout
    export = verdicts["The export step writes its results as JSON, CSV and YAML files in the output folder."]
    assert export.label == "stale", export


def test_only_harmless_additions_count():
    claim = "The cache is enabled by default for every project."
    for grown_text in (
        "The cache is enabled by default for every project (and every workspace).",
        "The build cache is enabled by default for every project.",
    ):
        assert added_beside(claim, grown_text) is not None, grown_text
        judged = judge_rules(claim, grown_text)
        assert judged is not None and judged.relation == "supports", judged
    # a typo fixed inside a long word
    typo = "Run the tests again after the client was inititalised."
    assert added_beside(typo, "Run the tests again after the client was initialised.") is not None
    for changed in (
        "The cache is not enabled by default for every project.",  # a negation
        "The cache is enabled by default for every project if the disk is local.",  # a condition
        "The cache is enabled by default on Linux for every project.",  # a qualifying phrase
        "The cache is disabled by default for every project.",  # a replaced word
        "The cache is enabled by default for every projector.",  # another word, not another form
        "The cache is unenabled by default for every project.",  # a prefix, not a typo
        "The cache is enabled by default for every new project created after 2.0.",  # a number
    ):
        assert added_beside(claim, changed) is None, changed
    # an item added to an exhaustive list, or an alternative to a requirement, changes the claim
    assert (
        added_beside("Only JSON and YAML files are read by the loader.", "Only JSON, TOML and YAML files are read by the loader.") is None
    )
    assert (
        added_beside("The upload requires an API key for the account.", "The upload requires an API key or a passkey for the account.")
        is None
    )
    assert (
        added_beside("The upload requires an API key for the account.", "The upload requires a passkey or an API key for the account.")
        is None
    )
    # "and" joined where the claim lists nothing adds a condition, not an item
    counted = "The check passes when both arrays match in their number of elements."
    assert added_beside(counted, "The check passes when both arrays match in their number and order of elements.") is None
    # an item dropped is no addition
    assert added_beside("Supported formats are gzip, deflate and brotli.", "Supported formats are gzip and deflate.") is None
    # ... while "or" joined there adds another way beside the claim's, which still holds
    assert added_beside("Maximum number of worker threads.", "Maximum number or percentage of worker threads.") == "or percentage"
    assert added_beside("The loader fails loudly on any ImportError exception.",
                        "The loader fails loudly on any ImportError or SyntaxError exception.") == "or syntaxerror"  # fmt: skip
    assert added_beside("Maximum number of worker threads.", "Maximum number or not of worker threads.") is None


def test_a_segment_added_to_a_path_or_a_url_is_another_place_not_words_beside_the_claim():
    windows = r"The cache lives in %LOCALAPPDATA%\widget on Windows as the platform defines it."
    assert added_beside(windows, r"The cache lives in %LOCALAPPDATA%\widget\widget on Windows as the platform defines it.") is None
    judged = judge_rules(windows, r"The cache lives in %LOCALAPPDATA%\widget\widget on Windows as the platform defines it.")
    assert judged is not None and judged.relation == "refutes", judged
    assert (judged.claim_value, judged.evidence_value) == (r"%LOCALAPPDATA%\widget", r"%LOCALAPPDATA%\widget\widget"), judged
    assert (
        added_beside(
            "Settings are read from ~/.config/widget on every start.", "Settings are read from ~/.config/widget/v2 on every start."
        )
        is None
    )
    archived = "The talk is online at https://example.org/talks/widget/ for everyone."
    assert (
        added_beside(archived, "The talk is online at https://archive.example.net/2025/https://example.org/talks/widget/ for everyone.")
        is None
    )
    # the path kept whole, with words added around it, still states the claim
    assert added_beside(windows, r"The cache lives in %LOCALAPPDATA%\widget on Windows, as the platform defines it.") is not None
    assert added_beside("See docs/config.md for the options.", "See docs/config.md for all the options.") is not None
    # a link moved to https is the same page; a shortcode's {{%/* */%}} is no path
    linked = "The index page is fetched from http://example.org/simple/widget for each package."
    judged = judge_rules(linked, linked.replace("http://", "https://"))
    assert judged is not None and judged.relation == "supports", judged
    shortcode = "If you use the {{%/* */%}} notation, the rendered shortcode is included in the map."
    assert added_beside(shortcode, shortcode.replace("rendered shortcode", "rendered inner shortcode")) is not None


def test_a_lead_in_with_a_line_in_front_or_a_named_subject_is_still_the_lead_in():
    item = replace(_claim("a", "Clients also support features that the top-level API lacks, such as: Using HTTP/2."),
                   source_text="Using HTTP/2.", reason="lead-in attached")  # fmt: skip
    # the page's bold line above the list was read into the lead-in sentence
    merged = "Extra features Clients also support features that the top-level API lacks, such as:"
    # the claim names the page for the lead-in's "It"
    pointed = replace(_claim("b", "Pool limits takes instances of Limits which define: (Default 5)"),
                      source_text="(Default 5)", reason="lead-in attached")  # fmt: skip
    lead = "It takes instances of Limits which define:"
    model = _StubModel(lambda c, s: [0.03, 0.94, 0.03])  # a model that reads the missing item as a denial
    v = Verifier(VerifierSettings(use_model=True))
    v._model = model
    for claim, sentence in ((item, merged), (pointed, lead)):
        e = _ev(claim.claim_id, "clients.md", NEW, sentence + " Cookie persistence.", sentence, 1)
        (j,) = v.judge_pairs([claim], {claim.claim_id: [e]})[claim.claim_id]
        assert j.relation == "nei" and "lead-in" in j.rationale, (sentence, j)
        (out,) = v.verify([claim], {claim.claim_id: [e]}, date(2025, 6, 1))
        assert out.label == "uncertain", out
    assert model.calls == []
    # a lead-in that changed in its own words is not the claim's lead-in
    assert not is_lead_in_of(item.text, "Clients also support features that the top-level API now has, such as:", item.source_text)
    assert not is_lead_in_of("There are three ways to set it: Using a flag.", "There are four ways to set it:", "Using a flag.")
    # one with its grammar mended is: the item's absence from it says nothing of the item
    assert is_lead_in_of("Matcher functions have access to the following properties: isNot",
                         "Matcher functions has access to the following properties:", "isNot")  # fmt: skip
    assert not is_lead_in_of("Matchers do not have access to the following properties: isNot",
                             "Matchers have access to the following properties:", "isNot")  # fmt: skip


ENTRIES = """# Schema

## Run

If it is defined as a string, you can give it any of the following values:

- `once` - Will run the command only once, whatever the task is called with.
- `source` - Will run the command for each source file defined on the task.
- `checksum` - Will compare the checksum of every source file with the stored one.
"""


def test_an_entry_renamed_to_another_form_of_its_name_is_another_entry(tmp_path):
    """ "`source` - ..." -> "`sources` - ...": the value a user writes changed, though the words are
    the same but for an inflection; the entries left as they were still stand."""
    clone = two_releases(tmp_path, {"docs/schema.md": ENTRIES}, {"docs/schema.md": ENTRIES.replace("`source` -", "`sources` -")})
    settings = Settings(docs=f"git:{clone}@v1.0.0:docs", sources=[f"git:{clone}@v1.0.0,v1.1.0:docs"],
                        today=date(2024, 6, 10), full=True).validate()  # fmt: skip
    result = run_audit(settings, cache_dir=tmp_path / "cache")
    verdicts = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    renamed = next(v for text, v in verdicts.items() if text.startswith("source -"))
    assert renamed.label == "stale" and "sources -" in (renamed.evidence_sentence or ""), renamed
    kept = [v for text, v in verdicts.items() if text.startswith(("once -", "checksum -"))]
    assert len(kept) == 2 and all(v.label == "supported" for v in kept), kept
    # the rules alone: the entry's name is compared as written, its description by its words
    line = "source - Will run the command for each source file defined on the task."
    assert added_beside(line, line.replace("source -", "sources -")) is None
    assert not restated(line, line.replace("source -", "sources -"))
    assert added_beside(line, line.replace("the command", "the shell command")) is not None


def test_a_letter_held_down_is_a_typo_not_another_word():
    """ "alllllll" -> "all": no English word has a letter three times in a row; two dictionary
    words ("loose" / "lose") stay two words."""
    from kb.verify.additions import misspelt

    assert misspelt("alllllll", "all") and misspelt("sooon", "soon") and misspelt("alll", "all")
    assert not misspelt("loose", "lose") and not misspelt("book", "bok")
    judged = judge_rules("No API for getting alllllll files on PyPI.", "No API for getting all files on PyPI.")
    assert judged is not None and judged.relation == "supports", judged
    judged = judge_rules("No API for getting wheel files on PyPI.", "No API for getting source files on PyPI.")
    assert judged is None or judged.relation != "supports", judged


SCRIPTS_V1 = """# Custom scripts

Custom scripts have unrestricted access to change anything in the databse and are inherently unsafe and should only be installed and run from trusted sources.

A script times out after 300 seconds of running.
"""
SCRIPTS_V2 = """# Custom scripts

Custom scripts have unrestricted access to change anything in the database and are inherently unsafe and should only be installed and run from trusted sources.

A script times out after 600 seconds of running.
"""


def test_a_typo_fixed_in_the_sentence_a_clause_was_cut_from_still_states_the_clause(tmp_path):
    """ "databse" -> "database" in a sentence the splitter cut in clauses: the claim's words stand
    in the newest sentence once its typo fix is read as the same word, so nothing drifted; the
    value changed on the same page still is drift."""
    clone = two_releases(tmp_path, {"docs/scripts.md": SCRIPTS_V1}, {"docs/scripts.md": SCRIPTS_V2})
    settings = Settings(docs=f"git:{clone}@v1.0.0:docs", sources=[f"git:{clone}@v1.0.0,v1.1.0:docs"],
                        today=date(2024, 6, 10), full=True).validate()  # fmt: skip
    result = run_audit(settings, cache_dir=tmp_path / "cache")
    verdicts = {c.text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    access = next(v for text, v in verdicts.items() if "databse" in text)
    assert access.label == "supported", access
    timeout = next(v for text, v in verdicts.items() if "300 seconds" in text)
    assert timeout.label == "stale", timeout
    # the rules alone: the typo fix is the claim's word, a word replaced by another is not
    claim = "Custom scripts have unrestricted access to change anything in the databse"
    judged = judge_rules(claim, SCRIPTS_V2.splitlines()[2])
    assert judged is not None and judged.relation == "supports" and "databse -> database" in judged.rationale, judged
    judged = judge_rules(claim, SCRIPTS_V2.splitlines()[2].replace("database", "datastore"))
    assert judged is None or judged.relation != "supports", judged
    judged = judge_rules(
        "The project was founded by Jonathan Hale in 2019.", "The project was founded by Johnathan Hale in 2019 and later moved."
    )
    assert judged is None or judged.relation != "supports", judged
    judged = judge_rules(
        "Scripts can change anything in the databse only.", "Scripts can change anything in the database only, or in its cache."
    )
    assert judged is None or judged.relation != "supports", judged
