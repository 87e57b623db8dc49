"""Extension is not support: a claim found inside a newer sentence that goes on with an
alternative, a condition or another item after "only" no longer holds as stated."""

from __future__ import annotations

import re

from kb.verify.slots import (
    canonical,
    normalize,
    word_tokens,
)


def _continues(claim_text: str, sentence: str) -> bool:
    """The evidence goes on with a list right after the claim's words ("contains gzip, and/or br")."""
    c = normalize(claim_text).rstrip(" .;:").lower()
    e = normalize(sentence).lower()
    k = e.find(c)
    if k < 0:
        return False
    rest = e[k + len(c) :].lstrip()
    return rest.startswith(",") and bool(re.match(r",\s*(?:and/or|and|or|\*|\w+\s*,)", rest))


# Words that make a statement exhaustive: extending what follows them changes the fact ("only
# with numeric columns" is not "only with numeric and date columns").
RESTRICTIVE = frozenset("only exclusively solely".split())
# An alternative changes what a claim requires or restricts ("needs a key" / "needs a key or a
# passkey"); elsewhere "or" mostly joins another name for the same thing ("a state or country",
# "the University of Illinois at Chicago or UIC": 3 wrong refutations of 4 on the FEVER-Lite and
# VitaminC dev files when it was read as an alternative everywhere). What a claim allows stays
# true beside another way ("you can pass --coverage" / "... --coverage or set coverage.enabled",
# "accepts JSON" / "accepts JSON or YAML"): documentation adds such ways and aliases all the time.
_REQUIRES = frozenset("require requires required need needs needed must only exclusively solely".split())
# An added condition: the statement no longer holds unconditionally.
CONDITIONS = ("if", "unless", "provided", "except", "only if", "only when", "as long as")
# "or" that belongs to a bound or a comparison, not an alternative ("3.9 or later", "or more")
_NOT_ALTERNATIVE = frozenset("more less later earlier higher lower newer older above below greater fewer "
                             "so not else otherwise".split())  # fmt: skip


def _extension_kind(inserted: list[str], before: list[str]) -> str:
    """How words the evidence inserts change the claim: an alternative ("requires A" / "requires
    A or B"), an added condition, or an item added to a list the claim restricts with "only";
    "" when they do not (a new clause, an example, an unrestricted list)."""
    words = [w.lower() for w in inserted if re.search(r"\w", w) or w == ","]
    if not words:
        return ""
    first, second = words[0], words[1] if len(words) > 1 else ""
    before_words = {w.lower() for w in before}
    if first in ("or", "and/or") and second not in _NOT_ALTERNATIVE and before_words & _REQUIRES:
        return "alternative"
    joined = " ".join(words)
    if any(joined == c or joined.startswith(c + " ") for c in CONDITIONS):
        return "condition"
    if first in ("and", ",") and RESTRICTIVE & before_words:
        return "scope"
    return ""


def _ended(text: str) -> bool:
    """A whole statement, not a clause split from a longer sentence (those end where the split
    was made, and their own sentence may go on just as the evidence does)."""
    return text.rstrip().rstrip("\"'”’)]*_`").endswith((".", "!", "?"))


def _extension(claim_text: str, sentence: str) -> str:
    """What a sentence that contains the claim word for word adds right after it, when that
    changes the claim (see ``_extension_kind``); "" otherwise."""
    if not _ended(claim_text):
        return ""
    words = canonical(claim_text).split()
    written = normalize(sentence)
    m = re.search(r"(?<!\w)" + r"\W+".join(map(re.escape, words)) + r"(?!\w)", written, flags=re.IGNORECASE)
    if m is None:
        return ""
    tail = [t for t in word_tokens(written[m.end() :]) if re.search(r"\w", t) or t == ","]
    if not tail or not _extension_kind(tail[:4], word_tokens(claim_text)):
        return ""
    return " ".join(tail[:6]).replace(" ,", ",")
