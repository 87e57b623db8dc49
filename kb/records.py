"""Typed records that cross stage boundaries.

Every stage of the pipeline takes and returns these (or lists of them); the store turns
lists of them into Arrow tables using ``kb.store.schema``. Keeping them in one module means a
newcomer can read the whole data model in one place.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

LABELS = ("supported", "contradicted", "stale", "uncertain")
CLAIM_TYPES = (
    "factual",
    "numeric",
    "temporal",
    "comparative",
    "causal",
    "procedural",
    "normative",
    "speculative",
)
RISKS = ("low", "medium", "high")
GAP_TYPES = ("technical", "systemic", "undecidable")


def content_hash(data: bytes | str, length: int = 16) -> str:
    """Short, stable content id (sha256 prefix). Used for version ids and claim ids."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()[:length]


_LEAVES = (str, int, float, bool, type(None), date)
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def is_record(value) -> bool:
    """A dataclass instance (not a dataclass type)."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _as_plain(value):
    """``dataclasses.asdict``'s conversion of one value, without copying its leaves."""
    if isinstance(value, _LEAVES):
        return value
    if is_record(value):
        return as_row(value)
    if isinstance(value, list):
        return [_as_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_as_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _as_plain(v) for k, v in value.items()}
    return value


def field_names(record) -> tuple[str, ...]:
    """A record's field names, looked up once per record type."""
    names = _FIELD_NAMES.get(type(record))
    if names is None:
        names = _FIELD_NAMES[type(record)] = tuple(f.name for f in dataclasses.fields(record))
    return names


def replaced(record, **changes):
    """``dataclasses.replace`` for these records (no ``__post_init__``, no slots): a copy of
    the instance dict with ``changes``, a seventh of replace's cost on a run's evidence rows."""
    if unknown := set(changes) - set(field_names(record)):
        raise TypeError(f"{type(record).__name__} has no field {sorted(unknown)[0]!r}")
    copy = object.__new__(type(record))
    copy.__dict__.update(record.__dict__, **changes)
    return copy


def as_row(record) -> dict[str, Any]:
    """A record as a plain dict, as ``dataclasses.asdict`` gives it (the store converts lists of
    these to Arrow, receipts hash them): a run has tens of thousands of rows, and asdict
    deep-copies every field of each."""
    return {name: _as_plain(getattr(record, name)) for name in field_names(record)}


@dataclass(frozen=True)
class Block:
    """A run of prose in a parsed document: a heading, paragraph, list item, table row or quote.

    ``start``/``end`` are character offsets into ``Document.text``; ``text`` is the visible
    plain text of the block (markup removed). ``offsets`` maps each character of ``text``
    back to its offset in the document (same length as ``text``), so a sentence found in
    ``text`` can be mapped to an exact span of the document.
    """

    kind: str  # heading | paragraph | list_item | table_row | quote | text | command
    start: int
    end: int
    text: str
    offsets: Sequence[int]  # a tuple, or kb.ingest.offsets.OffsetMap (the same, stored as runs)
    section: tuple[str, ...] = ()  # heading path above the block
    level: int = 0  # heading level, or list nesting depth
    lead_in: str = ""  # for list items: the sentence that introduces the list
    headers: tuple[str, ...] = ()  # for table rows: column headers


@dataclass(frozen=True)
class Document:
    """One version of one KB document (or one source file)."""

    doc_id: str  # path relative to the KB root, POSIX separators
    version_id: str  # content_hash of the raw bytes
    path: str  # absolute path it was read from
    format: str  # markdown | html | text
    text: str  # the decoded file, front matter included: spans point into this
    title: str
    updated: date | None = None
    owner: str | None = None
    risk: str | None = None
    tags: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict)  # the whole front matter
    blocks: tuple[Block, ...] = ()
    bytes: int = 0
    ignore: bool = False  # front matter `kbaudit: {ignore: true}`
    # kb.ingest.owners fills these at ingest: where the owner came from ("front_matter" or
    # "<CODEOWNERS file>:<line>") and the review interval (front matter review_interval / verified_until)
    owner_source: str | None = None
    review_interval_days: int | None = None
    verified_until: date | None = None
    review_due: date | None = None


@dataclass(frozen=True)
class IngestError:
    path: str
    stage: str  # read | decode | parse | claims | sources
    error: str


@dataclass(frozen=True)
class Claim:
    claim_id: str
    doc_id: str
    version_id: str
    start: int  # span into Document.text
    end: int
    source_text: str  # as written (== Document.text[start:end] modulo markup)
    text: str  # self-contained rewrite used for retrieval and verification
    checkworthy: bool = True
    reason: str = ""  # why not check-worthy (or why rewritten)
    type: str = "factual"
    risk: str = "low"
    time_sensitive: bool = False
    freshness_days: int | None = None
    requirements: tuple[str, ...] = ("source_passage",)
    section: str = ""  # heading path, " > " joined
    # the whole sentence, as written, that a clause or an enumerated item was cut from; "" when the
    # claim is a whole sentence. A clause whose sentence stands in the newest corpus is unchanged.
    sentence: str = ""


@dataclass(frozen=True)
class SourceDoc:
    """One dated version of one source. Several versions may share a source_id."""

    source_id: str
    source_version: str  # content_hash of the text
    title: str
    text: str
    source_date: date | None
    date_origin: str  # front_matter | field | mtime | none
    authority: float = 1.0
    url: str = ""
    path: str = ""
    blocks: tuple[Block, ...] = ()
    # the git rev (tag, branch or commit as given) this version was read at; None: not from git
    source_rev: str | None = None
    source_kind: str | None = None  # None: a page; "changelog": a release section; "spec": typed facts
    # the rev that deleted this source from the docs (read from git; "" while it is still there):
    # every sentence of it is then a removed fact, history rather than current documentation
    deleted_in: str = ""


@dataclass(frozen=True)
class Passage:
    passage_id: str  # content_hash(source_version + offsets)
    source_id: str
    source_version: str
    source_date: date | None
    authority: float
    start: int  # offsets into SourceDoc.text
    end: int
    text: str
    title: str = ""
    source_rev: str | None = None
    source_kind: str | None = None
    deleted_in: str = ""  # SourceDoc.deleted_in


@dataclass(frozen=True)
class Evidence:
    claim_id: str
    rank: int  # 1-based
    passage_id: str
    source_id: str
    source_version: str
    source_date: date | None
    authority: float
    passage: str
    # best-aligned sentence within the passage (for a list item settled as stated under its
    # list's lead-in, kb/evidence/versions.py stated_under_lead_in: the lead-in, then the item)
    sentence: str
    score_bm25: float
    score_dense: float
    score_fused: float
    receipt_id: str = ""
    # passage_id of an older version's passage whose sentence this newest-version sentence
    # replaced (a diff of the two versions put it in its place); "" otherwise
    counterpart_of: str = ""
    section: str = ""  # heading path above the evidence sentence, " > " joined
    source_rev: str | None = None  # the git rev of the source version (None: not from git)
    source_kind: str | None = None  # None: a page; "changelog" or "spec" (kb/evidence/changelog.py, kb/evidence/specs.py)
    # for an older version's sentence that the source's newest version has no counterpart of:
    # that version's rev (else its date); "" otherwise
    removed_in: str = ""
    # the terms the newest release renamed across the corpus that this sentence states the claim
    # with ("site>project", comma-separated); "" otherwise (kb/evidence/versions.py stated_renamed)
    renamed: str = ""

    @property
    def evidence_id(self) -> str:
        return content_hash(f"{self.claim_id}|{self.passage_id}")


@dataclass(frozen=True)
class Judgement:
    """One verifier's view of one claim against one evidence sentence."""

    relation: str  # supports | refutes | nei
    confidence: float  # calibrated probability of `relation`
    tier: str  # rules | model | llm
    rationale: str
    # For refutes: the value the evidence gives for the conflicting slot, if the
    # conflict is a slot (number, date, version, identifier...), so a correction can use it.
    claim_value: str | None = None
    evidence_value: str | None = None


@dataclass(frozen=True)
class Verdict:
    claim_id: str
    label: str  # one of LABELS
    confidence: float
    tier: str
    rationale: str
    gap_type: str | None = None
    gap_severity: str | None = None
    action: str | None = None
    evidence_ids: tuple[str, ...] = ()
    # What the correction step needs: the conflicting value in the claim and the value the
    # deciding (newest) evidence gives, plus that evidence's sentence.
    claim_value: str | None = None
    evidence_value: str | None = None
    evidence_sentence: str | None = None
    reused: bool = False


@dataclass(frozen=True)
class Edit:
    edit_id: str
    claim_id: str
    doc_id: str
    base_version: str
    start: int
    end: int
    old_text: str
    new_text: str
    risk: str
    status: str  # auto | queued | approved | rejected | applied | conflicted | needs_rewrite
    reason: str
