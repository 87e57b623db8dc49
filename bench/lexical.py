"""Lexical-overlap baseline judge (for the benches only, never used by the pipeline).

Share of the claim's content words (stemmed, stop words dropped) found in the evidence
sentence, plus a negation-word heuristic:

* overlap >= ``support_at`` and the same negation parity: supports;
* overlap >= ``refute_at`` with a negation mismatch, or overlap between ``refute_at`` and
  ``support_at``: refutes (the sentence is about the claim but says something else);
* otherwise: not enough info.

The thresholds are the constants below, chosen on the training part of VitaminC / FEVER-Lite.
"""

from __future__ import annotations

from kb.records import Judgement
from kb.verify.slots import content_words, polarity, word_tokens

SUPPORT_AT = 0.8
REFUTE_AT = 0.5


def overlap(claim: str, sentence: str) -> float:
    c = set(content_words(word_tokens(claim)))
    if not c:
        return 0.0
    return len(c & set(content_words(word_tokens(sentence)))) / len(c)


def judge_lexical(claim: str, sentence: str, support_at: float = SUPPORT_AT, refute_at: float = REFUTE_AT) -> Judgement:
    ov = overlap(claim, sentence)
    neg_c, neg_e = polarity(word_tokens(claim)) % 2, polarity(word_tokens(sentence)) % 2
    if ov >= support_at and neg_c == neg_e:
        return Judgement("supports", round(0.5 + ov / 2, 4), "lexical", f"overlap {ov:.2f}")
    if ov >= refute_at:
        why = "negation mismatch" if neg_c != neg_e else "partial overlap"
        return Judgement("refutes", round(0.5 + (ov - refute_at) / 2, 4), "lexical", f"{why}, overlap {ov:.2f}")
    return Judgement("nei", round(1.0 - ov, 4), "lexical", f"low overlap {ov:.2f}")


class LexicalJudge:
    """Same interface as the model judge: ``judge(pairs) -> list[Judgement]``."""

    tier = "lexical"

    def judge(self, pairs: list[tuple[str, str]]) -> list[Judgement]:
        return [judge_lexical(c, e) for c, e in pairs]
