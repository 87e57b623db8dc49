"""Changelogs and release notes: one dated source per release section.

Recognised by file name (``CHANGELOG*``, ``CHANGES*``, ``HISTORY*``, ``NEWS*``,
``RELEASE*NOTES*``, any case) or front matter ``kind: changelog``; GitHub release notes also
as JSON (a list of ``{tag_name, name, body, published_at}``, the shape ``gh api
repos/OWNER/REPO/releases`` prints).

A release section is a heading naming a version, with an optional date:
``## [1.2.0] - 2024-05-01`` (Keep a Changelog), ``## v2.30.0 / 2021-09-14``,
``## 1.2.0 (2024-05-01)``, ``## Release 3.1 - May 1, 2024``. It runs to the next release
heading of the same or a higher level. Each section becomes a source ``<file id>#<version>``
(``source_kind='changelog'``) dated by its heading; a section without a date takes
``fallback(version)`` when given (read from git: the date of the first rev read whose file
holds the section), else it is reported and skipped. ``Unreleased`` has no release date:
reported, skipped. Where a changelog entry and a page disagree, the entry supersedes a page
dated before it (kb/verify/policy.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import date
from pathlib import PurePosixPath

from kb.evidence.dates import parse_date
from kb.ingest.parse import ParseError, parse_document
from kb.records import Document, IngestError, SourceDoc, content_hash

KIND = "changelog"
_NAME = re.compile(r"(?:changelog|changes|history|news|release[-_ ]?notes|releases)(?:[-_.].*)?", re.I)
# pre-releases written without a separator (PEP 440 "4.0.0rc3", "2.0b1", "1.0.0.dev1") are versions
# of their own: read as "4.0.0" plus a date "rc3", every alpha, beta and candidate section of a
# release would be one more "4.0.0" section in the same file
_VERSION = r"v?\d+(?:\.\d+)+(?:\.?(?:a|b|c|rc|alpha|beta|pre|preview|dev|post)\.?\d*)*(?:[-+][0-9A-Za-z.-]+)?"
_RELEASE = re.compile(
    rf"(?:(?:release|version)\s+)?\[?(?P<version>{_VERSION}|unreleased)\]?"
    r"(?:\s*(?:[-–—/:|]\s*)?\(?(?P<date>[^()]*?)\)?)?\s*",
    re.I,
)


def is_changelog(path: str, meta: dict | None = None) -> bool:
    if meta and str(meta.get("kind", "")).strip().lower() == KIND:
        return True
    # a file so named, or any file of a folder so named ("history/hatchling.md", "releases/v2.md")
    return any(_NAME.fullmatch(part) for part in PurePosixPath(path).parts)


# "pytest 3.7.0 (2018-07-30)": a release heading that names its product first. Only with a date
# that reads as one, so that "Python 3.8 support" under a release is no release of its own.
_PRODUCT = re.compile(r"[A-Za-z][\w.+-]{0,40}\s+(?=v?\d)")


def release_heading(text: str) -> tuple[str, date | None, str] | None:
    """(version, date or None, the date text as written) of a release heading, else None."""
    text = text.strip()
    m = _RELEASE.fullmatch(text)
    named = None
    if not m:
        named = _PRODUCT.match(text)
        m = _RELEASE.fullmatch(text[named.end() :]) if named else None
    if not m:
        return None
    raw = (m.group("date") or "").strip()
    day = None
    if raw:
        iso = re.search(r"\d{4}-\d{2}-\d{2}", raw)
        day = parse_date(iso.group() if iso else raw)
    if named and day is None:
        return None
    return m.group("version").lstrip("vV") if m.group("version").lower() != "unreleased" else "Unreleased", day, raw


def sections(doc: Document) -> list[tuple[str, date | None, str, tuple]]:
    """(version, date, date text, blocks) of each release section of a parsed changelog."""
    out = []
    open_: list = []  # [version, day, raw, level, blocks]
    for block in doc.blocks:
        if block.kind == "heading":
            found = release_heading(block.text)
            if open_ and block.level <= open_[3] and (found or block.level < open_[3]):
                out.append(tuple(open_[:3]) + (tuple(open_[4]),))
                open_ = []
            if found:
                open_ = [*found, block.level, []]
                continue
        if open_:
            open_[4].append(block)
    if open_:
        out.append(tuple(open_[:3]) + (tuple(open_[4]),))
    return out


def _one_per_version(found: list[tuple[str, date | None, str, tuple]]) -> list[tuple[str, date | None, str, tuple, list]]:
    """One section per version, in the order of first appearance, with the document span of
    each heading it was written under: a version whose heading appears twice in a file (notes
    continued under a second heading) is one source. Two sources with one id would be read as
    two versions of it, and the later one, lacking the first one's entries, as the release
    notes that dropped them."""
    merged: dict[str, list] = {}
    for version, day, raw, blocks in found:
        span = [(blocks[0].start, blocks[-1].end)] if blocks else []
        if version in merged:
            first = merged[version]
            first[1] = first[1] or day
            first[2] = first[2] or raw
            first[3] = first[3] + tuple(blocks)
            first[4] = first[4] + span
        else:
            merged[version] = [version, day, raw, tuple(blocks), span]
    return [(v, d, r, b, spans) for v, d, r, b, spans in merged.values()]


def changelog_sources(
    doc: Document,
    source_id: str,
    where: str,
    errors: list[IngestError],
    *,
    fallback: Callable[[str], date | None] | None = None,
    authority: float = 1.0,
    source_rev: str | None = None,
    path: str = "",
) -> list[SourceDoc]:
    """One SourceDoc per dated release section of a parsed changelog (see the module rules)."""
    out = []
    found = _one_per_version(sections(doc))
    if not found:
        return []  # named like a changelog without release headings: read as one page
    for version, day, raw, blocks, spans in found:
        if not any(b.text.strip() for b in blocks):
            continue
        origin = "changelog"
        if day is None and fallback is not None and version != "Unreleased":
            day, origin = fallback(version), "git"
        if day is None:
            why = "unreleased" if version == "Unreleased" else (f"unreadable date {raw!r}" if raw else "no date")
            errors.append(IngestError(where, "sources", f"changelog section {version}: {why}; skipped"))
            continue
        out.append(SourceDoc(
            source_id=f"{source_id}#{version}",
            source_version=content_hash("\n".join(doc.text[a:b] for a, b in spans)),
            title=f"{doc.title} {version}",
            text=doc.text,
            source_date=day,
            date_origin=origin,
            authority=authority,
            path=path or where,
            blocks=blocks,
            source_rev=source_rev,
            source_kind=KIND,
        ))  # fmt: skip
    return out


def release_notes_json(raw: bytes, source_id: str, where: str, errors: list[IngestError]) -> list[SourceDoc] | None:
    """GitHub release notes as JSON (a list of releases); None when the file is not that shape."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(data, list) or not data or not all(isinstance(r, dict) and "tag_name" in r for r in data):
        return None
    out = []
    for i, rel in enumerate(data):
        tag = str(rel.get("tag_name") or "").strip()
        day = parse_date(rel.get("published_at") or rel.get("created_at"))
        body = rel.get("body") or ""
        if rel.get("draft"):
            continue
        if day is None:
            errors.append(IngestError(f"{where}#{i}", "sources", f"release {tag or i}: no published_at date; skipped"))
            continue
        if not str(body).strip():
            continue
        text = f"# {rel.get('name') or tag}\n\n{body}\n"
        try:
            doc = parse_document(text.encode("utf-8"), f"{source_id}#{tag}", f"{source_id}#{tag}.md")
        except ParseError as exc:
            errors.append(IngestError(f"{where}#{i}", "sources", f"release {tag}: {exc}"))
            continue
        blocks = tuple(b for b in doc.blocks if b.kind != "heading" or b.level > 1)
        if not blocks:
            continue
        out.append(SourceDoc(
            source_id=f"{source_id}#{tag.lstrip('vV')}", source_version=content_hash(text), title=str(rel.get("name") or tag),
            text=doc.text, source_date=day, date_origin="field", url=str(rel.get("html_url") or ""), path=where,
            blocks=blocks, source_kind=KIND,
        ))  # fmt: skip
    return out
