"""Pairing a claim's quantity with an evidence quantity by kind and by the words around them."""

from __future__ import annotations

from kb.verify.slots import (
    Quantity,
    Slots,
    comparable_kinds,
    value_distance,
)


def _shared_quantity_context(cs: Slots, es: Slots) -> bool:
    for q in cs.quantities:
        for x in es.quantities:
            if comparable_kinds(q.kind, x.kind) and _ctx_score(q.context, x.context) >= 2:
                return True
    return False


def _ctx_score(a: frozenset[str], b: frozenset[str]) -> float:
    """Right-side (counted noun) matches weigh 2, other shared context words 1."""
    s = 0.0
    for w in a:
        if w in b:
            s += 2.0 if w.startswith(">") else 1.0
        elif (w[1:] if w.startswith(">") else ">" + w) in b:
            s += 0.5
    return s


def _pair_by_context(q: Quantity, cs: Slots, es: Slots) -> tuple[Quantity | None, float, list[Quantity]]:
    """(best, score, candidates): the evidence quantities of a kind compatible with ``q``, and
    the one whose context matches it best with its score ((None, 0) when none pairs clearly)."""
    cands = [x for x in es.quantities if comparable_kinds(x.kind, q.kind)]
    if not cands:
        return None, 0, cands
    return (*_best_by_context(q, cands, len(cs.quantities) == 1 and len(es.quantities) == 1), cands)


def _best_by_context(q: Quantity, cands: list[Quantity], only_pair: bool) -> tuple[Quantity | None, float]:
    best: Quantity | None = None
    best_score: float = 0
    for x in cands:
        s = _ctx_score(q.context, x.context)
        if x.kind == q.kind:
            s += 0.5
        if s > best_score or (s == best_score and best is not None and value_distance(q, x) < value_distance(q, best)):
            best, best_score = x, s
    if best is not None and best_score >= 1.5:
        return best, best_score
    if only_pair and cands and _ctx_score(q.context, cands[0].context) > 0:
        return cands[0], 1
    return None, 0


def _qkind(q: Quantity, e: Quantity) -> str:
    if "version" in (q.kind, e.kind):
        return "version"
    if q.kind in ("year", "date") and e.kind in ("year", "date"):
        return "date" if "date" in (q.kind, e.kind) else "year"
    return q.kind
