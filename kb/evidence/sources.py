"""Load the source corpus: dated, authority-weighted source versions.

``load_sources(path)`` reads a folder (Markdown / HTML / text, parsed like KB documents), a
``.jsonl`` file or a ``.parquet`` file and returns ``(sources, errors)``. Bad rows become
``IngestError`` rows (stage ``sources``) and never stop the load: the rest is always returned.

Rules (documented in docs/retrieval.md, tested in tests/test_sources.py; git sources:
kb/evidence/git_source.py, docs/sources.md):

- id: front matter / field ``id`` (``doc_id`` for SciFact), else the path relative to the folder.
- date: front matter / field ``published_at``, ``updated_at``, ``updated`` or ``date`` (first
  present wins), ``date_origin`` = ``front_matter`` (folder) or ``field`` (JSONL/Parquet).
  Missing: the file's modification time, ``date_origin='mtime'`` (for JSONL/Parquet rows, the
  container file's). Unparsable: reported, then the same mtime fallback.
- future date (after ``today``): reported and clamped to ``today`` (a scheduled post or a typo
  must not outrank every real version for ever, yet the source stays retrievable).
- no text: reported, skipped.
- the same id twice with the same text and the same date: the copy is dropped, reported.
- the same id with the same text and different dates: one version kept, with the latest date,
  reported (a version is a distinct text; a re-publication only refreshes its date).
- the same id with different texts: every text is kept as its own version (stale detection
  needs the older and the newer statement); if two different texts share one date it is
  reported, since neither can be called newer.
- authority: ``authority`` (float, default 1.0; unparsable or negative: reported, 1.0).
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

from kb.config.gitspec import is_git_spec
from kb.evidence.changelog import changelog_sources, is_changelog, release_notes_json
from kb.evidence.dates import parse_date
from kb.evidence.git_source import load_git_sources
from kb.evidence.specs import KIND as SPEC_KIND
from kb.evidence.specs import is_spec_path, spec_document
from kb.ingest.include import HINT, FolderTree, expand_includes, parts_of_other_pages
from kb.ingest.offsets import OffsetMap
from kb.ingest.parse import ParseError, parse_document
from kb.ingest.walk import list_documents
from kb.records import Block, IngestError, SourceDoc, content_hash

DATE_KEYS = ("published_at", "updated_at", "updated", "date")
MAX_FILE_BYTES = 5_000_000


class _Collector:
    def __init__(self, today: date):
        self.today = today
        self.sources: list[SourceDoc] = []
        self.errors: list[IngestError] = []

    def error(self, path: str, message: str) -> None:
        self.errors.append(IngestError(path=path, stage="sources", error=message))


def load_sources(path: str | Path, today: date | None = None) -> tuple[list[SourceDoc], list[IngestError]]:
    """Load sources from a folder, a ``.jsonl`` or a ``.parquet`` file, or a ``git:`` spec
    (kb.evidence.git_source). See the module rules."""
    col = _Collector(today or date.today())
    if is_git_spec(path):
        found, errors = load_git_sources(str(path), today=col.today)
        col.errors.extend(errors)
        return _dedupe(found, col), col.errors
    path = Path(path)
    if not path.exists():
        col.error(str(path), "sources path does not exist")
        return [], col.errors
    if path.is_dir():
        _load_folder(path, col)
    elif path.suffix.lower() == ".jsonl":
        _load_jsonl(path, col)
    elif path.suffix.lower() == ".parquet":
        _load_parquet(path, col)
    elif path.suffix.lower() == ".json":
        _load_json(path, col)
    else:
        col.error(str(path), f"unsupported sources file type {path.suffix!r} (folder, .jsonl, .parquet or release notes .json)")
        return [], col.errors
    return _dedupe(col.sources, col), col.errors


# ---------------------------------------------------------------- dates, authority


def _mtime(path: Path) -> date | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC).date()
    except OSError:
        return None


def _resolve_date(meta: dict, origin: str, fallback_path: Path, where: str, col: _Collector):
    """(date, date_origin) by the module rules, reporting unparsable and future dates."""
    for key in DATE_KEYS:
        raw = meta.get(key)
        if raw is None or raw == "":
            continue
        d = parse_date(raw)
        if d is None:
            col.error(where, f"unparsable date {key}={str(raw)[:40]!r}: using the file modification time")
            break
        if d > col.today:
            col.error(where, f"future date {key}={d.isoformat()}: clamped to {col.today.isoformat()}")
            d = col.today
        return d, origin
    d = _mtime(fallback_path)
    return (d, "mtime") if d is not None else (None, "none")


def _authority(meta: dict, where: str, col: _Collector) -> float:
    raw = meta.get("authority")
    if raw is None or raw == "":
        return 1.0
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = float("nan")
    if not value >= 0 or value == float("inf"):
        col.error(where, f"bad authority {str(raw)[:20]!r}: using 1.0")
        return 1.0
    return value


def _make(col: _Collector, *, source_id, text, title, meta, origin, fallback_path, where, url="", blocks=(), path=None, source_kind=None):
    if not isinstance(text, str) or not text.strip():
        col.error(where, f"source {source_id!r} has no text: skipped")
        return
    d, date_origin = _resolve_date(meta, origin, fallback_path, where, col)
    col.sources.append(
        SourceDoc(
            source_id=str(source_id),
            source_version=content_hash(text),
            title=str(title or ""),
            text=text,
            source_date=d,
            date_origin=date_origin,
            authority=_authority(meta, where, col),
            url=str(url or ""),
            path=str(path or where),
            blocks=tuple(blocks),
            source_kind=source_kind,
        )
    )


# ---------------------------------------------------------------- folder


def _spec_files(root: Path) -> list[Path]:
    """Spec and config files under root (kb/evidence/specs.py), hidden folders and links left out."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if is_spec_path(name) and not path.is_symlink() and (not name.startswith(".") or name.lower() == ".env"):
                out.append(path)
    return out


def _load_specs(root: Path, col: _Collector, parts: set[str]) -> None:
    resolved = root.resolve()
    for file in _spec_files(resolved):
        rel = file.relative_to(resolved).as_posix()
        if rel in parts:
            continue  # an example a page shows (an included file): part of that page
        try:
            raw = file.read_bytes()
        except OSError as exc:
            col.error(rel, f"unreadable: {exc.strerror or exc}")
            continue
        doc = spec_document(raw, rel, rel, col.errors)
        if doc is None:
            continue
        _make(col, source_id=rel, text=doc.text, title=doc.title, meta={}, origin="front_matter", fallback_path=file,
              where=rel, blocks=doc.blocks, path=file, source_kind=SPEC_KIND)  # fmt: skip


def _load_folder(root: Path, col: _Collector) -> None:
    """Same walk and parser as KB documents (``.kbauditignore``, hidden files, links leaving the root)."""
    files, walk_errors = list_documents(root)
    col.errors.extend(walk_errors)
    resolved = root.resolve()
    tree = FolderTree(resolved)
    pages: list[tuple[Path, str, bytes]] = []
    includes: dict[str, set[str]] = {}
    for file in files:
        rel = file.relative_to(resolved).as_posix()
        try:
            if file.stat().st_size > MAX_FILE_BYTES:
                col.error(rel, f"source file larger than {MAX_FILE_BYTES} bytes: skipped")
                continue
            raw = file.read_bytes()
        except OSError as exc:
            col.error(rel, f"unreadable: {exc.strerror or exc}")
            continue
        pages.append((file, rel, _with_includes(raw, rel, tree, col, includes)))
    parts = parts_of_other_pages(includes)
    _load_specs(root, col, parts)
    for file, rel, raw in pages:
        if rel in parts:
            continue  # read inside the page that includes it
        try:
            doc = parse_document(raw, rel, str(file))
        except ParseError as exc:
            col.error(rel, f"unparsable source: {exc}")
            continue
        meta = dict(doc.meta or {})
        source_id = meta.get("id") or rel
        if doc.ignore:
            col.error(rel, f"source {source_id!r} opted out (kbaudit: ignore): skipped")
            continue
        if not any(b.text.strip() for b in doc.blocks):
            col.error(rel, f"source {source_id!r} has no text: skipped")
            continue
        if is_changelog(rel, meta):
            entries = changelog_sources(doc, str(source_id), rel, col.errors, authority=_authority(meta, rel, col), path=str(file))
            if entries:
                col.sources.extend(entries)
                continue
        _make(
            col,
            source_id=source_id,
            text=doc.text,
            title=doc.title or rel,
            meta=meta,
            origin="front_matter",
            fallback_path=file,
            where=rel,
            url=meta.get("url") or "",
            blocks=doc.blocks,
            path=file,
        )


def _with_includes(raw: bytes, rel: str, tree: FolderTree, col: _Collector, includes: dict[str, set[str]]) -> bytes:
    """The page with its include directives resolved inside the source folder
    (kb/ingest/include.py); what cannot be included is an error row and its line is dropped."""
    try:
        page = raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw  # the parser reports it
    if not HINT.search(page):
        return raw
    includes[rel] = set()
    text, problems = expand_includes(page, rel, tree, includes[rel])
    for problem in problems:
        col.error(rel, problem)
    return text.encode("utf-8")


# ---------------------------------------------------------------- JSONL / Parquet rows


def _row_to_source(row: dict, file: Path, where: str, col: _Collector) -> None:
    if not isinstance(row, dict):
        col.error(where, "row is not a JSON object: skipped")
        return
    source_id = row.get("id", row.get("doc_id"))
    if source_id is None or str(source_id).strip() == "":
        col.error(where, "row has no id: skipped")
        return
    text = row.get("text")
    blocks: tuple[Block, ...] = ()
    abstract = row.get("abstract")
    if (text is None or text == "") and abstract is not None:
        if isinstance(abstract, str):
            text = abstract
        else:  # SciFact: a list of sentences, kept as one block per sentence
            sentences = [str(s).strip() for s in list(abstract) if str(s).strip()]
            text, blocks = _join_sentences(sentences)
    _make(
        col,
        source_id=source_id,
        text=text,
        title=row.get("title") or "",
        meta=row,
        origin="field",
        fallback_path=file,
        where=where,
        url=row.get("url") or "",
        blocks=blocks,
    )


def _join_sentences(sentences: list[str]) -> tuple[str, tuple[Block, ...]]:
    blocks = []
    pos = 0
    for s in sentences:
        # One run, not one int per character: a corpus holds millions of characters.
        blocks.append(
            Block(kind="text", start=pos, end=pos + len(s), text=s, offsets=OffsetMap((0,), (pos,), len(s)) if s else OffsetMap())
        )
        pos += len(s) + 1
    return " ".join(sentences), tuple(blocks)


def _load_jsonl(file: Path, col: _Collector) -> None:
    try:
        handle = file.open("r", encoding="utf-8", errors="strict")
    except OSError as exc:
        col.error(str(file), f"unreadable: {exc.strerror or exc}")
        return
    with handle:
        lineno = 0
        while True:
            lineno += 1
            try:
                line = handle.readline()
            except UnicodeDecodeError:
                col.error(f"{file}:{lineno}", "not UTF-8: rest of file skipped")
                return
            if not line:
                return
            if not line.strip():
                continue
            where = f"{file}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                col.error(where, f"malformed JSON: {exc.msg}")
                continue
            _row_to_source(row, file, where, col)


def _load_json(file: Path, col: _Collector) -> None:
    """A .json file: GitHub release notes (a list of releases), one dated source per release."""
    try:
        raw = file.read_bytes()
    except OSError as exc:
        col.error(str(file), f"unreadable: {exc.strerror or exc}")
        return
    found = release_notes_json(raw, file.name, str(file), col.errors)
    if found is None:
        col.error(str(file), "not GitHub release notes JSON (a list of {tag_name, body, published_at}): skipped")
        return
    col.sources.extend(found)


def _load_parquet(file: Path, col: _Collector) -> None:
    try:
        import pyarrow.parquet as pq

        rows = pq.read_table(file).to_pylist()
    except Exception as exc:  # noqa: BLE001 - any unreadable Parquet is one error row
        col.error(str(file), f"unreadable Parquet: {type(exc).__name__}: {str(exc)[:120]}")
        return
    for i, row in enumerate(rows):
        _row_to_source(row, file, f"{file}#{i}", col)


# ---------------------------------------------------------------- duplicate ids


def _dedupe(sources: list[SourceDoc], col: _Collector) -> list[SourceDoc]:
    kept: dict[tuple[str, str], SourceDoc] = {}
    order: list[tuple[str, str]] = []
    for s in sources:
        key = (s.source_id, s.source_version)
        prev = kept.get(key)
        if prev is None:
            kept[key] = s
            order.append(key)
        elif prev.source_date == s.source_date:
            col.error(s.path, f"duplicate of source {s.source_id!r} (same text and date, {prev.path}): dropped")
        else:
            latest = max(prev, s, key=lambda x: x.source_date or date.min)
            col.error(
                s.path,
                f"source {s.source_id!r} has the same text under two dates "
                f"({prev.source_date}, {s.source_date}): one version kept, dated {latest.source_date}",
            )
            kept[key] = replace(prev, source_date=latest.source_date, date_origin=latest.date_origin, source_rev=latest.source_rev)
    out = [kept[k] for k in order]
    seen: dict[tuple[str, date | None], str] = {}
    for s in out:
        k = (s.source_id, s.source_date)
        if k in seen and seen[k] != s.source_version:
            col.error(s.path, f"source {s.source_id!r} has two different texts dated {s.source_date}: both kept")
        seen.setdefault(k, s.source_version)
    return out
