"""Grounding and agreement of a Chain-of-Verification reply for :mod:`kb.escalate.cove`: every
quote must be found in a shown passage and every citation must exist (:func:`ground`), and a
grounded reply whose own parts disagree is held back (:func:`disagreement`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from kb.config import CoveSettings
from kb.escalate.cove_reply import CoveReply
from kb.records import Claim, Evidence
from kb.verify.rules import judge_rules
from kb.verify.slots import content_words, word_tokens

_QUOTE = re.compile(r"\"([^\"]+)\"|“([^”]+)”|«([^»]+)»")
_CITE = re.compile(r"\[\s*P\s*(\d{1,2})\s*\]|\bpassage\s+P?(\d{1,2})\b", re.IGNORECASE)
_NOT_STATED = re.compile(r"^\W*(?:not stated|not mentioned|unknown|the passages do not say)", re.IGNORECASE)


def _norm(text: str) -> str:
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return re.sub(r"\s+", " ", text).strip().lower()


_NUM = re.compile(r"\d+(?:[.,]\d+)*")
_NEG = re.compile(r"\b(?:not|no|never|none|cannot|without)\b|n't\b")


def _critical(text: str) -> tuple[list[str], int]:
    """The tokens a near match must not change: numbers, and the count of negations."""
    return sorted(_NUM.findall(text)), len(_NEG.findall(text))


def find_quote(quote: str, passages: list[str], threshold: float) -> int | None:
    """Index of a (normalised) passage that contains the quote, fuzzily (``partial_ratio`` at or
    above ``threshold``) but with the same numbers and negations as the aligned window: "kept for
    14 days" is not found in "kept for 30 days", however close the strings are."""
    nq = _norm(quote).strip(" .,;:")
    want = _critical(nq)
    for k, p in enumerate(passages):
        a = fuzz.partial_ratio_alignment(nq, p)
        if a is None or a.score < threshold:
            continue
        # widen the window to whole tokens before comparing numbers and negations
        start, end = a.dest_start, a.dest_end
        while start > 0 and p[start - 1].isalnum():
            start -= 1
        while end < len(p) and p[end].isalnum():
            end += 1
        if _critical(p[start:end]) == want:
            return k
    return None


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])")


def _sentence_of(quote: str, passage: str) -> str:
    """The passage sentence a quote was taken from (a quote is often a fragment, and the rules
    tier judges sentences)."""
    sentences = [x for x in _SENTENCE_END.split(passage) if x.strip()] or [passage]
    nq = _norm(quote)
    return max(sentences, key=lambda x: fuzz.partial_ratio(nq, _norm(x))).strip()


@dataclass
class Grounding:
    grounded: int = 0  # answers that quote or cite a passage
    ungrounded: list[str] = field(default_factory=list)  # failed quotes, bad citations, bare answers
    cited: list[int] = field(default_factory=list)
    quotes: list[str] = field(default_factory=list)  # the passage sentences the found quotes are in

    @property
    def ok(self) -> bool:
        return self.grounded > 0 and not self.ungrounded


def ground(answers: list[str], evidence: list[Evidence], settings: CoveSettings) -> Grounding:
    """Every quote must be found in a shown passage, every citation must exist, and every answer
    that is not "not stated" must quote or cite."""
    shown = evidence[: settings.max_passages]
    passages = [_norm((e.passage or e.sentence)[: settings.passage_chars]) for e in shown]
    result = Grounding()
    for answer in answers:
        quotes = [next(g for g in m.groups() if g) for m in _QUOTE.finditer(answer)]
        quotes = [q for q in quotes if len(q.strip()) >= settings.min_quote_chars]
        cites = [int(next(g for g in m.groups() if g)) for m in _CITE.finditer(answer)]
        if not quotes and not cites:
            if not _NOT_STATED.match(answer):
                result.ungrounded.append(f"answer without a quote or citation: {answer[:120]}")
            continue
        ok = True
        for q in quotes:
            hit = find_quote(q, passages, settings.quote_match)
            if hit is None:
                ok = False
                result.ungrounded.append(f'quote not in the passages: "{q[:120]}"')
            else:
                result.cited.append(hit + 1)
                result.quotes.append(_sentence_of(q, shown[hit].passage or shown[hit].sentence))
        for c in cites:
            if not 1 <= c <= len(passages):
                ok = False
                result.ungrounded.append(f"citation of a passage that was not shown: [P{c}]")
            else:
                result.cited.append(c)
        if ok:
            result.grounded += 1
    result.cited = sorted(set(result.cited))
    return result


# The rules tier's confidences (kb.verify.rules.CONFIDENCE) at or above which it overrules a reply:
# slot conflicts (durations, sizes, versions, settings, dates, negations...), not the weak "term"
# or "year" readings; exact, verbatim and all-slots support.
AGREE_REFUTES = 0.75
AGREE_SUPPORTS = 0.9
# Share of the claim's content words (stemmed, stop words out) the quoted sentences must hold.
COVER_CLEAN = 0.6
COVER_CORRECTION = 0.4


def coverage(claim_text: str, sentences: list[str]) -> tuple[float, list[str]]:
    """(share of the claim's content words found in ``sentences``, the claim's numbers not found)."""
    want = set(content_words(word_tokens(claim_text)))
    have = set(content_words(word_tokens(" ".join(sentences))))
    share = len(want & have) / len(want) if want else 1.0
    found = set(_NUM.findall(" ".join(sentences)))
    return share, [n for n in dict.fromkeys(_NUM.findall(claim_text)) if n not in found]


def disagreement(claim: Claim, status: str, reply: CoveReply, quotes: list[str]) -> str | None:
    """Why a grounded reply contradicts itself, or None.

    Grounding proves the quotes are real, not that they say what the status claims: copying a
    passage is easy for any model. So a reply is held back when its own parts disagree:

    * verified-clean, but the rules tier finds a conflict it is sure of (confidence
      ``AGREE_REFUTES`` or more: a number, date, version, setting, negation) between the claim and
      a passage sentence the reply quotes;
    * verified-with-corrections, but a quoted sentence states the claim (the rules tier finds it
      supported with confidence ``AGREE_SUPPORTS`` or more: exactly, verbatim, every slot), or
      the FINAL text is the draft unchanged;
    * verified-clean, but the FINAL text changes the draft's numbers or negations;
    * verified-clean or verified-with-corrections, but the quoted sentences are not about the
      claim: they hold less than ``COVER_CLEAN`` (``COVER_CORRECTION``) of the claim's content
      words, or (clean) not every number the claim states. A real passage sentence about
      something else settles nothing.
    """
    draft = claim.source_text or claim.text
    judged = [(q, judge_rules(claim.text, q)) for q in dict.fromkeys(quotes)]
    if status == "verified-clean":
        for q, j in judged:
            if j is not None and j.relation == "refutes" and j.confidence >= AGREE_REFUTES:
                return f'verified-clean, but the quote "{q[:80]}" conflicts with the claim ({j.rationale})'
        if reply.final and _critical(_norm(reply.final)) != _critical(_norm(draft)):
            return "verified-clean, but the final text changes the draft's numbers or negations"
    elif status == "verified-with-corrections":
        for q, j in judged:
            if j is not None and j.relation == "supports" and j.confidence >= AGREE_SUPPORTS:
                return f'verified-with-corrections, but the quote "{q[:80]}" states the claim ({j.rationale})'
        if reply.final and _norm(reply.final).strip(" .") == _norm(draft).strip(" ."):
            return "verified-with-corrections, but the final text is the draft unchanged"
    if status in ("verified-clean", "verified-with-corrections"):
        need = COVER_CLEAN if status == "verified-clean" else COVER_CORRECTION
        cover, numbers_missing = coverage(claim.text, quotes)
        if cover < need:
            return f"{status}, but the quoted sentences hold {cover:.0%} of the claim's content words (at least {need:.0%} needed)"
        if status == "verified-clean" and numbers_missing:
            return f"verified-clean, but the quoted sentences do not state {', '.join(numbers_missing[:3])}"
    return None
