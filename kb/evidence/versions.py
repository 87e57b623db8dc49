"""How a sentence of an older source version stands in the newest version and in the newest
corpus: its counterpart in a sentence diff of the two versions, what stands under its heading,
whether it was removed, whether the newest corpus still states it; and the claim-aligned
sentence of a passage. A mixin of the Retriever, over the index it builds."""

from __future__ import annotations

import logging
import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Mapping
from difflib import SequenceMatcher

import numpy as np
from rapidfuzz import fuzz, process
from rapidfuzz.utils import default_process

# Sentences: the claim splitter's rules (abbreviations, decimals, versions), so claims and
# passages are cut the same way.
from kb.claims.split import entry_term, setting_option
from kb.claims.text import stem_overlap, without_stray_underscores
from kb.claims.units import LEAD_IN_ATTACHED, cell_place
from kb.evidence.bm25 import _BM25
from kb.evidence.passages import _Span, sentence_key, tokenize
from kb.records import Claim, Passage

log = logging.getLogger(__name__)

# (older, newer) sentences of a replaced run that still counts as one local edit. On docsdrift
# (docs/labelling.md "Rewritten statements") 26 of the 35 gold stale sentences inside a replaced
# run sit in one of at most 2 older sentences, against 4 of the 116 sentences the newer release
# dropped ("uncertain"), and those 4 runs grew to 4 or more newer sentences.
LOCAL_EDIT = (2, 3)
# an older sentence with no sentence at least this like it (fuzz.ratio) in the newest version of
# its source was removed there, not reworded
REMOVED_BELOW = 70
# a claim as written that the newest corpus states word for word counts as stated there when it is
# a sentence of at least this many words, or stands under the same heading path (a list item, an
# option line: short text that recurs on many pages means something only in its place)
VERBATIM_ANYWHERE_WORDS = 6
# a sentence of the newest corpus at least this like an older sentence (fuzz.ratio on the
# sentence keys) still states it: its page moved, was split or renamed, the fact did not go
STILL_STATED = 90
# a prose word that the newest release replaced by one other word, the rest of the sentence kept,
# on at least this many pages is a term renamed across the docs ("site configuration" -> "project
# configuration"): a claim with the old term states what the renamed sentence states
MIN_RENAMED_PAGES = 3
# words whose replacement changes what a sentence states, however many pages change alike
# (a default flipped, a feature deprecated, "always" -> "never", "accepts" -> "requires")
_STATE_WORDS = frozenset("""
    not no never always only must may should can cannot required optional recommended enabled
    disabled enable disable true false on off yes none all any some every each more less most least
    minimum maximum lower higher older newer earlier later before after first last default
    supported unsupported deprecated removed experimental stable beta alpha public private
    allowed forbidden ignored accepted rejected included excluded sync async local remote
    accept accepts require requires allow allows support supports need needs expect expects
    will would might could shall
""".split())  # fmt: skip
# a prose word of a sentence key: letters only, so names with digits or separators are never renamed
_PROSE = re.compile(r"[a-z]{3,}")
_LETTERS = re.compile(r"[A-Za-z]+")
# a word as it stands in a claim: not part of a name ("site.Params", "--site", "site_config")
_TERM = re.compile(r"(?<![\w.\-/$@#:])[A-Za-z]+\d*(?![\w\-/]|\.\w)")
# a product's name with its major version written on ("Jinja2", "PyPy3"): a capital, letters, digits
_VERSIONED_NAME = re.compile(r"(?<![\w.\-/$@#:])[A-Z][A-Za-z]{2,}\d+(?![\w\-/]|\.\w)")


# a word with its inner separators: an identifier keeps them (email_validator is not email-validator)
# a leading underscore that names something is part of the name: "layouts/_partials" is not
# "layouts/partials" (without_stray_underscores)
_WORD = re.compile(r"_*[^\W_]+(?:[-_.][^\W_]+)*")
# a short line that states a value: "Optional, Default=0s" recurs under many headings of a reference
_VALUE = re.compile(r"\d|=|:")


def written_key(text: str) -> str:
    """A text as written, compared for "word for word": case, spacing, punctuation between words
    and a call's empty parentheses (``model_dump()``: notation) aside; identifiers keep their
    separators."""
    return " ".join(_WORD.findall(without_stray_underscores(text.lower().replace("()", ""))))


def _lower_case_words(text: str) -> set[str]:
    """The words a sentence writes in lower case: a name ("Florian", "Docker") is never a term
    that a rename of prose could touch; a person or product renamed is a change of fact."""
    return {w for w in _LETTERS.findall(text) if w.islower() and _PROSE.fullmatch(w)}


def _versioned_names(text: str) -> set[str]:
    """The names a sentence writes with a version number on them, lower case ("jinja2")."""
    return {m.group().lower() for m in _VERSIONED_NAME.finditer(text)}


def _names(text: str) -> set[str]:
    """The letters-only words a sentence writes with a capital, lower case ("jinja")."""
    return {w.lower() for w in _LETTERS.findall(text) if not w.islower() and _PROSE.fullmatch(w.lower())}


def _version_dropped(old: str, new: str) -> bool:
    """``old`` is ``new`` with a version number written on: "jinja2" -> "jinja"."""
    return old.startswith(new) and old[len(new) :].isdigit()


# a sentence that states a default in prose: "Default directory is ``.cache`` which ...",
# "Default patterns are '*.egg', '.*'" (the value, then at most a clause about it)
_PROSE_DEFAULT = re.compile(r"(?:the\s+)?default(?:\s+[a-z]+){0,2}\s+(?:is|are)\s+(?P<value>.+?)\s*\.?", re.I)
_AFTER_VALUE = re.compile(r"\s+(?:which|that|where|when|so|but|unless|if|in|on|for)\b.*$", re.I)
_ITEMS = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")
_QUOTES = "'\"`"


def _items(value: str) -> tuple[str, ...]:
    return tuple(item.strip().strip(_QUOTES) for item in _ITEMS.split(value.strip()))


def prose_default(text: str) -> tuple[str, ...] | None:
    """The value a prose sentence gives as a default ("Default directory is .cache which is
    created in the root." -> (".cache",), "Default patterns are '*.egg', '.*'." -> ("*.egg",
    ".*")); None for any other sentence, and for a plain word or number ("Default is False."):
    the same word is every other entry's default too, so it names no entry's value."""
    m = _PROSE_DEFAULT.fullmatch(text.strip())
    if m is None:
        return None
    items = _items(_AFTER_VALUE.sub("", m.group("value")))
    if not all(items) or any(" " in item for item in items) or (len(items) == 1 and items[0].isalnum()):
        return None
    return items


def cell_default(cell: str) -> tuple[str, ...]:
    """A field cell's value as items: ``[".*", "build"]`` and ``".cache"`` as a sentence lists them."""
    cell = cell.strip()
    if cell[:1] == "[" and cell[-1:] == "]":
        cell = cell[1:-1]
    return _items(cell)


def row_holds_default(row: str, values: tuple[str, ...]) -> bool:
    """Whether a table row (cells joined by " | ") holds ``values`` (``prose_default``) in a cell
    after its key."""
    return " | " in row and any(cell_default(cell) == values for cell in row.split(" | ")[1:])


def with_terms_renamed(text: str, renamed: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """``text`` with each prose word that ``renamed`` maps (lower case) replaced, a capital kept,
    and the renames it took. Words inside names ("site.Params", "--site") stay."""
    took: dict[str, str] = {}

    def rename(m: re.Match) -> str:
        word = m.group()
        new = renamed.get(word.lower())
        if new is None:
            return word
        took[word.lower()] = new
        if _version_dropped(word.lower(), new):
            return word[: len(new)]  # the name keeps its own capitals: "PyPy3" -> "PyPy"
        return new.capitalize() if word[:1].isupper() else new

    return _TERM.sub(rename, text), took


def parse_renames(renames: str) -> dict[str, str]:
    """``Evidence.renamed`` ("site>project, sites>projects") as a mapping."""
    return dict(pair.split(">", 1) for pair in renames.split(", ") if ">" in pair)


def states_as_written(claim_text: str, claim_section: str, sentence: str, sentence_section: str, alone: bool = False) -> bool:
    """Whether ``sentence`` states the claim as written, word for word: a whole sentence of
    ``VERBATIM_ANYWHERE_WORDS`` words or more anywhere; a shorter line (a list item, a name) only
    under the same heading path, and one that states a value (a default, a number, "key: value")
    only where it stands ``alone`` under that heading: the same reference repeats "Default:
    True." for every option of a list, while "macos_arm64" or "path: The PATH environment
    variable" is one entry's own line."""
    key = written_key(claim_text)
    if not key or written_key(sentence) != key:
        return False
    if len(key.split()) >= VERBATIM_ANYWHERE_WORDS:
        return True
    return claim_section == sentence_section and (alone or not _VALUE.search(claim_text))


def states_its_sentence(claim: Claim, sentence: str, sentence_section: str) -> bool:
    """Whether ``sentence``, under ``sentence_section``, states word for word the whole sentence a
    clause was cut from (``Claim.sentence``) under the claim's own heading path: no fact of that
    sentence changed. False for a claim that is a whole sentence."""
    key = written_key(claim.sentence)
    return bool(key) and sentence_section == claim.section and written_key(sentence) == key


def states_under_its_lead_in(claim: Claim, stated: str, stated_section: str) -> bool:
    """For a list item read with its list's lead-in ("lead-in: item"), whether ``stated`` (a
    newest page's lead-in followed by an item of its list, under ``stated_section``) is the claim
    as the KB reads it, word for word: the lead-in, then the item (for a clause cut from an item,
    the item's whole sentence). A page that moved keeps its lists, so the pair stands anywhere
    once it is ``VERBATIM_ANYWHERE_WORDS`` words long; a shorter one only under the claim's own
    heading path."""
    item = written_key(claim.sentence or claim.source_text)
    said = written_key(stated)
    if claim.reason != LEAD_IN_ATTACHED or not item or not said.endswith(f" {item}"):
        return False
    lead = said[: -len(item) - 1]
    read = written_key(claim.text)
    if not (read.startswith(f"{lead} ") if claim.sentence else read == said):
        return False
    return len(said.split()) >= VERBATIM_ANYWHERE_WORDS or stated_section == claim.section


def heading_path_key(claim: Claim) -> str:
    """The written key of the heading path the claim would head: its own heading path with its
    words as the last heading ("Guide > How a Request is Handled" for the claim "How a Request is
    Handled" under "Guide"); "" for a claim under no heading, where a page's top-level heading
    alone ("JPEG") says nothing of which page it heads."""
    if not claim.section or not written_key(claim.source_text):
        return ""
    return written_key(f"{claim.section} {claim.source_text}")


def kept_as_heading(claim: Claim, section: str) -> bool:
    """Whether a sentence under the heading path ``section`` stands under the claim itself as a
    heading (``heading_path_key``)."""
    key = heading_path_key(claim)
    return bool(key) and written_key(section) == key


class SourceVersions:
    """The version-alignment half of the Retriever (it holds the index these read)."""

    passages: list[Passage]
    sentences: list[_Span]
    _p_sent: np.ndarray
    _bm25_sent: _BM25 | None
    _sent_terms: dict[int, frozenset[str]]
    _versions_by_source: dict[str, list[int]]
    _version_range: list[tuple[int, int]]
    _version_sentences: list[tuple[int, int]]
    _newest_version: dict[str, int]
    _aligned: dict[int, dict[int, tuple[str, int]]]
    _headings: dict[int, dict[tuple[str, ...], list[int]]]
    _sentence_starts: np.ndarray
    _current: tuple[dict[str, list[int]], list[str], list[int]] | None
    _by_length: tuple[list[str], list[int], list[int]] | None
    _renamed: dict[str, str] | None
    _cells: dict[str, list[tuple[int, int, str]]] | None
    _rows: dict[str, list[int]] | None
    _paths: dict[str, int] | None

    # ------------------------------------------------------------ alignment

    def _best_sentence_index(self, claim_tokens: list[str], claim_text: str, j: int) -> int:
        """The sentence of passage ``j`` best aligned with the claim: rapidfuzz token-set ratio
        and IDF-weighted share of the claim's terms it contains (numbers count double: a
        subject's number, "Severity 1", "v2", identifies what the claim is about)."""
        a, b = self._p_sent[j]
        return self._best_sentence_of(claim_tokens, claim_text, range(int(a), int(b)))

    def _best_sentence_of(self, claim_tokens: list[str], claim_text: str, indices) -> int:
        """Of the sentences ``indices``, the one best aligned with the claim (as above)."""
        indices = list(indices)
        if len(indices) == 1:
            return int(indices[0])
        bm = self._bm25_sent
        assert bm is not None  # index() ran on passages
        weights = {}
        for t in claim_tokens:
            tid = bm.vocab.get(t)
            if tid is not None:
                weights[t] = float(bm.idf[tid]) * (2.0 if t[:1].isdigit() else 1.0)
        total = sum(weights.values())
        q = default_process(claim_text)
        best, best_score = int(indices[0]), -1.0
        for i in indices:
            text = self.sentences[i].text
            fz = fuzz.token_set_ratio(q, default_process(text)) / 100.0
            terms = self._sent_terms.get(i)
            if terms is None:
                terms = self._sent_terms[i] = frozenset(tokenize(text))
            rec = sum(w for t, w in weights.items() if t in terms) / total if total else 0.0
            score = 0.5 * fz + 0.5 * rec
            if score > best_score:
                best, best_score = int(i), score
        return best

    # ------------------------------------------------------------ versions

    def counterpart(self, sentence: int) -> tuple[str, int] | None:
        """Where sentence ``sentence`` (a global index) of an older source version stands in
        the source's newest version: ``("equal", i)`` when the newest version still has it
        (in place or moved), ``("replaced", i)`` when a diff of the two versions puts sentence
        ``i`` in its place, None when the newest version dropped it (or it is the newest)."""
        v = self._version_of_sentence(sentence)
        new = self._newest_version.get(self.passages[self._version_range[v][0]].source_id)
        if new is None or new == v or not self._older(v, new):
            return None
        if v not in self._aligned:
            self._aligned[v] = self._align_versions(v, new)
        return self._aligned[v].get(sentence)

    def same_heading(self, sentence: int, taken) -> tuple[int, int] | None:
        """For a sentence of an older source version that has no counterpart in the newest
        version (its section was rewritten, so the diff pairs nothing): the newest version's
        sentence under the same heading path most like it, and the passage holding it (nearest
        the middle, among those not in ``taken``); None when the newest version has no such
        heading or every passage holding that sentence is taken. A heading outlives a rewrite
        of its text (an option's section, "#### `peerCertURI`", keeps its name while its
        default and its wording change), so what the newest version says under it is what a
        verifier must read beside the old; of the lines there, the one most like the old line
        is the one that can stand in its place."""
        section = self.sentences[sentence].section
        v = self._version_of_sentence(sentence)
        new = self._newest_version.get(self.passages[self._version_range[v][0]].source_id)
        if not section or new is None or new == v or not self._older(v, new):
            return None
        if new not in self._headings:
            by_section: dict[tuple[str, ...], list[int]] = {}
            na, nb = self._version_sentences[new]
            for i in range(na, nb):
                by_section.setdefault(self.sentences[i].section, []).append(i)
            self._headings[new] = by_section
        under = self._headings[new].get(section)
        if not under:
            return None
        # most like the old line as every evidence sentence is chosen (term recall with numbers
        # counting double: a subject's number says what a line is about, so "Severity 1 ... 1
        # hour" goes with "Severity 1 ... 30 minutes", not the closer-spelled "Severity 2 ... 2 hours")
        old_text = self.sentences[sentence].text
        best = self._best_sentence_of(tokenize(old_text), old_text, under)
        j = self._passage_holding(best, taken)
        return None if j is None else (j, best)

    def removed_in(self, sentence: int) -> str:
        """For a sentence of an older source version that the newest version has no counterpart
        of (not kept, not moved, not replaced in a local edit, and no sentence of the newest
        version like it): that version's rev, else its date. "" otherwise."""
        v = self._version_of_sentence(sentence)
        new = self._newest_version.get(self.passages[self._version_range[v][0]].source_id)
        if new is None or new == v or not self._older(v, new):
            return ""
        if v not in self._aligned:
            self._aligned[v] = self._align_versions(v, new)
        if sentence in self._aligned[v]:
            return ""
        p = self.passages[self._version_range[new][0]]
        na, nb = self._version_sentences[new]
        text = self.sentences[sentence].text
        if p.source_kind == "spec":
            # a spec fact is "<subject>: <values>": gone when no fact of the newest spec has its subject
            subject = text.split(": ", 1)[0] + ": "
            if any(self.sentences[i].text.startswith(subject) for i in range(na, nb)):
                return ""
        else:
            key = sentence_key(text)
            if any(fuzz.ratio(key, sentence_key(self.sentences[i].text)) >= REMOVED_BELOW for i in range(na, nb)):
                return ""  # reworded in place or elsewhere on the page: a revision, not a removal
        return p.source_rev or (p.source_date.isoformat() if p.source_date else "")

    def still_stated(self, sentence: int) -> int | None:
        """A sentence of the newest corpus (the newest version of every source that was not
        deleted) that states ``sentence`` word for word or nearly (``STILL_STATED``); None when
        none does. A removal needs the fact's absence everywhere: a page that moved, was split or
        renamed takes its sentences with it, and what its old place lost still stands there."""
        exact, _, where = self._newest_corpus()
        key = sentence_key(self.sentences[sentence].text)
        if key in exact:
            return exact[key][0]
        # A ratio of STILL_STATED or more bounds the other key's length, so only keys of a length
        # in that window are compared (hugo: a third of its newest corpus): the same match as over
        # every key, the first in corpus order among the best.
        keys, lengths, order = self._newest_by_length()
        n, cut = len(key), STILL_STATED / 100
        window = slice(bisect_left(lengths, math.floor(n * cut / (2 - cut))), bisect_right(lengths, math.ceil(n * (2 - cut) / cut)))
        found = process.extract(key, keys[window], scorer=fuzz.ratio, processor=None, score_cutoff=STILL_STATED, limit=None)
        if not found:
            return None
        best = max(score for _, score, _ in found)
        return where[min(order[window.start + i] for _, score, i in found if score == best)]

    def _newest_by_length(self) -> tuple[list[str], list[int], list[int]]:
        """The newest corpus's sentence keys ordered by length (then corpus order), their lengths,
        and each one's place in corpus order."""
        if self._by_length is None:
            keys = self._newest_corpus()[1]
            order = sorted(range(len(keys)), key=lambda i: (len(keys[i]), i))
            self._by_length = ([keys[i] for i in order], [len(keys[i]) for i in order], order)
        return self._by_length

    def _newest_corpus(self) -> tuple[dict[str, list[int]], list[str], list[int]]:
        """The sentence keys of the newest version of every source that was not deleted: key ->
        its sentences, and the keys and sentences in order (for fuzzy lookups)."""
        if self._current is None:
            exact: dict[str, list[int]] = {}
            keys, where = [], []
            for sid, versions in self._versions_by_source.items():
                # a source read once is current as it is; of several dated versions, the newest
                v = self._newest_version.get(sid, versions[-1])
                a, _ = self._version_range[v]
                if self.passages[a].deleted_in:
                    continue
                for i in range(*self._version_sentences[v]):
                    key = sentence_key(self.sentences[i].text)
                    exact.setdefault(key, []).append(i)
                    keys.append(key)
                    where.append(i)
            self._current = (exact, keys, where)
        return self._current

    def renamed_terms(self) -> dict[str, str]:
        """Prose words the newest release renamed across the corpus: old word -> new word, where
        on at least ``MIN_RENAMED_PAGES`` sources a sentence of an older version and one of the
        newest differ in that word alone (its other inflections count with it: "sites" ->
        "projects" is the same rename as "site" -> "project"). Words of state (``_STATE_WORDS``)
        are never renamed: "enabled" -> "disabled" on many pages is a change of fact."""
        if self._renamed is not None:
            return self._renamed
        pages: dict[tuple[str, str], set[str]] = {}
        spelled: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for sid, new in self._newest_version.items():
            a, _ = self._version_range[new]
            if self.passages[a].deleted_in:
                continue
            new_keys = {sentence_key(self.sentences[i].text): self.sentences[i].text for i in range(*self._version_sentences[new])}
            old_keys: dict[str, str] = {}
            for v in self._versions_by_source.get(sid, ()):
                if v != new and self._older(v, new):
                    old_keys.update(
                        (sentence_key(self.sentences[i].text), self.sentences[i].text) for i in range(*self._version_sentences[v])
                    )
            masked: dict[tuple[str, str], set[str]] = {}
            named: dict[tuple[str, str], set[str]] = {}
            for key in new_keys.keys() - old_keys.keys():
                words, common, names = key.split(), _lower_case_words(new_keys[key]), _names(new_keys[key])
                for i, w in enumerate(words):
                    around = (" ".join(words[:i]), " ".join(words[i + 1 :]))
                    if _PROSE.fullmatch(w) and w in common:
                        masked.setdefault(around, set()).add(w)
                    elif w in names:
                        named.setdefault(around, set()).add(w)
            for key in old_keys.keys() - new_keys.keys():
                words, common, versioned = key.split(), _lower_case_words(old_keys[key]), _versioned_names(old_keys[key])
                for i, w in enumerate(words):
                    around = (" ".join(words[:i]), " ".join(words[i + 1 :]))
                    for n in masked.get(around, ()) if w in common else ():
                        stems = (stem_overlap(w), stem_overlap(n))
                        if stems[0] != stems[1] and not ({w, n, *stems} & _STATE_WORDS):
                            pages.setdefault(stems, set()).add(sid)
                            spelled.setdefault(stems, set()).add((w, n))
                    # a product's name that no longer writes its major version ("Jinja2" ->
                    # "Jinja") names the same product; a name changed otherwise is a change of fact
                    for n in named.get(around, ()) if w in versioned else ():
                        if _version_dropped(w, n):
                            pages.setdefault((w, n), set()).add(sid)
                            spelled.setdefault((w, n), set()).add((w, n))
        swept = sorted(stems for stems, sids in pages.items() if len(sids) >= MIN_RENAMED_PAGES)
        # a word renamed two ways ("option" -> "setting" here, "flag" there) is no one rename
        ways = Counter(old for old, _ in swept)
        self._renamed = {w: n for stems in swept if ways[stems[0]] == 1 for w, n in sorted(spelled[stems])}
        if self._renamed:
            log.info("terms the newest release renamed across its pages: %s", ", ".join(f"{w} -> {n}" for w, n in self._renamed.items()))
        return self._renamed

    def stated_renamed(self, claim: Claim) -> tuple[int, str] | None:
        """A sentence of the newest corpus that states the claim as written once the terms the
        newest release renamed (``renamed_terms``) are renamed in it too, and the renames it
        took ("site>project"); None when there is none or the claim has no renamed term."""
        text, took = self._with_renames(claim)
        if not took:
            return None
        found = self._newest_corpus()[0].get(sentence_key(text))
        written = [i for i in found or () if states_as_written(text, claim.section, self.sentences[i].text,
                                                               " > ".join(self.sentences[i].section))]  # fmt: skip
        if not written:
            return None
        return self._own_heading_first(claim, written)[0], ", ".join(f"{w}>{n}" for w, n in sorted(took.items()))

    def _with_renames(self, claim: Claim) -> tuple[str, dict[str, str]]:
        renamed = self.renamed_terms()
        return with_terms_renamed(claim.source_text, renamed) if renamed else (claim.source_text, {})

    def renames_taken(self, claim: Claim) -> str:
        """The renames of ``renamed_terms`` that the claim's words take ("site>project"), "" for
        none: the newest release writes the claim's fact in those terms wherever it still
        states it, reworded or not."""
        return ", ".join(f"{w}>{n}" for w, n in sorted(self._with_renames(claim)[1].items()))

    def default_in_field(self, claim: Claim) -> int | None:
        """A table row of the newest corpus, under the claim's own heading path, with a cell that
        holds the default the claim states in prose (``prose_default``): a reference that moved
        "Default directory is .cache" into its entry's ``:default:`` field (read as the entry's
        row) still states it. None when the claim states no such default or no row holds it."""
        values = prose_default(claim.source_text or claim.text)
        if not values:
            return None
        for i in self._newest_corpus()[2]:
            span = self.sentences[i]
            if " > ".join(span.section) == claim.section and row_holds_default(span.text, values):
                return i
        return None

    def stated_verbatim(self, claim: Claim) -> int | None:
        """A sentence of the newest corpus that states the claim as written (``states_as_written``);
        one under the claim's own heading path first. None when there is none."""
        key = sentence_key(claim.source_text)
        found = self._newest_corpus()[0].get(key) if key else None
        # how often each source's newest version has the line under each heading path: a value
        # line stands for one entry only where it is the heading's only line of that wording
        homes = Counter(self._sentence_home(i) for i in found or ())
        written = [i for i in found or () if states_as_written(claim.source_text, claim.section, self.sentences[i].text,
                                                               " > ".join(self.sentences[i].section),
                                                               alone=homes[self._sentence_home(i)] == 1
                                                               and self._names_option(i, setting_option(claim)))]  # fmt: skip
        return (self._own_heading_first(claim, written) or [None])[0]

    def stated_in_sentence(self, claim: Claim) -> int | None:
        """For a clause cut from a sentence (``Claim.sentence``), a sentence of the newest corpus
        under the claim's own heading path that states that whole sentence as written: no fact
        of it changed. None for any other claim or when none stands there."""
        if not claim.sentence:
            return None
        for i in self._newest_corpus()[0].get(sentence_key(claim.sentence), ()):
            if states_its_sentence(claim, self.sentences[i].text, " > ".join(self.sentences[i].section)):
                return i
        return None

    def stated_under_lead_in(self, claim: Claim) -> tuple[int, str] | None:
        """For a list item read with its lead-in, an item of the newest corpus that states it
        under the same lead-in (``states_under_its_lead_in``; one under the claim's own heading
        path first): the item's sentence and the lead-in and item as one text. A lead-in that
        several lists of the newest corpus share ("Options:") says which list only under the
        claim's own heading path. None when there is none."""
        if claim.reason != LEAD_IN_ATTACHED:
            return None
        exact = self._newest_corpus()[0]
        found = [i for i in exact.get(sentence_key(claim.sentence or claim.source_text), ()) if self.sentences[i].lead_in]
        for i in self._own_heading_first(claim, found):
            span = self.sentences[i]
            stated, section = f"{span.lead_in} {span.text}", " > ".join(span.section)
            if len(exact.get(sentence_key(span.lead_in), ())) > 1 and section != claim.section:
                continue
            if states_under_its_lead_in(claim, stated, section):
                return i, stated
        return None

    def kept_as_heading(self, claim: Claim) -> int | None:
        """For a claim that is a heading ("When to use Quart instead"), the first sentence of the
        newest corpus under that heading at the same place in the same headings
        (``kept_as_heading``): the page still says it. None when the newest corpus has no such
        heading path, or the claim is under no heading."""
        if self._paths is None:
            paths: dict[str, int] = {}
            for i in self._newest_corpus()[2]:
                if self.sentences[i].section:
                    paths.setdefault(written_key(" ".join(self.sentences[i].section)), i)
            self._paths = paths
        key = heading_path_key(claim)
        return self._paths.get(key) if key else None

    def _own_heading_first(self, claim: Claim, sentences: list[int]) -> list[int]:
        """``sentences`` with those under the claim's own heading path first, in order."""
        return sorted(sentences, key=lambda i: not self._under_claims_heading(claim, i))

    def _under_claims_heading(self, claim: Claim, sentence: int) -> bool:
        return " > ".join(self.sentences[sentence].section) == claim.section

    def stated_in_cell(self, claim: Claim) -> tuple[int, int] | None:
        """A table row of the newest corpus with a cell that states the claim word for word ("A
        set of variables that can be used in the task." in a row of a page the reference was split
        into), one under the claim's heading path first: the passage that holds the whole cell and
        the row's first sentence. None when there is none, no passage holds the whole cell, or the
        claim is too short to name one fact anywhere."""
        key = sentence_key(claim.source_text)
        if len(key.split()) < VERBATIM_ANYWHERE_WORDS:
            return None
        claim_key = written_key(claim.source_text)
        rows = [(i, last) for i, last, cell in self._newest_cells().get(key, ()) if written_key(cell) == claim_key]
        for i, last in sorted(rows, key=lambda row: not self._under_claims_heading(claim, row[0])):
            a, b = self._version_range[self._version_of_sentence(i)]
            starts, ends = self._p_sent[a:b, 0], self._p_sent[a:b, 1]
            # the passage must hold the cell to its end: the rules read a cut row on in its passage
            whole = np.nonzero((starts <= i) & (last < ends))[0]
            if len(whole):
                return int(a + whole[0]), i
        return None

    def stated_in_row(self, claim: Claim) -> int | None:
        """For a table cell's claim, a row of the newest corpus under the claim's own heading path
        that holds the cell as the KB wrote it: as many cells, the claim's entry in its first cell
        and the claim's value in its column. None for any other claim or when no such row stands
        there. An emoji table's rows may all begin "top": then any of its rows with the value in
        that place holds it."""
        place = cell_place(claim.reason)
        if place is None:
            return None
        column, width = place
        value, subject = written_key(claim.source_text), written_key(claim.text.split(": ", 1)[0])
        if not value or not subject:
            return None
        for i in self._newest_rows().get(claim.section, ()):
            cells = self.sentences[i].text.split(" | ")
            if len(cells) != width or written_key(cells[column - 1]) != value:
                continue
            key = written_key(cells[0])
            if key and (subject == key or subject.endswith(" " + key)):
                return i
        return None

    def _newest_rows(self) -> dict[str, list[int]]:
        """The table rows of the newest corpus (cells joined by " | ") by heading path."""
        if self._rows is None:
            rows: dict[str, list[int]] = {}
            for i in self._newest_corpus()[2]:
                if " | " in self.sentences[i].text and not self.sentences[i].command:  # a pipe is no cell
                    rows.setdefault(" > ".join(self.sentences[i].section), []).append(i)
            self._rows = rows
        return self._rows

    def _newest_cells(self) -> dict[str, list[tuple[int, int, str]]]:
        """The cells of the newest corpus's table rows (cells joined by " | ") that are long enough
        to name one fact anywhere: sentence key -> (the row's sentence, the cell). A row's last cell
        goes on into the sentences the row was cut into ("... of the task. This is displayed ...")."""
        if self._cells is None:
            cells: dict[str, list[tuple[int, int, str]]] = {}
            where = self._newest_corpus()[2]
            for n, i in enumerate(where):
                row = self.sentences[i]
                if " | " not in row.text or row.command:
                    continue
                parts = row.text.split(" | ")[1:]
                prev, last = row, i
                for j in where[n + 1 : n + 4]:
                    nxt = self.sentences[j]
                    if nxt.start - prev.end > 1 or nxt.section != row.section or " | " in nxt.text or nxt.command:
                        break
                    parts[-1] = f"{parts[-1]} {nxt.text}"
                    prev, last = nxt, j
                for k, cell in enumerate(parts, start=1):
                    key = sentence_key(cell)
                    if len(key.split()) >= VERBATIM_ANYWHERE_WORDS:
                        cells.setdefault(key, []).append((i, last if k == len(parts) else i, cell))
            self._cells = cells
        return self._cells

    def _names_option(self, sentence: int, option: str) -> bool:
        """For a setting line read with its option (``option``; "" for any other claim), whether the
        line is that option's own: the line before it names the option, or its heading does. Another
        option's "Optional, Default=0s" may stand alone under a heading its neighbour's changed."""
        if not option:
            return True
        key = written_key(option)
        section = self.sentences[sentence].section
        if section and written_key(section[-1]) == key:
            return True
        before = sentence - 1
        if before < 0 or self._version_of_sentence(before) != self._version_of_sentence(sentence):
            return False
        # the line before names the option ("`readTimeout`:"), or opens the option's entry
        # ("timeout : Seconds to wait for a reply." before "Default: 80.")
        said = self.sentences[before].text
        return f" {written_key(said)}".endswith(f" {key}") or written_key(entry_term(said)) == key

    def _sentence_home(self, sentence: int) -> tuple[str, tuple[str, ...]]:
        """The source and heading path a sentence stands under (the same in every version)."""
        v = self._version_of_sentence(sentence)
        return self.passages[self._version_range[v][0]].source_id, self.sentences[sentence].section

    def _version_of_sentence(self, sentence: int) -> int:
        return int(np.searchsorted(self._sentence_starts, sentence, side="right") - 1)

    def _older(self, v: int, w: int) -> bool:
        dv = self.passages[self._version_range[v][0]].source_date
        dw = self.passages[self._version_range[w][0]].source_date
        return dv is not None and dw is not None and dv < dw

    def _align_versions(self, old: int, new: int) -> dict[int, tuple[str, int]]:
        """A sentence diff of two versions of one source: each older sentence's place in the
        newer one. A *local edit* (a run of at most ``LOCAL_EDIT`` older sentences replaced by
        at most ``LOCAL_EDIT[1]`` newer ones, in otherwise unchanged surroundings) pairs each
        older sentence with the most similar newer sentence of the run: that is what took its
        place. A longer replaced run is a rewritten section, where a fact was more often
        dropped than changed: none of it is taken as a counterpart."""
        (oa, ob), (na, nb) = self._version_sentences[old], self._version_sentences[new]
        old_keys = [sentence_key(self.sentences[i].text) for i in range(oa, ob)]
        new_keys = [sentence_key(self.sentences[i].text) for i in range(na, nb)]
        where_now: dict[str, list[int]] = {}
        for i, k in enumerate(new_keys):
            where_now.setdefault(k, []).append(na + i)
        repeats_old = Counter(old_keys)

        def moved_to(i: int) -> int | None:
            """Where the older sentence ``i`` went, if it moved elsewhere on the page: a
            newer sentence of the same words, under the same heading; or, for a sentence
            that occurs once in each version, wherever it is. A line that repeats under many
            headings ("Optional, Default=false") says nothing of where its fact went: taken
            from another heading, it paired an option's old default with another option's."""
            found = where_now.get(old_keys[i], [])
            section = self.sentences[oa + i].section
            same = [j for j in found if self.sentences[j].section == section]
            if same:
                return same[0]
            if len(found) == 1 and repeats_old[old_keys[i]] == 1:
                return found[0]
            return None

        out: dict[int, tuple[str, int]] = {}
        for tag, i1, i2, j1, j2 in SequenceMatcher(None, old_keys, new_keys, autojunk=False).get_opcodes():
            for i in range(i1, i2):
                kept = na + j1 + i - i1 if tag == "equal" else -1
                # Such a repeated line the diff itself lines up with one under another heading
                # (sections reordered) is no more kept; a line that stands once keeps the diff's
                # pairing, whatever its heading is now called.
                if kept >= 0 and (repeats_old[old_keys[i]] == 1 or self.sentences[kept].section == self.sentences[oa + i].section):
                    out[oa + i] = ("equal", kept)
                elif (moved := moved_to(i)) is not None:
                    out[oa + i] = ("equal", moved)
                elif tag == "replace" and i2 - i1 <= LOCAL_EDIT[0] and j2 - j1 <= LOCAL_EDIT[1]:
                    j = max(range(j1, j2), key=lambda j: fuzz.ratio(old_keys[i], new_keys[j]))
                    out[oa + i] = ("replaced", na + j)
        return out

    def _passage_holding(self, sentence: int, taken=()) -> int | None:
        """The passage of the sentence's version in which it sits nearest the middle, of those
        not in ``taken``; None when every passage holding it is taken."""
        a, b = self._version_range[self._version_of_sentence(sentence)]
        starts, ends = self._p_sent[a:b, 0], self._p_sent[a:b, 1]
        inside = np.nonzero((starts <= sentence) & (sentence < ends))[0]
        off_centre = np.abs((starts[inside] + ends[inside] - 1) / 2 - sentence)
        free = [int(a + j) for j in inside[np.argsort(off_centre, kind="stable")] if int(a + j) not in taken]
        return free[0] if free else None
