"""Slot extraction for the rules tier: the facts that drift in technical documentation.

A *slot* is a typed fact found in a sentence: a quantity (number with unit and comparator,
percentage, duration, size, money), a year or date, a software version or version range, a
technical identifier (flag, option, setting, path, package, ``Key=value``), a named entity, an
enumeration ("A, AAAA and SRV") or the sentence's polarity (negation). The rules tier
(:mod:`kb.verify.rules`) aligns a claim with an evidence sentence and compares these slots.

Everything here is deterministic, dependency-free and fast (regular expressions only).
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from kb.claims.text import OVERLAP_STOPWORDS, stem_overlap

# ---------------------------------------------------------------------------------------------
# normalisation and tokens
# ---------------------------------------------------------------------------------------------

_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u00a0": " ",
        "\ufffd": " ",
        "\u2009": " ",
        "\u202f": " ",
        "`": "",
    }
)

# PTB escapes used by FEVER / VitaminC
_PTB = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}
_PTB_RE = re.compile("|".join(re.escape(k) for k in _PTB))


def normalize(text: str) -> str:
    """Unicode-normalised text with plain quotes and dashes, markup backticks removed."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _PTB_RE.sub(lambda m: _PTB[m.group(0)], text)
    # emphasis markers open before a word and close after one; an underscore inside a word is
    # part of an identifier ("request_id" is not "requestid")
    text = re.sub(r"(?<!\w)[*_]{1,2}(?=\w)|(?<=\w)[*_]{1,2}(?!\w)", "", text)
    return re.sub(r"\s+", " ", text).strip()


_CODE_CASE = re.compile(r"[\w$@.-]+")


def is_code_case(tok: str) -> bool:
    """A token whose case is part of its name: camelCase (lower first, an upper later), or a
    snake/dotted name with an upper letter ("MAX_SIZE" folds: all upper; "tls.minVersion" keeps)."""
    tok = tok.strip(".-")
    if not re.search(r"[a-z]", tok) or not re.search(r"[A-Z]", tok):
        return False
    return bool(re.match(r"[a-z]", tok)) or bool(re.search(r"[._]", tok) and re.search(r"[a-z][A-Z]", tok))


@lru_cache(maxsize=65536)
def canonical(text: str) -> str:
    """Comparison key of a whole sentence: case, spacing and punctuation folded, except that a
    code identifier keeps its case ("requestID" is not "requestId"; prose words fold)."""
    t = _CODE_CASE.sub(lambda m: m.group(0) if is_code_case(m.group(0)) else m.group(0).lower(), normalize(text))
    t = re.sub(r"[^\w%+=<>./:@-]+", " ", t)
    t = re.sub(r"(?<=\w)[.:]+(?=\s|$)", " ", t)  # sentence-final / trailing dots and colons
    return re.sub(r"\s+", " ", t).strip()


TOKEN_RE = re.compile(
    r"""
    (?:[<>]=?|~=|==|[\^~])?v?\d+(?:[.,]\d+)*(?:\.[xX*])?(?:[a-zA-Z]+\d*)*\+?   # numbers, versions, 60s, 3rd
    | --?[A-Za-z][\w.-]*(?:=[^\s,;)]+)?                                      # command-line flags
    | [A-Za-z_@][\w$@-]*(?:(?:\.|/|::|=|:(?=\w))[\w*$@"{}-]+)+[+]?             # dotted names, paths, Key=value
    | /[\w.-]+(?:/[\w.*-]+)*                                                 # absolute paths
    | [A-Za-z_][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+                                # snake_case names: one token
    | [A-Za-z]+(?:-[A-Za-z0-9]+)+                                            # COVID-19, Keegan-Michael
    | [A-Za-z]+(?:'[a-z]+)?                                                  # words
    | \S
    """,
    re.VERBOSE,
)


NEGATIONS = frozenset(
    """not no never none nobody nothing neither nor cannot can't don't doesn't didn't isn't
    aren't wasn't weren't won't wouldn't shouldn't couldn't hasn't haven't hadn't without
    n't""".split()
)

_NUM_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12,
}  # fmt: skip
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12,
}  # fmt: skip
_SCALES = {
    "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "mn": 1e6, "bn": 1e9,
    "lakh": 1e5, "crore": 1e7, "lakhs": 1e5, "crores": 1e7,
}  # fmt: skip
MONTHS = {
    m: i + 1
    for i, ms in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in ms
}  # fmt: skip

# unit -> (dimension, factor to the base unit)
_UNITS: dict[str, tuple[str, float]] = {
    "%": ("percent", 1), "percent": ("percent", 1), "pct": ("percent", 1),
    "ns": ("duration", 1e-9), "us": ("duration", 1e-6), "µs": ("duration", 1e-6),
    "ms": ("duration", 1e-3), "millisecond": ("duration", 1e-3), "milliseconds": ("duration", 1e-3),
    "s": ("duration", 1), "sec": ("duration", 1), "secs": ("duration", 1),
    "second": ("duration", 1), "seconds": ("duration", 1),
    "m": ("duration", 60), "min": ("duration", 60), "mins": ("duration", 60),
    "minute": ("duration", 60), "minutes": ("duration", 60),
    "h": ("duration", 3600), "hr": ("duration", 3600), "hrs": ("duration", 3600),
    "hour": ("duration", 3600), "hours": ("duration", 3600),
    "d": ("duration", 86400), "day": ("duration", 86400), "days": ("duration", 86400),
    "week": ("duration", 604800), "weeks": ("duration", 604800),
    "month": ("duration", 2629800), "months": ("duration", 2629800),
    "year": ("duration", 31557600), "years": ("duration", 31557600),
    "b": ("size", 1), "byte": ("size", 1), "bytes": ("size", 1),
    "kb": ("size", 1e3), "mb": ("size", 1e6), "gb": ("size", 1e9), "tb": ("size", 1e12),
    "kib": ("size", 1024), "mib": ("size", 1024**2), "gib": ("size", 1024**3),
    "tib": ("size", 1024**4), "k": ("count", 1e3),
    "km": ("length", 1e3), "mi": ("length", 1609.34), "miles": ("length", 1609.34),
    "mile": ("length", 1609.34), "kilometres": ("length", 1e3), "kilometers": ("length", 1e3),
    "metres": ("length", 1), "meters": ("length", 1), "ft": ("length", 0.3048),
    "feet": ("length", 0.3048), "cm": ("length", 0.01), "mm": ("length", 0.001),
    "kg": ("mass", 1), "g": ("mass", 1e-3), "lb": ("mass", 0.4536), "lbs": ("mass", 0.4536),
    "tonnes": ("mass", 1e3), "tons": ("mass", 907.2),
    "mhz": ("frequency", 1e6), "ghz": ("frequency", 1e9), "hz": ("frequency", 1),
    "rpm": ("rate", 1), "rps": ("rate", 1), "qps": ("rate", 1),
}  # fmt: skip
_CURRENCY = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR", "usd": "USD", "eur": "EUR",
             "dollars": "USD", "euros": "EUR", "pounds": "GBP"}  # fmt: skip

_GT = ("more than", "over", "above", "greater than", "exceeding", "in excess of", "upwards of",
       "higher than", "larger than", "bigger than", "longer than")  # fmt: skip
_GE = ("at least", "no less than", "no fewer than", "a minimum of", "minimum of", "not less than")
_LT = ("less than", "under", "below", "fewer than", "lower than", "smaller than", "shorter than")
_LE = ("at most", "up to", "no more than", "a maximum of", "maximum of", "not more than", "capped at",
       "limited to", "a limit of", "limit of", "a cap of", "cap of")  # fmt: skip
# "The maximum upload size is 10 GB", "the limit is 50 projects": a bound named before its
# verb is the same kind of statement as "up to 10 GB" (bound words pair with each other)
_BOUND_NAMED = re.compile(
    r"\b(?:(maximum|max|limit|cap|ceiling|upper bound)|(minimum|min|lower bound))\b"
    r"(?:\s+[\w-]+){0,2}\s+(?:is|are|was|were|of|at|to|=|:)$"
)
_APPROX = ("about", "approximately", "around", "roughly", "nearly", "almost", "some", "circa",
           "close to", "an estimated", "estimated", "over the", "c.")  # fmt: skip
_AFTER_GE = ("or more", "or later", "or newer", "or higher", "or above", "or greater", "and up", "and higher",
             "and above", "and later", "and newer", "or over")  # fmt: skip
_AFTER_LE = ("or less", "or fewer", "or earlier", "or older", "or lower", "or below", "and below")
# "Averaged over 7 critics": the count of raters a score is averaged across, not "more than 7"
_RATERS = frozenset(("critics", "reviewers", "reviews", "ratings", "votes", "users", "judges", "respondents"))

SOFTWARE_HINTS = frozenset(
    """python node node.js nodejs go golang java jdk kubernetes k8s helm docker traefik ruby rust
    php perl npm pip django rails react angular vue postgres postgresql mysql redis ubuntu debian
    centos rhel windows macos ios android linux kernel gcc clang llvm cuda tls http api
    version versions v release releases black pytest numpy pandas""".split()
)


@lru_cache(maxsize=20000)
def _word_tokens(text: str) -> tuple[str, ...]:
    return tuple(_tokenize(text))


def word_tokens(text: str) -> list[str]:
    return list(_word_tokens(text))


def _tokenize(text: str) -> list[str]:
    out: list[str] = []
    for t in TOKEN_RE.findall(normalize(text)):
        if len(t) > 2 and t.endswith(".") and not re.fullmatch(r"(?:[A-Za-z]\.)+", t):
            t = t[:-1]
            out.extend(_split_setting(t))
            out.append(".")
            continue
        if "-" in t and not t.startswith("-"):
            out.extend(_split_compound(t))
            continue
        out.extend(_split_setting(t))
    return out


def _split_compound(t: str) -> list[str]:
    parts = t.split("-")
    if len(parts) > 1 and all(p.lower() in _NUM_WORDS for p in parts):
        out = [parts[0]]
        for p in parts[1:]:
            out += ["-", p]
        return out  # thirty-one -> thirty - one (a number)
    return [t]


def _split_setting(t: str) -> list[str]:
    """``Default=0s`` -> ``Default``, ``=``, ``0s`` (flags such as ``--foo=bar`` stay whole)."""
    m = re.fullmatch(r"([A-Za-z][\w.]*)=(\S+)", t)
    if not m:
        return [t]
    return [m.group(1), "="] + TOKEN_RE.findall(m.group(2))


_ALNUM = re.compile(r"[a-z0-9]")


def content_words(tokens: list[str]) -> list[str]:
    out = []
    for t in tokens:
        lt = t.lower()
        if lt in OVERLAP_STOPWORDS or lt in NEGATIONS or not _ALNUM.search(lt):
            continue
        out.append(stem_overlap(lt))
    return out


def tokens_outside_quantities(slots: Slots) -> list[str]:
    """A sentence's tokens minus those of its quantities ("days" in "7 days" is the number's
    unit, which the quantity comparison reads)."""
    inside = {k for q in slots.quantities for k in range(q.start, q.end)}
    return [t for k, t in enumerate(slots.tokens) if k not in inside]


@lru_cache(maxsize=65536)
def content_set(text: str) -> frozenset[str]:
    """The content words of a text as a set (cached: evidence sentences are compared with many
    claims)."""
    return frozenset(content_words(word_tokens(text)))


@lru_cache(maxsize=65536)
def is_identifier(tok: str) -> bool:
    """Technical identifier: flag, dotted/camel/snake name, path, Key=value, Func()."""
    if tok.isalpha() and (tok.islower() or tok[1:].islower()):
        return False
    if re.fullmatch(r"--?[A-Za-z][\w.-]*(=.*)?", tok):
        return True
    if re.search(r"[A-Za-z]", tok) and re.search(r"[./:=_$@]|::", tok.strip(".")):
        return True
    if re.fullmatch(r"[a-z]+[A-Z][A-Za-z0-9]*", tok):  # camelCase
        return True
    if re.fullmatch(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+", tok):  # PascalCase with 2+ humps
        return True
    if re.fullmatch(r"[A-Z][A-Z0-9_]{1,}", tok) and len(tok) >= 2:  # ACRONYM / ENV_VAR
        return True
    return False


# ---------------------------------------------------------------------------------------------
# quantities
# ---------------------------------------------------------------------------------------------

INF = math.inf


@dataclass(frozen=True)
class Quantity:
    """A numeric fact as an interval of the value it states.

    ``kind``: number | percent | duration | size | money | length | mass | ... | year | date |
    version. ``lo``/``hi`` bound the value (years and numbers as floats, versions as tuples);
    ``point`` is True when the text states one value (possibly with rounding), False for
    comparator ranges ("more than 24 million").
    """

    kind: str
    # floats for numbers and years, tuples for versions and dates (``kind`` says which)
    lo: Any
    hi: Any
    lo_open: bool
    hi_open: bool
    text: str  # the span as written, comparator included
    start: int  # token index
    end: int
    context: frozenset[str] = frozenset()
    point: bool = True
    op: str = "="  # = | > | >= | < | <= | ~ | range | min (version requirement "3.9+")


def _parse_num(tok: str) -> float | None:
    t = tok.replace(",", "")
    try:
        return float(t)
    except ValueError:
        return None


def _precision(tok: str) -> float:
    """Unit of the last written digit of a decimal token ("23.5" -> 0.1, "24" -> 1)."""
    t = tok.replace(",", "")
    if "." in t:
        return 10.0 ** -len(t.split(".")[1])
    return 1.0


_VERSION_TOKEN = re.compile(r"v?(\d+(?:\.\d+)*)(\.[xX*])?(\+)?")


def _version_tuple(s: str) -> tuple[int, ...]:
    parts = [int(p) for p in re.findall(r"\d+", s)] or [0]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _lower_phrase(tokens: list[str], i: int, n: int) -> str:
    return " ".join(t.lower() for t in tokens[max(0, i - n) : i])


def _after_phrase(tokens: list[str], j: int, n: int) -> str:
    return " ".join(t.lower() for t in tokens[j : j + n])


def _ends_with_any(phrase: str, options) -> str | None:
    for o in sorted(options, key=len, reverse=True):
        if phrase == o or phrase.endswith(" " + o):
            return o
    return None


def _starts_with_any(phrase: str, options) -> str | None:
    for o in sorted(options, key=len, reverse=True):
        if phrase == o or phrase.startswith(o + " "):
            return o
    return None


_BREAK = re.compile(r"^[,;:()\[\]]$|^\d")


def _context(tokens: list[str], i: int, j: int, width: int = 3) -> frozenset[str]:
    """Content words next to a quantity: right side (the counted noun) marked with ``>``."""
    left: list[str] = []
    k = i - 1
    while k >= 0 and len(left) < width and not _BREAK.match(tokens[k]):
        left.append(tokens[k])
        k -= 1
    right: list[str] = []
    k = j
    while k < len(tokens) and len(right) < width and not _BREAK.match(tokens[k]):
        right.append(tokens[k])
        k += 1
    skip = set(_SCALES) | set(_UNITS) | set(MONTHS)
    words = {w for w in content_words(left) if w not in skip}
    words |= {">" + w for w in content_words(right) if w not in skip}
    return frozenset(words)


def extract_quantities(tokens: list[str]) -> list[Quantity]:
    """All numeric slots of a token list, with comparators folded into intervals."""
    out: list[Quantity] = []
    i = 0
    n = len(tokens)
    used: set[int] = set()
    while i < n:
        tok = tokens[i]
        low = tok.lower()
        if low not in MONTHS and low not in _NUM_WORDS and not any(ch.isdigit() for ch in tok):
            i += 1
            continue
        q = None
        # dates: "January 5, 2019", "5 January 2019", "January 2019", ISO 2019-01-05
        m_iso = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", tok)
        if m_iso is None and re.fullmatch(r"\d{4}", tok) and i + 4 < n and tokens[i + 1] == "-":
            if re.fullmatch(r"\d{2}", tokens[i + 2]) and tokens[i + 3] == "-":
                m_iso = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", "".join(tokens[i : i + 5]))
                if m_iso:
                    q = _date(m_iso, tokens, i, i + 5)
        if q is None and m_iso is not None:
            q = _date(m_iso, tokens, i, i + 1)
        if q is None and low in MONTHS and (low != "may" or (i + 1 < n and re.fullmatch(r"\d{1,4}", tokens[i + 1]))):
            q = _month_date(tokens, i)
        if (
            q is None
            and re.fullmatch(r"\d{1,2}", tok)
            and i + 1 < n
            and tokens[i + 1].lower() in MONTHS
            and tokens[i + 1].lower() != "may"
            or (
                q is None
                and re.fullmatch(r"\d{1,2}", tok)
                and i + 2 < n
                and tokens[i + 1].lower() == "may"
                and re.fullmatch(r"\d{4}", tokens[i + 2])
            )
        ):
            q = _day_month_date(tokens, i)
        if q is None and re.search(r"\d", tok):
            q = _numeric(tokens, i)
        if q is None and low in _NUM_WORDS and not (low == "one" and not _counted_one(tokens, i)):
            q = _word_number(tokens, i)
        if q is not None and not (set(range(q.start, q.end)) & used):
            out.append(q)
            used.update(range(q.start, q.end))
            i = max(i + 1, q.end)
        else:
            i += 1
    return out


def _counted_one(tokens: list[str], i: int) -> bool:
    # "one" as a count ("one album") rather than a pronoun ("one of the", "no one")
    nxt = tokens[i + 1].lower() if i + 1 < len(tokens) else ""
    prev = tokens[i - 1].lower() if i > 0 else ""
    return nxt not in ("of", "another", "", ",", ".") and prev not in ("no", "any", "every", "the", "this", "that", "which")


_DATE_OPS = (("prior to", "<"), ("before", "<"), ("until", "<="), ("by", "<="), ("no later than", "<="),
             ("after", ">"), ("since", ">="), ("from", ">="), ("no earlier than", ">="))  # fmt: skip


# "by" and "from" are left out for bare years: "by 2016" is often an agent ("a study by 2016
# graduates") and "from 2010" usually opens a range ("from 2010 to 2015")
_YEAR_OPS = tuple((p, o) for p, o in _DATE_OPS if p not in ("by", "from"))


def _time_bound(tokens: list[str], i: int, ops) -> tuple[str, int]:
    """(comparator, start token) from a phrase such as "before" or "no later than" right before
    tokens[i]; ("=", i) when there is none."""
    before = _lower_phrase(tokens, i, 3)
    for phrase, o in ops:
        if before == phrase or before.endswith(" " + phrase):
            return o, i - len(phrase.split())
    return "=", i


def _dated(v, tokens, i, j) -> Quantity:
    op, s = _time_bound(tokens, i, _DATE_OPS)
    return Quantity("date", v, v, False, False, " ".join(tokens[s:j]), s, j, _context(tokens, s, j), point=op == "=", op=op)


def _date(m, tokens, i, j) -> Quantity:
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    return _dated((y, mo, d), tokens, i, j)


def _month_date(tokens, i) -> Quantity | None:
    mo = MONTHS[tokens[i].lower()]
    n = len(tokens)
    j = i + 1
    day = year = None
    if j < n and (dm := re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)?", tokens[j])):
        day = int(dm.group(1))
        j += 1
        if j < n and tokens[j] == ",":
            j += 1
    if j < n and re.fullmatch(r"\d{4}", tokens[j]):
        year = int(tokens[j])
        j += 1
    if day is None and year is None:
        return None
    if year is None and j < n and tokens[j] == ",":
        pass
    return _dated((year, mo, day), tokens, i, j)


def _day_month_date(tokens, i) -> Quantity | None:
    day = int(tokens[i])
    mo = MONTHS[tokens[i + 1].lower()]
    j = i + 2
    year = None
    if j < len(tokens) and re.fullmatch(r"\d{4}", tokens[j]):
        year = int(tokens[j])
        j += 1
    return _dated((year, mo, day), tokens, i, j)


def _comparator(tokens, i, j) -> tuple[str, int, int, str]:
    """(op, new_start, new_end, prefix) from words around tokens[i:j]."""
    if i > 0 and tokens[i - 1] in _CURRENCY:
        i -= 1  # "over $ 240 million"
    before = _lower_phrase(tokens, i, 4)
    after = _after_phrase(tokens, j, 2)
    op = "="
    s, e = i, j
    for opts, o in ((_GE, ">="), (_LE, "<="), (_GT, ">"), (_LT, "<"), (_APPROX, "~")):
        hit = _ends_with_any(before, opts)
        if hit == "over" and before.endswith("averaged over") and j < len(tokens) and tokens[j].lower() in _RATERS:
            break
        if hit:
            op = o
            s = i - len(hit.split())
            break
    if op == "=":
        named = _BOUND_NAMED.search(before)
        if named:
            op = "<=" if named.group(1) else ">="
    hit = _starts_with_any(after, _AFTER_GE)
    if hit:
        op, e = ">=", j + len(hit.split())
    hit2 = _starts_with_any(after, _AFTER_LE)
    if hit2:
        op, e = "<=", j + len(hit2.split())
    return op, s, e, before


def _interval(value: float, op: str, prec: float) -> tuple[float, float, bool, bool, bool]:
    """(lo, hi, lo_open, hi_open, point) for value with comparator and rounding precision."""
    if op == ">":
        return value, INF, True, True, False
    if op == ">=":
        return value, INF, False, True, False
    if op == "<":
        return -INF, value, True, True, False
    if op == "<=":
        return -INF, value, True, False, False
    if op == "~":
        tol = max(abs(value) * 0.1, prec)
        return value - tol, value + tol, False, False, True
    if prec == 0:
        return value, value, False, False, True  # an exact value ("three"): [3, 3]
    half = prec / 2
    return value - half, value + half, False, True, True  # [x - h, x + h): 3.7 and 3.8 do not touch


_YEAR_MODIFIER_LEADS = frozenset(("the", "a", "an", "its", "their", "his", "her", "our", "this", "that", "'s",
                                  "of", "in", "for", "since", "until", "and", "or", ","))  # fmt: skip
_SINGULAR_S = frozenset(("series", "species", "news", "means", "status", "census", "analysis", "basis"))


def _counts_a_noun(tokens: list[str], i: int, j: int) -> bool:
    """A four-digit number that counts the plural noun after it ("more than 1000 requests",
    "with 1150 screens") rather than a year, which modifies a noun after a determiner or a list
    ("a 2004 sports drama", "the 2011 and 2019 editions") or ends a title ("Blade Runner 2049")."""
    if i == 0 or j >= len(tokens):
        return False
    nxt, prev = tokens[j], tokens[i - 1]
    if not re.fullmatch(r"[a-z]{3,}s", nxt) or nxt.endswith(("ss", "us", "is")) or nxt in _SINGULAR_S:
        return False
    return prev.islower() and prev not in _YEAR_MODIFIER_LEADS


def _numeric(tokens: list[str], i: int) -> Quantity | None:
    tok = tokens[i]
    n = len(tokens)
    prefix_op = ""
    m = re.fullmatch(r"([<>]=?|~=|==|[\^~])?(v?)(\d+(?:[.,]\d+)*)(\.[xX*])?([a-zA-Zµ]+\d*[a-zA-Z]*)?(\+)?", tok)
    if not m:
        return None
    prefix_op, vprefix, num, xsuffix, suffix, plus = m.groups()
    suffix = suffix or ""
    prev = tokens[i - 1].lower() if i > 0 else ""
    prev2 = tokens[i - 2].lower() if i > 1 else ""
    j = i + 1
    # version?
    dots = num.count(".")
    is_version = bool(
        vprefix
        or xsuffix
        or dots >= 2
        or (prefix_op and prefix_op in ("^", "~", "~=", ">=", "<=", ">", "<", "==") and dots >= 1)
        or (dots >= 1 and (plus or prev in SOFTWARE_HINTS or prev2 in ("version", "versions")))
        or (
            dots >= 1
            and i > 0
            and re.fullmatch(r"[A-Z][A-Za-z]*[a-z][A-Za-z]*|[A-Z][a-z]*[A-Z]\w*", tokens[i - 1] or "")
            and not (i + 1 < n and (tokens[i + 1].lower() in _SCALES or tokens[i + 1].lower() in _UNITS))
        )
        or (plus and prev in SOFTWARE_HINTS)
    )
    if "," in num and dots == 0:
        is_version = False
    if is_version and not suffix:
        return _version(tokens, i, prefix_op or "", num, xsuffix, plus)
    value = _parse_num(num)
    if value is None:
        return None
    prec = _precision(num)
    kind = "number"
    factor = 1.0
    # attached units: 60s, 10MB, 1h30m, 3rd
    if suffix:
        sl = suffix.lower()
        if sl in ("st", "nd", "rd", "th"):
            kind = "ordinal"
        elif sl == "s" and re.fullmatch(r"\d{4}", num) and 1000 < value < 2100:  # 1990s
            return Quantity("year", value, value + 9, False, False, tok, i, j, _context(tokens, i, j), point=False)
        elif re.fullmatch(r"(\d*[hms]|\d*ms)+", tok.lower().lstrip("<>=~^")) and re.fullmatch(
            r"(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+", tok.lower().lstrip("<>=~^")
        ):
            secs = 0.0
            for amount, unit in re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", tok.lower()):
                secs += float(amount) * _UNITS[unit][1]
            return Quantity("duration", secs, secs, False, False, tok, i, j, _context(tokens, i, j), op=prefix_op or "=")
        elif sl in _UNITS:
            kind, factor = _UNITS[sl]
            if kind == "count":
                kind = "number"
        elif sl in ("x",):
            kind = "factor"
        else:
            return None  # e.g. "mp3", "h264": an identifier, not a quantity
    # year?
    if kind == "number" and re.fullmatch(r"\d{4}", num) and 1000 <= value <= 2100 and not plus:
        nxt = tokens[j].lower() if j < n else ""
        if nxt == "'" and j + 1 < n and tokens[j + 1].lower() == "s" and value % 10 == 0:  # the 1970's
            return Quantity("year", value, value + 9, False, False, " ".join(tokens[i : j + 2]), i, j + 2,
                            _context(tokens, i, j + 2), point=False)  # fmt: skip
        if nxt not in _UNITS and nxt not in _SCALES and nxt not in ("%", "people", "km") and not _counts_a_noun(tokens, i, j):
            op, s, e, _ = _comparator(tokens, i, j)
            op = {"~": "="}.get(op, op)
            if op == "=":  # "formed after 1978", "died before 1988": the year is a bound, not the value
                op, s = _time_bound(tokens, i, _YEAR_OPS)
            lo, hi, lo_open, hi_open, point = _interval(value, op, 1.0)
            if point:
                lo, hi = value, value
            return Quantity("year", lo, hi, lo_open, hi_open, " ".join(tokens[s:e]), s, e, _context(tokens, s, e), point=point, op=op)
    # scale words and units after
    while j < n:
        nl = tokens[j].lower()
        if nl in _SCALES:
            factor *= _SCALES[nl]
            prec = prec  # precision is in the scaled unit
            j += 1
            continue
        if kind == "number" and (nl in _UNITS) and nl not in ("m", "s", "d", "h", "b", "g", "k"):
            kind, f2 = _UNITS[nl]
            if kind == "count":
                kind = "number"
            factor *= f2
            j += 1
            continue
        if kind == "number" and nl in ("per",) and j + 1 < n and tokens[j + 1].lower() == "cent":
            kind = "percent"
            j += 2
            continue
        break
    # currency before
    if prev in _CURRENCY or (i > 0 and tokens[i - 1] in _CURRENCY):
        kind = "money"
    elif j < n and tokens[j].lower() in _CURRENCY:
        kind = "money"
        j += 1
    op, s, e, _ = _comparator(tokens, i, j)
    if prefix_op in (">", ">=", "<", "<=", "~"):
        op = prefix_op
    if plus:
        op = ">="
    # ranges: "3-5", "between 3 and 5", "3 to 5"
    if j + 1 < n and tokens[j] in ("-", "to") and re.fullmatch(r"\d+(?:[.,]\d+)?", tokens[j + 1]):
        hi_v = _parse_num(tokens[j + 1])
        if hi_v is not None and hi_v > value:
            k = j + 2
            while k < n and tokens[k].lower() in _SCALES:
                k += 1
            e = max(e, k)
            ctx = _context(tokens, s, e)
            return Quantity(kind, value * factor, hi_v * factor, False, False, " ".join(tokens[s:e]), s, e, ctx, point=False, op="range")
    scaled = value * factor
    lo, hi, lo_open, hi_open, point = _interval(scaled, op, prec * factor if factor > 1 else prec * (factor if kind != "number" else 1))
    if kind in ("ordinal",):
        lo, hi = value, value
        if point:  # a rank is exact: "3rd" is [3, 3], not the empty [3, 3)
            lo_open = hi_open = False
    return Quantity(kind, lo, hi, lo_open, hi_open, " ".join(tokens[s:e]), s, e, _context(tokens, s, e), point=point, op=op)


def _word_number(tokens: list[str], i: int) -> Quantity | None:
    value = float(_NUM_WORDS[tokens[i].lower()])
    j = i + 1
    n = len(tokens)
    if j + 1 < n and tokens[j] == "-" and tokens[j + 1].lower() in _NUM_WORDS and value >= 20:
        value += _NUM_WORDS[tokens[j + 1].lower()]
        j += 2
    if value == 100 and i > 0 and tokens[i - 1].lower() in ("a", "one"):
        pass
    while j < n and tokens[j].lower() in _SCALES:
        value *= _SCALES[tokens[j].lower()]
        j += 1
    kind = "number"
    if j < n and tokens[j].lower() in _UNITS and tokens[j].lower() not in ("m", "s", "d", "h", "b", "g", "k"):
        kind, f = _UNITS[tokens[j].lower()]
        kind = "number" if kind == "count" else kind
        value *= f
        j += 1
    op, s, e, _ = _comparator(tokens, i, j)
    lo, hi, lo_open, hi_open, point = _interval(value, op, 0.0)  # a word number is exact
    return Quantity(kind, lo, hi, lo_open, hi_open, " ".join(tokens[s:e]), s, e, _context(tokens, s, e), point=point, op=op)


def _version(tokens, i, prefix_op, num, xsuffix, plus) -> Quantity:
    n = len(tokens)
    j = i + 1
    t = _version_tuple(num)
    op = "="
    if prefix_op in (">=", ">"):
        op = "min" if prefix_op == ">=" else ">"
    elif prefix_op in ("<", "<="):
        op = prefix_op
    elif prefix_op in ("^", "~", "~="):
        op = prefix_op
    if plus:
        op = "min"
    if xsuffix:
        op = "series"
    # "3.6-3.10" / "3.6 to 3.10" ranges
    if j + 1 < n and tokens[j] in ("-", "to", "through") and re.fullmatch(r"v?\d+(?:\.\d+)+", tokens[j + 1]):
        hi = _version_tuple(tokens[j + 1].lstrip("v"))
        return Quantity(
            "version", t, hi, False, False, " ".join(tokens[i : j + 2]), i, j + 2, _context(tokens, i, j + 2), point=False, op="range"
        )
    before = _lower_phrase(tokens, i, 3)
    after = _after_phrase(tokens, j, 2)
    if _ends_with_any(before, _GE) or _starts_with_any(after, _AFTER_GE):
        hit = _starts_with_any(after, _AFTER_GE)
        if hit:
            j += len(hit.split())
        op = "min"
    ctx = _context(tokens, i, j)
    return Quantity("version", t, t, False, False, " ".join(tokens[i:j]), i, j, ctx, point=(op == "="), op=op)


# ---------------------------------------------------------------------------------------------
# interval relations
# ---------------------------------------------------------------------------------------------


def stated_point(q: Quantity) -> Quantity:
    """An evidence value as the point it states: the rounding interval of "45" (44.5-45.5) would
    make "more than 45" neither true nor false of it, yet a source saying 45 means 45."""
    if not q.point or not isinstance(q.lo, float) or q.lo in (INF, -INF) or q.hi in (INF, -INF):
        return q
    mid = (q.lo + q.hi) / 2
    return replace(q, lo=mid, hi=mid, lo_open=False, hi_open=False)


def bound_relation(claim: Quantity, ev: Quantity) -> str | None:
    """Two statements of one limit with the same comparator ("up to 5 times" / "up to 8 times",
    "Java 11 or later" / "Java 17 or later"): the bound itself is the fact. None if not that."""
    if claim.op != ev.op or claim.op not in (">", ">=", "<", "<=", "min") or claim.kind != ev.kind:
        return None
    if any(w.lower() in _SCALES for w in (claim.text + " " + ev.text).split()):
        return None  # "more than 23.5 million sales": an estimate of one value, not a limit
    a = claim.lo if claim.op in (">", ">=", "min") else claim.hi
    b = ev.lo if ev.op in (">", ">=", "min") else ev.hi
    return "supports" if a == b else "refutes"


def value_distance(a: Quantity, b: Quantity) -> float:
    """How far apart two quantities' values are, relatively (0 = the same): a one-sided bound
    ("less than 81") by its bound, a version by its major number. For choosing which of several
    values a claim's quantity speaks of, not for judging it."""

    def value(q: Quantity) -> float:
        v = q.hi if q.lo == -INF else q.lo
        return float(v[0] if isinstance(v, tuple) else v)

    try:
        x, y = value(a), value(b)
    except (TypeError, ValueError, IndexError):
        return 0.0
    if x == y:
        return 0.0
    return abs(x - y) / max(abs(x), abs(y), 1e-9)


def comparable_kinds(a: str, b: str) -> bool:
    """Whether quantities of these kinds state the same sort of value: one kind, or a plain
    number read beside a version or a rank ("Python 3.6" / "3.6+"), or a year beside a date."""
    if a == b:
        return True
    pair = {a, b}
    return pair <= {"number", "version"} or pair <= {"year", "date"} or pair <= {"number", "ordinal"}


def quantity_relation(claim: Quantity, ev: Quantity) -> str:
    """'supports' (evidence inside the claim's range), 'refutes' (disjoint) or 'nei' (overlap)."""
    if claim.kind == "version" or ev.kind == "version":
        return _version_relation(claim, ev)
    if claim.kind in ("year", "date") and ev.kind in ("year", "date"):
        cy = claim.lo[0] if claim.kind == "date" else None
        ey = ev.lo[0] if ev.kind == "date" else None
        if claim.kind == "date" and ev.kind == "date" and (cy is None) != (ey is None):
            cy = ey = cy or ey  # "1 April" against "3 April 2020": same year
        elif claim.kind == "date" and cy is None or ev.kind == "date" and ey is None:
            if claim.kind == "date" and ev.kind == "date":
                cy = ey = 2000
            else:
                return "nei"
        c = _time_interval(claim, cy)
        e = _time_interval(ev, ey)
        if c is None or e is None:
            return "nei"
        return _interval_relation(c, e)
    return _interval_relation((claim.lo, claim.hi, claim.lo_open, claim.hi_open), (ev.lo, ev.hi, ev.lo_open, ev.hi_open))


def _interval_relation(c, e) -> str:
    clo, chi, clo_o, chi_o = c
    elo, ehi, elo_o, ehi_o = e
    # disjoint?
    if ehi < clo or (ehi == clo and (ehi_o or clo_o)):
        return "refutes"
    if elo > chi or (elo == chi and (elo_o or chi_o)):
        return "refutes"
    # evidence inside claim?
    lo_ok = elo > clo or (elo == clo and (elo_o or not clo_o))
    hi_ok = ehi < chi or (ehi == chi and (ehi_o or not chi_o))
    if lo_ok and hi_ok:
        return "supports"
    return "nei"


def _day(y: int, m: int, d: int) -> int:
    return y * 372 + (m - 1) * 31 + (d - 1)


def _time_interval(q: Quantity, year: int | None):
    """A year or date (with its comparator) as an interval of day numbers."""
    if q.kind == "year":
        if q.lo == -INF or q.hi == INF:
            lo = -INF if q.lo == -INF else _day(int(q.lo), 1, 1) + (372 if q.lo_open else 0)
            hi = INF if q.hi == INF else _day(int(q.hi), 12, 31) - (372 if q.hi_open else 0)
            return lo, hi, q.lo_open and lo == -INF, q.hi_open and hi == INF
        return _day(int(q.lo), 1, 1), _day(int(q.hi), 12, 31), False, False
    y, m, d = q.lo
    y = y if y is not None else year
    if y is None or m is None:
        return None
    lo = _day(y, m, d or 1)
    hi = _day(y, m, d or 31)
    if q.op == "<":
        return -INF, lo, True, True
    if q.op == "<=":
        return -INF, hi, True, False
    if q.op == ">":
        return hi, INF, True, True
    if q.op == ">=":
        return lo, INF, False, True
    return lo, hi, False, False


def _date_relation(c, e) -> str:
    for a, b in zip(c, e, strict=True):
        if a is not None and b is not None and a != b:
            return "refutes"
    for a, b in zip(c, e, strict=True):
        if a is not None and b is None:
            return "nei"
    return "supports"


def _prefix_eq(a: tuple, b: tuple) -> bool:
    k = min(len(a), len(b))
    return a[:k] == b[:k]


def _version_relation(c: Quantity, e: Quantity) -> str:
    ct = c.lo if isinstance(c.lo, tuple) else (int(c.lo),) if isinstance(c.lo, float) and c.lo == int(c.lo) and c.lo != INF else None
    et = e.lo if isinstance(e.lo, tuple) else (int(e.lo),) if isinstance(e.lo, float) and e.lo == int(e.lo) and e.lo != INF else None
    if ct is None or et is None:
        return "nei"
    cop = c.op if c.kind == "version" else (">=" if c.op in (">=",) else c.op)
    eop = e.op if e.kind == "version" else (">=" if e.op in (">=",) else e.op)
    cop = "min" if cop == ">=" else cop
    eop = "min" if eop == ">=" else eop
    if c.op == "range" and isinstance(c.hi, tuple):
        if e.op == "range" and isinstance(e.hi, tuple):
            return "supports" if (ct, c.hi) == (et, e.hi) else "refutes"
        return "nei"
    if cop == eop:
        if cop == "series":
            return "supports" if _prefix_eq(ct, et) and len(ct) == len(et) else "refutes"
        if cop == "=":
            if ct == et:
                return "supports"
            # "3.9" vs "3.9.1": evidence more specific within the claim's release line
            if len(ct) < len(et) and et[: len(ct)] == ct:
                return "supports"
            return "refutes"
        return "supports" if ct == et else "refutes"
    # a requirement ("3.9+") against a series ("3.x") or a point: different statements
    if {cop, eop} == {"min", "="}:
        return "nei" if ct == et else "refutes"
    return "refutes" if ct != et or cop != eop else "supports"


# ---------------------------------------------------------------------------------------------
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
