"""Slot extraction for the rules tier: the facts that drift in technical documentation.

A *slot* is a typed fact found in a sentence: a quantity (number with unit and comparator,
percentage, duration, size, money), a year or date, a software version or version range, a
technical identifier (flag, option, setting, path, package, ``Key=value``), a named entity, an
enumeration ("A, AAAA and SRV") or the sentence's polarity (negation). The rules tier
(:mod:`kb.verify.rules`) aligns a claim with an evidence sentence and compares these slots.

Everything here is deterministic, dependency-free and fast (regular expressions only).
"""

import re
from dataclasses import dataclass, field
from functools import lru_cache

from kb.claims.text import OVERLAP_STOPWORDS
from kb.verify.quantities import INF as INF
from kb.verify.quantities import Quantity as Quantity
from kb.verify.quantities import _after_phrase, _ends_with_any, _lower_phrase, extract_quantities
from kb.verify.relations import bound_relation as bound_relation
from kb.verify.relations import comparable_kinds as comparable_kinds
from kb.verify.relations import quantity_relation as quantity_relation
from kb.verify.relations import stated_point as stated_point
from kb.verify.relations import value_distance as value_distance
from kb.verify.tokens import canonical as canonical
from kb.verify.tokens import content_set as content_set
from kb.verify.tokens import content_words as content_words
from kb.verify.tokens import is_code_case as is_code_case
from kb.verify.tokens import is_identifier as is_identifier
from kb.verify.tokens import normalize as normalize
from kb.verify.tokens import word_tokens as word_tokens
from kb.verify.vocabulary import NEGATIONS as NEGATIONS

# enumerations, entities, polarity
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Enumeration:
    items: tuple[str, ...]  # normalised (lower) items
    text: str
    start: int
    end: int
    conj: str  # and | or
    open_ended: bool = False  # "such as", "e.g.", "including", "etc."


_ITEM_RE = re.compile(r"^[\w.\-/:=@*\"]+$")


def extract_enumerations(tokens: list[str]) -> list[Enumeration]:
    """Comma lists of 3+ short items ("A, AAAA and SRV"; "DEBUG, PANIC, FATAL, and INFO")."""
    out = []
    if "," not in tokens:
        return out
    n = len(tokens)
    i = 0
    while i < n:
        if not _ITEM_RE.match(tokens[i]) or tokens[i].lower() in ("and", "or"):
            i += 1
            continue
        items = [[tokens[i]]]
        j = i + 1
        conj = ""
        while j < n:
            t = tokens[j]
            if t == "," and j + 1 < n:
                k = j + 1
                if tokens[k].lower() in ("and", "or"):
                    conj = tokens[k].lower()
                    k += 1
                if k < n and _ITEM_RE.match(tokens[k]) and tokens[k].lower() not in ("and", "or"):
                    items.append([tokens[k]])
                    j = k + 1
                    if conj:
                        break
                    continue
                break
            if t.lower() in ("and", "or") and len(items) >= 2 and j + 1 < n and _ITEM_RE.match(tokens[j + 1]):
                conj = t.lower()
                items.append([tokens[j + 1]])
                j += 2
                break
            if _ITEM_RE.match(t) and len(items[-1]) < 3 and t.lower() not in ("and", "or"):
                items[-1].append(t)
                j += 1
                continue
            break
        ok = len(items) >= 3 and conj and not all(re.fullmatch(r"[\d.,%]+", x[-1]) for x in items)
        if not ok:
            i += 1
            continue
        start = i
        if sum(len(x) == 1 for x in items[1:]) >= len(items[1:]) - 1 and len(items[0]) > 1:
            start = i + len(items[0]) - 1  # "levels are DEBUG, ..." -> "DEBUG"
            items[0] = items[0][-1:]
        before = _lower_phrase(tokens, start, 3)
        open_ended = bool(_ends_with_any(before, ("such as", "e.g.", "including", "like", "e.g", "for example")))
        after = _after_phrase(tokens, j, 2)
        if after.startswith("etc") or after.startswith("and more") or after.startswith(", etc"):
            open_ended = True
        norm = tuple(" ".join(x).lower().strip(".") for x in items)
        out.append(Enumeration(norm, " ".join(tokens[start:j]), start, j, conj, open_ended))
        i = j
    return out


def polarity(tokens: list[str]) -> int:
    """Number of negation cues (parity is what matters)."""
    count = 0
    for k, t in enumerate(tokens):
        lt = t.lower()
        if lt in NEGATIONS:
            # "not only" is not a negation
            if lt == "not" and k + 1 < len(tokens) and tokens[k + 1].lower() in ("only", "just"):
                continue
            if lt == "no" and k + 1 < len(tokens) and tokens[k + 1].lower() in ("longer",):
                count += 1
                continue
            count += 1
        elif lt.endswith("n't"):
            count += 1
    return count


def entities(tokens: list[str]) -> set[str]:
    """Capitalised names not at the start of the sentence (lower-cased), plus identifiers."""
    out = set()
    for k, t in enumerate(tokens):
        if k == 0:
            continue
        if re.fullmatch(r"[A-Z][a-zA-Z'.-]+", t) and t.lower() not in OVERLAP_STOPWORDS:
            prev = tokens[k - 1]
            if prev in (".", "!", "?", ":"):
                continue
            out.add(t.lower())
    return out


@dataclass
class Slots:
    tokens: list[str]
    quantities: list[Quantity] = field(default_factory=list)
    enumerations: list[Enumeration] = field(default_factory=list)
    negations: int = 0
    identifiers: set[str] = field(default_factory=set)
    entities: set[str] = field(default_factory=set)
    content: list[str] = field(default_factory=list)


@lru_cache(maxsize=20000)
def extract(text: str) -> Slots:
    """All slots of a sentence (cached: claims and evidence sentences recur; do not mutate)."""
    toks = word_tokens(text)
    return Slots(
        tokens=toks,
        quantities=extract_quantities(toks),
        enumerations=extract_enumerations(toks),
        negations=polarity(toks),
        identifiers={t.lower() for t in toks if is_identifier(t)},
        entities=entities(toks),
        content=content_words(toks),
    )


@lru_cache(maxsize=65536)
def is_code_identifier(tok: str) -> bool:
    """An identifier that looks like code (flag, path, dotted/snake/camel name), not an acronym."""
    if tok.isalpha() and (tok.islower() or tok.isupper() or tok[1:].islower()):
        return False
    if re.fullmatch(r"--?[A-Za-z][\w.-]*(=.*)?", tok):
        return True
    if re.search(r"[A-Za-z]", tok) and re.search(r"[./:=_$@]|::", tok.strip(".")):
        return True
    return bool(re.fullmatch(r"[a-z]+[A-Z][A-Za-z0-9]*", tok))


def similarity(a: str, b: str) -> float:
    """Word-level similarity of ``a`` to ``b``: mean of the difflib ratio and the share of ``a``'s
    words found in order in ``b`` (so "contains gzip." vs "contains gzip, and/or br" scores high)."""
    from difflib import SequenceMatcher

    wa = [t.lower() for t in word_tokens(a) if re.search(r"\w", t)]
    wb = [t.lower() for t in word_tokens(b) if re.search(r"\w", t)]
    if not wa or not wb:
        return 0.0
    sm = SequenceMatcher(None, wa, wb, autojunk=False)
    kept = sum(b.size for b in sm.get_matching_blocks()) / len(wa)  # share of a found in order
    return 0.5 * sm.ratio() + 0.5 * kept


def informative_words(text: str) -> int:
    """Content words that are not values (numbers, identifiers): how much context a claim has."""
    return sum(1 for t in word_tokens(text)
               if t.isalpha() and t.lower() not in OVERLAP_STOPWORDS and t.lower() not in NEGATIONS and len(t) > 2)  # fmt: skip


def tokens_outside_quantities(slots: Slots) -> list[str]:
    """A sentence's tokens minus those of its quantities ("days" in "7 days" is the number's
    unit, which the quantity comparison reads)."""
    inside = {k for q in slots.quantities for k in range(q.start, q.end)}
    return [t for k, t in enumerate(slots.tokens) if k not in inside]
