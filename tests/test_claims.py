"""Claims: the labelled fixture, spans, rewrites, check-worthiness, requirements, stable ids."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench.claims import evaluate, load_expected, predict, throughput
from kb.claims.split import ClaimSettings, split_claims
from kb.claims.text import sentence_spans
from kb.claims.units import BLOCK_LEAD_IN, LEAD_IN_ATTACHED
from kb.ingest.parse import parse_document

FIXTURE = Path(__file__).parent / "fixtures" / "claims"


def claims_of(text: str, name: str = "doc.md", settings: ClaimSettings | None = None):
    doc = parse_document(text.encode("utf-8"), name, f"/kb/{name}")
    return doc, split_claims(doc, settings)


def by_source(claims):
    return {c.source_text: c for c in claims}


def test_fixture_precision_recall_and_accuracy():
    expected = load_expected(FIXTURE)
    assert len(expected) >= 150
    assert {r["file"].rsplit(".", 1)[1] for r in expected} >= {"md", "html", "txt"}
    metrics, notes = evaluate(expected, predict(FIXTURE))
    print(metrics)
    assert metrics["boundary_precision"] >= 0.95, notes
    assert metrics["boundary_recall"] >= 0.95, notes
    assert metrics["type_accuracy"] >= 0.90, notes
    assert metrics["time_sensitivity_accuracy"] >= 0.90, notes


def test_fixture_spans_point_at_the_source_text():
    for path in sorted(FIXTURE.iterdir()):
        if path.suffix == ".jsonl":
            continue
        doc = parse_document(path.read_bytes(), path.name, str(path))
        for c in split_claims(doc):
            span = doc.text[c.start : c.end]
            assert span, c
            # markup aside, the span holds the claim's words
            first = (
                next(w for w in c.source_text.split() if w.isalnum())
                if any(w.isalnum() for w in c.source_text.split())
                else c.source_text[:1]
            )
            assert first in span, (span, c.source_text)


def test_throughput_is_reported():
    rate, total = throughput(FIXTURE, min_sentences=2_000)
    assert total >= 2_000 and rate > 0


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Dr. Smith joined in 2020. He leads the team.", ["Dr. Smith joined in 2020.", "He leads the team."]),
        ("It costs approx. 2.5 MB, e.g. for v2.1.3. Next one.", ["It costs approx. 2.5 MB, e.g. for v2.1.3.", "Next one."]),
        (
            "See https://x.example.com/a.b.html for more. Mail a.b@c.org today.",
            ["See https://x.example.com/a.b.html for more.", "Mail a.b@c.org today."],
        ),
        ("Is it fast? Yes! It is.", ["Is it fast?", "Yes!", "It is."]),
        ("Made by Example Inc. The rest.", ["Made by Example Inc.", "The rest."]),
        ("The U.S. team grew 3.5x in Q1. J. Doe said so.", ["The U.S. team grew 3.5x in Q1.", "J. Doe said so."]),
        ("Install it with pip. kbaudit then runs.", ["Install it with pip.", "kbaudit then runs."]),
    ],
)
def test_sentence_splitting(text, expected):
    assert [text[s:e] for s, e in sentence_spans(text)] == expected


def test_atomic_claims_coordination_and_lead_ins():
    _, claims = claims_of(
        "# Payments API\n\nThe API launched in 2019 and serves 40 regions.\n\n"
        "Supported regions: us-east-1, eu-west-1 and ap-south-1.\n\n"
        "It supports:\n\n- SSO\n- SCIM\n\n| Plan | Price | Limit |\n|---|---|---|\n| Pro | $49 | 500 rps |\n"
    )
    texts = [c.text for c in claims if c.checkworthy]
    assert "Payments API launched in 2019" in texts  # "The API" resolved from the heading
    assert "Payments API serves 40 regions." in texts
    _, more = claims_of("The gateway launched in 2019, serves 40 regions and runs 3 data centres.\n")
    assert [c.text for c in more] == ["The gateway launched in 2019", "The gateway serves 40 regions", "The gateway runs 3 data centres."]
    assert {"Supported regions: us-east-1", "Supported regions: eu-west-1", "Supported regions: ap-south-1"} <= set(texts)
    assert "Payments API supports: SSO" in texts and "Payments API supports: SCIM" in texts
    assert "Plan Pro: Price is $49" in texts and "Plan Pro: Limit is 500 rps" in texts


def test_and_inside_a_that_clause_joins_its_subjects_not_two_facts():
    sentence = "The one caveat is that GitHub and GitLab do not yet support ignoring revisions in their blame view."
    _, claims = claims_of(f"{sentence}\n")
    assert [c.text for c in claims] == [sentence]
    _, claims = claims_of("The default is that builds run nightly and reports are kept for 30 days.\n")
    assert [c.text for c in claims] == ["The default is that builds run nightly", "reports are kept for 30 days."]


@pytest.mark.parametrize(
    "sentence, expected",
    [
        (
            "The proxy will reject the request and return a 502 error.",
            ["The proxy will reject the request", "The proxy will return a 502 error."],
        ),
        (
            "The gateway will not cache results and retry requests.",
            ["The gateway will not cache results", "The gateway will not retry requests."],
        ),
        ("Reports can be exported and read by the admin team.", ["Reports can be exported", "Reports can be read by the admin team."]),
        ("The report can be built nightly and run on demand.", ["The report can be built nightly", "The report can be run on demand."]),
        (
            "The local file will always match and take precedence.",
            ["The local file will always match", "The local file will always take precedence."],
        ),
        # a finite verb after "and" takes no modal: "does not ... and requires"
        (
            "The gateway does not cache results and requires a token.",
            ["The gateway does not cache results", "The gateway requires a token."],
        ),
        (
            "The values do not change and are the same in every region.",
            ["The values do not change", "The values are the same in every region."],
        ),
    ],
)
def test_a_verb_joined_by_and_keeps_the_modal_it_shares(sentence, expected):
    _, claims = claims_of(f"{sentence}\n")
    assert [c.text for c in claims] == expected


def test_self_contained_rewrite_keeps_source_text():
    doc, claims = claims_of(
        "---\ntitle: Payments API guide\n---\n# Overview\n\nThe service is hosted in Dublin.\n\n"
        "Webhooks are signed. They are retried 8 times. Its payload is JSON.\n"
    )
    c = by_source(claims)
    hosted = c["The service is hosted in Dublin."]
    assert hosted.text == "Payments API is hosted in Dublin."
    assert "rewritten" in hosted.reason
    assert doc.text[hosted.start : hosted.end] == "The service is hosted in Dublin."
    assert c["They are retried 8 times."].text == "Webhooks are retried 8 times."
    assert c["Its payload is JSON."].text == "Webhooks' payload is JSON."


@pytest.mark.parametrize(
    "sentence, reason",
    [
        ("Is there a sandbox?", "question"),
        ("Run the build script to build it.", "instruction"),
        ("Please report bugs to the team.", "instruction"),
        ("We love this API!", "opinion"),
        ("Welcome to the guide!", "greeting"),
        ("Thanks for reading.", "greeting"),
        ("You should restart the server.", "instruction"),
    ],
)
def test_not_checkworthy_is_kept_with_a_reason(sentence, reason):
    _, claims = claims_of(f"# Guide\n\n{sentence}\n")
    heading, claim = claims
    assert heading.checkworthy is False and heading.reason == "heading"
    assert claim.checkworthy is False and claim.reason.startswith(reason)
    assert claim.requirements == ()


@pytest.mark.parametrize(
    "sentence, ctype, ts, reqs",
    [
        ("The API currently serves 40 regions.", "temporal", True, {"fresh_source:90d"}),
        ("The API is the fastest gateway on the market.", "comparative", False, {"comparison_set"}),
        ("Revenue grew 20% to $1.2 million.", "numeric", False, {"calculation"}),
        ("According to our dashboard, uptime was 99.9% last month.", "temporal", True, {"tool_receipt"}),
        ("Passwords must be rotated every 90 days.", "normative", False, set()),
        ("Refunds may become instant next year.", "speculative", True, set()),
        ("Outages are caused by expired certificates.", "causal", False, set()),
        ("To deploy, the pipeline runs make release.", "procedural", False, set()),
        ("The service is written in Rust.", "factual", False, set()),
        ("Widget 3.0 was released on 12 February 2024.", "temporal", False, set()),
    ],
)
def test_types_time_sensitivity_and_requirements(sentence, ctype, ts, reqs):
    _, claims = claims_of(f"{sentence}\n")
    (claim,) = claims
    assert (claim.type, claim.time_sensitive) == (ctype, ts)
    assert claim.requirements[0] == "source_passage"
    assert reqs <= set(claim.requirements)
    if ts:
        assert claim.freshness_days <= 90


def test_risk_rules_and_front_matter_override():
    _, claims = claims_of("The Pro plan costs $49 a month.\n\nThe logo is blue.\n")
    assert [c.risk for c in claims] == ["high", "low"]
    _, claims = claims_of("---\nrisk: medium\n---\nThe Pro plan costs $49 a month.\n\nThe logo is blue.\n")
    assert [c.risk for c in claims] == ["medium", "medium"]
    _, claims = claims_of("Leave requests are answered within 5 days.\n", "hr-policy.md")
    assert claims[0].risk == "high"  # numbers in policy documents


def test_freshness_is_configurable_per_type():
    settings = ClaimSettings(freshness_days={**ClaimSettings().freshness_days, "factual": 30})
    _, claims = claims_of("The service is written in Rust.\n", settings=settings)
    assert claims[0].freshness_days == 30


BASE = "# Service\n\nThe API launched in 2019.\n\nIt serves 40 regions.\n\n## Limits\n\nRate limits reset every 60 seconds.\n"


def test_claim_ids_are_stable_under_unrelated_edits():
    _, before = claims_of(BASE)
    edited = BASE.replace("The API launched in 2019.", "The API launched in 2019.\n\nA new, unrelated paragraph.")
    _, after = claims_of(edited)
    ids_before = {c.source_text: c.claim_id for c in before}
    ids_after = {c.source_text: c.claim_id for c in after}
    for text in ("It serves 40 regions.", "Rate limits reset every 60 seconds.", "The API launched in 2019."):
        assert ids_before[text] == ids_after[text]
    _, changed = claims_of(BASE.replace("60 seconds", "90 seconds"))
    ids_changed = {c.source_text: c.claim_id for c in changed}
    assert ids_changed["Rate limits reset every 90 seconds."] != ids_before["Rate limits reset every 60 seconds."]
    assert ids_changed["It serves 40 regions."] == ids_before["It serves 40 regions."]
    # identical sentences get distinct ids; re-running gives the same ids
    _, twice = claims_of("Same claim here.\n\nSame claim here.\n")
    assert len({c.claim_id for c in twice}) == 2
    assert [c.claim_id for c in claims_of(BASE)[1]] == [c.claim_id for c in before]


def test_ignored_document_has_no_claims():
    _, claims = claims_of("---\nkbaudit:\n  ignore: true\n---\nThe API serves 40 regions.\n")
    assert claims == []


@pytest.mark.parametrize(
    "text",
    [
        "The service runs fast and is cheap " * 5000,  # one huge sentence with many "and"s
        "The tool is good; the tool is bad " * 3000,  # thousands of clauses
        "Lead: a, b, c " * 5000,
        "It is. " * 5000,
        "a. " * 20000,
    ],
)
def test_pathological_input_is_linear(text):
    t0 = time.perf_counter()
    doc, claims = claims_of(text)
    assert time.perf_counter() - t0 < 20
    for c in claims:
        assert 0 <= c.start <= c.end <= len(doc.text)
    assert all(len(c.text) <= 2000 or not c.checkworthy for c in claims)


def test_claim_limit_is_an_error_not_a_silent_truncation():
    from kb.claims.split import ClaimLimitError

    with pytest.raises(ClaimLimitError, match="more than 10 claims"):
        claims_of("The API is fast. " * 20, settings=ClaimSettings(max_claims_per_doc=10))


def test_headings_are_checkworthy_only_when_they_state_something():
    _, claims = claims_of("# Payments API\n\n## Version 1 was retired in 2023\n\n## What does it do?\n")
    assert [(c.text, c.checkworthy, c.type) for c in claims] == [
        ("Payments API", False, "factual"),
        ("Version 1 was retired in 2023", True, "temporal"),
        ("What does it do?", False, "factual"),
    ]


def test_definition_lists_and_answers_are_self_contained():
    html = (
        "<h1>Storage</h1><dl><dt>RPO</dt><dd>The data loss window is 1 hour.</dd></dl>"
        "<p>Storage is encrypted.</p><p>Is it safe?</p><p>Yes, it is encrypted with AES-256.</p>"
    )
    _, claims = claims_of(html, "s.html")
    texts = [c.text for c in claims if c.checkworthy]
    assert "RPO: The data loss window is 1 hour." in texts
    assert "Storage is encrypted with AES-256." in texts


@pytest.mark.parametrize(
    "sentence",
    [
        "Keep in mind that the Traefik Gateway provider only supports the v0.3.0.",
        "See the previous version (v1.7) for more providers.",
        "Pass the escaped pem in the X-Forwarded-Tls-Client-Cert header.",
        "Run black with the --preview flag to try the future style.",
        'Please write the changelog entry under a dedicated "Preview changes" heading.',
    ],
)
def test_instruction_that_names_a_value_is_checked(sentence):
    _, claims = claims_of(f"{sentence}\n")
    assert [c.checkworthy for c in claims] == [True]


@pytest.mark.parametrize(
    "sentence",
    ["Contact us at team@example.com.", "Visit https://example.com/docs/v1.2/index.html for more.", "Restart the app."],
)
def test_instruction_with_only_an_address_or_no_value_is_not_checked(sentence):
    _, claims = claims_of(f"{sentence}\n")
    assert [(c.checkworthy, c.reason) for c in claims] == [(False, "instruction")]


def test_dummy_it_is_not_rewritten_to_the_previous_subject():
    _, claims = claims_of("The forceSlash option keeps the path non-empty. It is recommended to set forceSlash to false.\n"
                          "It is written in Go.\n")  # fmt: skip
    texts = [c.text for c in claims]
    assert "It is recommended to set forceSlash to false." in texts
    assert "The forceSlash option is written in Go." in texts  # a real pronoun still is


@pytest.mark.parametrize(
    "opener",
    [
        "If the input has a leading slash, relURL keeps it.",
        "To overcome this we knew we had to cache every page.",
        "But mostly it adds movement to the page.",
        "Our website which we built last year is in German.",
        "We’ve just moved the site to a new host.",
    ],
)
def test_a_sentence_opening_on_a_condition_or_the_writer_names_no_antecedent(opener):
    _, claims = claims_of(f"The relURL function returns a relative URL. {opener} It then prepends the baseURL.\n")
    texts = [c.text for c in claims]
    assert "The relURL function then prepends the baseURL." in texts, texts


def test_a_capitalised_list_after_a_comma_is_not_a_clause():
    _, claims = claims_of("The selector applies only to custom resources and has no effect on Secrets, Endpoints and Services.\n")
    assert [c.text for c in claims] == [
        "The selector applies only to custom resources",
        "The selector has no effect on Secrets, Endpoints and Services.",
    ]


def test_an_item_in_braces_is_one_item():
    _, claims = claims_of("Highlighted lines: {4, 7, 9}, {12} and 15.\n")
    assert [c.text for c in claims] == [
        "Highlighted lines: {4, 7, 9}",
        "Highlighted lines: {12}",
        "Highlighted lines: 15",
    ]


def test_steps_under_an_instructional_lead_in_are_instructions():
    _, claims = claims_of(
        "To install kbaudit:\n\n1. Run pip install kbaudit.\n2. Open the config file.\n\nThe release adds:\n\n- Export to CSV\n"
    )
    by_text = {c.text: c for c in claims}
    assert by_text["To install kbaudit: Run pip install kbaudit."].reason == "instruction"
    assert by_text["To install kbaudit: Open the config file."].checkworthy is False
    assert by_text["The release adds: Export to CSV"].checkworthy is True  # a feature, not a step


def test_blocks_with_plain_tuple_offsets():
    from kb.records import Block, Document

    text = "Intro. The API serves 40 regions."
    block = Block(kind="paragraph", start=7, end=len(text), text=text[7:], offsets=tuple(range(7, len(text))))
    doc = Document(doc_id="d", version_id="v", path="d", format="text", text=text, title="API", blocks=(block,))
    (claim,) = split_claims(doc)
    assert text[claim.start : claim.end] == "The API serves 40 regions."


def test_option_fields_in_other_formats_are_read_with_their_option():
    # field lines of an option reference in four layouts: bullets under the option heading,
    # bold-label paragraphs, a heading that carries the type, and a reference block in a fence
    doc, claims = claims_of(
        "# Reference\n\n"
        "## cacheTTL\n\n- **Type:** `number`\n- **Default:** `3600`\n\n"
        "## `retry_backoff`\n\n**Type**: duration\n\n**Default**: `250ms`\n\n"
        "### `watchMode` \\[boolean]\n\nDefault: `true`\n\nWatches the sources.\n\n"
        "## Daemon\n\n```yaml\n# how often the daemon wakes up\n[ wake_interval: <duration> | default = 30s ]\n"
        "[ - <upstream_config> ... ]\nlisteners: [1, 2]\n```\n\n"
        "| Option | Type | Default |\n|---|---|---|\n| `queue_depth` | int | 64 |\n"
    )
    texts = {c.text for c in claims if c.checkworthy}
    assert {"cacheTTL: Type: number", "cacheTTL: Default: 3600", "retry_backoff: Type: duration",
            "retry_backoff: Default: 250ms", "watchMode [boolean]: Default: true",
            "wake_interval: <duration> | default = 30s", "Option queue_depth: Default is 64"} <= texts  # fmt: skip
    c = by_source(claims)["wake_interval: <duration> | default = 30s"]
    assert doc.text[c.start : c.end] == "wake_interval: <duration> | default = 30s"
    # the rest of the code block, and prose under the heading, are not setting lines
    assert not any("upstream_config" in t or "listeners" in t for t in texts)
    assert by_source(claims)["Watches the sources."].reason != "setting read with its option"
    # an ordinary list under a lead-in keeps its lead-in, never the heading
    _, claims = claims_of("# Pets\n\n## Cats\n\nThe shelter has:\n\n- Default: two cats\n")
    assert [c.text for c in claims if c.checkworthy] == ["The shelter has: Default: two cats"]


@pytest.mark.parametrize(
    "sentence, checkworthy",
    [
        ("Publish the package with `hatch publish --repo internal`.", True),
        ("Pass `--max-workers 4` to limit the pool.", True),
        ("Upgrade to version 7.2 before migrating.", True),
        ("Set cache_dir in the settings file.", True),
        ("Edit settings.yaml to change the port.", True),
        ("Open the dashboard and refresh the page.", False),
    ],
)
def test_instructions_that_name_a_command_flag_version_or_option_are_checked(sentence, checkworthy):
    _, claims = claims_of(f"# Guide\n\n{sentence}\n")
    assert claims[1].checkworthy is checkworthy
    assert (claims[1].reason == "instruction") is not checkworthy


@pytest.mark.parametrize(
    "sentence, ts",
    [
        ("The tool formats every file in the current directory.", False),
        ("The hook runs in the current working directory.", False),
        ("Tokens are scoped to the current session.", False),
        ("The archive currently holds 2,000 maps.", True),
        ("The current champion is the Lisbon team.", True),
        ("The default timeout is 30 seconds.", False),
    ],
)
def test_the_time_window_is_for_claims_about_the_world(sentence, ts):
    _, claims = claims_of(f"# Notes\n\n{sentence}\n")
    assert claims[1].time_sensitive is ts


def test_an_object_literal_item_is_one_claim():
    # Docusaurus page (RTK Query "Automated Re-fetching"): a list of tag arrays under a lead-in
    _, claims = claims_of(
        "Endpoints whose data `provided` the following tags would _not_ have their data invalidated:\n\n"
        "- `['User']`\n- `[{ type: 'User', id: 1 }]`\n- `[{ type: 'User', id: 1 }, { type: 'User', id: 'LIST' }]`\n",
        "automated-refetching.mdx",
    )
    lead = "Endpoints whose data provided the following tags would not have their data invalidated"
    assert [c.text for c in claims if c.checkworthy] == [
        f"{lead}: ['User']",
        f"{lead}: [{{ type: 'User', id: 1 }}]",
        f"{lead}: [{{ type: 'User', id: 1 }}, {{ type: 'User', id: 'LIST' }}]",
    ]


def test_a_conditional_sentence_keeps_its_condition_on_every_part():
    # RTK Query "Usage With TypeScript": "If ..., then A, and B" is one rule; a cut left "B" alone
    text = (
        "- If `query` has an optional parameter, then a union type with the type of parameter, and `void` has to be "
        "provided, e.g. `number | void`.\n\n"
        "If it is not a draft, the method will pass the plain JS value to Immer's `createNextState()`, and return the "
        "immutably updated result value.\n"
    )
    _, claims = claims_of(text, "usage-with-typescript.mdx")
    assert [c.text for c in claims] == [
        "If query has an optional parameter, then a union type with the type of parameter, and void has to be "
        "provided, e.g. number | void.",
        "If it is not a draft, the method will pass the plain JS value to Immer's createNextState(), and return the "
        "immutably updated result value.",
    ]


def test_the_clauses_of_a_split_list_item_are_read_as_items():
    # Redux Toolkit "createEntityAdapter": each clause of an entry keeps the entry's term and is a list item claim
    _, claims = claims_of(
        "The primary content of an entity adapter is a set of generated reducer functions:\n\n"
        "- `addMany`: accepts an array of entities, and adds them if not already present.\n",
        "createEntityAdapter.mdx",
    )
    items = {c.source_text: c for c in claims if c.checkworthy}
    assert set(items) == {"addMany: accepts an array of entities", "adds them if not already present."}
    assert items["adds them if not already present."].text.endswith(": addMany: adds them if not already present.")
    assert {c.reason for c in items.values()} == {LEAD_IN_ATTACHED}


def test_a_cell_that_repeats_its_rows_key_is_not_a_fact():
    page = (
        "# Emojis\n\n## Faces\n\n| | ico | shortcode | |\n| - | :-: | - | - |\n"
        "| [top](#faces) | :smile: | `:smile:` | [top](#table-of-contents) |\n"
    )
    _, claims = claims_of(page, "emojis.md")
    cells = {c.text: c for c in claims if c.start > 0 and not c.text.startswith(("Emojis", "Faces"))}
    assert cells["top: top"].checkworthy is False and cells["top: top"].reason == "cell repeats its row's key"
    assert cells["top: shortcode is :smile:"].checkworthy and cells["top: ico is :smile:"].checkworthy


CODE_LEAD_INS = ClaimSettings(code_lead_ins=True)


def test_a_lead_in_before_a_code_block_is_checked_when_it_names_what_it_states():
    # the lead-in of a list is read with each item; before a code block a lead-in stands alone:
    # "pip search" and "3.10" are facts a release can change, "Run the following" states nothing
    def first(text, settings=CODE_LEAD_INS):
        claim = next(c for c in claims_of(f"# Search\n\n{text}", settings=settings)[1] if c.source_text.endswith(":"))
        return claim.checkworthy, claim.reason

    code = "\n\n```\npip search peppercorn\n```\n"
    # off by default: such lead-ins find changed facts at a precision well below the other findings'
    assert first("Check that your installed Python version is at least 3.10:" + code, ClaimSettings()) == (
        False,
        "lead-in (attached to the items that follow)",
    )
    assert first("pip can search PyPI for packages using the `pip search` command:" + code) == (True, BLOCK_LEAD_IN)
    assert first("Check that your installed Python version is at least 3.10:" + code) == (True, BLOCK_LEAD_IN)
    # a clause of a sentence that states two facts is a lead-in all the same
    assert first("KIND has support for IPv4 and IPv6, you can switch from the default of IPv4 by setting:" + code) == (
        True,
        BLOCK_LEAD_IN,
    )
    assert first("Run the following:" + code) == (False, "lead-in (attached to the items that follow)")
    listed = "Pass `--strict` or one of these:\n\n- `--fast`\n- `--slow`\n"
    assert first(listed) == (False, "lead-in (attached to the items that follow)")
    assert [c.text for c in claims_of(listed, settings=CODE_LEAD_INS)[1] if c.checkworthy] == [
        "Pass --strict or one of these: --fast",
        "Pass --strict or one of these: --slow",
    ]


def test_a_word_after_an_article_is_never_the_verb_of_its_clause():
    # "limits" and "recommended" look like verbs; after "The" they are a noun and its modifier
    _, claims = claims_of("The limits do not change and are the same in every region.\n")
    assert [c.text for c in claims] == ["The limits do not change", "The limits are the same in every region."]
    _, claims = claims_of("# Locking\n\nThe recommended setup keeps a lock file. It pins every version.\n")
    assert [c.text for c in claims if c.checkworthy] == [
        "The recommended setup keeps a lock file.",
        "The recommended setup pins every version.",
    ]
