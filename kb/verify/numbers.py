"""The numbers-only hint: where the rules abstain, the claim's quantities paired with the
sentence's by kind and context, as a weak judgement the model must outweigh."""

from __future__ import annotations

from kb.records import Judgement
from kb.verify.pairing import _pair_by_context
from kb.verify.slots import (
    Quantity,
    Slots,
    bound_relation,
    content_words,
    extract,
    quantity_relation,
    stated_point,
    tokens_outside_quantities,
)

# How often the numbers alone were right where the rules abstained, on the training parts of
# VitaminC and FEVER-Lite (the rules never train): the claim's quantities paired with the
# evidence's by kind and context (skipping the kinds below, in a sentence with enough of the
# claim's other words); every pair agrees and the gold is SUPPORTS 87.6% of 2,038 times (but
# 73% of 93 on FEVER-Lite); one conflicts and the gold is REFUTES 82.5% of 1,253 times (kept at
# 0.78). Too
# weak to decide alone (the subject may differ), so only a hint for the model. The supports
# figure is kept at 0.84, under its pooled precision: a hint that outweighs the model wherever
# it is surer loses on text like FEVER-Lite's (with 0.87 / 0.77 below, FEVER-Lite validation
# fell 0.887 -> 0.881 and stale F1 0.909 -> 0.895; docs/labelling.md).
NUMBERS_ONLY_CONFIDENCE = {"supports": 0.84, "refutes": 0.78}
# In a sentence *loosely* about the claim (under NUMBERS_ONLY_ABOUT of its other words: "the
# confirmed cases reached 86" for "Morocco has less than 90 COVID-19 cases") a count, sum or
# share that pairs through a shared context word is still a hint, a weaker one: SUPPORTS 80.2%
# of 293 times (kept at 0.75, as above), REFUTES 63.2% of 340 times on the same training parts.
NUMBERS_ONLY_LOOSE_CONFIDENCE = {"supports": 0.75, "refutes": 0.62}
# Where only a date stamp or the number of a name agrees ("on 30 January 2014", "Type 2"), in a
# sentence about the claim: SUPPORTS 66.1% of 189 times (loosely about it: 2 of 14, not used).
NUMBERS_ONLY_INCIDENTAL_CONFIDENCE = 0.66
NUMBERS_ONLY = "numbers only"  # how a hint's rationale starts
# Ranks ("3rd"), bare years and versions pair badly by context alone (a page has many years; a
# rank's order is inverted): right about half of the time, no better than no hint.
NUMBERS_ONLY_SKIPPED = ("ordinal", "year", "version")
NUMBERS_ONLY_ABOUT = 0.4  # share of the claim's other content words a sentence "about" it has
# Only these kinds pair in a loosely related sentence: durations and sizes recur across
# unrelated policies ("each on-call shift lasts 7 days", "recovery covers the last 14 days").
LOOSE_KINDS = ("number", "money", "percent")
# A claim's one percentage or sum against the sentence's one of that kind pairs without shared
# words ("a rating of less than 29 %" / "the film scores 29 %"): on the training parts 101 more
# supports hints were right and 3 wrong, 26 more refutations right and 5 wrong.
SOLE_PAIRED_KINDS = ("percent", "money")


def _plain_content(slots: Slots) -> set[str]:
    return set(content_words(tokens_outside_quantities(slots)))


def _sole_of_kind(q: Quantity, cs: Slots, es: Slots) -> Quantity | None:
    mine = [x for x in cs.quantities if x.kind == q.kind]
    theirs = [x for x in es.quantities if x.kind == q.kind]
    return theirs[0] if len(mine) == 1 and len(theirs) == 1 else None


def _bare_context(q: Quantity) -> set[str]:
    """A quantity's context words, whichever side of the number they stand on."""
    return {w.lstrip(">") for w in q.context}


def _shared_context(a: Quantity, b: Quantity) -> bool:
    return bool(_bare_context(a) & _bare_context(b))


def _hint_relation(q: Quantity, ev: Quantity) -> str:
    """A count, sum or share by its interval first: "over 4,500 square feet" holds of "more than
    5,000 square feet", though as two statements of one limit (``bound_relation``: "up to 5
    retries" / "up to 8 retries") they differ. On the training parts this removed 16 wrong
    refutations and added 12 right supports for one right refutation lost."""
    interval = quantity_relation(q, stated_point(ev))
    if q.kind in LOOSE_KINDS and interval != "nei":
        return interval
    return bound_relation(q, ev) or interval


def _agreeing_by_any_side(q: Quantity, es: Slots) -> Quantity | None:
    """The sentence's quantity of ``q``'s kind that shares the most context words with it, read
    on either side of the number ("over $98.95 million worldwide" / "a worldwide total of $99
    million"), when it is the only one with that many and agrees with ``q``. Where the stricter
    pairing found none, it made 104 more supports hints on the training parts, 95 of them
    right; a disagreeing one is left unpaired (only the stricter pairing refutes)."""
    mine = _bare_context(q)
    scored = sorted(((len(mine & _bare_context(x)), i)
                     for i, x in enumerate(es.quantities) if x.kind == q.kind), reverse=True)  # fmt: skip
    if not scored or scored[0][0] < 1 or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    best = es.quantities[scored[0][1]]
    return best if _hint_relation(q, best) == "supports" else None


def _incidental(q: Quantity, cs: Slots) -> bool:
    """A date the claim is stamped with ("by April 19, 2020": few context words to pair by) or
    the number of a name ("Student of the Year 2", "Severity 1"): not a count the claim states."""
    if q.kind == "date":
        return True
    if q.kind != "number" or not q.text.isdigit() or q.start < 2:
        return False
    before = cs.tokens[q.start - 1]
    return before[:1].isupper() and before.isalpha()


def judge_numbers(claim_text: str, sentence: str) -> Judgement | None:
    """What the claim's numbers say against the evidence's, the rest of the claim unchecked:
    each claim quantity paired with an evidence quantity of its kind by their context words
    ("more than 45 wins" with "46 wins"). Refutes if a pair conflicts; supports if every pair
    agrees and at least one of them is a count the claim states; None otherwise. A hint for
    the model tier, never a rules decision on its own."""
    try:
        cs, es = extract(claim_text), extract(sentence)
        # how much the sentence is about what the claim is about, numbers aside
        words = _plain_content(cs)
        if not words:
            return None
        loose = len(words & _plain_content(es)) / len(words) < NUMBERS_ONLY_ABOUT
        wanted = [q for q in cs.quantities if q.kind not in NUMBERS_ONLY_SKIPPED]
        rels, texts, counted, unpaired = [], [], 0, 0
        for q in wanted:
            best, _, _ = _pair_by_context(q, cs, es)
            if best is None and q.kind in SOLE_PAIRED_KINDS:
                best = _sole_of_kind(q, cs, es)
            if best is None and q.kind in LOOSE_KINDS:
                best = _agreeing_by_any_side(q, es)
            if best is not None and loose and not (q.kind in LOOSE_KINDS and _shared_context(q, best)):
                best = None
            if best is None:
                unpaired += not _incidental(q, cs)
                continue
            rels.append(_hint_relation(q, best))
            texts.append((q.text, best.text))
            counted += not _incidental(q, cs)
    except (ValueError, IndexError, TypeError, OverflowError, RecursionError):
        return None
    conf = NUMBERS_ONLY_LOOSE_CONFIDENCE if loose else NUMBERS_ONLY_CONFIDENCE
    about = " (the sentence is loosely about the claim)" if loose else ""
    if "refutes" in rels:
        cv, ev = texts[rels.index("refutes")]
        return Judgement("refutes", conf["refutes"], "rules",
                         f"{NUMBERS_ONLY}: claim {cv} vs evidence {ev}{about}", cv, ev)  # fmt: skip
    if cs.negations % 2 and not es.negations % 2:
        # "did not have 20 episodes" against "a second season of 20 episodes": the numbers agree,
        # the claim denies them. (A negation only in the evidence is mostly in another clause.)
        return None
    if not rels or any(r != "supports" for r in rels):
        return None
    pairs = "; ".join(f"{a} ~ {b}" for a, b in texts)
    if not counted:  # only a date or a name's number agrees: in a sentence about the claim, all paired
        if loose or unpaired:
            return None
        return Judgement("supports", NUMBERS_ONLY_INCIDENTAL_CONFIDENCE, "rules",
                         f"{NUMBERS_ONLY} agree, a date or a name only: {pairs}")  # fmt: skip
    # In a sentence about the claim, a count with nothing to pair with says nothing either way
    # (its context words differ: "outside of North America" / "other territories"); in one only
    # loosely about it, every count must pair.
    if loose and unpaired:
        return None
    rest = f" ({unpaired} of the claim's numbers unpaired)" if unpaired else ""
    return Judgement("supports", conf["supports"], "rules", f"{NUMBERS_ONLY} agree: {pairs}{rest}{about}")
