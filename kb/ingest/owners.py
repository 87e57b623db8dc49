"""Page owners and review intervals: who a finding goes to, and which pages are due for review.

Owner: the page's front matter ``owner`` wins; otherwise the owners a CODEOWNERS file gives the
page. The CODEOWNERS file is the first of ``.github/CODEOWNERS``, ``CODEOWNERS``,
``docs/CODEOWNERS`` (GitHub's order) found in the KB root, else in the root of the git repository
the KB lives in. Its patterns are gitignore-style (pathspec) and relative to the folder that holds
the file's ``.github``/``docs`` parent; the last matching line wins, and a line with a pattern and
no owners leaves the page without one (GitHub's rule). A line that does not parse becomes one
``IngestError`` naming the file and line; the other lines still apply.

Review interval: ``review_interval`` (days: ``90``, ``90d``, ``12w``) counted from
``last_reviewed`` (else ``reviewed``, ``verified_at``, else the page's ``updated`` date), or
``verified_until`` (a date) directly. ``review_due`` is the day the page falls due; a page with an
interval and no date to count from is due at once (``review_due`` None, ``review_interval_days``
set). A value that does not parse is an ``IngestError`` and is ignored; the page is kept.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pathspec
import pygit2

from kb.log import logger
from kb.records import Document, IngestError

CODEOWNERS_PLACES = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
_OWNER = re.compile(r"^(?:@[A-Za-z0-9](?:[A-Za-z0-9._-]*)(?:/[A-Za-z0-9._-]+)?|[^@\s]+@[^@\s]+\.[^@\s]+)$")
_INTERVAL = re.compile(r"^\s*(\d{1,5})\s*(d|days?|w|weeks?)?\s*$", re.IGNORECASE)
REVIEWED_KEYS = ("last_reviewed", "reviewed", "verified_at")


@dataclass(frozen=True)
class OwnerRule:
    line: int
    pattern: str
    owners: tuple[str, ...]
    spec: pathspec.PathSpec


@dataclass(frozen=True)
class CodeOwners:
    path: Path  # the CODEOWNERS file
    base: Path  # the folder its patterns are relative to
    rules: tuple[OwnerRule, ...]

    def owners_of(self, kb_root: Path, doc_id: str) -> tuple[tuple[str, ...], int] | None:
        """(owners, line) of the last rule matching the document, or None."""
        try:
            rel = (kb_root.resolve() / doc_id).relative_to(self.base.resolve()).as_posix()
        except ValueError:
            return None
        for rule in reversed(self.rules):
            if rule.spec.match_file(rel):
                return rule.owners, rule.line
        return None


def _split_line(raw: str) -> list[str]:
    """Whitespace-separated fields, `\\ ` kept inside a pattern, an unescaped `#` starting a comment."""
    fields, cur, i = [], "", 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            cur += raw[i : i + 2]
            i += 2
            continue
        if ch == "#" and not cur:
            break
        if ch.isspace():
            if cur:
                fields.append(cur)
                cur = ""
        else:
            cur += ch
        i += 1
    if cur:
        fields.append(cur)
    return fields


def parse_codeowners(path: Path, base: Path, label: str) -> tuple[CodeOwners, list[IngestError]]:
    """The rules of one CODEOWNERS file; each line that does not parse is an error (and skipped)."""
    rules: list[OwnerRule] = []
    errors: list[IngestError] = []
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not valid UTF-8"
        return CodeOwners(path, base, ()), [IngestError(label, "owners", f"cannot read CODEOWNERS: {why}")]
    for number, raw in enumerate(text.splitlines(), start=1):
        fields = _split_line(raw)
        if not fields:
            continue
        pattern, owners = fields[0], tuple(fields[1:])
        problem = None
        if pattern.startswith("!"):
            problem = f"negated pattern {pattern!r} (CODEOWNERS has no negation)"
        elif "[" in pattern.replace("\\[", ""):
            problem = f"character range in pattern {pattern!r} (not supported by CODEOWNERS)"
        else:
            bad = [o for o in owners if not _OWNER.match(o)]
            if bad:
                problem = f"owner {bad[0]!r} is not @user, @org/team or an email address"
        if problem is None:
            try:
                spec = pathspec.PathSpec.from_lines("gitignore", [pattern.replace("\\#", "#")])
            except Exception as exc:  # pathspec raises plain ValueError/TypeError subclasses
                problem = f"pattern {pattern!r} does not parse: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        if problem is not None:
            errors.append(IngestError(label, "owners", f"line {number}: {problem}; line ignored"))
            continue
        rules.append(OwnerRule(number, pattern, owners, spec))
    return CodeOwners(path, base, tuple(rules)), errors


def repository_root(folder: Path) -> Path | None:
    """The work tree root of the git repository `folder` is in, or None."""
    try:
        found = pygit2.discover_repository(str(folder))
        if not found:
            return None
        workdir = pygit2.Repository(found).workdir
        return Path(workdir).resolve() if workdir else None
    except Exception as exc:  # a broken .git must not stop the ingest
        logger.debug("no git repository for %s: %s", folder, exc)
        return None


def find_codeowners(kb_root: Path) -> tuple[Path, Path] | None:
    """(CODEOWNERS file, the folder its patterns are relative to): KB root first, then repo root."""
    kb_root = kb_root.resolve()
    bases = [kb_root]
    repo = repository_root(kb_root)
    if repo is not None and repo != kb_root:
        bases.append(repo)
    for base in bases:
        for place in CODEOWNERS_PLACES:
            candidate = base / place
            if candidate.is_file():
                return candidate, base
    return None


def load_codeowners(kb_root: Path) -> tuple[CodeOwners | None, list[IngestError]]:
    found = find_codeowners(kb_root)
    if found is None:
        return None, []
    path, base = found
    label = os.path.relpath(path, kb_root.resolve()).replace(os.sep, "/")
    return parse_codeowners(path, base, label)


def _as_date(value) -> dt.date | None | str:
    """A date, None (absent), or "bad"."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value).strip()[:10])
    except ValueError:
        return "bad"


def review_fields(doc: Document) -> tuple[dict, list[IngestError]]:
    """review_interval_days, verified_until, review_due from the front matter (and their errors)."""
    meta = doc.meta or {}
    errors: list[IngestError] = []
    interval = None
    raw = meta.get("review_interval")
    if raw not in (None, ""):
        m = _INTERVAL.match(str(raw)) if not isinstance(raw, bool) else None
        if m and int(m.group(1)) > 0:
            interval = int(m.group(1)) * (7 if (m.group(2) or "d").lower().startswith("w") else 1)
        else:
            errors.append(
                IngestError(
                    doc.doc_id, "front_matter", f"review_interval {str(raw)[:40]!r} is not a number of days (e.g. 90 or 90d); ignored"
                )
            )
    until = _as_date(meta.get("verified_until"))
    if until == "bad":
        errors.append(
            IngestError(
                doc.doc_id, "front_matter", f"verified_until {str(meta.get('verified_until'))[:40]!r} is not a date (YYYY-MM-DD); ignored"
            )
        )
        until = None
    reviewed: dt.date | None = None
    for key in REVIEWED_KEYS:
        value = _as_date(meta.get(key))
        if value == "bad":
            errors.append(IngestError(doc.doc_id, "front_matter", f"{key} {str(meta.get(key))[:40]!r} is not a date (YYYY-MM-DD); ignored"))
        elif isinstance(value, dt.date):
            reviewed = value
            break
    reviewed = reviewed or doc.updated
    due = until if until is not None else (reviewed + dt.timedelta(days=interval) if interval and reviewed else None)
    return {"review_interval_days": interval, "verified_until": until, "review_due": due}, errors


def assign(documents: list[Document], kb_root: Path, codeowners: CodeOwners | None) -> tuple[list[Document], list[IngestError]]:
    """The documents with owner, owner_source and review fields filled in."""
    out, errors = [], []
    for doc in documents:
        owner, source = doc.owner, "front_matter" if doc.owner else None
        if owner is None and codeowners is not None:
            found = codeowners.owners_of(kb_root, doc.doc_id)
            if found and found[0]:
                owner = " ".join(found[0])
                label = os.path.relpath(codeowners.path, kb_root.resolve()).replace(os.sep, "/")
                source = f"{label}:{found[1]}"
        fields, errs = review_fields(doc)
        errors += errs
        out.append(dataclasses.replace(doc, owner=owner, owner_source=source, **fields))
    return out, errors


def repository_info(folder: Path, commit: str | None = None) -> dict | None:
    """root, revision, branch, tag and origin URL of the git repository `folder` is in; None
    outside one. The revision is `commit` when given and still in the repository (the commit a
    run read), else HEAD's (None before the first commit); the branch is HEAD's when HEAD is at
    that revision; the tag, a tag on the revision (the first by name)."""
    root = repository_root(folder)
    if root is None:
        return None
    repo = pygit2.Repository(str(root))
    revision = branch = head = None
    try:
        if not repo.head_is_unborn:
            head = str(repo.head.target)
            branch = None if repo.head_is_detached else repo.head.shorthand
    except pygit2.GitError:
        pass
    revision = head
    if commit and commit != head:
        try:
            revision = str(repo.revparse_single(commit).peel(pygit2.Commit).id)
            branch = None
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            pass  # gone: HEAD as it is now
    remote = None
    try:
        remote = repo.remotes["origin"].url
    except (KeyError, ValueError, pygit2.GitError):
        pass
    return {"root": root, "revision": revision, "branch": branch, "tag": _tag_on(repo, revision), "remote": remote}


def _tag_on(repo: pygit2.Repository, revision: str | None) -> str | None:
    if revision is None:
        return None
    for ref in sorted(r for r in repo.references if r.startswith("refs/tags/")):
        try:
            if str(repo.revparse_single(ref).peel(pygit2.Commit).id) == revision:
                return ref[len("refs/tags/") :]
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            continue
    return None


def file_at(root: Path, revision: str, path: str) -> bytes | None:
    """The bytes of `path` (relative to the repository root) at `revision`; None if absent."""
    try:
        found = pygit2.Repository(str(root)).revparse_single(f"{revision}:{path}")
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None
    return found.data if isinstance(found, pygit2.Blob) else None
