"""Sources (and KB trees) read from git: every file at every rev asked for, dated by its commit.

``git:REPO[@REVS][:PATH]``

- ``REPO``: a work tree or a bare repository (read with pygit2; nothing is checked out, the
  repository is never written to).
- ``REVS``: a comma list of tags, branches or commits, or ``tags`` (every tag, in version
  order). Default: every tag, then ``HEAD``.
- ``PATH``: a folder or a glob inside the repository (default: the whole tree). Source ids are
  paths relative to the folder (for a glob: to the repository root).

Rules (docs/sources.md; tests in tests/test_git_sources.py):

- each file at each rev is one source version, dated by the rev's committer date
  (``date_origin='git'``), with the rev name in ``source_rev``; a blob that is the same at
  several revs is one version carrying the latest rev and date (the existing version rules);
- a file renamed or moved between two consecutive revs (git's rename detection,
  ``Diff.find_similar``) keeps its identity: all its versions share one source id, the path at
  the newest rev that has it;
- only the trees of the revs asked for are read, and each distinct blob is parsed once;
- bad input is an ``IngestError`` row and the rest still loads: a rev that does not resolve,
  PATH absent at a rev, a shallow clone, a binary document, a symlink leaving the tree.
  A REPO that is not a repository is a usage error (``GitSpecError``: exit 2).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, timezone
from typing import TypeVar

import pygit2

from kb.config.gitspec import PREFIX, GitSpec, GitSpecError, open_repository, parse_spec
from kb.evidence.changelog import changelog_sources, is_changelog, sections
from kb.evidence.specs import KIND as SPEC_KIND
from kb.evidence.specs import SPEC_SUFFIXES, is_spec_path, spec_document
from kb.ingest.include import HINT, MappingTree, expand_includes, parts_of_other_pages
from kb.ingest.parse import ParseError, parse_document
from kb.records import Document, IngestError, SourceDoc, content_hash

_Obj = TypeVar("_Obj", bound=pygit2.Object)

DOC_SUFFIXES = {".md", ".markdown", ".mdx", ".txt", ".text", ".html", ".htm", ".rst"}
SOURCE_SUFFIXES = DOC_SUFFIXES | SPEC_SUFFIXES  # a KB read from git takes documents only
MAX_FILE_BYTES = 5_000_000
_GLOB = re.compile(r"[*?\[]")


# ---------------------------------------------------------------- revs


def _version_key(name: str):
    """Natural version order: 'v2.10.0' after 'v2.9.0'; non-numeric parts compare as text."""
    parts = [p for p in re.findall(r"\d+|[A-Za-z]+", name) if p.lower() != "v"]
    # a word ("rc1", "beta") sorts below any number and below the end of the name, so a
    # pre-release comes before the release it precedes, and "2.5.0.1" after "2.5.0"
    key = [(0, int(p), "") if p.isdigit() else (-1, 0, p.lower()) for p in parts]
    return (*key, (-0.5, 0, ""))


def commit_date(commit: pygit2.Commit) -> date:
    tz = timezone(timedelta(minutes=commit.committer.offset))
    return datetime.fromtimestamp(commit.committer.time, tz=tz).date()


@dataclass(frozen=True)
class Rev:
    name: str
    commit: pygit2.Commit

    @property
    def day(self) -> date:
        return commit_date(self.commit)


def _tags(repo: pygit2.Repository) -> list[Rev]:
    out = []
    for ref in repo.references:
        if not ref.startswith("refs/tags/"):
            continue
        try:
            commit = repo.revparse_single(ref).peel(pygit2.Commit)
        except (pygit2.GitError, KeyError, ValueError, pygit2.InvalidSpecError):
            continue  # a tag of a tree or blob: no commit date, nothing to read
        out.append(Rev(ref[len("refs/tags/") :], commit))
    out.sort(key=lambda r: (_version_key(r.name), r.commit.committer.time))
    return out


def resolve_revs(repo: pygit2.Repository, spec: GitSpec, errors: list[IngestError]) -> list[Rev]:
    """The revs of a spec, oldest first (tags in version order); bad revs become error rows."""
    where = str(spec)
    if spec.revs is None:
        revs = _tags(repo)
        try:
            head = repo.head.peel(pygit2.Commit)
            if not any(r.commit.id == head.id for r in revs):
                revs.append(Rev("HEAD", head))
        except (pygit2.GitError, KeyError, ValueError):
            if not revs:
                errors.append(IngestError(where, "sources", "repository has no tags and no HEAD commit: nothing to read"))
        return revs
    out: list[Rev] = []
    for name in spec.revs:
        if name == "tags":
            out.extend(_tags(repo))
            continue
        try:
            commit = repo.revparse_single(name).peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            errors.append(IngestError(where, "sources", f"rev {name!r} does not resolve to a commit: skipped"))
            continue
        out.append(Rev(name, commit))
    seen = set()
    unique = []
    for r in out:
        if r.commit.id not in seen:
            seen.add(r.commit.id)
            unique.append(r)
    return unique


# ---------------------------------------------------------------- files at a rev


def _in_scope(path: str, spec_path: str) -> bool:
    if not spec_path:
        return True
    if _GLOB.search(spec_path):
        return fnmatch.fnmatchcase(path, spec_path) or fnmatch.fnmatchcase(path, spec_path.rstrip("/") + "/*")
    return path == spec_path or path.startswith(spec_path + "/")


def _relative(path: str, spec_path: str) -> str:
    if spec_path and not _GLOB.search(spec_path):
        if path == spec_path:
            return posixpath.basename(path)
        return path[len(spec_path) + 1 :]
    return path


def _object(repo: pygit2.Repository, oid, kind: type[_Obj]) -> _Obj:
    """The object at oid, typed: a tree entry's mode already says which kind it is."""
    found = repo[oid]
    if not isinstance(found, kind):
        raise TypeError(f"{oid} is a {type(found).__name__}, not a {kind.__name__}")
    return found


def _walk(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str = ""):
    for entry in tree:
        path = f"{prefix}{entry.name}"
        if entry.filemode == pygit2.enums.FileMode.TREE:
            yield from _walk(repo, _object(repo, entry.id, pygit2.Tree), path + "/")
        elif entry.filemode == pygit2.enums.FileMode.COMMIT:
            continue  # a submodule: its files are in another repository
        else:
            yield path, entry


def _subtree(repo: pygit2.Repository, tree: pygit2.Tree, spec_path: str):
    """(tree to walk, prefix) for a folder PATH, the whole tree for a glob; None: absent."""
    if not spec_path or _GLOB.search(spec_path):
        return tree, ""
    try:
        entry = tree[spec_path]
    except KeyError:
        return None
    if entry.filemode == pygit2.enums.FileMode.TREE:
        return _object(repo, entry.id, pygit2.Tree), spec_path + "/"
    return entry, ""


def files_at(
    repo: pygit2.Repository, rev: Rev, spec_path: str, where: str, errors: list[IngestError], suffixes=DOC_SUFFIXES
) -> dict[str, pygit2.Blob]:
    """Repository path -> blob of each readable document file in scope at rev."""
    found = _subtree(repo, rev.commit.tree, spec_path)
    if found is None:
        errors.append(IngestError(where, "sources", f"path {spec_path!r} is absent at {rev.name}: nothing read there"))
        return {}
    node, prefix = found
    if isinstance(node, pygit2.Tree):
        entries = list(_walk(repo, node, prefix))
    else:  # PATH names one file
        entries = [(spec_path, node)]
    out: dict[str, pygit2.Blob] = {}
    for path, entry in entries:
        if not _in_scope(path, spec_path):
            continue
        name = posixpath.basename(path)
        if not (name.lower() == ".env" and ".env" in suffixes) and (
            name.startswith(".") or posixpath.splitext(name)[1].lower() not in suffixes
        ):
            continue
        if entry.filemode == pygit2.enums.FileMode.LINK:
            target = _object(repo, entry.id, pygit2.Blob).data.decode("utf-8", "replace")
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            if target.startswith("/") or resolved.startswith("..") or not _in_scope(resolved, spec_path):
                errors.append(IngestError(f"{where}@{rev.name}:{path}", "sources", f"symlink points outside the tree ({target}): skipped"))
            continue  # a link inside the tree: its target is read as itself
        blob = _object(repo, entry.id, pygit2.Blob)
        if blob.size > MAX_FILE_BYTES:
            errors.append(IngestError(f"{where}@{rev.name}:{path}", "sources", f"file larger than {MAX_FILE_BYTES} bytes: skipped"))
            continue
        if blob.is_binary:
            errors.append(IngestError(f"{where}@{rev.name}:{path}", "sources", "binary file: skipped"))
            continue
        out[path] = blob
    return out


def _renames(repo: pygit2.Repository, old: Rev, new: Rev, spec_path: str) -> dict[str, str]:
    """new path -> old path for files git's rename detection pairs between two revs."""
    diff = old.commit.tree.diff_to_tree(new.commit.tree)
    diff.find_similar(flags=pygit2.enums.DiffFind.FIND_RENAMES)
    out = {}
    for delta in diff.deltas:
        if delta.status == pygit2.enums.DeltaStatus.RENAMED:
            a, b = delta.old_file.path, delta.new_file.path
            if _in_scope(a, spec_path) or _in_scope(b, spec_path):
                out[b] = a
    return out


@dataclass
class _Version:
    identity: int
    path: str
    rev: Rev  # the newest rev holding this blob
    blob: pygit2.Blob
    first: Rev | None = None  # the oldest rev read that holds it
    data: bytes | None = None  # the page with its includes resolved at ``rev`` (None: the blob's bytes)
    content_key: str = ""  # the blob id, with the hash of ``data`` when includes were resolved
    deleted_in: str = ""  # the rev that deleted the file (not moved): its versions are removed facts


def read_versions(spec: GitSpec, errors: list[IngestError], suffixes=DOC_SUFFIXES):
    """(revs, versions): each distinct blob of each file identity, at the newest rev holding it.

    Versions come oldest rev first; ``names[identity]`` is the identity's newest path.
    """
    repo = open_repository(spec.repo)
    where = str(spec)
    if repo.is_shallow:
        errors.append(
            IngestError(
                where, "sources", "shallow clone: revs before its cut-off cannot be read, and the oldest commit's renames are not detected"
            )
        )
    revs = resolve_revs(repo, spec, errors)
    identity_of: dict[str, int] = {}
    names: dict[int, str] = {}
    hints: dict[str, bool] = {}
    trees: dict[str, MappingTree] = {}
    problems: dict[str, IngestError] = {}  # an include problem is reported once, at its newest rev
    latest: dict[tuple[int, str], _Version] = {}
    prev: Rev | None = None
    next_id = 0
    current: dict[str, int] = {}
    last_seen: dict[int, int] = {}  # identity -> index of the newest rev holding it
    for index, rev in enumerate(revs):
        files = files_at(repo, rev, spec.path, where, errors, suffixes)
        renamed = _renames(repo, prev, rev, spec.path) if prev is not None else {}
        current: dict[str, int] = {}
        includes: dict[str, set[str]] = {}
        staged: list[tuple[tuple[int, str], _Version]] = []
        for path, blob in files.items():
            old = renamed.get(path)
            ident = identity_of.get(old) if old is not None else None
            if ident is None:
                ident = identity_of.get(path)
            if ident is None:
                ident = next_id
                next_id += 1
            current[path] = ident
            last_seen[ident] = index
            names[ident] = path
            # the same text at a later rev is the same version, carrying the later rev; a page
            # that includes other files is the same version while its text with them is the same
            data = None
            content_key = str(blob.id)
            if _has_includes(blob, path, hints):
                includes[path] = set()
                data = _with_includes(repo, rev, path, blob, trees, where, problems, includes[path])
                if data is not None:
                    content_key = f"{blob.id}+{content_hash(data)}"
            staged.append(((ident, content_key), _Version(ident, path, rev, blob, None, data, content_key)))
        parts = parts_of_other_pages(includes)
        for key, version in staged:
            if version.path in parts:
                continue  # read inside the page that includes it
            version.first = latest[key].first if key in latest else rev
            latest[key] = version
        # paths that vanished keep their identity, so a file that comes back is the same source
        identity_of.update(current)
        prev = rev
    # a file the newest rev read no longer holds was deleted from the docs (a moved file kept
    # its identity above): what it said is history, removed in the rev after the last one that
    # held it, not what the product documents now (a PATH absent at the newest rev is reported
    # above and marks nothing)
    present = set(current.values())
    if present:
        for v in latest.values():
            if v.identity not in present:
                v.deleted_in = revs[last_seen[v.identity] + 1].name
    versions = sorted(latest.values(), key=lambda v: (v.rev.commit.committer.time, v.path))
    errors.extend(problems.values())
    return repo, revs, versions, names


def load_git_sources(text: str, today: date | None = None) -> tuple[list[SourceDoc], list[IngestError]]:
    """Source versions of a ``git:`` spec (see the module rules)."""
    errors: list[IngestError] = []
    spec = parse_spec(text)
    today = today or date.today()
    repo, _revs, versions, names = read_versions(spec, errors, suffixes=SOURCE_SUFFIXES)
    out: list[SourceDoc] = []
    parsed: dict[str, Document | None] = {}  # blob id -> parsed once; None: unreadable
    logs: dict[int, list] = {}  # changelog identity -> [(version, doc)], oldest first
    for v in versions:
        source_id = _relative(names[v.identity], spec.path)
        where = f"{spec}@{v.rev.name}:{v.path}"
        data = v.blob.data if v.data is None else v.data
        key = v.content_key
        if key not in parsed:
            if is_spec_path(v.path):
                parsed[key] = spec_document(data, source_id, where, errors)
            else:
                try:
                    parsed[key] = parse_document(data, source_id, v.path)
                except ParseError as exc:
                    errors.append(IngestError(where, "sources", f"unparsable source: {exc}"))
                    parsed[key] = None
        doc = parsed[key]
        if doc is None:
            continue
        if doc.ignore or not any(b.text.strip() for b in doc.blocks):
            continue
        if is_changelog(v.path, doc.meta):
            logs.setdefault(v.identity, []).append((v, doc))
            continue
        day = v.rev.day
        if day > today:
            errors.append(IngestError(where, "sources", f"commit date {day.isoformat()} is after {today.isoformat()}: clamped"))
            day = today
        out.append(
            SourceDoc(
                source_id=source_id,
                source_version=content_hash(doc.text),
                title=doc.title or source_id,
                text=doc.text,
                source_date=day,
                date_origin="git",
                url="",
                path=where,
                blocks=doc.blocks,
                source_rev=v.rev.name,
                source_kind=SPEC_KIND if is_spec_path(v.path) else None,
                deleted_in=v.deleted_in,
            )
        )
    for ident, items in logs.items():
        out.extend(_changelog_versions(spec, _relative(names[ident], spec.path), items, errors, today))
    return out, errors


def _has_includes(blob: pygit2.Blob, path: str, hints: dict[str, bool]) -> bool:
    key = str(blob.id)
    if key not in hints:
        hints[key] = not is_spec_path(path) and bool(HINT.search(blob.data.decode("utf-8", "replace")))
    return hints[key]


def _with_includes(repo: pygit2.Repository, rev: Rev, path: str, blob: pygit2.Blob, trees: dict[str, MappingTree],
                   where: str, problems: dict[str, IngestError], included: set[str]) -> bytes | None:  # fmt: skip
    """The page's bytes with its include directives resolved in the same rev's whole tree
    (kb/ingest/include.py); what cannot be included is an error row and its line is dropped."""
    try:
        page = blob.data.decode("utf-8")
    except UnicodeDecodeError:
        return None  # the parser reports it
    tree = trees.get(str(rev.commit.id))
    if tree is None:
        files = {p: (lambda oid=entry.id: _object(repo, oid, pygit2.Blob).data) for p, entry in _walk(repo, rev.commit.tree)
                 if entry.filemode != pygit2.enums.FileMode.LINK}  # fmt: skip
        tree = trees[str(rev.commit.id)] = MappingTree(files)
    text, found = expand_includes(page, path, tree, included)
    for problem in found:
        problems[f"{path}\0{problem}"] = IngestError(f"{where}@{rev.name}:{path}", "sources", problem)
    return text.encode("utf-8")


def _changelog_versions(spec: GitSpec, source_id: str, items: list, errors: list[IngestError], today: date) -> list[SourceDoc]:
    """A changelog's release sections over every version of it read; an undated section is
    dated by the oldest rev read whose file holds it (the release that added it)."""
    added: dict[str, date] = {}
    for v, doc in items:
        for version, _day, _raw, _blocks in sections(doc):
            d = (v.first or v.rev).day
            if version not in added or d < added[version]:
                added[version] = d
    found: dict[tuple[str, str], SourceDoc] = {}
    for v, doc in items:
        where = f"{spec}@{v.rev.name}:{v.path}"
        entry_errors: list[IngestError] = []
        for entry in changelog_sources(doc, source_id, where, entry_errors, fallback=added.get, source_rev=v.rev.name, path=where):
            if entry.source_date and entry.source_date > today:
                entry = replace(entry, source_date=today)
            found[(entry.source_id, entry.source_version)] = entry  # newest rev last: it wins
        if v is items[-1][0]:
            errors.extend(entry_errors)  # reported once, for the newest version of the file
    return list(found.values())


def ingest_git(text: str, max_bytes: int, select=None) -> tuple[list[Document], list[IngestError]]:
    """The KB as it is at one rev of a ``git:REPO@REV:PATH`` spec (read-only)."""
    spec = parse_spec(text)
    errors: list[IngestError] = []
    repo = open_repository(spec.repo)
    revs = resolve_revs(repo, spec, errors)
    if spec.revs is None:
        revs = revs[-1:]  # no rev given: the newest
    if len(revs) != 1:
        if not revs:
            return [], errors
        raise GitSpecError(f"a KB read from git needs exactly one rev (git:REPO@REV:PATH); {text!r} names {len(revs)}")
    rev = revs[0]
    documents: list[Document] = []
    for path, blob in sorted(files_at(repo, rev, spec.path, str(spec), errors).items()):
        doc_id = _relative(path, spec.path)
        if select is not None and not select(doc_id):
            continue
        if blob.size > max_bytes:
            errors.append(IngestError(doc_id, "read", f"file is {blob.size} bytes, over the {max_bytes}-byte limit; skipped"))
            continue
        try:
            doc = parse_document(blob.data, doc_id, f"{PREFIX}{spec.repo}@{rev.name}:{path}")
        except ParseError as exc:
            errors.append(IngestError(doc_id, "parse", str(exc)))
            continue
        if doc.ignore:
            continue
        if doc.updated is None:
            doc = replace(doc, updated=rev.day)
        documents.append(doc)
    return documents, errors


# ---------------------------------------------------------------- where a KB's files are


@dataclass
class KbAtRev:
    """The files of a KB read from git (``git:REPO@REV:PATH``) as they are at the commit audited:
    what a report needs to point at a line of a file, and to name the rev."""

    repo: pygit2.Repository
    root: str  # the repository's root: its work tree, or the folder of a bare repository
    rev: str  # the rev as the spec names it ("HEAD" when it names none)
    commit: str  # the commit's full id
    tag: str | None  # the rev's tag: the rev itself when it is one, else a tag on the commit
    branch: str | None  # the rev's branch: the rev itself when it is one (HEAD: the checked-out branch)
    paths: dict[str, str]  # document id -> path in the repository
    blobs: dict[str, pygit2.Blob]  # document id -> the file at the commit

    def read(self, doc_id: str) -> bytes | None:
        blob = self.blobs.get(doc_id)
        return blob.data if blob is not None else None


def rev_names(repo: pygit2.Repository, name: str, commit: pygit2.Commit) -> tuple[str | None, str | None]:
    """(tag, branch) of a rev: its own name when it is a tag or a branch, else a tag on its commit
    (the first in version order) and, for HEAD, the branch checked out."""
    refs = set(repo.references)
    tag = name if f"refs/tags/{name}" in refs else None
    branch = name if f"refs/heads/{name}" in refs else None
    if name == "HEAD" and not repo.head_is_detached and not repo.head_is_unborn:
        branch = repo.head.shorthand
    if tag is None:
        tag = next((r.name for r in _tags(repo) if r.commit.id == commit.id), None)
    return tag, branch


def kb_at_rev(text: str, commit: str | None = None) -> KbAtRev | None:
    """A ``git:REPO@REV:PATH`` KB at ``commit`` (the one a run read, from its ``runs`` row), else
    at the commit the rev names now; None when the repository or the commit is gone."""
    try:
        spec = parse_spec(text)
        repo = open_repository(spec.repo)
        revs = resolve_revs(repo, spec, [])
        found = revs[-1].commit if revs else None
        name = revs[-1].name if revs else (spec.revs[0] if spec.revs else "HEAD")
        if commit:
            try:
                found = repo.revparse_single(commit).peel(pygit2.Commit)
            except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
                pass  # gone (a rewritten history): the rev as it is now
        if found is None:
            return None
        rev = Rev(name, found)
        found_files = files_at(repo, rev, spec.path, str(spec), [])
        paths = {_relative(path, spec.path): path for path in found_files}
        blobs = {_relative(path, spec.path): blob for path, blob in found_files.items()}
        tag, branch = rev_names(repo, name, found)
    except (GitSpecError, pygit2.GitError, KeyError, ValueError):
        return None
    root = (repo.workdir or repo.path).rstrip("/")
    return KbAtRev(repo, root, name, str(found.id), tag, branch, paths, blobs)


def kb_commit(text: str) -> str | None:
    """The commit a ``git:REPO@REV:PATH`` KB's rev names now (None: it names none)."""
    try:
        spec = parse_spec(text)
        revs = resolve_revs(open_repository(spec.repo), spec, [])
    except (GitSpecError, pygit2.GitError, KeyError, ValueError):
        return None
    return str(revs[-1].commit.id) if revs else None


def pages_kept_after(sources: list[SourceDoc], kb_rev: str) -> list[SourceDoc]:
    """``sources`` read with the KB's own rev as their oldest (``with_kb_release``), less the
    pages that only that rev holds: a page the later releases deleted (a docs tree rewritten
    into other pages) would make each of its sentences a removal, though its facts may stand
    in other words on the new pages; the KB's version of a page that lives on is what reads its
    changes."""
    return [s for s in sources if not (s.source_rev == kb_rev and s.deleted_in)]
