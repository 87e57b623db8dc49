"""Split parsed documents into atomic, self-contained claims (see ``docs/claims.md``).

Entry point: ``split_claims(doc, settings=None) -> list[Claim]``.

Per block of prose: sentences (robust to abbreviations, decimals, versions, URLs, e-mail
addresses, initials) -> atomic units (clauses joined by ";", coordinated predicates,
"Lead: a, b, c" enumerations, list items with their lead-in, table cells with their headers)
-> a self-contained rewrite (leading pronouns and "this service"/"the tool" resolved to the
subject of the section) -> check-worthiness, type, risk, time sensitivity, freshness window
and evidence requirements, all by transparent rules.

The steps live in :mod:`kb.claims.units`, :mod:`kb.claims.rewrite` and
:mod:`kb.claims.classify`; this module walks the blocks, reads an option reference's field lines
with their option and builds the claims.

Everything is regex and table driven and linear in the input; no model is loaded.
"""

from __future__ import annotations

import re

from kb.claims.classify import _ANSWER_PREFIX, _NOTE_PREFIX, _NOTE_THAT, _POLICY_DOC, _checkworthy, classify
from kb.claims.rewrite import _named_subject, _resolve, _subject_of
from kb.claims.text import sentence_spans
from kb.claims.units import BLOCK_LEAD_IN, LEAD_IN_ATTACHED, _block_units, _Unit
from kb.config import ClaimSettings
from kb.errors import ClaimLimitError
from kb.ingest.offsets import OffsetMap
from kb.records import Block, Claim, Document, content_hash

__all__ = ["ClaimLimitError", "ClaimSettings", "split_claims"]

_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


_MAX_CLAIM_CHARS = 2000


def _span(block: Block, i: int, j: int) -> tuple[int, int]:
    """Document span of block text ``[i, j)``; works for an OffsetMap or a plain tuple of offsets."""
    offsets = block.offsets
    if isinstance(offsets, OffsetMap):
        return offsets.span(i, j)
    if len(offsets) != len(block.text) or not offsets:
        return block.start, block.end  # a hand-made block without offsets: the whole block
    return offsets[i], offsets[j - 1] + 1


MAX_SETTING_WORDS = 4
MAX_KEYED_SETTING_WORDS = 12  # "Default: ["clover", "json", "lcov", "text"]"
MAX_OPTION_HEADING_WORDS = 6  # "automock [boolean]", "poll_interval (duration)"
# one code-like word: "peerCertURI", "tls.minVersion", "max_line_length" (not "Archiving")
_OPTION_NAME = re.compile(r"(?=\w*[a-z][A-Z]|[\w.\[\]-]*[._\[-])[A-Za-z_][\w.\[\]-]*[A-Za-z0-9_\]]")
# the field names option references state their facts under, in every format: VitePress bullets
# ("- **Type:** `boolean`"), Docusaurus lines ("Default: `false`"), "**Type**: string"
_SETTING_KEY = re.compile(
    r"^(?:type|types|default|default value|defaults to|required|optional|values|possible values|allowed values|"
    r"accepted values|valid values|range|unit|units|env|environment variable|since|added in|deprecated|kind|format)"
    r"\s*(?::|=)\s*\S",
    re.I,
)
SETTING_NOTE = "setting read with its option"  # Claim.reason of such a line; the verifier keys on it


def field_name(text: str) -> bool:
    """A cell or term that names a kind of fact rather than an entry ("Default:", "**Type**",
    "Required"): a key/value table of one option under its heading is made of such rows."""
    name = text.strip().strip("*_`").rstrip(":").strip().strip("*_`")
    return bool(name) and _SETTING_KEY.match(f"{name}: x") is not None


def keyed_setting_line(line: str) -> bool:
    """A field line of an option reference ("Type: boolean", "Default: 1m")."""
    line = line.strip()
    return len(line.split()) <= MAX_KEYED_SETTING_WORDS and _SETTING_KEY.match(line) is not None


def setting_line(line: str) -> bool:
    """A line that states an option's facts without naming the option: short and not a
    sentence ("Optional, Default=0s"), or a field line ("Default: `false`")."""
    line = line.strip()
    if keyed_setting_line(line):
        return True
    return len(line.split()) <= MAX_SETTING_WORDS and len(sentence_spans(line)) == 1 and not line.endswith((".", "!", "?"))


def _setting_lead(prev: Block | None, block: Block) -> str:
    """The option a short setting line is read with: reference pages name an option in a line
    of its own ("transport.respondingTimeouts.readTimeout:") or a heading of its own
    ("#### `peerCertURI`", "### `bail` [number | boolean]") and state its facts in the next
    lines ("Optional, Default=0s", "- **Default:** `0`", "Type: string"), which alone say
    nothing of which option they are about. (A definition list's term and definition parse as
    one paragraph, "poll_timeout : Default 5s", which names its option already.)"""
    if prev is None or block.kind not in ("paragraph", "list_item") or not setting_line(block.text):
        return ""
    line = block.text.strip()
    keyed = keyed_setting_line(line)
    if block.kind == "list_item" and (block.lead_in or not keyed):
        return ""  # an ordinary list: its lead-in is its context
    lead = prev.text.strip()
    if block.kind == "paragraph" and prev.kind == "paragraph" and prev.section == block.section and lead.endswith(":"):
        return lead.rstrip(":").strip()
    heading = block.section[-1] if block.section else ""
    if prev.kind == "heading" and block.section[-1:] == (prev.text,) and _OPTION_NAME.fullmatch(lead):
        return lead
    # a field line names its kind of fact itself: the heading above it is the option, also after
    # the option's other field lines ("Type: ..." then "Default: ...")
    if keyed and heading and len(heading.split()) <= MAX_OPTION_HEADING_WORDS and (
            prev.kind == "heading" or prev.section == block.section):  # fmt: skip
        return heading
    return ""


# an entry's term at the start of its list item or definition ("`timeout`: Seconds to wait ...",
# "**port** : The port ...", how a definition list's term and definition read as one paragraph)
ENTRY_TERM = r"[*_`\"']*([A-Za-z_][\w.\[\]-]*)[*_`\"']*\s*:"
_ENTRY_TERM = re.compile(r"^\s*" + ENTRY_TERM + r"\s")


def code_like(name: str) -> bool:
    """A name written as code ("setMany", "tls.minVersion", "max_line_length"), not a word."""
    return _OPTION_NAME.fullmatch(name) is not None


def entry_term(text: str) -> str:
    """The option or field an entry's text opens with ("timeout" of "timeout : Seconds to wait"),
    "" when it opens on no such name. A capitalised word ("Note: ...") is no entry's term."""
    m = _ENTRY_TERM.match(text)
    if m is None:
        return ""
    term = m.group(1)
    return term if _OPTION_NAME.fullmatch(term) or (term.islower() and term.isidentifier()) else ""


def _entry_fields(block: Block, units: list) -> None:
    """A field line after the first sentence of an entry ("timeout: Seconds to wait for a reply.
    Default: 80.") is about the entry's term, not about the list's lead-in: read it with the term,
    as a setting line, so another entry's "Default: 80." says nothing of it."""
    term = entry_term(block.text) if block.kind in ("paragraph", "list_item") else ""
    if not term:
        return
    for u in units:
        line = block.text[u.start : u.end]
        if u.start > 0 and keyed_setting_line(line):
            u.text, u.has_context, u.note = f"{term}: {line}", True, SETTING_NOTE


def _own_sentence(block: Block, unit: _Unit, own: str) -> str:
    """What ``Claim.sentence`` holds for ``unit``: the whole sentence of the page, as written, a
    clause or an enumerated item was cut from; "" for a whole sentence, a table cell and a setting
    line read with an option named elsewhere."""
    if unit.sentence is None or unit.note == SETTING_NOTE:
        return ""
    sentence = block.text[unit.sentence[0] : unit.sentence[1]].strip()
    return " ".join(sentence.split()) if sentence != own.strip() else ""


def setting_option(claim: Claim) -> str:
    """The option a setting line was read with (what :func:`split_claims` put before its text),
    "" for any other claim."""
    if claim.reason != SETTING_NOTE:
        return ""
    return claim.text[: len(claim.text) - len(claim.source_text)].rstrip(": ")


def split_claims(doc: Document, settings: ClaimSettings | None = None) -> list[Claim]:
    """Atomic, self-contained claims of ``doc`` with spans into ``doc.text``."""
    # One pass over the blocks on purpose: lead-ins, headings and the last named subject carry from block to block.
    settings = settings or ClaimSettings()
    if doc.ignore:
        return []
    is_policy = bool(_POLICY_DOC.search(" ".join((doc.title, doc.doc_id, *doc.tags))))
    extra_risk = (
        re.compile(r"\b(?:" + "|".join(map(re.escape, settings.high_risk_words)) + r")\b", re.I) if settings.high_risk_words else None
    )
    seen: dict[tuple[str, str], int] = {}
    antecedent = ""
    last_section = None
    resolved: dict[str, str] = {}  # lead-in sentence as written -> as rewritten
    list_leads = {b.lead_in.strip() for b in doc.blocks if b.lead_in}
    claims: list[Claim] = []
    prev_block: Block | None = None
    for block in doc.blocks:
        section = " > ".join(block.section)
        if block.kind == "heading" or section != last_section:
            antecedent = ""
            last_section = section

        def named(noun: str, block=block) -> str:
            return _named_subject(noun, block, doc)

        lead = block.lead_in
        if lead:  # the lead-in as it was rewritten when it was read, so items are self-contained too
            lead = resolved.get(lead.strip()) or _resolve(lead, antecedent, named)[0]
        units = _block_units(block, settings, lead)
        setting = _setting_lead(prev_block, block)
        if setting:
            for u in units:
                u.text, u.has_context, u.note = f"{setting}: {u.text}", True, SETTING_NOTE
        else:
            _entry_fields(block, units)
        prev_block = block

        for unit in units:
            if unit.end <= unit.start:
                continue
            src_text = block.text[unit.start : unit.end]
            text = unit.text.strip()
            note = unit.note
            if not unit.has_context:
                am = _ANSWER_PREFIX.match(text)
                if am:  # "Yes, a sandbox mirrors production." -> the statement itself
                    text = text[am.end()].upper() + text[am.end() + 1 :]
                text, rnote = _resolve(text, antecedent, named)
                note = rnote or note
                if src_text.rstrip().endswith(":"):
                    resolved[src_text.strip()] = text
                antecedent = _subject_of(text) or antecedent
            nt = _NOTE_PREFIX.sub("", text) if _NOTE_PREFIX.match(text) else _NOTE_THAT.sub("", text)
            if nt != text and nt:
                text = nt[0].upper() + nt[1:]
            start, end = _span(block, unit.start, unit.end)
            if len(text) > _MAX_CLAIM_CHARS:
                checkworthy, reason = False, f"too long to be one claim ({len(text)} characters)"
            else:
                checkworthy, reason = _checkworthy(text, block, unit, settings, doc.text[start:end], src_text.strip() in list_leads)
                lead_of_block = block.kind != "command" and unit.kind not in ("item", "cell") and src_text.rstrip().endswith(":")
                if checkworthy and lead_of_block and note not in (LEAD_IN_ATTACHED, SETTING_NOTE):
                    note = BLOCK_LEAD_IN
            if block.kind == "heading" and not checkworthy:
                ctype, ts, risk, hints = "factual", False, "low", ()
            else:
                ctype, ts, risk, hints = classify(text[:_MAX_CLAIM_CHARS], is_policy)
            if extra_risk is not None and extra_risk.search(text):
                risk = "high"
            if doc.risk in ("low", "medium", "high"):
                risk = doc.risk
            fresh = settings.freshness_days.get(ctype, 365)
            if ts:
                fresh = min(fresh, settings.time_sensitive_days)
            if checkworthy:
                reqs = ["source_passage"]
                if ts:
                    reqs.append(f"fresh_source:{fresh}d")
                reqs.extend(hints)
                requirements = tuple(dict.fromkeys(reqs))
            else:
                requirements = ()
            key = (section, _norm(text))
            occurrence = seen.get(key, 0)
            seen[key] = occurrence + 1
            claim_id = content_hash(f"{doc.doc_id}\x1f{section}\x1f{key[1]}\x1f{occurrence}")
            claims.append(
                Claim(
                    claim_id=claim_id,
                    doc_id=doc.doc_id,
                    version_id=doc.version_id,
                    start=start,
                    end=end,
                    source_text=src_text,
                    text=text,
                    checkworthy=checkworthy,
                    reason=reason or note,
                    type=ctype,
                    risk=risk,
                    time_sensitive=ts,
                    freshness_days=fresh,
                    requirements=requirements,
                    section=section,
                    sentence=_own_sentence(block, unit, src_text),
                )
            )
            if len(claims) > settings.max_claims_per_doc:
                raise ClaimLimitError(
                    f"more than {settings.max_claims_per_doc} claims in one document; split the document "
                    "or raise ClaimSettings.max_claims_per_doc"
                )
    return claims
