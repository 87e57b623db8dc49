"""Typos fixed between two versions of a sentence: a word respelt states nothing new.

Documentation fixes its spelling all the time ("persistance" -> "persistence", "defing" ->
"defining", "behaviour" -> "behavior"), and a claim that keeps the old spelling still states the
newer sentence's fact. Two words are one word respelt when exactly one of them is an English word
(pyspellchecker's word list, US spelling) and the other is within a typo's reach of it; names,
code and numbers are never respelt. Two dictionary words are never a typo of each other ("enable" /
"unable" are both words and mean different things)."""

from __future__ import annotations

from functools import lru_cache

from rapidfuzz.distance import DamerauLevenshtein

__all__ = ["respelt"]

MIN_RESPELT = 5  # shorter words are too often another word one letter off ("tox" / "box")
# Two edits are a typo only in a long word, or when both are letters dropped while typing
# ("defing" / "defining"); in a short word two edits reach unrelated words.
MIN_TWO_EDITS = 8


@lru_cache(maxsize=1)
def _dictionary():
    from spellchecker import SpellChecker  # loads its word list (a few MB) on first use only

    return SpellChecker(distance=1)


@lru_cache(maxsize=65536)
def is_word(word: str) -> bool:
    return word in _dictionary()


def _dropped_letters(short: str, long_: str) -> bool:
    letters = iter(long_)
    return all(ch in letters for ch in short)


def respelt(a: str, b: str) -> bool:
    """``a`` and ``b`` (lower-case prose words) are one word, one of them misspelt."""
    if a == b or not (a.isalpha() and b.isalpha() and a.islower() and b.islower()):
        return False
    short, long_ = sorted((a, b), key=len)
    if len(short) < MIN_RESPELT or a[0] != b[0]:  # a typo rarely hits a word's first letter
        return False
    if is_word(a) == is_word(b):
        return False
    edits = DamerauLevenshtein.distance(a, b, score_cutoff=2)
    if edits <= 1:
        return True
    return edits == 2 and (len(short) >= MIN_TWO_EDITS or _dropped_letters(short, long_))
