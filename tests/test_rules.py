"""Rules tier: slot conflicts of each kind, supports, and undecided cases."""

import pytest

from kb.verify.rules import judge_rules
from kb.verify.slots import extract, quantity_relation

REFUTES = [
    # (claim, evidence, claim_value, evidence_value, slot kind in the rationale)
    ("Westlife made under 23.5 million sales in the UK.",
     "According to the BPI, Westlife has been certified for 13 million albums, 1.3 million video albums, "
     "and 9.8 million singles, with a total of more than 24 million combined sales in the UK.",
     "under 23.5 million", "more than 24 million", "number"),
    ("It requires Python 3.6.2+ to run.", "It requires Python 3.9+ to run.", "3.6.2+", "3.9+", "version"),
    ("Node >=14.18.0 is required.", "Node 18+ is required.", ">=14.18.0", "18+", "version"),
    ("Helm version 3.x is installed", "Helm version 3.9+ is installed", "3.x", "3.9+", "version"),
    ("Optional, Default=0s", "Optional, Default=60s", "default=0s", "default=60s", "setting"),
    ("Logs are kept for 30 days.", "Logs are kept for 90 days.", "30 days", "90 days", "duration"),
    ("The unemployment rate was 5% in 2019.", "The unemployment rate was 7% in 2019.", "5%", "7%", "percent"),
    ("The album was released on 5 May 2019.", "The album was released on 7 May 2019 by Sony.",
     "5 May 2019", "7 May 2019", "date"),
    ("The bridge opened in 1932.", "The bridge opened in 1937 after five years of work.", "1932", "1937", "year"),
    ("The DNS provider supports A, AAAA and SRV records.",
     "The DNS provider supports A, AAAA, SRV, MX and NS records.",
     "A, AAAA and SRV", "A, AAAA, SRV, MX and NS", "enumeration"),
    ("Alternative logging levels are DEBUG, PANIC, FATAL, ERROR, WARN, and INFO.",
     "Alternative logging levels are TRACE, DEBUG, INFO, WARN, ERROR, FATAL, and PANIC.",
     "DEBUG, PANIC, FATAL, ERROR, WARN, and INFO", "TRACE, DEBUG, INFO, WARN, ERROR, FATAL, and PANIC", "enumeration"),
    ("Use --line-length to set the width.", "Use --max-line-length to set the width.",
     "--line-length", "--max-line-length", "identifier"),
    ("The file is read from /etc/traefik/traefik.yml.", "The file is read from /etc/traefik/traefik.toml.",
     "/etc/traefik/traefik.yml", "/etc/traefik/traefik.toml", "identifier"),
    ("Barack Obama was born in Kenya.", "Barack Obama was born in Hawaii.", "Kenya", "Hawaii", "entity"),
    ("The response body is larger than 1400 bytes.", "The response body is smaller than 1024 bytes.",
     "larger than 1400 bytes", "smaller than 1024 bytes", "size"),
]  # fmt: skip


@pytest.mark.parametrize("claim,evidence,cv,ev,kind", REFUTES)
def test_slot_conflicts_refute_and_name_the_slot(claim, evidence, cv, ev, kind):
    j = judge_rules(claim, evidence)
    assert j is not None and j.relation == "refutes", j
    assert j.tier == "rules"
    assert j.claim_value == cv and j.evidence_value == ev
    assert j.rationale.startswith(kind + ":"), j.rationale
    assert f"claim {cv} vs evidence {ev}" in j.rationale
    assert 0.5 < j.confidence < 1.0


def test_negation_flip_refutes():
    j = judge_rules("The service is enabled by default.", "The service is not enabled by default.")
    assert j.relation == "refutes" and j.rationale.startswith("negation")


@pytest.mark.parametrize(
    "claim,evidence",
    [
        ("Traefik supports 1.14+ Kubernetes clusters.", "Traefik supports 1.14+ Kubernetes clusters."),
        ("Black can be installed by running `pip install black`.", "Black can be installed by running pip install black."),
        ("Westlife sold more than 23.5 million records in the UK.", "Westlife sold more than 24 million records in the UK."),
        ("The film was released in 1997.", "Soul Food is a 1997 American film released by Fox 2000 Pictures."),
        ("Logs are kept for 30 days.", "By default, logs are kept for 30 days before rotation."),
    ],
)
def test_supports(claim, evidence):
    j = judge_rules(claim, evidence)
    assert j is not None and j.relation == "supports", j


@pytest.mark.parametrize(
    "claim,evidence",
    [
        ("Apples are red.", "The stock market fell sharply on Monday."),  # not about the same thing
        # "under 23.5 million" vs "more than 23 million": the intervals overlap, undecidable
        ("Westlife made under 23.5 million sales in the UK.", "Westlife has a total of more than 23 million combined sales in the UK."),
    ],
)
def test_undecided_returns_none(claim, evidence):
    assert judge_rules(claim, evidence) is None


def test_interval_logic():
    a = extract("under 23.5 million sales").quantities[0]
    b = extract("more than 24 million sales").quantities[0]
    c = extract("more than 23 million sales").quantities[0]
    d = extract("about 20 million sales").quantities[0]
    assert quantity_relation(a, b) == "refutes"
    assert quantity_relation(a, c) == "nei"
    assert quantity_relation(a, d) == "supports"


def test_versions_and_ranges():
    def q(s):
        return extract(s).quantities[0]

    assert quantity_relation(q("Python 3.6.2+"), q("Python 3.9+")) == "refutes"
    assert quantity_relation(q("Node >=14.18.0"), q("Node 14.18+")) == "supports"
    assert quantity_relation(q("Python 3.6-3.10"), q("Python 3.6 - 3.10")) == "supports"


@pytest.mark.parametrize(
    "claim,evidence,cv,ev",
    [
        ("Failed deliveries are retried up to 5 times.", "Failed deliveries are retried up to 8 times.", "up to 5", "up to 8"),
        ("Scheduled maintenance is announced at least 7 days in advance.",
         "Scheduled maintenance is announced at least 14 days in advance.", "at least 7 days", "at least 14 days"),
        ("The Java SDK requires Java 11 or later.", "The Java SDK requires Java 17 or later.", "11 or later", "17 or later"),
        ("Files moved to the trash are purged after 60 days.", "Files moved to the trash are purged after 45 days.",
         "60 days", "45 days"),
        ("Additional storage costs $0.10 per GB per month.", "Additional storage costs $0.08 per GB per month.",
         "$0.10", "$0.08"),
    ],
)  # fmt: skip
def test_limits_stated_with_the_same_comparator_compare_their_bounds(claim, evidence, cv, ev):
    j = judge_rules(claim, evidence)
    assert j is not None and j.relation == "refutes", j
    assert (j.claim_value, j.evidence_value) == (cv, ev)


def test_same_numbers_about_another_subject_do_not_refute():
    # "retained for 5 years" vs "retained for 2 years", but metrics vs audit logs
    assert judge_rules("Aggregated metrics are retained for 5 years.", "Audit logs are retained for 2 years.") is None


def test_numbers_only_hint_reads_the_numbers_when_the_rest_is_unchecked():
    from kb.verify.rules import NUMBERS_ONLY, judge_numbers

    # the full rules abstain (the claim names a player the sentence does not), the numbers do not
    claim = "Smith has a record of more than 45 wins."
    assert judge_rules(claim, "It gives him a total record of 46 wins and 60 losses.") is None
    agree = judge_numbers(claim, "It gives him a total record of 46 wins and 60 losses.")
    assert agree.relation == "supports" and agree.rationale.startswith(NUMBERS_ONLY)
    # a source that says exactly 45: "more than 45" is false of it
    conflict = judge_numbers(claim, "It gives him a total record of 45 wins and 60 losses.")
    assert conflict.relation == "refutes" and (conflict.claim_value, conflict.evidence_value) == ("more than 45", "45")
    # nothing to say: a sentence about something else with the same number, a rank, a bare year
    assert judge_numbers("Each on-call shift lasts 7 days.", "Point-in-time recovery covers the last 7 days.") is None
    assert judge_numbers("The team finished 3rd in the league.", "The team finished 5th in the league.") is None
    assert judge_numbers("The band formed in 1979 in Ohio.", "The band formed in 1981 in Ohio.") is None
    # every number must agree: one that pairs with nothing leaves the hint out
    assert judge_numbers("Severity 1 postmortems are due within 5 business days.",
                         "Severity 1 incidents require an incident commander.") is None  # fmt: skip


def test_a_number_in_words_or_a_rank_agrees_with_itself():
    # a word number is an exact point: "three" is [3, 3], so "three" against "three" (or "10"
    # against "ten") agrees; it had been the empty [3, 3) and refuted itself
    assert (
        judge_rules("The show has three seasons.", "The show, which premiered in 2015, has three seasons on Netflix.").relation
        == "supports"
    )
    from kb.verify.slots import stated_point

    ten = stated_point(extract("It has 10 seasons.").quantities[0])  # a source's "10" means 10
    assert quantity_relation(extract("It has ten seasons.").quantities[0], ten) == "supports"
    assert quantity_relation(extract("It has two seasons.").quantities[0], ten) == "refutes"
    assert quantity_relation(extract("She finished 3rd.").quantities[0], extract("She finished 3rd.").quantities[0]) == "supports"
    from kb.verify.rules import judge_numbers

    assert judge_numbers("Artpop debuted at number one on the United States Radio 200.",
                         "The album debuted at number one on the United States Billboard 200 with sales of 258,000 copies."
                         ).relation == "supports"  # fmt: skip


def test_a_decade_written_with_an_apostrophe_is_a_range():
    (decade,) = extract("He was born in the 1970's.").quantities
    assert (decade.kind, decade.lo, decade.hi, decade.text) == ("year", 1970, 1979, "1970 ' s")
    sentence = "Jeong Hyeong-don (born February 7, 1978) is a South Korean comedian."
    assert judge_rules("Jeong Hyeong-don was born in the 1970's.", sentence).relation == "supports"
    assert judge_rules("Jeong Hyeong-don was born in the 1960's.", sentence).relation == "refutes"


def test_a_four_digit_count_of_a_plural_noun_is_a_number_not_a_year():
    (limit,) = extract("The gateway accepts more than 1000 requests per second.").quantities
    assert limit.kind == "number" and limit.lo == 1000
    verdict = judge_rules("The gateway accepts more than 1000 requests per second.",
                          "The gateway accepts up to 800 requests per second.")  # fmt: skip
    assert verdict.relation == "refutes" and verdict.confidence > 0.55  # a number conflict, not a weak year one
    # years still modify nouns after a determiner or in a list, and end titles
    assert [q.kind for q in extract("It is a 2004 sports drama film.").quantities] == ["year"]
    assert [q.kind for q in extract("He played in the 2011, 2015 and 2019 editions.").quantities] == ["year"] * 3
    assert [q.kind for q in extract("Blade Runner 2049 continues the story.").quantities] == ["year"]


def test_numbers_hint_reads_past_a_date_stamp_and_pairs_a_sole_percentage():
    from kb.verify.rules import judge_numbers

    # the count agrees; the claim's date stamp has no context words to pair by and need not
    sentence = "As of 3 May 2021 , the city reported 1,812 cases and 40 deaths ."
    assert judge_numbers("The city had fewer than 2,000 cases by May 3 , 2021 .", sentence).relation == "supports"
    assert judge_numbers("The city had more than 2,000 cases by May 3 , 2021 .", sentence).relation == "refutes"
    # a date alone still has to pair: nothing is said of it otherwise
    assert judge_numbers("The city reported its cases on May 9 , 2021 .", sentence) is None
    # one percentage on each side is the same figure, whatever words surround it
    review = "The aggregator gives the film 64 % from 90 critics ."
    assert judge_numbers("The film has a score under 70 % on the aggregator .", review).relation == "supports"
    assert judge_numbers("The film has a score above 70 % on the aggregator .", review).relation == "refutes"


def test_a_count_of_the_same_thing_is_a_weaker_hint_in_a_sentence_loosely_about_the_claim():
    from kb.verify.rules import NUMBERS_ONLY_CONFIDENCE, NUMBERS_ONLY_LOOSE_CONFIDENCE, judge_numbers

    # the sentence does not name the town, but counts the same cases
    sentence = "the confirmed cases reached 86 , most of them from abroad ."
    hint = judge_numbers("Riverside recorded fewer than 90 cases in March .", sentence)
    assert hint.relation == "supports" and "loosely" in hint.rationale
    assert hint.confidence == NUMBERS_ONLY_LOOSE_CONFIDENCE["supports"] < NUMBERS_ONLY_CONFIDENCE["supports"]
    assert judge_numbers("Riverside recorded more than 90 cases in March .", sentence).relation == "refutes"
    # durations recur across unrelated policies: "7 days" of a shift is not "14 days" of recovery
    assert judge_numbers("Each on-call shift lasts 7 days .", "Point-in-time recovery covers the last 14 days .") is None
    # a count of something else does not pair
    assert judge_numbers("Riverside recorded fewer than 90 hospitals in March .", sentence) is None


def test_a_count_with_nothing_to_pair_with_does_not_block_the_counts_that_agree():
    from kb.verify.rules import judge_numbers

    hint = judge_numbers("The league has more than 20 teams and 400 players .", "The league has 24 teams .")
    assert hint.relation == "supports" and "1 of the claim's numbers unpaired" in hint.rationale
    assert judge_numbers("The league has more than 30 teams and 400 players .", "The league has 24 teams .").relation == "refutes"
    # the number of a name is not a count the claim states: it cannot carry a support alone
    assert judge_numbers("Severity 1 postmortems are due within 5 business days .",
                         "Severity 1 postmortems need an incident commander .") is None  # fmt: skip
    # a date or a name's number that agrees, with nothing else to pair, is the weakest hint
    from kb.verify.rules import NUMBERS_ONLY_INCIDENTAL_CONFIDENCE

    weak = judge_numbers("The album was released in Europe on 3 May 2019 .", "It was released on 3 May 2019 in Europe .")
    assert weak.relation == "supports" and weak.confidence == NUMBERS_ONLY_INCIDENTAL_CONFIDENCE < 0.7


def test_a_sum_pairs_by_its_words_on_either_side_when_it_agrees():
    from kb.verify.rules import judge_numbers

    sentence = "It grossed $ 55 million at home and $ 44 million abroad , for a worldwide total of $ 99 million ."
    hint = judge_numbers("The film earned over $ 98.5 million worldwide .", sentence)
    assert hint.relation == "supports" and "$ 99 million" in hint.rationale
    # the looser pairing never refutes: a disagreeing total is left to the model
    assert judge_numbers("The film earned over $ 120 million worldwide .", sentence) is None


def test_numbers_hint_reads_a_lower_bound_as_an_interval_and_pairs_the_nearest_of_equals():
    from kb.verify.rules import judge_numbers

    # "more than 5,000" lies inside "over 4,500": not two different limits
    assert judge_numbers("The family owns over 4,500 square feet of land .",
                         "The family owned more than 5,000 square feet of land .").relation == "supports"  # fmt: skip
    # two counts fit the context equally: the nearer value is the one the claim speaks of
    sentence = "Fans bought one million copies in May , and in all fans bought more than 11 million copies ."
    assert judge_numbers("Fans bought more than 11 million copies .", sentence).relation == "supports"
    assert judge_numbers("Fans bought fewer than 10 million copies .", sentence).relation == "refutes"


def test_agreeing_numbers_do_not_support_a_claim_that_denies_them():
    from kb.verify.rules import judge_numbers

    sentence = "The series was renewed for a second season of 20 episodes, which premiered in January."
    assert judge_numbers("The second season of the series did not have 20 episodes.", sentence) is None
    assert judge_numbers("The second season of the series had 20 episodes.", sentence).relation == "supports"


def test_averaged_over_a_count_of_critics_is_that_count_not_a_lower_bound():
    (raters, score) = extract("Averaged over 7 critics , the film holds a score of 54 .").quantities
    assert (raters.op, raters.lo, raters.hi) == ("=", 6.5, 7.5)
    verdict = judge_rules("Averaged over 7 critics , the film holds a score of 54 .",
                          "Averaged over 10 critics , the film holds a score of 54 .")  # fmt: skip
    assert verdict.relation == "refutes" and "7" in verdict.rationale and "10" in verdict.rationale
    # an average of some other count keeps "over" as "more than"
    (viewers,) = extract("The show averaged over 11 million viewers .").quantities
    assert viewers.op == ">" and viewers.lo == 11e6


@pytest.mark.parametrize(
    "claim, evidence, relation",
    [
        # the newer sentence holds the claim's words but extends what "only" restricted
        (
            "Snapshots can only be restored to the original region.",
            "Snapshots can only be restored to the original region or a paired region.",
            "refutes",
        ),
        ("The exporter accepts only JSON files.", "The exporter accepts only JSON and YAML files.", "refutes"),
        # an alternative and an added condition change the fact
        ("Signing in needs a hardware key.", "Signing in needs a hardware key or a passkey.", "refutes"),
        ("The scheduler retries failed jobs.", "The scheduler retries failed jobs unless they were cancelled.", "refutes"),
        # a bound written with "or" is no alternative, and an unrestricted list or a new clause
        # does not change what the claim says
        ("The plugin needs Go 1.21 or later.", "The plugin needs Go 1.21 or later.", "supports"),
        ("The exporter writes CSV files.", "The exporter writes CSV files and Parquet files.", "supports"),
        ("The exporter writes CSV files.", "The exporter writes CSV files, which open in any spreadsheet.", "supports"),
        # another way beside what the claim allows leaves it true
        (
            "To collect coverage, you can pass the --coverage flag.",
            "To collect coverage, you can pass the --coverage flag or set coverage.enabled in the config.",
            "supports",
        ),
    ],
)
def test_containment_is_not_support_when_the_evidence_extends_or_qualifies_it(claim, evidence, relation):
    j = judge_rules(claim, evidence)
    assert j is not None and j.relation == relation, j
    if relation == "refutes":
        assert "extended" in j.rationale


@pytest.mark.parametrize(
    "claim, evidence",
    [
        ("Each span carries a traceID attribute.", "Each span carries a trace_id attribute."),
        ("Each span carries a traceID attribute.", "Each span carries a traceId attribute."),
        ("The probe reads the pod_ip label.", "The probe reads the pod_address label."),
    ],
)
def test_identifiers_compare_exactly(claim, evidence):
    j = judge_rules(claim, evidence)
    assert j is not None and j.relation == "refutes" and j.rationale.startswith("identifier"), j


def test_a_name_written_out_with_its_namespace_is_the_same_name():
    # a plugin API page that now writes its helpers with the module they hang from
    for claim, evidence in [
        ("The example above uses util.addTrailingComment, which automatically sets comment.leading/trailing/printed to "
         "appropriate values and adds the comment to the AST node's comments array.",
         "The example above uses acme.util.addTrailingComment, which automatically sets comment.leading/trailing/printed to "
         "appropriate values and adds the comment to the AST node's comments array."),
        ("The util.addTrailingComment/addLeadingComment functions attach a comment to an AST node.",
         "The acme.util.addTrailingComment/addLeadingComment functions attach a comment to an AST node."),
    ]:  # fmt: skip
        j = judge_rules(claim, evidence)
        assert j is not None and j.relation == "supports", j
    # another function under the namespace is still another name
    j = judge_rules("Call util.addTrailingComment on the node.", "Call acme.util.addLeadingComment on the node.")
    assert j is not None and j.relation == "refutes" and j.rationale.startswith("identifier"), j


def test_a_word_joined_or_written_apart_is_notation():
    for claim, evidence in [("Settings for the Addon are read at start.", "Settings for the Add-on are read at start."),
                            ("This repository holds the Home Assistant Addon, for use with Home Assistant OS.",
                             "This repository holds the Home Assistant Add-on, for use with Home Assistant OS."),
                            ("VSCode reads the schema.", "VS Code reads the schema.")]:  # fmt: skip
        j = judge_rules(claim, evidence)
        assert j is not None and j.relation == "supports", j
    j = judge_rules("Disable colours with --nocolor.", "Disable colours with --no-color.")
    assert j is not None and j.relation == "refutes", j


def test_prose_words_still_compare_loosely():
    assert judge_rules("The Importer skips Hidden files.", "The importer skips hidden files.").relation == "supports"
    assert judge_rules("It reads the *config* file.", "It reads the config file.").relation == "supports"


@pytest.mark.parametrize(
    "claim, evidence, relation",
    [
        ("A channel holds up to 500 members.", "The maximum channel size is 2,000 members.", "refutes"),
        ("A board can have at most 12 columns.", "Boards are limited to 12 columns.", "supports"),
        ("Attachments are capped at 25 MB per message.", "The attachment limit is 40 MB per message.", "refutes"),
        ("Each key signs no more than 1,000 requests.", "A key is capped at 1,000 requests.", "supports"),
    ],
)
def test_bound_words_pair_with_each_other(claim, evidence, relation):
    j = judge_rules(claim, evidence)
    assert j is not None and j.relation == relation, j


def test_synonymous_predicates_and_list_membership_support():
    j = judge_rules("Allowed archive formats: tar", "Supported archive formats are zip, tar and 7z.")
    assert j is not None and j.relation == "supports", j
    assert (
        judge_rules("Permitted archive formats: rar", "Supported archive formats are zip, tar and 7z.") is None
        or judge_rules("Permitted archive formats: rar", "Supported archive formats are zip, tar and 7z.").relation != "supports"
    )


@pytest.mark.parametrize(
    "claim, evidence, relation",
    [
        # another spelling of the claim's option listed beside it is an alias, no condition
        ("CLI: --isolate=false", "CLI: --no-isolate, --isolate=false", "supports"),
        ("Pass --verbose for more output.", "Pass --verbose or -v for more output.", "supports"),
        # an identifier that is not another spelling of the claim's option still qualifies it
        ("CLI: --isolate=false", "CLI: test.isolate, --isolate=false", "refutes"),
    ],
)
def test_an_option_listed_beside_the_claims_own_is_an_alias(claim, evidence, relation):
    j = judge_rules(claim, evidence)
    assert j is not None and j.relation == relation, j
