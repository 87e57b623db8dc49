"""Ingest: walk a KB folder and parse every document, turning each bad file into an error row.

A bad file (unreadable, binary, undecodable, oversized, hostile front matter) never stops the
batch: it becomes an `IngestError` with a one-line reason and the walk goes on.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pathspec

from kb.ingest.owners import assign, load_codeowners
from kb.ingest.parse import ParseError, parse_document
from kb.log import logger
from kb.records import Document, IngestError

DOC_SUFFIXES = {".md", ".markdown", ".mdx", ".txt", ".text", ".html", ".htm", ".rst"}
IGNORE_FILE = ".kbauditignore"


def shard_of(doc_id: str, shard_count: int) -> int:
    """Documents go to shards by a hash of their id: stable across runs and machines."""
    return int(hashlib.sha256(doc_id.encode("utf-8")).hexdigest()[:8], 16) % shard_count


def _ignore_spec(root: Path) -> pathspec.PathSpec | None:
    path = root / IGNORE_FILE
    if not path.is_file():
        return None
    return pathspec.PathSpec.from_lines("gitignore", path.read_text("utf-8", errors="replace").splitlines())


def list_documents(root: Path) -> tuple[list[Path], list[IngestError]]:
    """Document files under root, sorted, minus ignored paths and links that leave the root."""
    root = root.resolve()
    spec = _ignore_spec(root)
    files: list[Path] = []
    errors: list[IngestError] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in dirnames:  # never walked into (followlinks=False); one leaving the root is reported
            path = Path(dirpath) / name
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                rel = path.relative_to(root).as_posix()
                if spec is None or not spec.match_file(rel + "/"):
                    errors.append(IngestError(rel, "read", f"symlink points outside the KB root ({path.resolve()}); skipped"))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if name.startswith(".") or path.suffix.lower() not in DOC_SUFFIXES:
                continue
            if spec is not None and spec.match_file(rel):
                continue
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(root):
                    errors.append(IngestError(rel, "read", f"symlink points outside the KB root ({target}); skipped"))
                    continue
            files.append(path)
    return files, errors


def ingest(root: Path, max_bytes: int, select: Callable[[str], bool] | None = None) -> tuple[list[Document], list[IngestError]]:
    """Parse every document under root (only those whose id `select` accepts, when given)."""
    root = Path(root)
    files, errors = list_documents(root)
    if select is not None:
        files = [f for f in files if select(f.relative_to(root.resolve()).as_posix())]
        errors = [e for e in errors if select(e.path)]
    documents: list[Document] = []
    resolved_root = root.resolve()
    for path in files:
        rel = path.relative_to(resolved_root).as_posix()
        try:
            size = path.stat().st_size
            if size > max_bytes:
                errors.append(IngestError(rel, "read", f"file is {size} bytes, over the {max_bytes}-byte limit; skipped"))
                continue
            raw = path.read_bytes()
        except OSError as exc:
            errors.append(IngestError(rel, "read", f"cannot read file: {exc.strerror or exc}"))
            continue
        try:
            doc = parse_document(raw, rel, str(path))
        except ParseError as exc:
            errors.append(IngestError(rel, "parse", str(exc)))
            continue
        if doc.ignore:
            logger.info("skipping %s: front matter says kbaudit.ignore", rel)
            continue
        documents.append(doc)
    codeowners, owner_errors = load_codeowners(root)
    if select is not None:  # each shard of a run reports the CODEOWNERS file's errors once
        owner_errors = [e for e in owner_errors if select(e.path)]
    documents, review_errors = assign(documents, root, codeowners)
    errors += owner_errors + review_errors
    logger.info("ingested %d documents from %s (%d errors)", len(documents), root, len(errors))
    return documents, errors
