"""Verification: judge each claim against its evidence, then label it with the policy.

``Verifier(settings).verify(claims, evidence, today)`` runs, for one batch of claims:

1. the **rules** tier (:mod:`kb.verify.rules`) on every (claim, evidence sentence) pair, plus
   the other sentences of each passage that align with the claim (cheap, deterministic);
2. the **model** tier (:mod:`kb.verify.model`, a calibrated cross-encoder) in *one batched call*
   over every pair the rules left undecided or decided with less than ``rules_override``
   confidence (skipped entirely with ``use_model=False``: depth D0, rules only);
3. a combination per pair: a sure rules decision (exact match, slot conflict) stands; otherwise
   the model's calibrated judgement, reinforced when the rules agree; where the rules abstain,
   the claim's numbers against the evidence's (:func:`kb.verify.rules.judge_numbers`) are a
   weak judgement the model has to outweigh;
4. the **revision contrast** (:mod:`kb.verify.revision`) between dated versions of one source:
   where the claim states what an older version said and the newest replaced, or what only the
   newest says, those two passages are judged by that change;
5. the labelling **policy** (:func:`kb.verify.policy.decide`) over all passages of the claim
   and their source dates: supported / contradicted / stale / uncertain, with gaps.

Prefect-free; usable from a notebook.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from kb.claims.split import ENTRY_TERM, SETTING_NOTE, code_like, entry_term, field_name, keyed_setting_line, setting_line, setting_option
from kb.claims.text import passage_sentences, sentence_spans
from kb.claims.units import LEAD_IN_ATTACHED, TABLE_NOTE, cell_place
from kb.evidence.versions import parse_renames, prose_default, row_holds_default, with_terms_renamed, written_key
from kb.records import Claim, Evidence, Judgement, Verdict, replaced
from kb.verify.additions import ADDED_NOTE, respelt_only
from kb.verify.history import without_history_note
from kb.verify.ort_judge import load_judge
from kb.verify.policy import (
    DEFAULT_THRESHOLDS,
    FIELD_DEFAULT_NOTE,
    OPTION_ELSEWHERE_NOTE,
    OTHER_HEADING_NOTE,
    OTHER_ROW_NOTE,
    decide,
    document_status,
    entries_elsewhere,
    newest_dates,
    settled_as_written,
)
from kb.verify.revision import apply_contrast
from kb.verify.rewording import chords_spelt_out
from kb.verify.rules import judge_numbers, judge_rules
from kb.verify.slots import canonical, content_set, content_words, word_tokens
from kb.verify.specfacts import judge_spec_fact

__all__ = ["Verifier", "VerifierSettings", "verifier_for", "decide", "document_status", "judge_rules", "combine"]

log = logging.getLogger(__name__)
SETTING_ELSEWHERE_CONFIDENCE = 0.9  # sure enough that the model does not read another option's line
SETTING_CHANGED_CONFIDENCE = 0.85
# A list's lead-in ("Two interfaces are included:") states none of the list's items, so against
# a claim read as "lead-in: item" it is nei, sure enough that the model does not read it either.
LEAD_IN_CONFIDENCE = 0.9
RENAMED_NOTE = "the claim with the terms the newest release renamed across its pages"
LEAD_IN_NOTE = "the sentence is the lead-in of the claim's list: it states none of the items"
# A list item that opens on its entry's term ("removeMany: accepts an array of IDs") is about that
# entry: another entry's line of the list ("addOne: accepts a single entity") states nothing of it,
# however alike the two read, sure enough that the model does not read it either.
OTHER_ENTRY_CONFIDENCE = 0.9
OTHER_ENTRY_NOTE = "the line is about another entry of the list"
OTHER_LIST_NOTE = "the sentence is the lead-in of another list, beside the claim's own"
# A table cell is read with its row's key ("Shell Bash: Windows is yes") and its place in the row.
# A row whose first cell is another key is about another entry and says nothing of the cell,
# sure enough that the model does not read it. The entry's own row, as wide as the KB's, holds the
# cell's value in its place (supports) or another value there (the value changed).
OTHER_ROW_CONFIDENCE = 0.9
FIELD_DEFAULT_CONFIDENCE = 0.95
SAME_ROW_CONFIDENCE = 0.95
CELL_CHANGED_CONFIDENCE = 0.85
# An issue label that opens a changelog entry: "#9488: ", ":issue:`3616`: ", "issue #12 - "
ISSUE_LABEL = re.compile(r"^\s*(?::issue:`?\d+`?|#\d+|issue\s*#?\d+)\s*[:\-\u2013]\s*", re.IGNORECASE)


def _default_in_field(claim: Claim, sentence: str, section: str) -> Judgement | None:
    """A prose default ("Default directory is .cache which ...") against a table row under the
    claim's heading path whose cell holds that value: a reference that moved its defaults into
    each entry's field (Sphinx's ``:default:``, read as the entry's row) still states it."""
    values = prose_default(claim.source_text or claim.text)
    if not values or section != claim.section or not row_holds_default(sentence, values):
        return None
    return Judgement("supports", FIELD_DEFAULT_CONFIDENCE, "rules", f"{FIELD_DEFAULT_NOTE} ({sentence.split(' | ')[0].strip()})")


def _flow_items(text: str) -> list[str] | None:
    """The items of a value written as a bracketed list ("[q, <ctrl+c>]"), in one chord notation,
    unquoted; None for any other value."""
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    return [_item_key(item) for item in text[1:-1].split(",") if item.strip()]


def _item_key(item: str) -> str:
    """A listed value as compared: in one chord notation, unquoted; a key that is punctuation alone
    (">", "<") as written, where ``written_key`` keeps nothing of it."""
    bare = item.strip().strip("'\"")
    return written_key(chords_spelt_out(bare)) or bare


def _listed_with_others(value: str, now: str) -> bool:
    """The newer cell lists the claim's value, or each item of it, with others beside it: a default
    key binding that gained an alias (``<pgdown>`` -> ``[<pgdown>, J, <ctrl+d>]``) still holds."""
    items = _flow_items(now)
    if not items:
        return False
    mine = _flow_items(value) or [_item_key(value)]
    return bool(mine) and all(m and m in items for m in mine)


def table_judgement(claim: Claim, sentence: str, passage: str = "", section: str = "") -> Judgement | None:
    """A table cell's claim against a table row (cells joined by " | "): nei when the row is
    another entry's; on the entry's own row with as many cells, supports when the cell in the
    claim's place holds its value and refutes when it holds another; on a reshaped row, supports
    when one cell holds the value and nei when several do; None when the sentence is no row or
    the reshaped row lacks the value (the other rules and the model judge it). A row cut where its
    last cell's first sentence ends is read on in ``passage``. A row keyed by a field name
    ("Default: | 20") is about the entry its heading names: under another heading (``section``,
    the evidence's heading path) it is another entry's row."""
    cells = [c.strip() for c in sentence.split(" | ")]
    place = cell_place(claim.reason)
    if len(cells) < 2 or place is None:
        return None
    key = written_key(chords_spelt_out(cells[0]))
    subject = written_key(chords_spelt_out(claim.text.split(": ", 1)[0]))
    if not key or not subject:
        return None
    if subject != key and not subject.endswith(" " + key):
        return Judgement("nei", OTHER_ROW_CONFIDENCE, "rules", f"{OTHER_ROW_NOTE} ({cells[0]})")
    mine, theirs = claim.section.rsplit(" > ", 1)[-1], section.rsplit(" > ", 1)[-1]
    if field_name(cells[0]) and section and written_key(mine) != written_key(theirs):
        return Judgement("nei", OTHER_ROW_CONFIDENCE, "rules", f"{OTHER_HEADING_NOTE} ({theirs}: {cells[0]})")
    column, width = place
    value = written_key(claim.source_text)
    if len(cells) != width:
        # a column added or dropped: the cell's place is lost; its value, once in the row, still
        # stands there, and a value the row holds several times (yes, yes) says nothing either way
        holding = sum(1 for c in cells[1:] if written_key(c) == value)
        if holding == 1:
            return Judgement("supports", OTHER_ROW_CONFIDENCE, "rules", "the entry's row, reshaped, still holds the value")
        if holding:
            return Judgement("nei", OTHER_ROW_CONFIDENCE, "rules", "the entry's row changed shape: the value's place is unknown")
        return None
    now = cells[column - 1]
    # a history note the cell ended with ("... . Since v1.19") moved out of it or went: no change;
    # nor is a key chord written in another notation ("<c-t>" / "<ctrl+t>")
    if written_key(now) in (value, written_key(without_history_note(claim.source_text))) or (
        written_key(chords_spelt_out(now)) == written_key(chords_spelt_out(claim.source_text))
    ):
        return Judgement("supports", SAME_ROW_CONFIDENCE, "rules", "the entry's own row holds the value in its place")
    if _listed_with_others(claim.source_text, now):
        return Judgement("supports", SAME_ROW_CONFIDENCE, "rules",
                         f"the entry's own row holds the value in its place, with others listed beside it: {now}")  # fmt: skip
    if len(re.findall(rf"(?:^|\s){re.escape(cells[0])} \| ", passage)) > 1:
        # the first cell names no one entry (a "top" link on every row of an emoji table): the row
        # in view need not be the claim's, and the value in any cell of those rows still stands
        if any(written_key(c) == value for c in passage.split(" | ")):
            return Judgement("supports", OTHER_ROW_CONFIDENCE, "rules", "a row of the same first cell still holds the value")
        return Judgement("nei", OTHER_ROW_CONFIDENCE, "rules", f"{OTHER_ROW_NOTE} (many rows begin {cells[0]!r})")
    if column == width and written_key(now) and value.startswith(written_key(now) + " "):
        # the row was cut where its last cell's first sentence ends ("Disables output processing."
        # of "Disables output processing. Default for redirected output"): the passage goes on
        row, text = written_key(sentence), written_key(passage)
        rest, at = value[len(written_key(now)) + 1 :], text.find(row)
        after = text[at + len(row) :].strip() if at >= 0 else ""
        if not after:
            return None  # the passage ends with the row: what follows in the cell is not in view
        if after.startswith(rest) or rest.startswith(after):
            # the cell goes on as the claim's value does (as far as the passage shows it)
            return Judgement("supports", SAME_ROW_CONFIDENCE, "rules", "the entry's own row holds the value in its place")
    respelt = respelt_only(claim.source_text, now)
    if respelt is not None:
        # only a typo fixed ("intervealed" -> "interleaved"): the value stands. A word added to a
        # cell is read as a change: a parameter added to a signature, "abbreviated" commit hash
        return Judgement("supports", SAME_ROW_CONFIDENCE, "rules",
                         f"the entry's own row holds the value in its place, respelt ({respelt})")  # fmt: skip
    return Judgement("refutes", CELL_CHANGED_CONFIDENCE, "rules", f"the entry's row now reads {now!r} in that place",
                     claim.source_text.strip(), now)  # fmt: skip


def settled_without_model(claim: Claim, evidence: list[Evidence]) -> Verdict | None:
    """The verdict of a claim that the current evidence states word for word, or of a table cell
    whose row holds it in its place, with nothing dated after (policy.settled_as_written); None
    when its passages need judging."""
    return settled_as_written(claim, evidence, table_judgement)


def _same_field(line: str, other: str) -> bool:
    """Two field lines of the same kind ("Default: 90." and "Default: 80.")."""
    return keyed_setting_line(line) and canonical(line.split(":", 1)[0]) == canonical(other.split(":", 1)[0])


def _entry_field(passage: str, option: str, line: str) -> str | None:
    """The field line of the entry ``option`` (canonical) that states the same kind of fact as
    ``line`` ("Default: 90." for "Default: 80."): the first such line after the place where the
    entry opens on its term ("timeout : Seconds to wait ..."), before the next entry's term."""
    if ":" not in line:
        return None
    kind = canonical(line.split(":", 1)[0])
    openings = [m for m in _TERM_OPENING.finditer(passage) if not field_name(m.group(1))]
    for k, m in enumerate(openings):
        if canonical(m.group(1)) != option:
            continue
        entry = passage[m.end() : openings[k + 1].start() if k + 1 < len(openings) else len(passage)]
        for a, b in sentence_spans(entry):
            said = entry[a:b].strip()
            if said.count(":") and canonical(said.split(":", 1)[0]) == kind and keyed_setting_line(said):
                return said
    return None


_TERM_OPENING = re.compile(r"(?:^|(?<=[\s:]))" + ENTRY_TERM + r"\s+")  # an entry's term anywhere in a passage
_TERM_CLOSING = re.compile(r"(?:^|(?<=\s))" + ENTRY_TERM + r"\s+$")  # the term a clause of an entry follows


def _opens_entry(sentence: str, m: re.Match) -> bool:
    """Whether the term at ``m`` opens an entry: at the sentence's start or after a sentence's or
    lead-in's end ("...: addOne: ..."), or, a code-like name ("setMany"), after an item that
    ended without a stop. A plain word inside prose ("The default pool: 'forks' ...") opens none."""
    before = sentence[: m.start()].rstrip()
    return not before or before[-1] in ":.;!?" or code_like(m.group(1))


def _entry_line(sentence: str, own: str) -> str | None:
    """The part of ``sentence`` about the entry ``own`` (canonical): the whole sentence when it
    opens on no entry's term; from the entry's term to the next entry's when it holds the entry's
    line ("lead-in: addOne: ... removeMany: accepts ..." -> "removeMany: accepts ..."); None when
    it holds only other entries' lines, after a lead-in at most."""
    openings = [m for m in _TERM_OPENING.finditer(sentence) if entry_term(m.group(0)) and not field_name(m.group(1))
                and _opens_entry(sentence, m)]  # fmt: skip
    # a term followed at once by another is the tail of a lead-in ("... state object: addOne: ...")
    openings = [m for k, m in enumerate(openings) if k + 1 == len(openings) or openings[k + 1].start() > m.end()]
    if not openings:
        return sentence
    head = sentence[: openings[0].start()].strip()
    for k, m in enumerate(openings):
        if canonical(m.group(1)) == own:
            return sentence[m.start() : openings[k + 1].start() if k + 1 < len(openings) else len(sentence)].strip()
    return None if not head or head.rstrip("*_`").endswith(":") else sentence


def item_entry(claim: Claim) -> tuple[str, str]:
    """The entry term a list item claim is about and the claim's text from that term on:
    ("removeMany", "removeMany: accepts an array of IDs") of "lead-in: removeMany: accepts an
    array of IDs"; for a later clause of a split item, the term copied in front of it ("addMany"
    of "lead-in: addMany: adds them if not already present"); ("", "") for any other claim."""
    if claim.reason != LEAD_IN_ATTACHED or not claim.source_text.strip():
        return "", ""
    text, item = claim.text.rstrip(), claim.source_text.strip()
    if not text.endswith(item):
        return "", ""
    term = entry_term(item)
    if term:
        return term, item
    m = _TERM_CLOSING.search(text[: len(text) - len(item)])
    term = entry_term(m.group(0)) if m else ""
    return (term, text[m.start() :]) if m and term else ("", "")


# A lead-in opening on one of these ("It takes instances of Limits which define:") names its subject
# elsewhere; the claim read with it may name the subject instead ("Pool limits takes instances ...").
_POINTING_SUBJECTS = frozenset("it this that these those they".split())
MIN_LEAD_WORDS = 3  # a shared lead-in shorter than this could be any sentence's tail
OTHER_ENTRY_WORDS = 3  # at most this many words name another entry of the list after its lead-in


def is_lead_in_of(claim_text: str, sentence: str, item: str = "") -> bool:
    """``sentence`` is a lead-in (it ends with a colon) that the claim starts with word for word
    and goes on from: the claim is one of the items the lead-in introduces. With the ``item`` the
    claim was read from, the claim's lead-in part may also differ from the sentence at its front
    only: words in front of it (a bold line the page puts above the list, read into the sentence)
    or a subject for a pointing word ("It takes ..." read as "Pool limits takes ..."), or the
    sentence may be it with its grammar mended ("Matcher function have access ..." -> "... has
    access ..."): the same content words and negations. A lead-in that changed in its own words
    ("three ways" -> "four ways", "lacks" -> "now has") is none of these, and is judged as any
    sentence."""
    if not sentence.rstrip().rstrip("*_").endswith(":"):
        return False
    lead, claim = canonical(sentence), canonical(claim_text)
    if bool(lead) and claim.startswith(lead + " "):
        return True
    rest = canonical(item).split() if item else []
    words = claim.split()
    if not rest or words[-len(rest) :] != rest:
        return False
    claim_lead, sentence_lead = words[: -len(rest)], lead.split()
    if _same_lead(claim_lead, sentence_lead):
        return True
    if sentence_lead and sentence_lead[0] in _POINTING_SUBJECTS:
        sentence_lead = sentence_lead[1:]
    n = min(len(claim_lead), len(sentence_lead))
    return n >= MIN_LEAD_WORDS and claim_lead[-n:] == sentence_lead[-n:]


def _same_lead(a: list[str], b: list[str]) -> bool:
    """Two canonical lead-ins that differ in function words only (an agreement or article fixed)."""
    negations = ("not", "no", "never", "cannot")
    if min(len(a), len(b)) < MIN_LEAD_WORDS or sum(w in negations for w in a) != sum(w in negations for w in b):
        return False
    ca, cb = content_set(" ".join(a)), content_set(" ".join(b))
    return bool(ca) and ca == cb


def within_lead_in(claim: Claim, sentence: str) -> bool:
    """``sentence`` is one of the sentences of the lead-in a list item claim was read with
    ("--platform: A platform specifier. For example, ... Available options are: macos_arm64" and
    "For example, ..."), without the item: like the lead-in's last line, it states none of the
    list's items, and the item's words missing from it are no sign that the item went."""
    if claim.reason != LEAD_IN_ATTACHED or not claim.source_text:
        return False
    words, item = canonical(claim.text).split(), canonical(claim.source_text).split()
    said = canonical(sentence)
    if not item or len(words) <= len(item) or words[-len(item) :] != item or len(said.split()) < MIN_LEAD_WORDS:
        return False
    lead = " ".join(words[: -len(item)])
    if f" {said} " in f" {lead} " and f" {' '.join(item)} " not in f" {said} ":
        return True
    # the lead-in read with another entry's name ("... the following sources: venv:"): a line
    # about that entry, ending where its description would start
    said_words, lead_words = said.split(), lead.split()
    k = next((n for n, (a, b) in enumerate(zip(said_words, lead_words)) if a != b), min(len(said_words), len(lead_words)))
    rest = said_words[k:]
    return (sentence.rstrip().rstrip("*_`").endswith(":") and k >= MIN_LEAD_WORDS and 0 < len(rest) <= OTHER_ENTRY_WORDS
            and len(lead_words) - k <= OTHER_ENTRY_WORDS and item[: len(rest)] != rest)  # fmt: skip


def another_lead_in(claim: Claim, sentence: str, section: str) -> bool:
    """``sentence`` is the lead-in (it ends with a colon) of another list than the claim's, under
    another heading path (``section``), without the list item the claim was read from (another
    page's "set some environment variables on your pipeline:"): a lead-in states none of its
    items, so it says nothing of this one. The claim's own lead-in, changed in its own words, is
    still judged as any sentence."""
    if claim.reason != LEAD_IN_ATTACHED or not claim.source_text or section == claim.section:
        return False
    item = canonical(claim.source_text)
    return bool(item) and sentence.rstrip().rstrip("*_`").endswith(":") and f" {item} " not in f" {canonical(sentence)} "


DEFAULT_VERIFIER_THRESHOLDS = {
    **DEFAULT_THRESHOLDS,
    "rules_override": 0.85,  # a rules judgement this sure is not sent to the model
    "model_min": 0.0,  # model judgements below this confidence count as nei
    # A source other than the top passage's, none of whose passages has a rules judgement or
    # holds this share of the claim's content words, is not about the claim: nei without the
    # model. On SciFact-sourced pages the model called 97% of such pairs nei
    # anyway, and they were most of its work (docs/labelling.md, "Relevance gate"). 0.35 rather
    # than 0.25: on SciFact *train* claims 15% fewer model pairs, macro-F1 0.455 vs 0.454.
    # 0 turns it off.
    "relevance_gate": 0.35,
}
# Model judgements a verifier keeps for pairs met again: more than a large KB's open pairs
# (flask's audit sends about 900 to the model), at most some 25 MB with their texts
JUDGED_PAIRS_KEPT = 50_000
GATED_CONFIDENCE = 0.9  # how sure a gated nei is: the model's own nei rate on such pairs, rounded down


@dataclass
class VerifierSettings:
    model_path: str | None = None  # None: the shipped verifier; else a local CrossEncoder folder
    # "onnx": the shipped verifier in ONNX Runtime once its export passed the parity check
    # (kb.verify.ort_judge); "torch": in torch, bf16 where the CPU has it natively
    backend: str = "onnx"
    thresholds: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_VERIFIER_THRESHOLDS))
    use_model: bool = True  # False: rules only (depth D0)
    max_extra_sentences: int = 2  # other sentences of a passage the rules also try
    # Pairs per model call. 32 rather than 64: on 3,713 pairs of a bench speed run, sorted by
    # length as the judge sorts them, 161-171 pairs/s against 137-141, the same argmax on every
    # pair and probabilities within 0.018 (bf16 sums in another order); docs/labelling.md.
    batch_size: int = 32
    # Settle claims the current evidence states word for word, with nothing dated after it,
    # without judging their passages (the default retrieval path; the MiniLM-only path judges all)
    settle_as_written: bool = False


def _other_lists(claim: Claim, evidence: list[Evidence], judgements: list[Judgement]) -> list[Judgement]:
    """A list item's judgements, where a source's newest version still has the item's own lead-in:
    there any other lead-in of that version, without the item, introduces another list ("Example
    2: ... would all be invalidated:" beside "... would not be invalidated:", both under one
    heading) and refutes nothing of this one."""
    if claim.reason != LEAD_IN_ATTACHED or not claim.source_text:
        return judgements
    newest = newest_dates(evidence)
    current = [(e.source_date or date.min) == newest[e.source_id] and not e.removed_in for e in evidence]
    stands = {e.source_id for e, now in zip(evidence, current) if now and is_lead_in_of(claim.text, e.sentence, claim.source_text)}
    if not stands:
        return judgements
    item = f" {canonical(claim.source_text)} "
    out = []
    for e, j, now in zip(evidence, judgements, current):
        if (now and j.relation == "refutes" and e.source_id in stands and e.sentence.rstrip().rstrip("*_`").endswith(":")
                and item not in f" {canonical(e.sentence)} "):  # fmt: skip
            j = Judgement("nei", LEAD_IN_CONFIDENCE, "rules", OTHER_LIST_NOTE)
        out.append(j)
    return out


def _overlap(claim_words: set[str], sentence: str) -> float:
    if not claim_words:
        return 0.0
    return len(claim_words & content_set(sentence)) / len(claim_words)


def _rank(j: Judgement | None) -> tuple:
    if j is None:
        return (0, 0.0)
    return (1 if j.relation == "nei" else 2, j.confidence)


def combine(rule: Judgement | None, probs, override: float = 0.85, independent: bool = False) -> Judgement:
    """One judgement from the rules' (may be None) and the model's calibrated probabilities
    ``[supports, refutes, nei]`` (may be None). ``independent``: the rules judgement read
    something the model did not (a numbers-only hint), so agreement counts as two pieces of
    evidence."""
    if rule is not None and (probs is None or rule.confidence >= override):
        return rule
    if probs is None:
        return Judgement("nei", 0.5, "rules", "rules: undecided (no model)")
    rels = ("supports", "refutes", "nei")
    k = max(range(3), key=lambda i: probs[i])
    rel, p = rels[k], float(probs[k])
    if rule is not None and rule.relation != "nei":
        if rule.relation == rel:
            # agreement: the surer of the two calibrated figures (their product would be
            # overconfident: the two tiers read the same sentence), unless the rules read only
            # what the model reads poorly (the numbers)
            h = rule.confidence
            conf = p * h / (p * h + (1 - p) * (1 - h)) if independent else max(p, h)
            return Judgement(rel, round(conf, 4), "model",
                             f"model {rel} (p={p:.2f}) and rules agree: {rule.rationale}",
                             rule.claim_value, rule.evidence_value)  # fmt: skip
        if rule.confidence > p:
            return rule
    return Judgement(rel, round(p, 4), "model", f"model: {rel} (p={p:.2f})")


class Verifier:
    """Rules first, the model for the rest (one batched call), then the labelling policy."""

    def __init__(self, settings: VerifierSettings | None = None):
        self.settings = settings or VerifierSettings()
        th = dict(DEFAULT_VERIFIER_THRESHOLDS)
        th.update(self.settings.thresholds or {})
        self.thresholds = th
        # a ModelJudge or LightJudge once loaded, or a stand-in with its judge() (bench.labels.CachedModel)
        self._model: Any = None
        self.model_error: str | None = None
        self.tier_counts: dict[str, int] = {}
        # the model's probabilities per (claim text, sentence) already judged, and the model they
        # are from: a pair met again in a later batch is not judged again
        self._probs: dict[tuple[str, str], list[float]] = {}
        self._probs_of: Any = None
        self.settled_as_written = 0  # claims settled without judging their passages (verify)

    # ------------------------------------------------------------------------------------
    @property
    def model(self):
        """The model judge, loaded on first use; None when rules-only or unavailable."""
        if not self.settings.use_model or self.model_error:
            return None
        # batches verified in threads (a dask worker with several) share this verifier: one load
        with _LOADING:
            if self._model is None and not self.model_error:
                try:
                    self._model = load_judge(self.settings.model_path, self.settings.batch_size, self.settings.backend)
                except Exception as exc:  # missing weights, missing package: degrade to rules only
                    self.model_error = f"{type(exc).__name__}: {exc}"
                    log.warning("verifier model unavailable, rules only: %s", self.model_error)
        return self._model

    def _judged(self, model) -> dict[tuple[str, str], list[float]]:
        """The pairs ``model`` has judged for this verifier (none after the model changed)."""
        if self._probs_of is not model:
            self._probs, self._probs_of = {}, model
        return self._probs

    # ------------------------------------------------------------------------------------
    def rules_judgement(self, claim: Claim, ev: Evidence) -> tuple[Judgement | None, str]:
        """The rules' best judgement over the evidence sentence and aligned passage sentences,
        and the sentence the model should see."""
        sentence = ev.sentence or ev.passage
        if ev.source_kind == "spec":
            fact = judge_spec_fact(claim.text, sentence)
            if fact is not None:
                return fact, sentence
        if claim.reason == SETTING_NOTE:
            return self._setting_judgement(claim, ev, sentence)
        if claim.reason.startswith(TABLE_NOTE):
            row = table_judgement(claim, sentence, ev.passage or "", ev.section)
            if row is not None:
                return row, sentence
        field = _default_in_field(claim, sentence, ev.section)
        if field is not None:
            return field, sentence
        texts = [claim.text]
        if claim.source_text and canonical(claim.source_text) != canonical(claim.text):
            texts.append(claim.source_text)
        # a changelog entry's issue label ("#9488: ...") names the entry, not its fact: the entry's
        # statement is judged without it too
        texts += [bare for t in texts if (bare := ISSUE_LABEL.sub("", t, count=1)) != t and bare.strip()]
        # nor does a history note it ends with ("... . Since v1.19"): a release may move it elsewhere
        texts += [bare for t in texts if (bare := without_history_note(t)) != t and bare.strip()]
        # the sentence states the claim once the terms the newest release renamed across the
        # corpus are renamed in it too ("site configuration" -> "project configuration")
        renamed = {len(texts) + k for k in range(len(texts))} if ev.renamed else set()
        if ev.renamed:
            renames = parse_renames(ev.renamed)
            texts += [with_terms_renamed(t, renames)[0] for t in texts]
        cands = [sentence]
        if ev.passage and self.settings.max_extra_sentences:
            cw = set(content_words(word_tokens(claim.text)))
            others = [s for s in passage_sentences(ev.passage) if canonical(s) != canonical(sentence)]
            others.sort(key=lambda s: -_overlap(cw, s))
            cands += [s for s in others[: self.settings.max_extra_sentences] if _overlap(cw, s) >= 0.5]
        best: Judgement | None = None
        best_sentence = sentence
        term, item = item_entry(claim)
        own = canonical(term)
        for s in cands:
            line = _entry_line(s, own) if own else s
            if line is None:
                j = Judgement("nei", OTHER_ENTRY_CONFIDENCE, "rules", OTHER_ENTRY_NOTE)
                if _rank(j) > _rank(best):
                    best, best_sentence = j, s
                continue
            if own and canonical(entry_term(line)) == own:
                # the entry's own line: its term names what the lead-in would, so the item is
                # judged as it reads from its term on
                j = judge_rules(item, line)
                if _rank(j) > _rank(best):
                    best, best_sentence = j, line
                if j is not None and j.relation == "supports":
                    continue
            s = line
            if (is_lead_in_of(claim.text, s, claim.source_text if claim.reason == LEAD_IN_ATTACHED else "")
                    or within_lead_in(claim, s) or another_lead_in(claim, s, ev.section)):  # fmt: skip
                j = Judgement("nei", LEAD_IN_CONFIDENCE, "rules", LEAD_IN_NOTE)
                if _rank(j) > _rank(best):
                    best, best_sentence = j, s
                continue
            refuting: dict[int, Judgement] = {}  # of this sentence, by the text that read the refutation
            for n, t in enumerate(texts):
                j = judge_rules(t, s)
                if (j is not None and j.relation == "supports" and t is not texts[0] and j.confidence < 0.95
                        and not j.rationale.startswith(ADDED_NOTE)):  # fmt: skip
                    continue  # the bare source text counts only when it matches verbatim, or with words added
                if j is not None and j.relation == "refutes" and n not in renamed:
                    refuting[n] = j
                if j is not None and n in renamed:
                    as_written = refuting.get(n - len(texts) // 2)
                    if j.relation == "refutes" and as_written is not None and as_written is best:
                        # the same refutation read with the renamed terms: its conflicts leave out
                        # the renamed pair ("site vs project" is one word in two releases)
                        best = replaced(j, rationale=f"{RENAMED_NOTE} ({ev.renamed.replace('>', ' -> ')}): {j.rationale}")
                        continue
                    if j.relation != "supports":
                        continue  # the renamed text is read for what still states it, nothing else
                    j = replaced(j, rationale=f"{RENAMED_NOTE} ({ev.renamed.replace('>', ' -> ')}): {j.rationale}")
                if _rank(j) > _rank(best):
                    best, best_sentence = j, s
                if best is not None and best.relation == "supports" and best.confidence >= 0.97:
                    return best, best_sentence  # verbatim: nothing can beat it
        return best, best_sentence

    def _setting_judgement(self, claim: Claim, ev: Evidence, sentence: str) -> tuple[Judgement | None, str]:
        """A setting line read with its option ("readTimeout: Optional, Default=0s") is judged
        only against a passage line read the same way: the option's name followed by its line,
        or a line under a heading that names the option. A passage that does not name the
        option says nothing of it, however alike its own "Optional, Default=..." lines are."""
        option = canonical(setting_option(claim))
        pieces = passage_sentences(ev.passage or sentence)
        line = _entry_field(ev.passage or sentence, option, claim.source_text) if option else None
        # a field line ("Default: 80.") is compared only with a field line of the same kind
        keyed = keyed_setting_line(claim.source_text)
        if line is None and option:
            for lead, nxt in zip(pieces, pieces[1:]):
                if (lead.rstrip().endswith(":") and canonical(lead).endswith(option)
                        and (not keyed or _same_field(nxt, claim.source_text))):  # fmt: skip
                    line = nxt
                    break
        # or named by the heading above the evidence line ("#### `peerCertURI`")
        heading = ev.section.rsplit(" > ", 1)[-1]
        if (line is None and option and canonical(heading) == option and setting_line(sentence)
                and not sentence.rstrip().endswith(":")
                and set(canonical(sentence).split()) & set(canonical(claim.source_text).split())):  # fmt: skip
            line = sentence  # a setting line like the claim's ("Optional, Default=..."), not a lead-in
        if line is not None:
            stated = f"{option}: {line}"
            j = judge_rules(claim.text, stated)
            if (j is None or j.relation == "nei") and canonical(line) != canonical(claim.source_text):
                # the option's own line reads otherwise ("Default=1" -> "Default=MaxInt-1"),
                # whether or not the slots parse: that is a change of the setting
                j = Judgement("refutes", SETTING_CHANGED_CONFIDENCE, "rules",
                              f"the option's line reads {line.strip()!r}", claim.source_text.strip(), line.strip())  # fmt: skip
            return j, stated
        return Judgement("nei", SETTING_ELSEWHERE_CONFIDENCE, "rules", OPTION_ELSEWHERE_NOTE), sentence

    def judge_pairs(self, claims: list[Claim], evidence: dict[str, list[Evidence]]) -> dict[str, list[Judgement]]:
        """Judgement per evidence passage for each claim (rules, then one batched model call)."""
        override = self.thresholds["rules_override"]
        gate = self.thresholds["relevance_gate"]
        plan: list[tuple[str, int, Judgement | None, str]] = []
        # the rules read a passage by its sentence, text, heading path and kind: an unchanged page
        # hands a claim the same passage from several releases, judged once
        ruled: dict[tuple[str, str, str, str, str | None, str], tuple[Judgement | None, str]] = {}
        for c in claims:
            evs = evidence.get(c.claim_id, [])
            judged = []
            for ev in evs:
                key = (c.claim_id, ev.sentence, ev.passage, ev.section, ev.source_kind, ev.renamed)
                if key not in ruled:
                    ruled[key] = self.rules_judgement(c, ev)
                judged.append(ruled[key])
            if gate > 0 and evs:
                # a source is about the claim when its top passage is, or when any of its versions
                # has a rules judgement or enough of the claim's words: then every version of it
                # reaches the model (an old page states the claim, the new page rewrote it)
                claim_words = set(content_words(word_tokens(c.text)))
                shares = [_overlap(claim_words, sentence) for _, sentence in judged]
                relevant = {min(evs, key=lambda e: e.rank).source_id}
                relevant |= {ev.source_id for ev, (rule, _), share in zip(evs, judged, shares)
                             if rule is not None or share >= gate}  # fmt: skip
                for k, ev in enumerate(evs):
                    if ev.source_id not in relevant:
                        judged[k] = (Judgement("nei", GATED_CONFIDENCE, "rules",
                                               f"not about the claim: the passage holds {shares[k]:.0%} of its content words"),
                                     judged[k][1])  # fmt: skip
            plan.extend((c.claim_id, k, rule, sentence) for k, (rule, sentence) in enumerate(judged))
        need = [i for i, (_, _, rule, _) in enumerate(plan) if rule is None or rule.confidence < override]
        # loaded only when a pair needs it: a batch the rules decide (or settle) costs no model load
        model = self.model if need else None
        probs: dict[int, list[float]] = {}
        texts = {c.claim_id: c.text for c in claims}
        if model is not None:
            # one model row per distinct (claim, sentence): versions of a source repeat sentences,
            # and claims of one text in other batches (a sentence the KB repeats) meet them again
            keys = [(texts[plan[i][0]], plan[i][3]) for i in need]
            with _JUDGED:
                known = self._judged(model)
                row = {k: known[k] for k in keys if k in known}
            unique = [k for k in dict.fromkeys(keys) if k not in row]
            p = model.probs(unique) if unique else []
            row.update((k, [float(x) for x in p[r]]) for r, k in enumerate(unique))
            probs = {i: row[k] for i, k in zip(need, keys)}
            with _JUDGED:
                known.update(row)
                while len(known) > JUDGED_PAIRS_KEPT:  # the oldest first (dicts keep insertion order)
                    known.pop(next(iter(known)))
        out: dict[str, list[Judgement]] = {c.claim_id: [] for c in claims}
        for i, (cid, _, rule, sentence) in enumerate(plan):
            hint = rule is None and i in probs
            if hint:
                # where the rules abstain, the numbers alone still say something the model reads
                # poorly ("more than 45 wins" against "46 wins"): a weak hint it must outweigh
                rule = judge_numbers(texts[cid], sentence)
            j = combine(rule, probs.get(i), override, independent=hint)
            if j.tier == "model" and j.confidence < self.thresholds["model_min"]:
                j = Judgement("nei", j.confidence, "model", j.rationale + " (below model_min)")
            self.tier_counts[j.tier] = self.tier_counts.get(j.tier, 0) + 1
            out[cid].append(j)
        return out

    def label(self, claim: Claim, evidence: list[Evidence], judgements: list[Judgement], today: date) -> Verdict:
        """The verdict from one claim's per-passage judgements: the revision contrast between
        dated versions of a source (:mod:`kb.verify.revision`), then the policy."""
        judgements = _other_lists(claim, evidence, judgements)
        elsewhere = entries_elsewhere(evidence, judgements)
        judgements = apply_contrast(
            claim.text, evidence, judgements, self.thresholds["rules_override"], elsewhere, as_written=claim.source_text
        )
        return decide(claim, evidence, judgements, today, thresholds=self.thresholds)

    def verify(self, claims: list[Claim], evidence: dict[str, list[Evidence]], today: date) -> list[Verdict]:
        """One verdict per claim, in order. A claim the current evidence states word for word,
        with nothing dated after it, is settled without a rule or model pass over its passages."""
        settled = {}
        if self.settings.settle_as_written:
            settled = {c.claim_id: v for c in claims if (v := settled_without_model(c, evidence.get(c.claim_id, []))) is not None}
        self.settled_as_written += len(settled)
        judged = self.judge_pairs([c for c in claims if c.claim_id not in settled], evidence)
        return [settled.get(c.claim_id) or self.label(c, evidence.get(c.claim_id, []), judged[c.claim_id], today) for c in claims]


_LOADING = threading.Lock()  # a model judge loads once per process, whichever thread needs it first
_JUDGED = threading.Lock()  # a verifier's judged pairs, read and added to by the threads that share it
_BUILDING = threading.Lock()


def verifier_for(model_path: str | None, use_model: bool, settle_as_written: bool = False, backend: str = "onnx") -> Verifier:
    """The verifier a run uses, built once per process: the verify and correct stages share it
    (and so load the model once). lru_cache alone builds one per thread that misses at once."""
    with _BUILDING:
        return _verifier_for(model_path, use_model, settle_as_written, backend)


@functools.lru_cache(maxsize=4)
def _verifier_for(model_path: str | None, use_model: bool, settle_as_written: bool, backend: str) -> Verifier:
    settings = VerifierSettings(model_path=model_path, use_model=use_model, settle_as_written=settle_as_written, backend=backend)
    return Verifier(settings)
