"""A rewording is not a refutation.

Docs are reworded all the time: "Show progress bars on long steps" becomes "Display a progress
bar during long steps", "tox tries to detect changes and force a recreation" becomes "tox will
detect changes and recreate environments". A cross-encoder trained on minimal contrastive edits
reads many such pairs as refutations, with high probability, although no fact changed. A fact
changes through a value, and documentation writes its values in a few recognisable forms, so a
refutation that the model alone read is a rewording when the words that differ between the
claim and the sentence hold none of them:

- a number or version ("3.9" -> "3.10", "three" -> "five");
- a code name: anything the claim's page writes as code (backticks, an rST role), or a token
  shaped like code (a flag, a path, a dotted, snake_case or camelCase name);
- a negation ("not", "never", "without");
- a key chord ("ctrl+z" -> "shift+z"; "<c-t>" and "ctrl+t" are one chord in two notations);
- a proper name inside the sentence ("Postgres" -> "MySQL");
- a word that states a status or a bound ("required" -> "optional", "deprecated",
  "experimental", "always" -> "never", "minimum", "only");
- one content word swapped for another in the same place ("the plugins folder" -> "the
  extensions folder"), or one or two dropped or added on their own ("the escaped pem" -> "the
  pem"): that names another thing, where a rewording recasts a phrase.

The policy (kb/verify/policy.py) reads such a newest sentence as no change of the claim: a
revised or rewritten counterpart that restates it supports it, and a model refutation from a
sentence about the claim's subject that restates it leaves the claim uncertain, so it neither
shows up as drift nor drafts an edit that deletes a true sentence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from difflib import SequenceMatcher

from kb.claims.text import OVERLAP_STOPWORDS, stem_overlap
from kb.evidence.versions import with_terms_renamed, written_key
from kb.records import Claim
from kb.verify.additions import entry_name, same_word
from kb.verify.history import without_leading_history
from kb.verify.slots import is_code_identifier, word_tokens
from kb.verify.tokens import is_identifier
from kb.verify.vocabulary import NEGATIONS

# words whose change is a change of fact although they are plain prose: a status, a bound, a
# quantifier. On the claim's side alone (dropped) only those that are a status count: "tox
# always builds" / "tox builds" and "it's recommended to set X" / "set X" say the same. An
# outcome of failure is a status too: "X will overwrite Y" / "attempting to overwrite Y will
# raise an error" share every other word and state the opposite.
STATUS_WORDS = frozenset(
    """required optional mandatory default defaults deprecated deprecation removed experimental
    stable beta alpha preview unstable enabled disabled enable disable supported unsupported
    must never only none minimum maximum min max least most public private free paid
    error errors fail fails failed failure raise raises reject rejects rejected forbidden
    prohibited disallowed invalid""".split()
)
SHADING_WORDS = frozenset(
    """always all every any both either more less fewer faster slower before after earlier later
    newer older first last true false yes on off automatic automatically manual manually
    synchronous asynchronous sync async blocking may should recommended discouraged""".split()
)
NEGATING = NEGATIONS | {"non"}
_JOINING = frozenset({"and", "or"})
FILLER_WORDS = frozenset("ones one just simply really actually basically currently now still also easily".split())
MAX_MODIFIER_WORDS = 2
# A restatement keeps most of what it is about: at least this share of each side's content words
# is the other's. A diff places any sentence where the old one stood, and one that shares half its
# words or fewer ("this syntax cannot be used ..." / "these hooks are not called ...") is another
# statement, however little of it holds a value.
MIN_SHARED_CONTENT = 0.6
# code as the page writes it: `name`, ``name``, :role:`name`, <code>name</code>
_CODE_SPAN = re.compile(r"``(.+?)``|`([^`]+)`|<code>(.*?)</code>|<kbd>(.*?)</kbd>", re.S)
_PART = re.compile(r"[A-Za-z0-9]+")


def code_words(source_text: str) -> frozenset[str]:
    """The words the page writes as code in ``source_text``, lower-cased."""
    words: set[str] = set()
    for m in _CODE_SPAN.finditer(source_text or ""):
        span = next(g for g in m.groups() if g is not None)
        words.update(p.lower() for p in _PART.findall(span))
    return frozenset(words)


@dataclass(frozen=True)
class _Word:
    key: str  # lower-cased and stemmed: "PEP-518" and "PEP 518", "tox's" and "tox" compare equal
    part: str  # as written
    token: str  # the whole token it came from ("wheel_build_env" for "build")
    opens: bool  # the first word of the sentence


def _parts(text: str) -> list[_Word]:
    out: list[_Word] = []
    for token in word_tokens(text):
        for part in _PART.findall(token):
            if part.lower() == "s" and out and out[-1].token == token:
                continue  # the possessive "'s"
            out.append(_Word(stem_overlap(part.lower()), part, token, not out))
    return out


def _content(words: list[_Word]) -> set[str]:
    """Content words (negations are compared by their count, shading and filler words are no
    modifier of what a sentence is about)."""
    return {w.key for w in words if w.part.lower() not in OVERLAP_STOPWORDS | NEGATING | SHADING_WORDS | FILLER_WORDS}


def _in_another_form(ra: list[_Word], rb: list[_Word]) -> bool:
    """The content words of two runs pair up in order as forms of one prose word (a word of its
    own, not a piece of a code token), and what else they hold is function words ("with name" /
    "named")."""
    xa = [w for w in ra if w.part.lower() not in OVERLAP_STOPWORDS]
    xb = [w for w in rb if w.part.lower() not in OVERLAP_STOPWORDS]
    return (bool(xa) and len(xa) == len(xb)
            and all(x.part == x.token and y.part == y.token and same_word(x.part, y.part) for x, y in zip(xa, xb)))  # fmt: skip


def differing_words(wa: list[_Word], wb: list[_Word], lone_modifier: bool = True) -> tuple[list[_Word], list[_Word], bool]:
    """The words of ``wa`` and of ``wb`` outside their longest common word sequence, and whether
    one content word was swapped for another in the same place ("loaded from the plugins folder"
    / "the extensions folder"): that names another thing, where a rewording recasts a phrase
    ("provision a test environment" / "set up environments")."""
    sm = SequenceMatcher(None, [w.key for w in wa], [w.key for w in wb], autojunk=False)
    only_a: list[_Word] = []
    only_b: list[_Word] = []
    swapped = recast = False
    alone: set[str] = set()
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        ra, rb = wa[i1:i2], wb[j1:j2]
        if tag == "replace" and _in_another_form(ra, rb):
            continue  # the same words in another form ("convenience" / "convenient", "with name" / "named")
        only_a.extend(ra)
        only_b.extend(rb)
        ca, cb = _content(ra), _content(rb)
        if tag == "replace":
            recast = True
            swapped = swapped or (len(ca) == 1 and len(cb) == 1 and ca != cb)
        else:
            alone |= ca | cb
    # a modifier dropped or added on its own, the rest of the sentence kept ("the escaped pem" /
    # "the pem"), narrows or widens what it is about; in a recast sentence it is part of the recast
    return only_a, only_b, swapped or (lone_modifier and not recast and 0 < len(alone) <= MAX_MODIFIER_WORDS)


def _holds_value(w: _Word, other: frozenset[str], code: frozenset[str], new_side: bool) -> bool:
    low = w.part.lower()
    if any(c.isdigit() for c in w.part) or low in code:
        return True
    if low in STATUS_WORDS or (new_side and low in SHADING_WORDS):
        return True
    if (is_code_identifier(w.token) or (is_identifier(w.token) and not w.token.isupper())) and w.key not in other:
        return True
    # a capitalised word that does not open the sentence names something ("Postgres", "Windows")
    # unless the other side names it too ("C-Extension" / "C extensions")
    return not w.opens and w.part[:1].isupper() and w.key not in other


def _value_words(mine: list[_Word], other: frozenset[str], code: frozenset[str], new_side: bool) -> list[_Word]:
    return [w for w in mine if _holds_value(w, other, code, new_side)]


def _negations(words: list[_Word]) -> int:
    return sum(1 for w in words if w.part.lower() in NEGATING or w.token.lower().endswith("n't"))


# a key chord's modifier as keybinding references abbreviate it: "<c-t>", "<s-up>", "<a-x>" in
# angle brackets (Emacs and vim style), "Ctrl-T", "control+t" spelt out
_SHORT_CHORD = re.compile(r"<(c|s|a|m)-", re.IGNORECASE)
_LONG_CHORD = re.compile(r"\b(ctrl|control|shift|alt|meta|option)[-+](?=\w)", re.IGNORECASE)
_CHORD_MODIFIER = {"c": "ctrl", "control": "ctrl", "s": "shift", "a": "alt", "m": "alt", "meta": "alt", "option": "alt"}
# a chord as written: "ctrl+z", "Ctrl-Shift-P", "cmd + k", "<c-t>"
_CHORD = re.compile(
    r"\b((?:(?:ctrl|control|shift|alt|meta|option|cmd|command|super)[ \t]*[-+][ \t]*)+\w+)|<((?:[csam]-)+\w+)>", re.IGNORECASE
)
_CHORD_PART = re.compile(r"[ \t]*[-+][ \t]*")


def chords_spelt_out(text: str) -> str:
    """Key chords in one notation: "<c-t>" and "<ctrl+t>" name the same key, "<s-up>" and
    "<shift+up>" too, so a generated keybinding table that changed its notation keeps its rows."""

    def spelt(m: re.Match) -> str:
        modifier = m.group(1).lower()
        word = _CHORD_MODIFIER.get(modifier, modifier)
        return f"<{word} " if m.group(0).startswith("<") else f"{word} "

    return _LONG_CHORD.sub(spelt, _SHORT_CHORD.sub(spelt, text))


def _chords(text: str) -> set[str]:
    """The key chords ``text`` names, in one notation ("ctrl z"; "<c-t>" is "ctrl t")."""
    out = set()
    for m in _CHORD.finditer(text):
        parts = _CHORD_PART.split((m.group(1) or m.group(2)).lower())
        out.add(" ".join([_CHORD_MODIFIER.get(p, p) for p in parts[:-1]] + parts[-1:]))
    return out


def restates(claim: Claim, sentence: str, renames: Mapping[str, str] | None = None) -> bool:
    """Whether ``sentence``, which a diff or a similarity already paired with the claim, states it
    in other words: some words differ and none of them holds a value. ``renames``: terms the
    newest release renamed across its pages (old word -> new word), the same words here."""
    # a history clause the claim opens with and the sentence drops dates the statement: no word of it
    text, code = without_leading_history(claim.text or claim.source_text, sentence), code_words(claim.source_text)
    if restated(text, sentence, code):
        return True
    # a list item read with its lead-in ("Set the following values: Enable X if ...") whose own
    # words the newest line writes with its name as the label ("X: Enable if ...")
    item = claim.source_text
    if item and item != text and text.endswith(item) and _labelled(item, sentence, _parts(item), _parts(sentence)):
        return True
    renamed, took = with_terms_renamed(text, renames) if renames else (text, {})
    return bool(took) and (restated(renamed, sentence, code) or written_key(renamed) == written_key(sentence))


def restated(text: str, other: str, code: frozenset[str] = frozenset()) -> bool:
    """Whether ``other`` says what ``text`` says in other words (``code``: the words the page
    writes as code)."""
    if not text or not other:
        return False
    if _chords(text) != _chords(other):
        return False  # a key bound to the action changed ("redo with ctrl+z" / "redo with shift+z")
    text, other = chords_spelt_out(text), chords_spelt_out(other)  # "<c-t>" and "ctrl+t": one key
    names = entry_name(text), entry_name(other)
    if None not in names and names[0] != names[1]:
        return False  # another entry's description ("sources - ..." for "source - ..."), however alike
    wa, wb = _parts(text), _parts(other)
    ca, cb = _content(wa), _content(wb)
    if not ca or not cb or len(ca & cb) < MIN_SHARED_CONTENT * max(len(ca), len(cb)):
        return False
    if _reordered(text, other, wa, wb) or _labelled(text, other, wa, wb):
        return True
    only_text, only_other, swapped = differing_words(wa, wb)
    if not (only_text or only_other):
        # the same words, some in another form ("with name" / "named"); the same words as
        # written are for the verbatim rules
        return [w.key for w in wa] != [w.key for w in wb]
    if swapped or _item_dropped(only_text, only_other):
        return False
    return _no_value_differs(wa, wb, only_text, only_other, code)


def _item_dropped(only_text: list[_Word], only_other: list[_Word]) -> bool:
    """``other`` drops one of the things ``text`` joins with "and" or "or" and puts nothing in its
    place ("set per spider using X and per request using Y" / "set per request using Y";
    "Gevent or Eventlet" / "Gevent"): an item of what it states is gone, which no rewording does."""
    joined = any(w.part.lower() in _JOINING for w in only_text)
    return joined and bool(_content(only_text)) and not _content(only_other)


# a list in a sentence: items joined by commas, "and" or "or" ("html, rss, and json")
_LIST = re.compile(r"[\w.-]+(?:\s*,\s*(?:(?:and|or)\s+)?[\w.-]+|\s+(?:and|or)\s+[\w.-]+)+", re.IGNORECASE)


def _reordered(text: str, other: str, wa: list[_Word], wb: list[_Word]) -> bool:
    """The same words, the ones that moved all items of one list in each sentence: its items
    reordered ("html, rss, and json" / "html, json, and rss"). Swapped ends ("A depends on B" / "B
    depends on A") or steps ("--force, then --yes") are no list reordered."""
    ka, kb = [w.key for w in wa], [w.key for w in wb]
    if ka == kb or sorted(ka) != sorted(kb):
        return False
    moved = {w.part.lower() for w, a, b in zip(wa, ka, kb) if a != b}

    def in_one_list(sentence: str) -> bool:
        return any(moved <= {t.lower().strip(".") for t in re.findall(r"[\w.-]+", m.group())} for m in _LIST.finditer(sentence))

    return in_one_list(text) and in_one_list(other)


MAX_LABEL_WORDS = 6
MAX_LABEL_AT = 2  # words of the statement before the name it was moved from


def _labelled(text: str, other: str, wa: list[_Word], wb: list[_Word]) -> bool:
    """Either sentence is the other with a name moved in front as its label (``_label_moved``)."""
    return _label_moved(text, other, wa, wb) or _label_moved(other, text, wb, wa)


def _label_moved(text: str, labelled: str, wa: list[_Word], wb: list[_Word]) -> bool:
    """The same words, a run of ``text``'s written in front of ``labelled`` as its label ("Enable
    Automatic User Provision if ..." / "Automatic User Provision: Enable if ..."): an entry's name
    made the label of its line, the statement as it was. A label with a number is never moved so:
    which value goes with which name is what such a line states; nor one taken from further in
    than ``MAX_LABEL_AT`` words."""
    label, colon, _ = labelled.partition(": ")
    if not colon or any(ch.isdigit() for ch in label):
        return False
    ka, kb = [w.key for w in wa], [w.key for w in wb]
    n = len(_parts(label))
    if not 0 < n <= MAX_LABEL_WORDS or ka == kb or sorted(ka) != sorted(kb):
        return False
    moved, rest = kb[:n], kb[n:]
    # from the head of the statement ("Enable" before the name): a name taken from further in
    # ("Set timeout to 30 and retries to 5" / "Retries: Set timeout to 30 and to 5") leaves its
    # value to another name
    return any(ka[i : i + n] == moved and ka[:i] + ka[i + n :] == rest for i in range(1, min(MAX_LABEL_AT, len(ka) - n) + 1))


def same_statement(text: str, other: str, code: frozenset[str] = frozenset()) -> bool:
    """Whether ``other``, a sentence nearly as written as ``text`` (kb.evidence.versions'
    ``STILL_STATED``), states the same: no word that differs holds a value, the negations agree
    and no content word is swapped for another. Words dropped or added on their own are allowed
    here (a link's text, "(example)"): at that likeness they are notation, not a narrower claim."""
    if not text or not other:
        return False
    wa, wb = _parts(text), _parts(other)
    only_text, only_other, swapped = differing_words(wa, wb, lone_modifier=False)
    return not swapped and _no_value_differs(wa, wb, only_text, only_other, code)


def _no_value_differs(wa: list[_Word], wb: list[_Word], only_a: list[_Word], only_b: list[_Word], code: frozenset[str]) -> bool:
    """The words that differ (``only_a`` of ``wa``, ``only_b`` of ``wb``) agree in negations and
    hold no value on either side (``wb`` is the newer side)."""
    if _negations(only_a) % 2 != _negations(only_b) % 2:
        return False
    keys_a, keys_b = frozenset(w.key for w in wa), frozenset(w.key for w in wb)
    return not _value_words(only_a, keys_b, code, False) and not _value_words(only_b, keys_a, code, True)
