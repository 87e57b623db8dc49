"""Rules tier: align a claim with one evidence sentence and compare their slots.

``judge_rules(claim_text, sentence)`` returns a :class:`~kb.records.Judgement` with tier
``rules`` or ``None`` when the two sentences are not about the same thing or the rules cannot
decide. It is deterministic and explainable: a refutation names the conflicting slot and sets
``claim_value``/``evidence_value`` so the correction step can replace the slot.

How it decides (cheapest, most certain first):

1. identical after normalisation, or the claim appears verbatim inside the sentence, or the
   sentence is the claim with only harmless words added (:mod:`kb.verify.additions`): supports;
2. token alignment (a sequence diff) of the two sentences; a replaced span whose two sides are
   facts of the same kind is a conflict: number / duration / size / percentage / year / date
   (interval logic, comparators included), version or version range, ``Key=value`` setting,
   command-line flag or other identifier, named entity, enumeration, negation;
3. for sentences that are not near copies, each claim quantity is paired with the evidence
   quantity of the same kind whose context words overlap most, and the intervals are compared
   ("under 23.5 million sales" vs "more than 24 million combined sales": disjoint, refutes);
4. no conflict, every claim fact found and the claim's content words covered: supports.

Confidences are constants per decision kind, fitted on the training part of the labelled data
(see ``docs/labelling.md``).
"""

from __future__ import annotations

import logging
import re
from difflib import SequenceMatcher

from kb.claims.text import OVERLAP_STOPWORDS, stem_overlap
from kb.records import Judgement
from kb.verify.additions import ADDED_CONFIDENCE, ADDED_NOTE, added_beside, changed_path, typo_fixed
from kb.verify.extension import _continues, _ended, _extension, _extension_kind
from kb.verify.numbers import NUMBERS_ONLY as NUMBERS_ONLY
from kb.verify.numbers import NUMBERS_ONLY_CONFIDENCE as NUMBERS_ONLY_CONFIDENCE
from kb.verify.numbers import NUMBERS_ONLY_INCIDENTAL_CONFIDENCE as NUMBERS_ONLY_INCIDENTAL_CONFIDENCE
from kb.verify.numbers import NUMBERS_ONLY_LOOSE_CONFIDENCE as NUMBERS_ONLY_LOOSE_CONFIDENCE
from kb.verify.numbers import _shared_context
from kb.verify.numbers import judge_numbers as judge_numbers
from kb.verify.pairing import _ctx_score, _pair_by_context, _qkind, _shared_quantity_context
from kb.verify.slots import (
    Quantity,
    Slots,
    bound_relation,
    canonical,
    comparable_kinds,
    content_words,
    extract,
    is_code_case,
    is_code_identifier,
    is_identifier,
    normalize,
    quantity_relation,
    word_tokens,
)

# Calibrated-ish confidence per decision kind: precision of that decision on the training
# parts of VitaminC / FEVER-Lite and on docsdrift (see docs/labelling.md).
MAX_RESPELT = 2  # words of the claim a sentence may respell and still state it word for word
CONFIDENCE = {
    "exact": 0.99,
    "contained": 0.97,
    "number": 0.79,
    "percent": 0.79,
    "duration": 0.92,
    "size": 0.92,
    "money": 0.84,
    "year": 0.55,
    "date": 0.87,
    "version": 0.93,
    "setting": 0.93,
    "identifier": 0.85,
    "path": 0.9,  # every other word stands: surer than an identifier the evidence lacks
    "enumeration": 0.85,
    "entity": 0.80,
    "negation": 0.80,
    "term": 0.55,
    "qualifier": 0.55,
    "ordinal": 0.85,
    "extended": 0.85,
    "bound": 0.85,
    "bound_agrees": 0.8,
    "supports_slots": 0.95,
    "supports_cover": 0.92,
}
QUANTITY_KINDS = ("number", "percent", "duration", "size", "money", "year", "date", "ordinal",
                  "length", "mass", "frequency", "rate", "factor")  # fmt: skip
MIN_COVERAGE = 0.5
log = logging.getLogger(__name__)  # below: the sentences are not about the same thing


_WORD = re.compile(r"\w")
_ALNUM = re.compile(r"[a-z0-9]")
_LETTER = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"\d")
_SETTING = re.compile(r"(--?)?([A-Za-z_][\w.-]*)=(.*)")
_NAME = re.compile(r"[A-Z][\w'.-]*")


def _keep(t: str) -> bool:
    return bool(_WORD.search(t)) or t == "="


def _words(tokens: list[str]) -> list[str]:
    """Lower-cased tokens without punctuation (the diff alphabet); a code identifier keeps its
    case, so "requestID" against "requestId" is a replaced token."""
    return [t if is_code_case(t) else t.lower() for t in tokens if _keep(t)]


def _content_set(words: list[str]) -> set[str]:
    return {stem_overlap(w) for w in words if w not in OVERLAP_STOPWORDS and _ALNUM.search(w)}


def _setting(tok: str) -> tuple[str, str] | None:
    m = _SETTING.fullmatch(tok)
    if m:
        return m.group(2).lower(), m.group(3)
    return None


class _Conflict:
    __slots__ = ("kind", "claim_value", "evidence_value")

    def __init__(self, kind: str, claim_value: str | None, evidence_value: str | None):
        self.kind = kind
        self.claim_value = claim_value
        self.evidence_value = evidence_value

    def describe(self) -> str:
        cv = self.claim_value if self.claim_value else "(absent)"
        ev = self.evidence_value if self.evidence_value else "(absent)"
        return f"{self.kind}: claim {cv} vs evidence {ev}"


def _quantity_at(qs: list[Quantity], idx: set[int]) -> list[Quantity]:
    return [q for q in qs if set(range(q.start, q.end)) & idx]


def _tok_index_map(tokens: list[str]) -> list[int]:
    """Map position in the punctuation-free word list to the index in tokens."""
    return [k for k, t in enumerate(tokens) if _keep(t)]


def judge_rules(claim_text: str, sentence: str) -> Judgement | None:
    """Judge one claim against one evidence sentence with slot rules, or None if undecided."""
    try:
        return _judge(claim_text, sentence)
    except (ValueError, IndexError, TypeError, OverflowError, RecursionError) as exc:  # odd input: abstain
        log.debug("rules abstain on %r / %r: %s", claim_text[:80], sentence[:80], exc)
        return None


def _judge(claim_text: str, sentence: str) -> Judgement | None:
    c_can, e_can = canonical(claim_text), canonical(sentence)
    if not c_can or not e_can:
        return None
    if c_can == e_can:
        return Judgement("supports", CONFIDENCE["exact"], "rules", "exact match")
    if len(c_can.split()) >= MIN_NOTATION_WORDS and _notation_key(c_can) == _notation_key(e_can):
        return Judgement("supports", CONFIDENCE["exact"], "rules", "exact match in another notation (a word joined or written apart)")
    if _written_out(c_can.split(), e_can.split()):
        return Judgement("supports", CONFIDENCE["exact"], "rules", "exact match, a name written out with its namespace")
    contained = _verbatim_inside(claim_text, c_can, sentence, e_can)
    if contained is not None:
        return contained
    added = added_beside(claim_text, sentence)
    if added is not None:
        return Judgement("supports", ADDED_CONFIDENCE, "rules", f"{ADDED_NOTE}: {added!r}")
    contained = _contained_respelt(claim_text, c_can, sentence, e_can)
    if contained is not None:
        return contained
    bound = _bounds_paired(claim_text, sentence)
    if bound is not None:
        return bound
    # cheap gate before slot extraction: shared content words or shared numbers
    cw = set(content_words(word_tokens(claim_text)))
    ew = set(content_words(word_tokens(sentence)))
    if not cw or (len(cw & ew) / len(cw) < 0.3 and not any(ch.isdigit() for w in cw & ew for ch in w)):
        return None
    cs, es = extract(claim_text), extract(sentence)
    j = _judge_slots(cs, es)
    if j is not None and j.relation == "refutes":
        cv, ev = _surface(claim_text, j.claim_value), _surface(sentence, j.evidence_value)
        rationale = j.rationale
        if j.claim_value and cv:
            rationale = rationale.replace(f"claim {j.claim_value} vs", f"claim {cv} vs", 1)
        if j.evidence_value and ev:
            rationale = rationale.replace(f"vs evidence {j.evidence_value}", f"vs evidence {ev}", 1)
        j = Judgement(j.relation, j.confidence, j.tier, rationale, cv, ev)
    if j is not None and j.relation == "supports":
        # its words all there, but a path of the claim gained a segment: another place
        moved = changed_path(claim_text, sentence)
        if moved is not None:
            if not moved[1]:
                return None
            return Judgement("refutes", CONFIDENCE["path"], "rules", f"path: claim {moved[0]} vs evidence {moved[1]}", *moved)
    return j


def _contained_respelt(claim_text: str, c_can: str, sentence: str, e_can: str) -> Judgement | None:
    """The claim's words stand word for word inside the sentence once the sentence's typo fixes
    are spelt as the claim spells them ("... anything in the databse" inside "... anything in the
    database and are inherently unsafe ..."): a typo fixed (or made) states the same words. The
    sentence's own continuation is then read as for a claim found verbatim (an added
    alternative or condition is no support)."""
    c_words, e_words = c_can.split(), e_can.split()
    missing = set(c_words) - set(e_words)
    if len(c_words) < 4 or not missing or len(missing) > MAX_RESPELT:
        return None
    fixes = {w: c for w in set(e_words) - set(c_words) for c in missing if typo_fixed(c, w)}
    if not fixes or set(fixes.values()) != missing:
        return None
    # the key folds case: a word the claim writes with a capital is a name ("Smyth" is not "Smith")
    if any(re.search(rf"(?<!\w){re.escape(c)}(?!\w)", claim_text) is None for c in missing):
        return None
    pattern = re.compile(r"(?<!\w)(" + "|".join(map(re.escape, sorted(fixes, key=len, reverse=True))) + r")(?!\w)", re.IGNORECASE)
    as_claimed = pattern.sub(lambda m: fixes.get(m.group(0).lower(), m.group(0)), sentence)
    fixed = "; ".join(f"{c} -> {w}" for w, c in sorted(fixes.items(), key=lambda kv: kv[1]))
    return _verbatim_inside(claim_text, c_can, as_claimed, " ".join(fixes.get(w, w) for w in e_words), fixed)


def _verbatim_inside(claim_text: str, c_can: str, sentence: str, e_can: str, respelt: str = "") -> Judgement | None:
    """The claim's words (4 or more) as whole words inside the sentence's, both keys
    single-spaced: support, unless the sentence goes on with a list right after them (then the
    other rules judge) or with what changes them (``_extension``: refuted as extended).
    ``respelt``: the typo fixes read as the claim's words, named in the rationale."""
    if len(c_can.split()) < 4 or f" {c_can} " not in f" {e_can} " or _continues(claim_text, sentence):
        return None
    ext = _extension(claim_text, sentence)
    if ext:
        why = f"extended: the evidence goes on {ext!r} after the claim's words" + (f" (respelt: {respelt})" if respelt else "")
        return Judgement("refutes", CONFIDENCE["extended"], "rules", why)
    why = "claim appears verbatim in the evidence" + (f", respelt ({respelt})" if respelt else "")
    return Judgement("supports", CONFIDENCE["contained"], "rules", why)


def _bounds_paired(claim_text: str, sentence: str) -> Judgement | None:
    """A limit stated twice in different words ("accepts uploads of up to 5 GB" / "The maximum
    upload size is 10 GB"; "capped at", "at most", "no more than", "the limit is" all name an
    upper bound): the claim's only bound and the sentence's only bound of the same kind and
    direction, about the same thing (a shared context word), compare by their bound."""
    cs, es = extract(claim_text), extract(sentence)
    cb = [q for q in cs.quantities if q.op in ("<=", ">=")]
    eb = [q for q in es.quantities if q.op in ("<=", ">=")]
    if len(cb) != 1 or len(eb) != 1 or len(cs.quantities) != 1 or len(es.quantities) != 1:
        return None
    q, x = cb[0], eb[0]
    if q.kind != x.kind or q.op != x.op or q.kind in ("year", "date", "version", "ordinal") or not _shared_context(q, x):
        return None
    rel = bound_relation(q, x)
    if rel == "refutes":
        return Judgement("refutes", CONFIDENCE["bound"], "rules", f"bound: claim {q.text} vs evidence {x.text}",
                         q.text, x.text)  # fmt: skip

    def negations(slots, b):  # "no more than" is a bound, not a denial
        return slots.negations - sum(w in ("no", "not") for w in b.text.lower().split())

    if rel == "supports" and negations(cs, q) % 2 == negations(es, x) % 2:
        return Judgement("supports", CONFIDENCE["bound_agrees"], "rules", f"bound: claim {q.text} ~ evidence {x.text}")
    return None


def _surface(text: str, value: str | None) -> str | None:
    """The value as written in ``text`` ("$ 0.10" -> "$0.10"), so a correction can find it."""
    if not value or "=" in value and " " not in value:
        return value
    parts = [p for p in value.split(" ") if p]
    pattern = r"[\s`*_]*".join(re.escape(p) for p in parts)
    for candidate in (text, normalize(text)):
        m = re.search(pattern, candidate, flags=re.IGNORECASE)
        if m:
            return m.group(0)
    return value


def _judge_slots(cs: Slots, es: Slots) -> Judgement | None:
    # One function on purpose: conflicts and missing terms accumulate across the phases (lists, the diff, quantities, negation) before one judgement.
    cw, ew = _words(cs.tokens), _words(es.tokens)
    if not cw or not ew:
        return None
    c_content, e_content = _content_set(cw), _content_set(ew)
    c_words = {w for w in c_content if not _DIGIT.search(w)} or c_content
    if not c_content:
        return None
    coverage = len(c_words & e_content) / len(c_words)
    sm = SequenceMatcher(None, cw, ew, autojunk=False)
    ratio = sm.ratio()
    near_copy = ratio >= 0.6 and coverage >= 0.5
    close_copy = ratio >= 0.75  # word-level conflicts (terms, entities, identifiers) only here
    if coverage < MIN_COVERAGE and not _shared_quantity_context(cs, es):
        return None

    conflicts: list[_Conflict] = []
    paired_claim_q: set[int] = set()
    cmap, emap = _tok_index_map(cs.tokens), _tok_index_map(es.tokens)
    missing_terms: list[str] = []
    extended_by: list[str] = []

    # enumerations first: a list that changed is one conflict, not one per item
    c_enum_idx: set[int] = set()
    e_enum_idx: set[int] = set()
    for ce in cs.enumerations:
        for ee in es.enumerations:
            inter = set(ce.items) & set(ee.items)
            if len(inter) < max(1, min(len(ce.items), len(ee.items)) // 2):
                continue
            c_enum_idx.update(range(ce.start, ce.end))
            e_enum_idx.update(range(ee.start, ee.end))
            if set(ce.items) == set(ee.items):
                break
            e_text = " ".join(t.lower() for t in es.tokens)
            extra_claim = {x for x in set(ce.items) - set(ee.items) if x not in e_text}
            extra_ev = set(ee.items) - set(ce.items)
            if not (_technical_items(ce.text) and _technical_items(ee.text)):
                break  # lists of names or phrases: leave them to the model
            if extra_claim or (extra_ev and not ce.open_ended):
                conflicts.append(_Conflict("enumeration", ce.text.replace(" ,", ","), ee.text.replace(" ,", ",")))
            break

    if near_copy:
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                continue
            ctoks = [cs.tokens[cmap[k]] for k in range(i1, i2)]
            etoks = [es.tokens[emap[k]] for k in range(j1, j2)]
            cidx = {cmap[k] for k in range(i1, i2)}
            eidx = {emap[k] for k in range(j1, j2)}
            if (cidx and cidx <= c_enum_idx) or (eidx and eidx <= e_enum_idx):
                continue
            setting_key = cw[i1 - 2] if i1 >= 2 and cw[i1 - 1] == "=" else None
            n_before = len(conflicts)
            # quantities aligned by the diff
            cq = _quantity_at(cs.quantities, cidx)
            eq = _quantity_at(es.quantities, eidx)
            if cq and eq:
                for q in cq:
                    best = next((x for x in eq if comparable_kinds(x.kind, q.kind)), None)
                    if best is None:
                        continue
                    paired_claim_q.add(id(q))
                    rel = bound_relation(q, best) or quantity_relation(q, best)
                    if rel == "refutes":
                        conflicts.append(_Conflict(_qkind(q, best), q.text, best.text))
                    elif rel == "nei":
                        missing_terms.append(q.text)
            if tag == "insert" and (i1 < len(cw) or _ended(" ".join(cs.tokens))):
                kind = _extension_kind(etoks, [cs.tokens[cmap[k]] for k in range(i1)])
                if kind:
                    conflicts.append(_Conflict("extended", None, None))  # no one slot to replace
                    extended_by.append(" ".join(etoks))
                    continue
            if not (cq and all(id(q) in paired_claim_q for q in cq)) and close_copy:
                conflicts.extend(_token_conflicts(tag, ctoks, etoks, cs, es))
                if tag in ("replace", "delete"):
                    missing_terms.extend(t for t in ctoks if t.lower() not in OVERLAP_STOPWORDS and _WORD.search(t))
            if setting_key:
                for k in range(n_before, len(conflicts)):
                    x = conflicts[k]
                    conflicts[k] = _Conflict(
                        "setting", f"{setting_key}={x.claim_value or chr(34) * 2}", f"{setting_key}={x.evidence_value or chr(34) * 2}"
                    )

    # quantity pairing by kind and context (also for near copies: catches moved numbers)
    for q in cs.quantities:
        if id(q) in paired_claim_q:
            continue
        if q.kind == "ordinal" and (q.op != "=" or not near_copy):
            continue  # "ranked above 25th": rank order is inverted; leave it to the model
        best, score, cands = _pair_by_context(q, cs, es)
        if best is None:
            continue
        paired_claim_q.add(id(q))
        rel = quantity_relation(q, best)
        if rel == "refutes" and coverage < 0.7:
            missing_terms.append(q.text)  # the numbers differ but so does the subject
            continue
        if rel == "refutes":
            agree = [x for x in cands if quantity_relation(q, x) == "supports"]
            if any(_ctx_score(q.context, x.context) >= 1 or (q.point and x.point and q.lo == x.lo) for x in agree):
                continue  # another evidence value agrees: pair with that one
            if agree and score - max(_ctx_score(q.context, x.context) for x in agree) < 1.5:
                missing_terms.append(q.text)  # the pairing is not clear enough to refute
                continue
            if any(quantity_relation(q, x) == "nei" and _ctx_score(q.context, x.context) >= 1 for x in cands):
                missing_terms.append(q.text)
                continue
            conflicts.append(_Conflict(_qkind(q, best), q.text, best.text))
        elif rel == "nei":
            missing_terms.append(q.text)

    # negation
    if not conflicts and (cs.negations % 2) != (es.negations % 2) and near_copy and coverage >= 0.8:
        conflicts.append(_Conflict("negation", _polar_text(cs), _polar_text(es)))

    if conflicts:
        conflicts = _dedupe(conflicts)
        strongest = max(conflicts, key=lambda x: CONFIDENCE.get(x.kind, 0.7))
        conf = CONFIDENCE.get(strongest.kind, 0.7)
        if strongest.kind in ("term", "qualifier") and not (ratio >= 0.8):
            return None
        rationale = "; ".join(x.describe() if x.kind != "extended" else f"extended: the evidence adds {extended_by[0]!r}"
                              for x in conflicts[:4])  # fmt: skip
        return Judgement("refutes", conf, "rules", rationale, strongest.claim_value, strongest.evidence_value)

    # support: every claim fact present, content covered, same polarity
    if (cs.negations % 2) != (es.negations % 2):
        return None
    unpaired = [q for q in cs.quantities if id(q) not in paired_claim_q]
    if unpaired or missing_terms:
        return None
    if any(not _ident_present(i, es) for i in cs.identifiers):
        return None
    missing_entities = {e for e in cs.entities if stem_overlap(e) not in e_content and e not in ew}
    if missing_entities:
        return None
    if coverage >= 0.999 or (near_copy and coverage >= 0.9 and ratio >= 0.85):
        kind = "supports_slots" if cs.quantities else "supports_cover"
        what = "all slots agree" if cs.quantities else "claim terms covered"
        return Judgement("supports", CONFIDENCE[kind], "rules", f"{what} (coverage {coverage:.2f})")
    return None


def _technical_items(text: str) -> bool:
    """Items that look like identifiers, constants or codes (a list that must be exhaustive)."""
    items = [x.strip() for x in re.split(r",|\band\b|\bor\b", text) if x.strip()]
    return sum(1 for x in items if is_identifier(x) or x.isupper()) >= len(items) / 2


def _ident_present(ident: str, es: Slots) -> bool:
    low = {t.lower() for t in es.tokens}
    if ident in low:
        return True
    joined = " ".join(low)
    return ident in joined


def _polar_text(s: Slots) -> str:
    neg = [t for t in s.tokens if t.lower() in ("not", "no", "never", "cannot", "without") or t.lower().endswith("n't")]
    return ("negated (" + ", ".join(neg) + ")") if neg else "affirmative"


def _dedupe(conflicts: list[_Conflict]) -> list[_Conflict]:
    seen, out = set(), []
    for c in conflicts:
        key = (c.kind, c.claim_value, c.evidence_value)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


# a name alone ("Dahua") matches a table row whose other cells are symbols: a sentence, not a name
MIN_NOTATION_WORDS = 3
_HYPHEN_IN_WORD = re.compile(r"(?<=[a-z])-(?=[a-z])")


def _notation_key(canonical_text: str) -> str:
    """A sentence key with the spaces and the hyphens inside prose words taken out ("the
    add-on" / "the addon", "vs code" / "vscode"); code keeps its separators (``--no-color``)."""
    return "".join(w if is_code_identifier(w) else _HYPHEN_IN_WORD.sub("", w) for w in canonical_text.split())


def _written_out(ctoks: list[str], etoks: list[str]) -> bool:
    """The same words, a dotted name of the claim written out with its namespace in the sentence
    ("util.parse" / "acme.util.parse") at least once."""
    if len(ctoks) != len(etoks) or ctoks == etoks:
        return False
    return all(c == e or ("." in c and e.endswith("." + c)) for c, e in zip(ctoks, etoks, strict=True))


def _squashed(text: str) -> str:
    return re.sub(r"[\W_]+", "", text).lower()


_OPTION_NAME = re.compile(r"--?(?:no-)?([A-Za-z][\w.-]*?)(?:=.*)?")


def _option_name(token: str) -> str | None:
    m = _OPTION_NAME.fullmatch(token.strip(",;"))
    return m.group(1).lower() if m else None


def _spelling_of_claimed_option(token: str, claim_tokens: list[str]) -> bool:
    """``token`` spells an option the claim names otherwise ("--no-isolate" beside the claim's
    "--isolate=false", "--verbose" beside "-verbose"): an alias listed beside it, no condition."""
    name = _option_name(token)
    return name is not None and any(_option_name(t) == name for t in claim_tokens if t != token)


_ALIAS_GLUE = frozenset({"or", ",", "/", "|", "(", ")", "also", "alias", "aliases", ":"})


def _aliases_only(inserted: list[str], claim_tokens: list[str]) -> bool:
    """The evidence adds only other options beside one the claim names ("--verbose or -v",
    "--host (also --legacy-host)"): another way to write the same option, no condition on it."""
    options = [t for t in inserted if t.startswith("-") and _option_name(t)]
    return (
        bool(options)
        and all(t in options or t.lower() in _ALIAS_GLUE for t in inserted)
        and any(t.startswith("-") and _option_name(t) for t in claim_tokens)
    )


def _token_conflicts(tag: str, ctoks: list[str], etoks: list[str], cs: Slots, es: Slots) -> list[_Conflict]:
    """Conflicts in one non-equal diff segment of two near-copy sentences."""
    out: list[_Conflict] = []
    c_text, e_text = " ".join(ctoks), " ".join(etoks)
    cneg = [t for t in ctoks if t.lower() in ("not", "no", "never", "cannot") or t.lower().endswith("n't")]
    eneg = [t for t in etoks if t.lower() in ("not", "no", "never", "cannot") or t.lower().endswith("n't")]
    only_neg = all(t.lower() in OVERLAP_STOPWORDS or t.lower() in ("not", "no", "never", "cannot") or t.lower().endswith("n't")
                   for t in (ctoks if cneg else etoks))  # fmt: skip
    if len(cneg) % 2 != len(eneg) % 2 and (tag == "replace" or only_neg):
        out.append(_Conflict("negation", c_text or "affirmative", e_text or "affirmative"))
    if tag != "replace":
        if tag == "insert":
            # the evidence qualifies the statement with a technical condition the claim lacks
            # ("looks for pyproject.toml containing a [tool.black] section")
            idents = [t for t in etoks if is_code_identifier(t) and not _spelling_of_claimed_option(t, cs.tokens)]
            if idents and not eneg and not _aliases_only(etoks, cs.tokens):
                out.append(_Conflict("qualifier", None, e_text))
            return out
        # a fact only on the claim side: the evidence no longer states it
        if tag == "delete":
            idents = [t for t in ctoks if is_code_identifier(t)]
            if idents:
                out.append(_Conflict("identifier", c_text, ""))
            elif not cneg and 0 < sum(1 for t in ctoks if t.lower() not in OVERLAP_STOPWORDS and _LETTER.search(t)) <= 2:
                out.append(_Conflict("term", c_text, ""))  # a dropped modifier ("the escaped pem")
        return out
    if _squashed(c_text) == _squashed(e_text) and not any(is_code_identifier(t) for t in ctoks + etoks):
        return out  # a word joined or written apart ("Addon" / "Add-on", "VSCode" / "VS Code"): notation
    if len(ctoks) == len(etoks) == 1 and typo_fixed(ctoks[0], etoks[0]):
        return out  # a typo fixed ("alllllll" / "all", "persistance" / "persistence"): the same word
    # Key=value settings
    cset = [kv for t in ctoks if (kv := _setting(t))]
    eset = [kv for t in etoks if (kv := _setting(t))]
    if cset and eset:
        for k, v in cset:
            for k2, v2 in eset:
                if k == k2 and v != v2:
                    out.append(_Conflict("setting", f"{k}={v}", f"{k2}={v2}"))
        if out:
            return out
    cid = [t for t in ctoks if is_code_identifier(t)]
    eid = [t for t in etoks if is_code_identifier(t)]
    # a name written out with its namespace ("util.parse" -> "acme.util.parse") is the same name
    qualified = {c for c in cid for e in eid if e.endswith("." + c)}
    cid = [c for c in cid if c not in qualified]
    eid = [e for e in eid if not any(e.endswith("." + c) for c in qualified)]
    if qualified and not cid and not eid and len(ctoks) == len(qualified) and len(etoks) == len(qualified):
        return out
    if cid and eid and set(cid) != set(eid):  # identifiers compare exactly: case and separators
        out.append(_Conflict("identifier", " ".join(cid), " ".join(eid)))
        return out
    c_low = {t.lower() for t in cs.tokens}
    e_low = {t.lower() for t in es.tokens}
    cent = [
        t for t in ctoks if _NAME.fullmatch(t) and t.lower() not in OVERLAP_STOPWORDS and t.lower() not in e_low and t is not cs.tokens[0]
    ]
    eent = [
        t for t in etoks if _NAME.fullmatch(t) and t.lower() not in OVERLAP_STOPWORDS and t.lower() not in c_low and t is not es.tokens[0]
    ]
    if cent and eent:
        out.append(_Conflict("entity", " ".join(cent), " ".join(eent)))
        return out
    if cneg or eneg:
        return out
    c_content = [t for t in ctoks if t.lower() not in OVERLAP_STOPWORDS and _LETTER.search(t)]
    e_content = [t for t in etoks if t.lower() not in OVERLAP_STOPWORDS and _LETTER.search(t)]
    if c_content and {stem_overlap(x) for x in c_content} != {stem_overlap(x) for x in e_content}:
        out.append(_Conflict("term", c_text, e_text))
    return out
