"""History notes: when a statement's entity came or changed, not what it states.

Reference pages date their entries ("Added in version 1.2.", a field "Version: Since Acme 0.34.0")
and open statements with the release that brought them ("Since Acme 0.31.0, you can ..."). A
later release drops such notes as the versions age, which changes no fact: the labelling policy,
the revision contrast and the rewording test read a statement without the note its other version
lacks.
"""

from __future__ import annotations

import re

from kb.claims.text import sentence_spans

__all__ = ["history_note", "without_history_note", "without_leading_history"]

# A history note: when its entity came or changed ("Added in version 1.2.", "New in v0.12",
# "Since: v1.13", "This field was introduced in v1.4.", "... introduced in Acme v3.4", a field
# "Version: Since Acme 0.34.0"), nothing after the version but punctuation or a parenthesis.
# "Changed in version 2.0: the default is 5." states a fact and is judged as any. A product name
# is taken after a verb of history only: "Supported in Python 3.8" states what runs where, and a
# release that drops it changed a fact.
_VERSION_NUMBER = r"v?\d[\w.\-]*"
_NOTE_VERSION = _VERSION_NUMBER + r"(?:\s*\([^)]*\))?"
_NOTE_PRODUCT = r"(?-i:(?:\s+[A-Z][\w.+-]*){1,2})"
_HISTORY_NOTE = re.compile(
    r"^\W*(?:versions?\s*:\s*)?(?:(?:this|the)\b[\w\s`'\"-]{0,40}?\b(?:was|were|has\s+been|have\s+been|is|are)\s+)?"
    r"(?:(?:added|introduced|new|changed)\s+(?:in|since)" + _NOTE_PRODUCT + r"?"
    r"|(?:available|supported)\s+(?:in|since)|since" + _NOTE_PRODUCT + r"?)"
    r"(?:\s+(?:version|release))?\s*:?\s*" + _NOTE_VERSION + r"(?:\s*,\s*" + _NOTE_VERSION + r")?[\s.!;:]*$",
    re.IGNORECASE,
)


def history_note(text: str | None) -> bool:
    """Whether a line is a history note of its entity ("Added in version 1.2.", "Since: v1.13")."""
    return bool(text) and _HISTORY_NOTE.match(text.strip()) is not None


# The same history opening a statement ("Since Acme 0.31.0, you can ...", "Starting from 0.23.0,
# ...", "As of version 2, ..."): a later version that drops it states the rest unchanged.
_LEADING_HISTORY = re.compile(
    r"^\W*(?:since|starting\s+(?:from|with|in)|as\s+of|beginning\s+(?:with|in))" + _NOTE_PRODUCT + r"?"
    r"\s+(?:version\s+)?" + _VERSION_NUMBER + r"\s*,\s*",
    re.IGNORECASE,
)


def without_leading_history(text: str, other: str) -> str:
    """``text`` without the history clause it opens with, where ``other`` opens with none."""
    m = _LEADING_HISTORY.match(text)
    if m is None or _LEADING_HISTORY.match(other):
        return text
    return text[m.end() :]


def without_history_note(text: str) -> str:
    """The text without a history note it ends with ("escape characters ... . Since v1.19" ->
    "escape characters ..."): a later release that moved the note elsewhere or dropped it still
    states the rest. The text itself when it has no such ending, or is the note alone."""
    spans = sentence_spans(text)
    if len(spans) < 2 or not history_note(text[spans[-1][0] : spans[-1][1]]):
        return text
    return text[: spans[-1][0]].rstrip().rstrip(".").rstrip()
