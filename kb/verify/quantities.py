"""Quantities found in a sentence: numbers with units, scale words and comparators as intervals,
years, dates and software versions (regular expressions only)."""

import math
import re
from dataclasses import dataclass
from typing import Any

from kb.verify.tokens import content_words
from kb.verify.vocabulary import (
    _AFTER_GE,
    _AFTER_LE,
    _APPROX,
    _BOUND_NAMED,
    _CURRENCY,
    _GE,
    _GT,
    _LE,
    _LT,
    _NUM_WORDS,
    _RATERS,
    _SCALES,
    _UNITS,
    MONTHS,
    SOFTWARE_HINTS,
)

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
    # One token scan on purpose: a number's unit, scale, comparator and kind are read around it together.
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
