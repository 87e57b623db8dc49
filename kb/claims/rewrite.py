"""The self-contained rewrite of :mod:`kb.claims.split`: leading pronouns and "this service" /
"the tool" resolved to the subject of the section.
"""

from __future__ import annotations

import re

from kb.claims.classify import GENERIC_HEADINGS
from kb.claims.units import _POSSESSIVE, _PRONOUN_SUBJECTS, _first_verb_index
from kb.records import Block, Document

_TITLE_SUFFIX = re.compile(
    r"\s*(?:[-:|–—]\s*)?\b(?:faq|faqs|guide|user guide|docs|documentation|handbook|manual|overview|reference|"
    r"readme|release notes|notes|introduction|tutorial|wiki)\s*$",
    re.I,
)


def _named_subject(noun: str, block: Block, doc: Document) -> str:
    """The entity "this service" / "the tool" refers to: a heading naming such a thing, else the title."""
    for heading in reversed(block.section):
        h = heading.strip().rstrip(":")
        if noun and noun.lower() in h.lower() and h.lower() not in GENERIC_HEADINGS and len(h.split()) <= 6:
            return h
    title = doc.title.strip()
    if noun and noun.lower() in title.lower().split():
        return title  # "This policy" in "Security Policy"
    stripped = _TITLE_SUFFIX.sub("", title).strip()
    return stripped or title


_DUMMY_IT = re.compile(
    r"^it\s+(?:is|was|will\s+be|would\s+be|may\s+be|can\s+be|seems|appears)\s+(?:not\s+)?(?:\w+ly\s+)?\w+\s+(?:to|that)\b",
    re.I,
)
_PRONOUNS = frozenset("it they this that these those he she we you i its their there here".split())
# a sentence that opens on a condition, a purpose, a conjunction or the writer ("If the input ...",
# "To overcome this we ...", "But mostly it ...", "Our website which we ...") has no subject a
# later "it" can stand for: its first words are no noun phrase
_NO_SUBJECT_OPENERS = frozenset(
    "if when whenever once unless until while although though because since as so but and or nor now to in on at by for "
    "with without after before our your my".split()
)
_INSIDE_CLAUSE = frozenset("it they we you i he she which who whom whose".split())


def _bare(word: str) -> str:
    """A word without its punctuation and contraction ("We’ve" -> "we")."""
    return re.split(r"[’']", word.lower().strip('.,;:!?()"“”'))[0]


def _subject_of(text: str) -> str:
    """The subject noun phrase of a simple sentence ("The main repository is ..." -> "The main repository")."""
    words = text.split()
    vi = _first_verb_index(words[:12])
    if not 1 <= vi <= 6:
        return ""
    subj = words[:vi]
    first = _bare(subj[0])
    if first in _PRONOUNS or first in _NO_SUBJECT_OPENERS or any(w.endswith((",", ":", ";")) for w in subj):
        return ""
    if any(_bare(w) in _INSIDE_CLAUSE for w in subj[1:]):
        return ""
    if not (subj[0][:1].isupper() or subj[0][:1].isdigit()):
        return ""
    return " ".join(subj)


def _resolve(text: str, antecedent: str, named) -> tuple[str, str]:
    """Replace a leading pronoun / "this service" with its referent; returns (text, note).

    Bare pronouns ("It", "They", "Its") take the subject of the previous statement in the same
    section (else the document title); "this service" / "the tool" take the entity named by a
    heading or the title (``named(noun)``).
    """
    m = _PRONOUN_SUBJECTS.match(text)
    if m and m.group("pro")[:2].isupper():
        m = None  # "IT plans ..." is the IT department, not a pronoun
    if m:
        pro = m.group("pro")
        words = pro.lower().split()
        rest = text[m.end() :]
        if len(words) == 1:
            if words[0] in ("this", "that", "these"):
                return text, ""  # "This is ..." refers to a whole situation, not a name
            if _DUMMY_IT.match(text):
                return text, ""  # "It is recommended to ...": "it" stands for what follows
            if rest.startswith("'"):
                return text, ""
            subject = antecedent or named("")
        else:
            subject = named(words[-1])
        if not subject or subject.lower() == pro.lower():
            return text, ""
        return f"{subject}{rest}", f"rewritten: '{pro}' -> '{subject}'"
    m = _POSSESSIVE.match(text)
    if m:
        subject = antecedent or named("")
        if subject:
            poss = f"{subject}'" if subject.endswith("s") else f"{subject}'s"
            return f"{poss}{text[m.end() :]}", f"rewritten: '{m.group('pro')}' -> '{poss}'"
    return text, ""
