"""How a claim's quantity relates to an evidence quantity: interval, date and version relations,
bounds and distances."""

from dataclasses import replace

from kb.verify.quantities import INF, Quantity
from kb.verify.vocabulary import _SCALES

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
