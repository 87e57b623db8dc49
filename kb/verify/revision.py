"""Revision contrast: which of two dated versions of one sentence does the claim follow?

Two versions of one source sentence differ only where the source changed ("88 %" -> "89 %",
"Louis X , Soldier" -> "Louis XIV , King", "mixed" -> "generally favorable"). What changed is
exactly the fact a stale claim still states, so the claim is compared with the *changed* parts
only, not with the whole sentences: a model reading each version on its own sees two nearly
identical sentences and gives them nearly the same judgement.

:func:`contrast` aligns the two versions word by word (difflib), then

* for every changed quantity (a number, date, year, version or percentage replaced by another),
  compares the claim's quantity of the same kind with the old and the new value (with its
  comparator: "less than 81" holds for 80, not for 82);
* for every changed run of words, looks for its content words in the claim: words only the
  older version had ("Soldier") or only the newer one has ("Italy").

It answers ``"older"`` (the claim states what the older version said and the newer one
replaced), ``"newer"`` (the claim states what only the newer version says) or None (the change
is not about the claim, or the signals disagree), with a rationale naming the changed slot.
Deterministic; the labelling itself stays in :mod:`kb.verify.policy`.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from difflib import SequenceMatcher

from kb.claims.text import OVERLAP_STOPWORDS, stem_overlap
from kb.evidence.versions import parse_renames
from kb.records import Judgement
from kb.verify.additions import same_word, typo_fixed
from kb.verify.history import without_leading_history
from kb.verify.policy import names_a_value, newest_dates
from kb.verify.rewording import restated
from kb.verify.slots import (
    NEGATIONS,
    Quantity,
    canonical,
    comparable_kinds,
    extract,
    quantity_relation,
    similarity,
    stated_point,
    tokens_outside_quantities,
    value_distance,
)

__all__ = ["Contrast", "contrast", "apply_contrast"]
log = logging.getLogger(__name__)

# How often the side was right on the VitaminC *training* part (the rules never train, so it is
# a fair development set): changed quantities 99.3% of 4,175 decisions, changed words 98.0% of
# 3,694. Words are discounted further: documentation rewrites change many words at once.
NUMBER_CONFIDENCE = 0.95
WORD_CONFIDENCE = 0.85
# Without a judgement taking a side on either version, the claim must share this much of its
# plain words with both (on the VitaminC training part 81% of the decided cases do; 4% share none).
MIN_ABOUT_SHARE = 0.4
MIN_COUNTERPART = 0.6  # difflib ratio of the two versions' words (the policy's "revision" bar): below it they are different sentences


@dataclass(frozen=True)
class Contrast:
    side: str  # "older" | "newer"
    confidence: float
    rationale: str
    claim_value: str | None = None
    old_value: str | None = None
    new_value: str | None = None


def _norm(tok: str) -> str:
    return tok.lower().replace(",", "") if any(ch.isdigit() for ch in tok) else tok.lower()


def _words(tokens: list[str]) -> set[str]:
    out = set()
    for t in tokens:
        for part in t.lower().split("-"):  # "comedy-drama" has the word "drama"
            if part in OVERLAP_STOPWORDS or part in NEGATIONS or not any(ch.isalpha() for ch in part) or len(part) < 2:
                continue
            out.add(stem_overlap(part))
    return out


def _plain_words(slots) -> set[str]:
    return _words(tokens_outside_quantities(slots))


def _parts(slots) -> list[str]:
    """The plain words in order, a hyphenated word taken apart ("add-on": "add", "on")."""
    return [part for t in tokens_outside_quantities(slots) for part in t.lower().split("-") if part.isalpha()]


def _prose_words(slots) -> set[str]:
    """The words written as words of their own, lower-cased (no piece of a code token or a path)."""
    return {t.lower() for t in tokens_outside_quantities(slots) if t.isalpha()}


def _written_apart(words: set[str], parts: list[str]) -> set[tuple[str, tuple[str, ...]]]:
    """Words of ``words`` that the other version writes as two or three words in a row, with a
    hyphen or a space ("addon" / "add-on", "vscode" / "VS Code", "setup" / "set up")."""
    out = set()
    for n in (2, 3):
        for i in range(len(parts) - n + 1):
            run = tuple(parts[i : i + n])
            if "".join(run) in words:
                out.add(("".join(run), run))
    return out


def about_share(claim: str, older: str, newer: str) -> float:
    """Share of the claim's plain words that both versions state: how much the claim is about
    the sentence whatever changed in it."""
    cw = _plain_words(extract(claim))
    if not cw:
        return 0.0
    return len(cw & _plain_words(extract(older)) & _plain_words(extract(newer))) / len(cw)


def _in_span(q: Quantity, lo: int, hi: int) -> bool:
    return q.start < hi and q.end > lo


def contrast(claim: str, older: str, newer: str, renamed: Mapping[str, str] | None = None) -> Contrast | None:
    """Which version the claim follows where the two versions differ; None when undecided.
    ``renamed``: terms the newest release renamed across its pages (old word -> new word), which
    are the same word in both versions."""
    try:
        return _contrast(claim, older, newer, renamed or {})
    except (ValueError, IndexError, TypeError, OverflowError, RecursionError) as exc:  # odd input: abstain
        log.debug("revision contrast abstains on %r: %s", claim[:80], exc)
        return None


def _contrast(claim: str, older: str, newer: str, renamed: Mapping[str, str]) -> Contrast | None:
    older, newer = without_leading_history(older, newer), without_leading_history(newer, older)
    cs, os_, ns = extract(claim), extract(older), extract(newer)
    ot = [_norm(t) for t in os_.tokens]
    nt = [_norm(t) for t in ns.tokens]
    if ot == nt:
        return None
    claim_words = _plain_words(cs)
    sm = SequenceMatcher(None, ot, nt, autojunk=False)
    if sm.ratio() < MIN_COUNTERPART:
        return None  # not two versions of one sentence: what differs is everything
    votes: list[Contrast] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        old_q = [q for q in os_.quantities if _in_span(q, i1, i2)]
        new_q = [q for q in ns.quantities if _in_span(q, j1, j2)]
        if len(old_q) == len(new_q):
            changed = list(zip(old_q, new_q))  # "7 cases , 5 in ..." -> "11 cases , 5 in ...": in order
        else:
            changed = [(qo, qn) for qo in old_q for qn in new_q]
        for qo, qn in changed:
            if not comparable_kinds(qo.kind, qn.kind) or quantity_relation(qo, qn) == "supports":
                continue
            cands = [c for c in cs.quantities if comparable_kinds(c.kind, qo.kind)]
            if not cands:
                continue

            def distance(c: Quantity, qo=qo, qn=qn) -> float:
                return min(value_distance(c, qo), value_distance(c, qn))

            c = min(cands, key=lambda c: (distance(c), c.kind != qo.kind))
            if distance(c) > 0.5:
                continue  # the claim's number is about something else
            ro, rn = quantity_relation(c, stated_point(qo)), quantity_relation(c, stated_point(qn))
            if ro == "supports" and rn == "refutes":
                votes.append(Contrast("older", NUMBER_CONFIDENCE, f"the newer version changed {qo.text!r} to {qn.text!r}; "
                                      f"the claim's {c.text!r} holds only for the older", c.text, qo.text, qn.text))  # fmt: skip
            elif rn == "supports" and ro == "refutes":
                votes.append(Contrast("newer", NUMBER_CONFIDENCE, f"the newer version changed {qo.text!r} to {qn.text!r}; "
                                      f"the claim's {c.text!r} holds for the newer", c.text, qo.text, qn.text))  # fmt: skip
    # words: over the whole sentence, so a change difflib splits into a deletion and an
    # insertion ("Football Conference side" -> "Conference National side") is still one change
    old_words, new_words = _plain_words(os_), _plain_words(ns)
    removed = {w for w in old_words - new_words if not any(ch.isdigit() for ch in w)}
    added = {w for w in new_words - old_words if not any(ch.isdigit() for ch in w)}
    # a name written out with its namespace ("signals" -> "pdm.signals") is the same name
    qualified = {w for w in removed if any(a.endswith("." + w) for a in added)}
    removed -= qualified
    added = {a for a in added if not any(a.endswith("." + w) for w in qualified)}
    # a typo fixed is the same word ("converstaion" -> "conversation", "defing" -> "defining"):
    # read on the words as written, since a stem ("defin") is in no dictionary
    old_parts, new_parts = _parts(os_), _parts(ns)
    old_raw, new_raw = set(old_parts), set(new_parts)
    fixed = {(r, a) for r in old_raw - new_raw for a in new_raw - old_raw if typo_fixed(r, a) or renamed.get(r) == a}
    # a word joined in one version and written apart in the other is the same word: notation
    for word, run in _written_apart(old_raw - new_raw, new_parts):
        fixed.add((word, word))
        added -= {stem_overlap(p) for p in run}
    for word, run in _written_apart(new_raw - old_raw, old_parts):
        fixed.add((word, word))
        removed -= {stem_overlap(p) for p in run}
    removed -= {stem_overlap(r) for r, _ in fixed}
    added -= {stem_overlap(a) for _, a in fixed}
    # a prose word in another form is the same word ("convenience" -> "convenient", "with name" ->
    # "named"); a piece of a code token is not prose
    old_prose, new_prose = _prose_words(os_), _prose_words(ns)
    kin = {(stem_overlap(r), stem_overlap(a)) for r in old_prose - new_prose for a in new_prose - old_prose if same_word(r, a)}
    removed -= {r for r, _ in kin}
    added -= {a for _, a in kin}
    hit_old, hit_new = removed & claim_words, added & claim_words
    if (hit_old or hit_new) and restated(older, newer):
        # the newer version says the same in other words: the words it changed hold no value
        # (kb/verify/rewording.py), so a claim with the older words is not left behind by them
        hit_old = hit_new = set()
    if hit_old and not hit_new:
        votes.append(Contrast("older", WORD_CONFIDENCE, f"the claim says {' '.join(sorted(hit_old))!r}, which only the older "
                              f"version has (the newer one has {' '.join(sorted(added)) or 'nothing'!r} instead)",
                              None, " ".join(sorted(hit_old)), " ".join(sorted(added)) or None))  # fmt: skip
    elif hit_new and not hit_old:
        votes.append(Contrast("newer", WORD_CONFIDENCE, f"the claim says {' '.join(sorted(hit_new))!r}, which only the newer "
                              f"version has (the older one had {' '.join(sorted(removed)) or 'nothing'!r} instead)",
                              None, " ".join(sorted(removed)) or None, " ".join(sorted(hit_new))))  # fmt: skip
    if not votes:
        return None
    sides = {v.side for v in votes}
    if len(sides) > 1:
        return None
    return max(votes, key=lambda v: v.confidence)


def apply_contrast(claim_text: str, evidence, judgements, keep_above: float = 0.85, elsewhere: Collection[int] = (), as_written: str = ""):
    """Judgements with the revision contrast applied: for every source with dated versions,
    each older version's sentence is contrasted with the newest version's; where the claim
    follows one side, that side supports and the other refutes (rules tier, the changed slot in
    the rationale). Sure rules judgements (``keep_above``) are kept. ``elsewhere``: the indices of
    passages the rules found to be about another entry than the claim's (another option's
    "Default: 80", another row): they are neither side of a contrast, since an option's line
    replaced by its neighbour's says nothing of the option. ``as_written``: the claim as the KB
    writes it, before context was added to it; a counterpart that states it word for word
    changed only around it. Returns a new list."""

    out = list(judgements)
    newest = newest_dates(evidence)  # an undated passage is never "the older version" below
    # a term renamed across the newest release (a newest sentence states the claim with it
    # renamed) is the same word wherever else the two versions differ in it
    renamed = {w: n for e in evidence if e.renamed for w, n in parse_renames(e.renamed).items()}
    # a source whose newest version still states the claim (a sure rules support, or the claim
    # word for word in one of its passages) has not changed it, whatever else changed nearby
    claim_key = canonical(claim_text)
    # a table cell or a clause keeps its words in the newer row or sentence though the context
    # added to the claim ("Frigate NVR" of the row's first cell) was renamed around it
    # ("Yes" of a row whose first cell changed is another fact: one plain word is too little)
    written = canonical(as_written)
    if not names_a_value(written):
        written = ""

    def states(text: str) -> bool:
        text = canonical(text)
        return bool(claim_key and claim_key in text) or bool(written and f" {written} " in f" {text} ")

    unchanged = {e.source_id for e, j in zip(evidence, judgements)
                 if e.source_date is not None and e.source_date == newest.get(e.source_id)
                 and ((j.relation == "supports" and j.tier == "rules" and j.confidence >= keep_above)
                      or states(e.passage or e.sentence or ""))}  # fmt: skip
    for i, old in enumerate(evidence):
        day = newest.get(old.source_id)
        if old.source_date is None or day is None or old.source_date >= day or old.source_id in unchanged or i in elsewhere:
            continue
        old_text = old.sentence or old.passage
        current = [k for k, e in enumerate(evidence)
                   if e.source_id == old.source_id and e.source_date == day and k not in elsewhere]  # fmt: skip
        # the older sentence still stands in the newest version: it did not change (what
        # changed was a neighbour, "The Free plan allows 60" -> "100" beside an unchanged
        # "The Pro plan allows 600")
        old_key = canonical(old_text)
        if not current or any(old_key in canonical(evidence[k].passage or evidence[k].sentence or "") for k in current):
            continue
        # its counterpart: the sentence a diff of the two versions put in its place, else the
        # most similar sentence of the newest version's passages
        placed = [k for k in current if evidence[k].counterpart_of == old.passage_id]
        k = placed[0] if placed else max(current, key=lambda k: similarity(old_text, evidence[k].sentence or evidence[k].passage))
        new_text = evidence[k].sentence or evidence[k].passage
        # the two versions must be about the claim: a good share of the claim's words in both,
        # or some of them and a judgement that takes a side on either ("covers the last 7 days"
        # -> "14 days" says nothing of "each on-call shift lasts 7 days")
        share = about_share(claim_text, old_text, new_text)
        sided = any(j.relation != "nei" and j.confidence >= 0.5 for j in (judgements[i], judgements[k]))
        if share == 0 or (share < MIN_ABOUT_SHARE and not sided):
            continue
        c = contrast(claim_text, old_text, new_text, renamed)
        if c is None:
            continue
        (win, win_value), (lose, lose_value) = ((i, c.old_value), (k, c.new_value))[:: 1 if c.side == "older" else -1]
        why = f"revision: {c.rationale}"
        sup = Judgement("supports", c.confidence, "rules", why, c.claim_value, win_value)
        ref = Judgement("refutes", c.confidence, "rules", why, c.claim_value, lose_value)
        for idx, j in ((win, sup), (lose, ref)):
            cur = out[idx]
            if cur.tier == "rules" and cur.confidence >= keep_above and cur.relation != "nei":
                continue
            out[idx] = j
    return out
