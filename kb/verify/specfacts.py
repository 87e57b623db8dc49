"""The rules tier for spec facts (kb/evidence/specs.py): a claim that names an operation, parameter,
property or setting is judged against the matching fact exactly.

A fact reads "<subject> <kind> <owner> (<description>): <traits> (<spec path>)." (backticks
already gone from the evidence sentence). When the claim names the subject (and, for a
parameter or field, no other operation than the fact's), each trait the claim states is
compared: default, maximum / at most / up to, minimum / at least, type, enum members, required
or optional, deprecated. One disagreement refutes (with both values, for the correction); all
stated traits agreeing supports; a claim naming an operation the spec lists is supported by it.
Anything else (a prose claim that does not name the subject) is left to the other tiers.
"""

from __future__ import annotations

import re

from kb.records import Judgement

_FACT = re.compile(
    r"(?P<subject>.+?) (?P<kind>operation|parameter of|setting in|property of|field in the body of)"
    r"(?P<owner>[^:(]*?)(?: \((?P<desc>[^()]*)\))?: (?P<traits>.*?) ?\((?P<path>[^()]*)\)\.",
)
_OPERATION = re.compile(r"\b(GET|PUT|POST|DELETE|PATCH|HEAD|OPTIONS|TRACE) (/\S*)")
_NUMBER = r"(-?\d+(?:\.\d+)?)"
_CLAIM_TRAITS = {
    "default": re.compile(r"\bdefault(?:s| value)?(?: is| of| to| at)?(?: a| the)? ?(?P<v>\S+)|(?P<w>\S+) by default", re.I),
    "maximum": re.compile(r"\b(?:maximum(?: value)?(?: is| of)?|at most|up to|no more than|max(?:imum)?\.?) " + _NUMBER, re.I),
    "minimum": re.compile(r"\b(?:minimum(?: value)?(?: is| of)?|at least|no less than|min\.?) " + _NUMBER, re.I),
}
SUPPORT, REFUTE = 0.97, 0.95


def _fact_traits(traits: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in (
        p.strip()
        for p in re.split(
            r", (?=default |maximum |minimum |type |one of |format |in |greater |less |at |required$|optional$|deprecated$)", traits
        )
    ):
        for key in ("default", "maximum", "minimum", "type", "one of"):
            if part.startswith(key + " "):
                out[key] = part[len(key) + 1 :]
        if part in ("required", "optional", "deprecated"):
            out[part] = "yes"
    return out


def _clean(v: str) -> str:
    return v.strip().strip(".,;:'\"`").lower()


def judge_spec_fact(claim_text: str, sentence: str) -> Judgement | None:
    m = _FACT.fullmatch(sentence.strip())
    if not m:
        return None
    subject, kind, owner = m.group("subject").strip(), m.group("kind"), m.group("owner").strip()
    path = m.group("path")
    if not re.search(r"(?<![\w.])" + re.escape(subject) + r"(?![\w])", claim_text):
        return None
    named = {f"{a} {b}".rstrip(".,") for a, b in _OPERATION.findall(claim_text)}
    if kind != "operation" and named and owner not in named:
        return None  # the claim is about the same name in another operation
    if kind == "operation":
        if set(named) - {subject}:
            return None
        return Judgement("supports", 0.9, "rules", f"spec {path}: operation {subject} is listed")
    fact = _fact_traits(m.group("traits"))
    stated: list[tuple[str, str, str]] = []  # (trait, claim value, fact value)
    for key, rx in _CLAIM_TRAITS.items():
        cm = rx.search(claim_text)
        if cm and key in fact:
            value = cm.groupdict().get("v") or cm.groupdict().get("w") or cm.group(1)
            stated.append((key, _clean(value), _clean(fact[key])))
    low = claim_text.lower()
    if re.search(r"\b(required|requires|mandatory|must be (?:set|given))\b", low) and "not required" not in low:
        stated.append(("required", "required", "required" if "required" in fact else "optional"))
    elif re.search(r"\b(optional|not required)\b", low):
        stated.append(("required", "optional", "required" if "required" in fact else "optional"))
    if "deprecated" in low and "not deprecated" not in low:
        stated.append(("deprecated", "deprecated", "deprecated" if "deprecated" in fact else "not deprecated"))
    if "one of" in fact:
        members = {_clean(x) for x in fact["one of"].split(", ")}
        said = {_clean(w) for w in re.findall(r"[\w.-]+", low)} & {*members, *_claimed_list(low)}
        extra = _claimed_list(low) - members
        if extra:
            stated.append(("one of", ", ".join(sorted(extra)), fact["one of"]))
        elif said:
            stated.append(("one of", ", ".join(sorted(said)), ", ".join(sorted(said))))
    if not stated:
        return None
    for key, claimed, actual in stated:
        if claimed != actual:
            what = f"it is {actual}" if key in ("required", "deprecated") else f"{key} is {actual}"
            return Judgement("refutes", REFUTE, "rules", f"spec {path}: {what}, the claim says {claimed}",
                             claim_value=claimed, evidence_value=actual)  # fmt: skip
    said = "; ".join(a if k in ("required", "deprecated") else f"{k} {a}" for k, _, a in stated)
    return Judgement("supports", SUPPORT, "rules", f"spec {path}: {said}")


def _claimed_list(low: str) -> set[str]:
    """Members of an enum the claim lists after "one of" / "either"."""
    m = re.search(r"\b(?:one of|either|values?|accepts)\b:? ([\w.-]+(?:(?:, or |, and |, | or | and )[\w.-]+)+)", low)
    if not m:
        return set()
    return {_clean(x) for x in re.split(r", or |, and |, | or | and ", m.group(1)) if x}
