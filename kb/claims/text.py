"""Text helpers shared by the stages: sentence splitters, stemmers, stop words.

Each helper exists once. Where two stages need different behaviour, both are kept, under names
that say which is which (their outputs differ on real text, and the figures depend on them):

* sentences: :func:`sentence_spans` (the claim splitter's rules: abbreviations, initials,
  decimals, versions; character spans, used for claims and for evidence passages alike),
  :func:`passage_sentences` (a quick regex that also splits after a colon ending a lead-in and
  at newlines; used to compare an evidence passage sentence by sentence) and
  :func:`split_at_stops` (splits only after ``.!?`` before a capital, quote, backtick or
  parenthesis; used to cut training sentences out of prose).
* stemming and stop words: :func:`stem_overlap` with :data:`OVERLAP_STOPWORDS` (word overlap
  between a claim and an evidence sentence, rules tier) and :func:`stem_index` with
  :data:`INDEX_STOPWORDS` (BM25 terms of retrieval).

The verdict labels live in :data:`kb.records.LABELS`.
"""

from __future__ import annotations

import re
from functools import lru_cache

# ---------------------------------------------------------------------------------------------
# sentences

ABBREVIATIONS = frozenset(
    """
    e.g i.e etc vs v al approx appr apt ca cf dept est fig figs inc incl ltd co corp jr sr st mr mrs ms dr
    prof no nos op pp p vol vols ed eds rev gen govt min max mt ave blvd rd hr hrs sec secs avg std tel
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun
    u.s u.k u.n a.m p.m ph.d b.sc m.sc e.u resp ref refs esp excl attn dist div misc nat natl intl
    """.split()
)
# abbreviations after which a capitalised word still usually starts a new sentence
_SENTENCE_FINAL_ABBR = frozenset({"etc", "inc", "ltd", "co", "corp", "al", "jr", "sr"})

_BOUNDARY = re.compile(r"([.!?…]+)([\"'”’)\]]*)(\s+)")
_WORD_BEFORE = re.compile(r"(\S+)$")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` in ``text`` (end exclusive, trailing space excluded)."""
    spans: list[tuple[int, int]] = []
    n = len(text)
    start = 0
    while start < n and text[start].isspace():
        start += 1
    for m in _BOUNDARY.finditer(text):
        end = m.end(2)
        nxt = m.end()
        if nxt >= n or end <= start:
            continue
        if not _is_boundary(text, start, m.start(1), m.group(1), nxt):
            continue
        if _in_open_bracket(text, start, m.start(1), nxt):
            continue
        spans.append((start, end))
        start = nxt
    end = n
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        spans.append((start, end))
    return spans


def _in_open_bracket(text: str, sent_start: int, punct_at: int, nxt: int) -> bool:
    """A full stop inside brackets that close soon after ("(Calling it twice throws. Use once.)")
    ends no sentence of the text around them: cut there, both halves would be left unclosed."""
    head = text[sent_start:punct_at]
    for opening, closing in ("()", "[]"):
        if head.count(opening) > head.count(closing) and text.find(closing, nxt, nxt + 300) != -1:
            return True
    return False


def _is_boundary(text: str, sent_start: int, punct_at: int, punct: str, nxt: int) -> bool:
    following = text[nxt]
    if punct[0] in "!?…" or len(punct) > 1:
        if len(punct) > 1 and punct[0] == "." and following.islower():
            return False  # "..." mid-sentence
        return True
    # a full stop: what precedes it?
    lo = max(sent_start, punct_at - 40)
    wm = _WORD_BEFORE.search(text, lo, punct_at)
    word = wm.group(1) if wm else ""
    core = word.lstrip("([\"'“‘*").lower()
    if core in ABBREVIATIONS or core.rstrip(".") in ABBREVIATIONS:
        base = core.rstrip(".")
        if base in _SENTENCE_FINAL_ABBR and (following.isupper() or following in "\"“'"):
            return True
        return False
    if len(core) == 1 and core.isalpha() and word[-1:].isupper():
        return False  # an initial: "J. Smith"
    if re.fullmatch(r"(?:[a-z]\.)+[a-z]", core):
        return False  # "U.S.A", "e.g" variants
    if following.islower() and (len(core.rstrip(".")) < 3 or not core.rstrip(".").isalnum()):
        return False  # "c. five", "x.y. z"; a known word before the stop still ends the sentence
    if following.isdigit() and core in ("no", "nos", "vol", "fig", "p", "pp", "sec", "ch", "art"):
        return False
    return True


# A leading underscore names something in a path ("layouts/_partials") or a file name
# ("_index.md"); before any other word it is an emphasis marker that nothing closed, which
# CommonMark shows as written ("_Optional, Default: false"): a typo, not another word.
_STRAY_UNDERSCORE = re.compile(r"(?<![\w/\\.])_+(?=[^\W_])(?![^\W_]+(?:[-_][^\W_]+)*\.[^\W_])")


def without_stray_underscores(text: str) -> str:
    """``text`` without the leading underscores that name nothing (``_STRAY_UNDERSCORE``)."""
    return _STRAY_UNDERSCORE.sub("", text) if "_" in text else text


_SENT_SPLIT = re.compile(r"(?<=[.!?:])\s+(?=[A-Z0-9\"'(\[`*_-])|\n+")


def passage_sentences(text: str) -> list[str]:
    """Sentences of a passage (also split after a colon that ends a lead-in)."""
    return [s.strip() for s in _SENT_SPLIT.split(text or "") if s and s.strip()]


_AT_STOPS = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'])")


def split_at_stops(text: str) -> list[str]:
    """Pieces of ``text`` cut after ``.``/``!``/``?`` and whitespace, before a capital letter,
    backtick, parenthesis or quote (no abbreviation handling; pieces are not stripped)."""
    return _AT_STOPS.split(text)


# ---------------------------------------------------------------------------------------------
# stop words and stemming: word overlap (rules tier)

OVERLAP_STOPWORDS = frozenset(
    """a an the of in on at to for from by with and or as is are was were be been being it its
    this that these those which who whom whose what when where while than then there their they
    them he she his her him we our you your i me my has have had do does did can could will would
    shall should may might must also into about over under after before between through during
    such so if but both either each any all some more most other only own same very just how
    s t into upon via per one ones
    """.split()
)


_ACCEPT_PREDICATES = frozenset("supported accepted allowed permitted".split())


@lru_cache(maxsize=65536)
def stem_overlap(w: str) -> str:
    """A tiny, deterministic English stemmer (plural and common suffixes) for overlap only.
    The participles that say what a system takes ("supported", "accepted", "allowed",
    "permitted" formats) are one predicate."""
    w = w.lower()
    if w in _ACCEPT_PREDICATES:
        return "support"
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf) and not w.endswith("ss"):
            return w[: -len(suf)]
    return w


# ---------------------------------------------------------------------------------------------
# stop words and stemming: BM25 terms (retrieval)

INDEX_STOPWORDS = frozenset(
    """a an and are as at be been being but by can could did do does doing for from had has have having
    he her here hers him his how i if in into is it its itself me more most my no nor not of off on
    once only or other our ours out over own same she should so some such than that the their theirs
    them then there these they this those through to too under until up very was we were what when
    where which while who whom why will with would you your yours also may might must shall""".split()
)


@lru_cache(maxsize=1 << 18)
def stem_index(tok: str) -> str:
    """A light English suffix stripper (plural / -ing / -ed / -ly), enough for BM25 matching.

    Cached: indexing a corpus stems millions of tokens drawn from a vocabulary of thousands."""
    if len(tok) <= 3 or tok.isdigit():
        return tok
    for suf, rep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("edly", ""), ("ed", ""), ("ly", ""), ("es", ""), ("s", "")):
        if tok.endswith(suf) and len(tok) - len(suf) >= 3:
            if suf == "s" and tok.endswith(("ss", "us", "is")):
                return tok
            return tok[: len(tok) - len(suf)] + rep
    return tok
