"""Atomic units of a block for :mod:`kb.claims.split`: clauses joined by ";", coordinated
predicates, "Lead: a, b, c" enumerations, list items with their lead-in, table cells with their
headers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb.claims.text import sentence_spans
from kb.config import ClaimSettings
from kb.records import Block

# the note (Claim.reason) of a list item read with its lead-in ("lead-in: item")
LEAD_IN_ATTACHED = "lead-in attached"
# the note (Claim.reason) of a clause of a sentence that states two facts ("X has A, you can B")
COORDINATED_SPLIT = "coordinated fact split"
# the note (Claim.reason) of a lead-in that ends in a colon before a code block (or nothing) and
# names a value of its own ("check that Python is at least 3.10:"): checked as a claim, though
# what it introduced may stand elsewhere in other words when it is gone
BLOCK_LEAD_IN = "lead-in of the block that follows"
# the note (Claim.reason) of a table cell read with its row's key and its column's header; the
# note goes on with the cell's place in the row ("..., column 4 of 6")
TABLE_NOTE = "table row with headers"
_CELL_PLACE = re.compile(r"column (\d+) of (\d+)")


def cell_place(reason: str) -> tuple[int, int] | None:
    """A table cell's place in its row from its claim's note (``TABLE_NOTE``): (column, cells in
    the row), the first column 1; None for any other claim."""
    m = _CELL_PLACE.search(reason) if reason.startswith(TABLE_NOTE) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


@dataclass
class _Unit:
    start: int  # span in block text
    end: int
    text: str  # the rewritten, self-contained text before pronoun resolution
    note: str = ""  # why this unit was rewritten
    kind: str = "sentence"  # sentence | clause | item | cell | heading | command
    has_context: bool = False  # a lead-in or header was attached
    sentence: tuple[int, int] | None = None  # span in block text of the sentence the unit is part of


COMMAND_NOTE = "a shell command of a code block, read as written"
_SEMI = re.compile(r";\s+")
_COLON_LIST = re.compile(r"^(?P<lead>[^:]{2,80}?):\s+(?P<items>.+?)[.]?$")
_LIST_SEP = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")
_AND = re.compile(r",\s+(?:and\s+)?|\s+and\s+")
_CONDITION = re.compile(r"(?:if|unless|when|whenever|once|while)\b", re.I)

VERB_WORDS = frozenset(
    """
    is are was were has have had does did can will would may might must should shall
    supports support supported serves served runs ran uses used offers offered provides provided
    requires required stores stored includes included handles handled sends sent returns returned
    launched released added removed deprecated costs cost charges charged allows allowed lets
    keeps kept writes wrote reads read creates created accepts accepted rejects rejected
    processes processed caches cached retries retried encrypts encrypted logs logged exposes
    exposed enables enabled disables disabled limits limited blocks blocked ships shipped
    runs checks checked builds built deploys deployed scales scaled takes took makes made
    gives gave needs needed replaced replaces grew grows became becomes contains contained
    covers covered expires expired renews renewed applies applied starts started ends ended
    operates operated hosts hosted owns owned employs employed reached reaches moved moves
    opened opens closed closes migrated lasts lasted receives received happens happened
    splits labels verifies re-verifies detects finds marks generates produces answers publishes queues signs
    excludes contains lists shows displays links points remains stays resets syncs increases decreases
    """.split()
)
# base forms: a right conjunct may start with one when the subject is plural ("Builds run ... and take ...")
BASE_VERBS = frozenset(
    """
    run take use support serve offer provide require store include handle send return cost charge allow keep
    write read create accept reject process cache retry expose enable disable limit block ship check build
    deploy scale make give need replace cover expire renew apply start end operate host own employ reach
    move open close last receive happen get are were have do exclude contain list show display link point
    return accept expire remain stay become grow fall rise drop increase decrease reset sync
    """.split()
)
_ADVERBS = frozenset("now also still currently often usually then always never typically automatically".split())
_PRONOUN_SUBJECTS = re.compile(
    r"^(?P<pro>(?:it|they|this|these|that)(?:\s+(?:service|tool|api|product|feature|library|app|application|"
    r"system|module|endpoint|plugin|platform|component|package|server|cli|sdk|"
    r"database|guide|policy|integration|pipeline))?|"
    r"the\s+(?:service|tool|api|product|library|app|application|platform|package|cli|sdk))\b",
    re.I,
)
_POSSESSIVE = re.compile(r"^(?P<pro>its|their)\b", re.I)


def _first_verb_index(words: list[str]) -> int:
    """Index of the first word that looks like the main verb (a lexicon plus -ed forms), or -1."""
    for i, w in enumerate(words):
        if i == 0:
            continue  # the subject comes first ("Builds run ...": "Builds" is a noun here)
        if words[i - 1].lower() in _ARTICLES:
            continue  # a word after an article is a noun or its modifier ("The limits do ...", "The recommended way")
        lw = w.lower().strip(",")
        if lw in VERB_WORDS or (i > 0 and lw in BASE_VERBS and words[i - 1].lower() not in _DETERMINERS):
            return i
        if i > 0 and lw.endswith("ed") and lw.isalpha() and len(lw) > 4 and w[0].islower():
            return i
    return -1


_PARTICIPLES = frozenset("read kept built sent made given written taken shown known run set put held paid sold done".split())
_PARTICIPLE = re.compile(r"^(?:\w+ed|\w+en|read|kept|built|sent|made|given|taken|shown|known|run|set|put|held|paid|sold|done)$")
_DETERMINERS = frozenset("a an the this that these those each every any some no our your their its my".split())
# determiners that are never a subject themselves (the demonstratives are: "This runs ...")
_ARTICLES = _DETERMINERS - {"this", "that", "these", "those"}


_MAX_COORD_CHARS = 600  # longer "sentences" are lists or run-ons: not split on "and"
_MAX_ENUM_CHARS = 2000
_MAX_COORD_DEPTH = 6
MAX_CLAIM_CHARS = 600  # a claim longer than this is not one fact a reader checks at once
_CLAUSE_BOUNDARY = re.compile(r"[,;:] | \| | [-–—] ")


def _clause_subject(words: list[str]) -> tuple[str, int]:
    """(subject, verb index) of a clause's words, or ("", -1)."""
    vi = _first_verb_index(words)
    if vi <= 0:
        return "", -1
    subject = " ".join(words[:vi])
    if len(subject) > 80 or "," in subject or any(w.lower() in ("and", "or") for w in words[:vi]):
        return "", -1
    return subject, vi


_AUX = frozenset("is are was were has have had can cannot will would must should shall may might do does did".split())


def _bracketed(text: str) -> list[bool]:
    """For each position of ``text``: whether it sits inside brackets. A clause or an item is
    never cut there: "(e.g., if we deprecate X in 3.9, we remove it in 5.0)" is one aside and
    "{1,4,7}" one line range; cutting at their commas leaves claims whose brackets never close."""
    inside = [False] * (len(text) + 1)
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}" and depth:
            depth -= 1
        inside[i + 1] = depth > 0
    return inside


_SUBORDINATORS = frozenset("that whether because since although though if when where which who whose while unless until".split())


def _open_subordinate(words: list[str]) -> bool:
    """Whether ``words`` end in a subordinate clause that has no verb yet ("... is that GitHub"),
    so an "and" after them joins that clause's subject to another, not two clauses."""
    for j in range(len(words) - 1, -1, -1):
        if words[j].lower().strip(",(") in _SUBORDINATORS:
            tail = words[j + 1 :]
            return bool(tail) and _first_verb_index(tail) < 0
    return False


_MODALS = frozenset("can cannot could will would must should shall may might do does did".split())


def _shared_auxiliary(subject: str, words: list[str], vi: int) -> tuple[str, str]:
    """For a clause whose verb ``words[vi]`` is a modal ("can", "will", "does"): the subject with
    the modal (and a "not" or an adverb after it), and the same with a "be" that follows ("" where none), which
    a right conjunct in its base form shares: "You can install and run it" -> "You can run it",
    "This can be set up and run" -> "This can be run". ("", "") for any other verb."""
    if vi <= 0 or words[vi].lower() not in _MODALS:
        return "", ""
    k = vi + 1
    while k < len(words) and (words[k].lower() == "not" or words[k].lower() in _ADVERBS):
        k += 1  # "will not", "will always": both parts are negated, or always
    modal = " ".join([subject, *words[vi:k]])
    return modal, (f"{modal} {words[k]}" if k < len(words) and words[k].lower() == "be" else "")


def _split_coordination(text: str, start: int) -> list[tuple[int, int, str]]:
    """Split coordinated facts; [] when there is nothing to split.

    "X launched in 2019 and serves 40 regions" -> "X launched in 2019" + "X serves 40 regions"
    (a shared subject is copied); "Buckets are private and access must be enabled" -> two
    independent clauses (each with its own subject).
    """
    if _CONDITION.match(text):
        return []  # "If X, then A, and B": the condition holds for both parts; a cut drops it from B
    cuts: list[tuple[int, int, str]] = []  # (left end, right start, prefix for the right part)
    piece_start = 0
    first_and = text.find(" and ")
    head = text[:first_and].split() if first_and != -1 else []
    subject, vi = _clause_subject(head)
    prefix_subject = subject
    verb = head[vi].lower() if vi > 0 else ""
    if verb in ("is", "are", "was", "were") and vi + 1 < len(head) and _PARTICIPLE.match(head[vi + 1].lower()):
        prefix_subject = f"{subject} {head[vi]}"  # "Results are written ... and read" -> "Results are read"
    modal_subject, passive_subject = _shared_auxiliary(subject, head, vi)
    inside = _bracketed(text)
    for m in _AND.finditer(text):
        if len(cuts) >= _MAX_COORD_DEPTH:
            break
        if inside[m.start()]:
            continue
        left_words = text[piece_start : m.start()].split()
        after_words = text[m.end() : m.end() + 200].split()
        if len(after_words) < 2 or len(left_words) < 2:
            continue
        first = after_words[0].lower().strip(",")
        if first in _ADVERBS and len(after_words) > 2:
            first = after_words[1].lower().strip(",")
        rsubj, rvi = _clause_subject(after_words[:8])
        own_subject = bool(rsubj) and 1 <= rvi <= 3 and after_words[rvi].lower() in _AUX
        if subject and not own_subject:
            plural = verb in BASE_VERBS or not verb.endswith("s")
            looks_verb = (
                first in VERB_WORDS
                or (plural and first in BASE_VERBS)
                or (
                    m.group(0).startswith(",")
                    and not plural
                    and first.endswith("s")
                    and not first.endswith("ss")
                    and first.isalpha()
                    and after_words[0][:1].islower()  # "Secrets, Endpoints and ...": a list
                )
            )
            has_predicate = len(left_words) - vi >= 2 if piece_start == 0 and vi > 0 else True
            if looks_verb and has_predicate:
                prefix = prefix_subject
                if first in VERB_WORDS - _PARTICIPLES and prefix != subject:
                    prefix = subject  # "are kept and can be ..." -> no auxiliary copied
                if passive_subject and _PARTICIPLE.match(first):
                    prefix = passive_subject
                elif modal_subject and first in BASE_VERBS and first not in _AUX:
                    # a finite verb ("and requires", "and are") has no modal before it
                    prefix = modal_subject
                cuts.append((m.start(), m.end(), prefix))
                piece_start = m.end()
                continue
        # an independent clause: its own subject and verb right after "and"
        if piece_start == 0 and vi <= 0:
            continue
        if not rsubj or not 1 <= rvi <= 4:
            continue
        if rsubj.split()[0].lower() in ("in", "on", "at", "with", "for", "to", "from", "by", "of", "its", "their"):
            continue
        if _open_subordinate(left_words):
            continue  # "The caveat is that GitHub and GitLab do not ...": "and" joins the clause's subjects
        cuts.append((m.start(), m.end(), ""))
        piece_start = m.end()
        subject = prefix_subject = rsubj
        verb = after_words[rvi].lower()
        modal_subject, passive_subject = _shared_auxiliary(rsubj, after_words, rvi)
    if not cuts:
        return []
    out: list[tuple[int, int, str]] = []
    pos = 0
    prefix = ""
    for left_end, right_start, next_prefix in cuts:
        piece = text[pos:left_end]
        out.append((start + pos, start + left_end, f"{prefix} {piece}" if prefix else piece))
        pos, prefix = right_start, next_prefix
    piece = text[pos:]
    out.append((start + pos, start + len(text), f"{prefix} {piece}" if prefix else piece))
    return out


def _units_for_sentence(text: str, s: int, e: int, settings: ClaimSettings) -> list[_Unit]:
    sent = text[s:e]
    units: list[_Unit] = []
    # "A; B" -> two clauses (each with its own subject)
    parts: list[tuple[int, int]] = []
    pos = 0
    inside = _bracketed(sent)
    for m in _SEMI.finditer(sent):
        if inside[m.start()]:
            continue
        left = sent[pos : m.start()]
        if len(left[-200:].split()) >= 3 and len(sent[m.end() : m.end() + 200].split()) >= 3:
            parts.append((pos, m.start()))
            pos = m.end()
    parts.append((pos, len(sent)))
    for a, b in parts:
        piece = sent[a:b]
        ps = s + a
        # "Lead: a, b and c" -> one claim per item
        cm = _COLON_LIST.match(piece) if ":" in piece and "://" not in piece and len(piece) <= _MAX_ENUM_CHARS else None
        if cm and _bracketed(piece)[cm.end("lead")]:
            cm = None  # "[{ type: 'Post', id: 1 }]": a colon inside an object literal leads no list
        if cm:
            items_text = cm.group("items")
            items = _enumeration(items_text)
            if len(items) >= 2:
                lead = cm.group("lead").strip()
                base = ps + cm.start("items")
                for ia, ib in items:
                    item = items_text[ia:ib]
                    units.append(_Unit(base + ia, base + ib, f"{lead}: {item}", LEAD_IN_ATTACHED, "item", True))
                continue
        if settings.split_coordination and " and " in piece and len(piece) <= _MAX_COORD_CHARS:
            coord = _split_coordination(piece, ps)
            if coord:
                for cs, ce, ct in coord:
                    ct = ct.rstrip(" ,;")
                    units.append(_Unit(cs, ce, ct, COORDINATED_SPLIT, "clause"))
                continue
        if len(piece) > MAX_CLAIM_CHARS:
            for ca, cb in _chunks(piece):
                units.append(_Unit(ps + ca, ps + cb, piece[ca:cb], "run-on cut at a clause boundary", "clause"))
            continue
        units.append(_Unit(ps, ps + len(piece), piece))
    return units


def _chunks(piece: str) -> list[tuple[int, int]]:
    """A run-on "sentence" (a list of a hundred names, a licence clause) cut into claims of at
    most MAX_CLAIM_CHARS: at the last clause boundary outside brackets that fits, else at a space."""
    inside = _bracketed(piece)
    out: list[tuple[int, int]] = []
    pos = 0
    while len(piece) - pos > MAX_CLAIM_CHARS:
        window = piece[pos : pos + MAX_CLAIM_CHARS]
        end = nxt = -1
        for m in _CLAUSE_BOUNDARY.finditer(window):
            if m.start() > MAX_CLAIM_CHARS // 4 and not inside[pos + m.start()]:
                # "a, b": the comma stays with its clause; "a | b", "a - b": the separator goes
                end, nxt = m.start() + (1 if window[m.start()] in ",;:" else 0), m.end()
        if end <= 0:
            end = nxt = window.rfind(" ")
        if end <= 0:
            end = nxt = MAX_CLAIM_CHARS
        out.append((pos, pos + len(window[:end].rstrip())))
        pos += nxt
        while pos < len(piece) and piece[pos].isspace():
            pos += 1
    out.append((pos, len(piece)))
    return [(a, b) for a, b in out if b > a]


def _enumeration(items_text: str) -> list[tuple[int, int]]:
    """Spans of short comma/and-separated items, or [] if the text is not a plain enumeration."""
    stripped = items_text.rstrip(". ")
    spans: list[tuple[int, int]] = []
    pos = 0
    inside = _bracketed(stripped)
    for m in _LIST_SEP.finditer(stripped):
        if inside[m.start()]:
            continue
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(stripped)))
    spans = [(a, b) for a, b in spans if b > a and stripped[a:b].strip()]
    if len(spans) < 2:
        return []
    for a, b in spans:
        words = stripped[a:b].split()
        if len(words) > 4 or any(w.lower() in VERB_WORDS for w in words):
            return []
    return spans


def _block_units(block: Block, settings: ClaimSettings, lead_in: str = "") -> list[_Unit]:
    text = block.text
    if block.kind == "heading":
        return [_Unit(0, len(text), text, kind="heading")]
    if block.kind == "table_row":
        return _table_units(block)
    if block.kind == "command":  # read as written: a command is no sentence, and names its own subject
        return [_Unit(0, len(text), text, COMMAND_NOTE, "command", True)]
    units: list[_Unit] = []
    for s, e in sentence_spans(text):
        for unit in _units_for_sentence(text, s, e, settings):
            unit.sentence = (s, e)
            units.append(unit)
    if block.kind == "list_item" and lead_in:
        lead = lead_in.strip().rstrip(":").strip()
        for u in units:
            u.text = f"{lead}: {u.text}"
            u.has_context = True
            # a clause of a split item is read with the lead-in too, and judged as an item is
            u.note = LEAD_IN_ATTACHED
    return units


def _table_units(block: Block) -> list[_Unit]:
    text = block.text
    cells: list[tuple[int, int]] = []
    pos = 0
    while True:
        k = text.find(" | ", pos)
        if k == -1:
            cells.append((pos, len(text)))
            break
        cells.append((pos, k))
        pos = k + 3
    headers = list(block.headers)
    units: list[_Unit] = []
    if not cells:
        return units
    key_s, key_e = cells[0]
    key = text[key_s:key_e].strip()
    key_header = headers[0] if headers else ""
    if len(cells) == 1:
        return [_Unit(key_s, key_e, key, kind="cell")]
    for idx, (s, e) in enumerate(cells[1:], start=1):
        value = text[s:e].strip()
        if not value or value in ("-", "—", "–", "n/a", "N/A"):
            continue
        header = headers[idx] if idx < len(headers) else ""
        subject = f"{key_header} {key}".strip() if key_header else key
        claim = f"{subject}: {header} is {value}" if header else f"{subject}: {value}"
        units.append(_Unit(s, e, claim, f"{TABLE_NOTE}, column {idx + 1} of {len(cells)}", "cell", True))
    return units
