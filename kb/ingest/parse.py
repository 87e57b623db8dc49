"""Parse KB documents (Markdown, HTML, reStructuredText, plain text) into prose blocks with exact offsets.

Entry points (see ``docs/CONTRACTS.md``):

- ``parse_document(raw, doc_id, path) -> Document``
- ``read_front_matter(text) -> (meta, body_offset)`` (``kb.ingest.front_matter``)

Every block carries ``offsets``: for each character of the block's plain text, its offset in
``Document.text`` (the whole decoded file, front matter included), as an ``OffsetMap``
(``kb.ingest.offsets``). Each format has a reader of its own: ``kb.ingest.markdown`` (also
plain text), ``kb.ingest.html_blocks`` and ``kb.ingest.rst``.

Everything here is linear in the input size: line-based block parsing, bounded look-ahead for
inline markup, and no regular expression with nested quantifiers. Malformed input gives a
best-effort parse; only binary data, undecodable bytes and hostile or malformed front matter
raise ``ParseError``.
"""

from __future__ import annotations

import hashlib
import sys
from datetime import date, datetime
from functools import cache, lru_cache
from pathlib import Path, PurePath

import orjson

from kb.errors import ParseError
from kb.ingest.common import one_line
from kb.ingest.front_matter import read_front_matter
from kb.ingest.html_blocks import parse_html
from kb.ingest.markdown import MarkdownParser
from kb.ingest.offsets import OffsetMap
from kb.ingest.rst import rst_blocks
from kb.records import Block, Document, content_hash
from kb.store.cache import ResultCache, code_version

__all__ = ["ParseError", "OffsetMap", "parse_document", "read_front_matter", "detect_format", "keep_parsed_blocks", "save_parsed_blocks"]

MARKDOWN_EXT = {".md", ".markdown", ".mdx", ".mkd", ".mdown"}
HTML_EXT = {".html", ".htm", ".xhtml"}
RST_EXT = {".rst", ".rest"}


def detect_format(path: str) -> str:
    suffix = PurePath(path).suffix.lower()
    if suffix in MARKDOWN_EXT:
        return "markdown"
    if suffix in HTML_EXT:
        return "html"
    if suffix in RST_EXT:
        return "rst"
    return "text"


def _decode(raw: bytes) -> str:
    if b"\x00" in raw:
        raise ParseError("binary file (contains NUL bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def parse_document(raw: bytes, doc_id: str, path: str) -> Document:
    """Parse one document version. Raises ``ParseError`` (one line) for unusable input."""
    text = _decode(raw)
    fmt = detect_format(path or doc_id)
    meta: dict = {}
    body = 0
    if fmt in ("markdown", "text", "rst"):
        meta, body = read_front_matter(text)
    blocks, first_heading = _blocks(text, fmt, body, PurePath(path or doc_id).suffix.lower() == ".mdx")

    kb_meta = meta.get("kbaudit") if isinstance(meta.get("kbaudit"), dict) else {}
    title = meta.get("title")
    title = one_line(title, 300) if isinstance(title, (str, int, float)) and str(title).strip() else None
    title = title or first_heading or PurePath(path or doc_id).stem
    updated = None
    for key in ("updated", "last_updated", "last-updated", "lastmod", "modified", "date"):
        if key in meta:
            updated = _as_date(meta.get(key))
            if updated:
                break
    owner = meta.get("owner")
    return Document(
        doc_id=doc_id,
        version_id=content_hash(raw),
        path=path,
        format=fmt,
        text=text,
        title=title,
        updated=updated,
        owner=str(owner) if owner not in (None, "") else None,
        risk=_as_risk(meta.get("risk")),
        tags=_as_tags(meta.get("tags")),
        meta=meta,
        blocks=tuple(blocks),
        bytes=len(raw),
        ignore=_truthy(kb_meta.get("ignore")) if kb_meta else False,
    )


# ---- parsed pages kept between runs ------------------------------------------------------------
# A nightly run reads the same pages as the night before: their blocks are kept under the run's
# cache folder, by the text's hash and the parsers' code, so only a changed page is parsed again
# (a reStructuredText page costs docutils' whole parse). One folder per process at a time, set by
# the run (kb.chain) while it reads its pages; the blocks parsed meanwhile are written after.
_kept: ResultCache | None = None
_kept_new: dict[str, tuple[tuple[Block, ...], str | None]] = {}


def keep_parsed_blocks(folder: Path | None) -> None:
    """Read and keep parsed pages' blocks under ``folder`` from now on (None: in this process only)."""
    global _kept
    _kept_new.clear()
    _kept = ResultCache(folder, "blocks", codec=(_encode_blocks, _decode_blocks)) if folder is not None else None


def save_parsed_blocks() -> int:
    """Write the blocks parsed since ``keep_parsed_blocks`` (one file) and keep no more; how many
    pages were written."""
    global _kept
    new = dict(_kept_new)
    _kept_new.clear()
    kept, _kept = _kept, None
    if kept is not None and new:
        kept.put_many(new)
    return len(new)


def parser_modules() -> tuple:
    """Every module a page's parse goes through: a change in any of them can change its blocks,
    so the cache of parsed pages and the claims cache (kb/chain/identity.py) both key on them."""
    names = ("parse", "front_matter", "offsets", "common", "markdown", "markdown_containers", "markdown_inline",
             "html_blocks", "rst", "commands", "config_blocks")  # fmt: skip
    return tuple(sys.modules[f"kb.ingest.{n}"] for n in names)


@cache
def _parsers_version() -> str:
    return code_version(*parser_modules())


def _encode_blocks(value: tuple[tuple[Block, ...], str | None]) -> str:
    blocks, first_heading = value
    rows = []
    for b in blocks:
        offsets = b.offsets if isinstance(b.offsets, OffsetMap) else OffsetMap.from_offsets(b.offsets)
        starts, docs, length = offsets.runs()
        rows.append([b.kind, b.start, b.end, b.text, starts, docs, length, b.section, b.level, b.lead_in, b.headers])
    return orjson.dumps([first_heading, rows]).decode("utf-8")


def _decode_blocks(text: str) -> tuple[tuple[Block, ...], str | None]:
    first_heading, rows = orjson.loads(text)
    blocks = tuple(
        Block(kind=k, start=st, end=en, text=t, offsets=OffsetMap(starts, docs, length), section=tuple(sec), level=lv,
              lead_in=lead, headers=tuple(hd))
        for k, st, en, t, starts, docs, length, sec, lv, lead, hd in rows
    )  # fmt: skip
    return blocks, first_heading


@lru_cache(maxsize=512)
def _blocks(text: str, fmt: str, body: int, mdx: bool) -> tuple[tuple[Block, ...], str | None]:
    """The prose blocks of a text and its first heading: a function of the text alone, so a file
    unchanged between the KB's rev and a source's (or between two sources) is parsed once per
    process, and once across runs where the run keeps them (``keep_parsed_blocks``). Blocks are
    frozen, so the documents may share them."""
    kept = _kept
    if kept is None:
        return _parse_blocks(text, fmt, body, mdx)
    key = hashlib.sha256(f"{_parsers_version()}|{fmt}|{body}|{mdx}|".encode() + text.encode("utf-8", "surrogatepass")).hexdigest()
    found = kept.get_many([key])
    if key in found:
        return found[key]
    parsed = _kept_new[key] = _parse_blocks(text, fmt, body, mdx)
    return parsed


def _parse_blocks(text: str, fmt: str, body: int, mdx: bool) -> tuple[tuple[Block, ...], str | None]:
    if fmt == "markdown":
        blocks, first_heading = MarkdownParser(text, body, mdx=mdx).run()
    elif fmt == "html":
        blocks, first_heading = parse_html(text)
    elif fmt == "rst":
        found, first_heading = rst_blocks(text, body)
        blocks = [Block(kind=k, start=o[0], end=o[-1] + 1, text=t, offsets=OffsetMap.from_offsets(o), section=sec, level=lv,
                        headers=hd)
                  for k, t, o, sec, lv, hd in found or ()]  # fmt: skip
        if found is None:
            blocks, first_heading = MarkdownParser(text, body, plain=True).run()
    else:
        blocks, first_heading = MarkdownParser(text, body, plain=True).run()
    return tuple(blocks), first_heading


# ---------------------------------------------------------------------------------------------


def _as_date(value) -> date | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    s = str(value).strip()
    try:
        return date.fromisoformat(s[:10])
    except ValueError:
        pass
    for fmt in ("%Y/%m/%d", "%d %B %Y", "%B %d, %Y", "%d %b %Y", "%b %d, %Y"):
        try:
            return datetime.strptime(s, fmt).date()
        except ValueError:
            continue
    return None


def _as_tags(value) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(t.strip() for t in value.split(",") if t.strip())
    if isinstance(value, (list, tuple, set)):
        return tuple(str(t).strip() for t in value if str(t).strip())
    return (str(value),)


def _truthy(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "on", "1")
    return value is True or value == 1


def _as_risk(value) -> str | None:
    if value is None:
        return None
    s = str(value).strip().lower()
    return s if s in ("low", "medium", "high") else None


# ---------------------------------------------------------------------------------------------
# entry point
