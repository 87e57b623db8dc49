"""Words added beside the claim's: a newer sentence that keeps every word of the claim in order and
only adds to it (another item of a list, a modifier, an alias in parentheses) or inflects a prose
word otherwise ("in details" -> "in detail", "exactly the same" -> "exact same") or fixes a typo
in one ("inititalised" -> "initialised") still states the claim. Documentation grows that way ("gzip, deflate, or brotli" -> "gzip, deflate, brotli, or
zstd"; "lifespan events" -> "ASGI lifespan events"), and none of it changes the claim's fact.

What does change it is never an addition of this kind: a negation, a condition, an alternative to
what the claim requires, another item after "only", a number, a qualifying phrase ("on Linux",
"containing a [tool.black] section"), or a segment added to a path or a URL ("AppData\\Local\\pdm"
-> "AppData\\Local\\pdm\\pdm": another folder). Those, and any replaced or dropped content word, leave
the judgement to the other rules."""

from __future__ import annotations

import re
from functools import lru_cache

from kb.verify.extension import CONDITIONS, RESTRICTIVE, _extension_kind
from kb.verify.slots import is_code_case, normalize, word_tokens
from kb.verify.spelling import respelt
from kb.verify.vocabulary import NEGATIONS

__all__ = [
    "ADDED_CONFIDENCE",
    "ADDED_NOTE",
    "added_beside",
    "changed_path",
    "entry_name",
    "misspelt",
    "respelt_only",
    "typo_fixed",
]

# Sure enough that the model does not read the added words as a change (it refuted such pairs at
# 0.9 and more: an added list item, an added "ASGI" before "lifespan events").
ADDED_CONFIDENCE = 0.9
ADDED_NOTE = "the sentence states the claim, with words added beside it or inflected otherwise"
MIN_WORDS = 4  # a shorter claim is found inside too many sentences
MAX_ADDED = 4  # words added: at most this many, or half as many as the claim has
MIN_INFLECTED = 4  # shorter words are not compared by their inflection ("led" is not "lead")
MIN_TYPO = 6  # a letter more inside a word this long is a typo fixed ("fewer" / "flower" are words)
MIN_SWAP_TYPO = 7  # two letters swapped inside a word this long too ("united" / "untied" are words)
MAX_MODIFIER = 2  # a modifier: at most this many words inside the claim ("ASGI", "HTTP/2")
# Words the newer sentence may drop without changing the fact ("will also be supported" ->
# "will be supported"; a list's "or" moving to the new last item).
_FILLERS = frozenset(", and or also the a an to".split())
_JOINERS = frozenset(", and or and/or &".split())
_ALTERNATIVES = frozenset("or and/or".split())
# Added words that change what the claim states (a condition, a restriction, a replacement, a
# requirement), whatever else is added with them.
_CHANGING = (
    NEGATIONS | RESTRICTIVE | {w for c in CONDITIONS for w in c.split()}
    | frozenset("""when whenever instead but however deprecated removed longer until before after
    must required requires need needs optional optionally except""".split())
)  # fmt: skip
# A phrase that opens on one of these qualifies the claim ("on Linux", "for admins"): not a modifier.
_SCOPING = frozenset("on in for with within by from to at of via per under over into onto through".split())
_WORD = re.compile(r"\w")
# a definition entry, "`source` - Will run ..." or "name: ...": its first word names the entry,
# and that word in another form ("sources") names another entry, not the same one inflected
# (at the claim's start, or after a list's lead-in attached to it: "... the following values: source - ...")
_ENTRY_NAME = re.compile(r"(?:^|:\s)\s*[`'\"*]*(?P<name>[\w.-]+)[`'\"*]*\s+[-\u2013\u2014:]\s")
_INFLECTED = re.compile(r"(?:ly|ing|ed|es|s|e)$")
# a path or a URL: its segments are split into words, so one added among them would read as a
# modifier; it names another file, folder or page
_PATH = re.compile(r"[^\s`'\"()<>\[\]]*[\w%~.][\\/]\.?\w[^\s`'\"()<>\[\]]*")
_SCHEME = re.compile(r"\bhttps?://")


@lru_cache(maxsize=65536)
def _inflection(word: str) -> str:
    """A prose word without its inflection ("exactly" / "exact", "details" / "detail", "capturing"
    / "capture"): two words alike here differ in form, not in what they state. Names, code and
    numbers are kept whole."""
    if not word.isalpha() or not word.islower() or len(word) < MIN_INFLECTED:
        return word
    return _INFLECTED.sub("", word)


# Suffixes that make another form of a word: an inflection, which a word may gain or lose alone
# ("name" / "named", "run" / "running", "different" / "differently"), and a derivation, which
# both forms must carry ("convenience" / "convenient"): "important" is no form of "import". A
# plural is not among them: "the most used feature" / "one of the most used features" and
# `example=` / `examples=` state other things.
_INFLECTIONS = ("ing", "ed", "ly", "d", "e")
_DERIVATIONS = ("ence", "ance", "ent", "ant", "ation", "ion", "ity", "ness", "ment")
MIN_WORD_STEM = 3


def _forms(word: str) -> set[tuple[str, bool]]:
    """(stem, derived) for every way to strip up to two suffixes off ``word`` (itself included)."""
    out = {(word, False)}
    for _ in range(2):
        for stem, derived in list(out):
            for suf in _INFLECTIONS + _DERIVATIONS:
                if stem.endswith(suf) and len(stem) - len(suf) >= MIN_WORD_STEM:
                    base = stem[: -len(suf)]
                    out.add((base, derived or suf in _DERIVATIONS))
                    if len(base) > MIN_WORD_STEM and base[-1] == base[-2] and base[-1] not in "aeiou":
                        out.add((base[:-1], derived or suf in _DERIVATIONS))  # "running" -> "run"
    return out


@lru_cache(maxsize=65536)  # the same word pairs meet in sentence pair after sentence pair
def same_word(a: str, b: str) -> bool:
    """Two forms of one prose word ("convenience" / "convenient", "name" / "named", "different"
    / "differently"): a stem both reach, by inflections alone or by a derivation each. Not two
    words that only start alike ("import" / "important", "port" / "portal", "time" / "timeout").
    Words with digits are values, never forms of one another."""
    a, b = a.lower(), b.lower()
    if a == b or not (a.isalpha() and b.isalpha()):
        return False
    return bool(_forms(a) & _forms(b))


def entry_name(text: str) -> str | None:
    """The name of the definition entry ``text`` states ("source" of "`source` - Will run ..."),
    also after a list's lead-in attached to it; None when it is no such entry."""
    m = _ENTRY_NAME.search(text)
    return m.group("name") if m else None


_STRETCH = re.compile(r"([a-z])\1{2,}")


def _stretched(short: str, long_: str) -> bool:
    """``long_`` is ``short`` with a letter held down ("alllllll" / "all"): no English word has
    a letter three times in a row, so the run is a key held, whatever length it had."""
    if not (long_.isalpha() and long_.islower()) or not _STRETCH.search(long_):
        return False
    return short in (_STRETCH.sub(r"\1", long_), _STRETCH.sub(r"\1\1", long_))


def misspelt(a: str, b: str) -> bool:
    """One long prose word is the other with one letter more inside it ("inititalised" /
    "initialised"), two neighbouring letters swapped ("converstaion" / "conversation") or a letter
    held down ("alllllll" / "all"): a typo fixed, not another word."""
    short, long_ = sorted((a, b), key=len)
    if _stretched(short, long_):
        return True
    if len(short) < MIN_TYPO or not (short.isalpha() and short.islower() and long_.isalpha()):
        return False
    if len(long_) == len(short):
        if len(short) < MIN_SWAP_TYPO:
            return False
        diff = [k for k in range(len(short)) if short[k] != long_[k]]
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and diff[0] > 0
            and short[diff[0]] == long_[diff[1]]
            and short[diff[1]] == long_[diff[0]]
        )
    if len(long_) != len(short) + 1:
        return False
    return any(long_[:k] + long_[k + 1 :] == short for k in range(1, len(long_)))


def typo_fixed(a: str, b: str) -> bool:
    """One word is the other with a typo fixed: a letter more, swapped or held down (``misspelt``),
    or a dictionary word respelt (``kb.verify.spelling.respelt``)."""
    return misspelt(a, b) or respelt(a, b)


@lru_cache(maxsize=65536)  # the same word pairs meet in claim after claim (hugo: 360,000 comparisons)
def _same(a: str, b: str) -> bool:
    return a == b or _inflection(a) == _inflection(b) or typo_fixed(a, b)


def _tokens(text: str) -> list[str]:
    return list(_folded_tokens(text))


@lru_cache(maxsize=20000)  # an evidence sentence is compared with many claims
def _folded_tokens(text: str) -> tuple[str, ...]:
    toks = [t for t in word_tokens(normalize(text)) if _WORD.search(t) or t in ",()&"]
    return tuple(t if is_code_case(t) else t.lower() for t in toks)


def _addition(added: list[str], before: list[str], inside: bool, restrictive: bool, listed: bool = True) -> str:
    """What kind of harmless addition ``added`` is ("item", "aside", "modifier"), or ""."""
    words = [t for t in added if _WORD.search(t)]
    if not words or any(w in _CHANGING or w.endswith("n't") for w in words):
        return ""
    if added[0] == "(" and added[-1] == ")":
        return "aside"  # an alias or an example in parentheses
    if any(any(ch.isdigit() for ch in w) for w in words) and not (added[0] in _JOINERS or added[-1] in _JOINERS):
        return ""  # a number added outside a list item: a limit or a version the claim lacks
    if (added[0] in _JOINERS or added[-1] in _JOINERS) and (listed or added[0] in _ALTERNATIVES):
        # another item of the claim's list, unless the list is exhaustive ("only") or the item is
        # an alternative to what the claim requires (where the claim lists nothing, "and order"
        # joined to "number" is a new condition, not another item, while "or percentage" joined
        # to it is another way beside the claim's, which still holds)
        # an item put in front of the claim's ("B or A" for "A") is read as one after it ("A or B")
        joined = added if added[0] in _JOINERS else [added[-1], *added[:-1]]
        return "" if restrictive or _extension_kind(joined, before) else "item"
    plain = [w for w in words if w not in _FILLERS]
    if inside and plain and len(plain) <= MAX_MODIFIER and plain[0] not in _SCOPING and not set(words) & _JOINERS:
        return "modifier"
    return ""


def added_beside(claim_text: str, sentence: str) -> str | None:
    """The words ``sentence`` adds to the claim (and the prose words it inflects otherwise) when it
    keeps all the claim's words in order and only adds harmless ones (list items, modifiers,
    asides; see the module doc), dropping nothing but fillers ("also", a list's "and"); None when
    it is no such restatement (identical ones included: the verbatim rules judge those)."""
    found = _beside(claim_text, sentence)
    if found is None:
        return None
    added, respelled = found
    return "; ".join(added + respelled) if added or respelled else "(fillers only)"


def respelt_only(claim_text: str, sentence: str) -> str | None:
    """The claim's words ``sentence`` spells otherwise ("intervealed -> interleaved") when that is
    all it changes, adding no word; None otherwise."""
    found = _beside(claim_text, sentence)
    if found is None or found[0] or not found[1]:
        return None
    return "; ".join(found[1])


def _beside(claim_text: str, sentence: str) -> tuple[list[str], list[str]] | None:
    """What ``added_beside`` reads: the phrases added and the words respelt ("old -> new")."""
    c, e = _tokens(claim_text), _tokens(sentence)
    core = [(i, t) for i, t in enumerate(c) if t not in _FILLERS]
    n_words = sum(1 for t in c if _WORD.search(t))
    if n_words < MIN_WORDS or c == e or changed_path(claim_text, sentence) is not None:
        return None
    # the claim's words other than fillers, found in order (leftmost); what lies between is added
    found: list[tuple[int, int]] = []
    k = 0
    entry = _ENTRY_NAME.search(claim_text)
    named = len(_tokens(claim_text[: entry.start("name")])) if entry else -1
    for i, t in core:
        while k < len(e) and not (t == e[k] if i == named else _same(t, e[k])):
            k += 1
        if k == len(e):
            return None  # a content word of the claim is gone or replaced
        found.append((i, k))
        k += 1
    n_added = sum(1 for t in e if _WORD.search(t)) - sum(1 for _, t in core if _WORD.search(t))
    if n_added > max(MAX_ADDED, n_words // 2):
        return None  # a new sentence around the claim's words, not the claim with words added
    restrictive = bool(RESTRICTIVE & set(c))
    added: list[str] = []
    bounds = [(-1, -1), *found, (len(c), len(e))]
    for (i0, k0), (i1, k1) in zip(bounds, bounds[1:]):
        ins = e[k0 + 1 : k1]
        if not ins or all(t in _FILLERS for t in ins):
            continue
        # inside the claim: after its first word or an article before it, and before its end
        inside = (i0 >= 0 or ins[0] in _FILLERS) and i1 < len(c)
        # the claim lists at the insertion point: a joiner just before it or just after it
        listed = bool(_JOINERS & set(c[max(0, i0 - 2) : i0 + 1]) | _JOINERS & set(c[i1 : i1 + 2]))
        if not _addition(ins, c[: i0 + 1], inside, restrictive, listed):
            return None
        added.append(" ".join(ins).replace(" ,", ",").replace("( ", "(").replace(" )", ")"))
    return added, [f"{c[i]} -> {e[k]}" for i, k in found if c[i] != e[k]]


def changed_path(claim_text: str, sentence: str) -> tuple[str, str] | None:
    """The first path or URL of the claim that does not stand whole in ``sentence``, with the
    sentence's path that holds it inside a longer one ("...\\Local\\pdm" in "...\\Local\\pdm\\pdm")
    or "" where none does; None when every one stands whole."""
    if "/" not in claim_text and "\\" not in claim_text:
        return None
    # the scheme aside: a link moved to https is the same page
    bare = _SCHEME.sub("", sentence)
    for m in _PATH.finditer(claim_text):
        written = m.group().rstrip(".,;:!?")
        path = _SCHEME.sub("", written)
        if not path or re.search(r"(?<![\w./\\-])" + re.escape(path) + r"(?![\w/\\-])", bare):
            continue
        longer = next((x.group().rstrip(".,;:!?") for x in _PATH.finditer(sentence) if path in _SCHEME.sub("", x.group())), "")
        return written, longer
    return None
