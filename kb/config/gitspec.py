"""The syntax of a git source or KB, ``git:REPO[@REVS][:PATH]`` (a setting's value): parsed and
its repository opened here, below the settings; reading the revisions is kb/evidence/git_source.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2

PREFIX = "git:"


class GitSpecError(ValueError):
    """A git source that cannot be used at all (bad syntax, not a repository): exit 2."""


@dataclass(frozen=True)
class GitSpec:
    repo: str
    revs: tuple[str, ...] | None = None  # None: every tag, then HEAD
    path: str = ""

    def __str__(self) -> str:
        out = PREFIX + self.repo
        if self.revs is not None:
            out += "@" + ",".join(self.revs)
        if self.path:
            out += ":" + self.path
        return out


def is_git_spec(value) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def parse_spec(text: str) -> GitSpec:
    """``git:REPO[@REVS][:PATH]`` -> GitSpec (GitSpecError on bad syntax)."""
    if not is_git_spec(text):
        raise GitSpecError(f"not a git source (expected git:REPO[@REVS][:PATH]): {text!r}")
    body = text[len(PREFIX) :]
    revs: tuple[str, ...] | None = None
    path = ""
    if "@" in body:
        repo, rest = body.rsplit("@", 1)
        rev_text, _, path = rest.partition(":")
        revs = tuple(r.strip() for r in rev_text.split(",") if r.strip())
        if not revs:
            raise GitSpecError(f"empty rev list in {text!r} (give tags, branches, commits or 'tags')")
    else:
        repo, _, path = body.partition(":")
    if not repo:
        raise GitSpecError(f"no repository in {text!r} (expected git:REPO[@REVS][:PATH])")
    return GitSpec(repo=repo, revs=revs, path=path.strip("/"))


def spec_from_table(table: dict, base: Path | None = None) -> str:
    """A ``[[sources]]`` table (``git``, ``revs``, ``path``) as a ``git:`` spec string."""
    unknown = set(table) - {"git", "revs", "path"}
    if unknown:
        raise GitSpecError(f"unknown key(s) in [[sources]]: {', '.join(sorted(unknown))} (git, revs, path)")
    repo = table.get("git")
    if not isinstance(repo, str) or not repo:
        raise GitSpecError('[[sources]] needs git = "REPO" (a work tree or bare repository)')
    if base is not None and not Path(repo).is_absolute():
        repo = str((base / repo).resolve())
    revs = table.get("revs")
    if isinstance(revs, str):
        revs = [revs]
    if revs is not None and (not isinstance(revs, list) or not all(isinstance(r, str) and r for r in revs) or not revs):
        raise GitSpecError('[[sources]] revs must be a non-empty list of tags, branches or commits (or "tags")')
    spec = GitSpec(repo=repo, revs=tuple(revs) if revs else None, path=str(table.get("path") or "").strip("/"))
    return str(spec)


def open_repository(repo: str) -> pygit2.Repository:
    try:
        found = pygit2.discover_repository(repo)
        if found is None:
            raise GitSpecError(f"not a git repository: {repo}")
        return pygit2.Repository(found)
    except (pygit2.GitError, KeyError, OSError) as exc:
        raise GitSpecError(f"not a git repository: {repo} ({str(exc).strip()[:80]})") from None


def check(text: str) -> GitSpec:
    """Parse and open a spec once (settings validation): GitSpecError when unusable."""
    spec = parse_spec(text)
    open_repository(spec.repo)
    return spec


def _tag_on(repo: pygit2.Repository, commit: pygit2.Oid) -> str | None:
    """A tag naming ``commit`` (the first by name), so that the versions read there carry the
    release's name, as they do when the KB names the release itself."""
    for name in sorted(r for r in repo.references if r.startswith("refs/tags/")):
        try:
            if repo.revparse_single(name).peel(pygit2.Commit).id == commit:
                return name.removeprefix("refs/tags/")
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            continue
    return None


def with_kb_release(source: str, docs: str) -> tuple[str, str | None]:
    """The git source ``source`` with the KB's own rev read as its oldest version, when the KB
    (``docs``) is read from the same repository at one rev that the source's explicit revs leave
    out and that is no newer than the first of them: the KB's pages are then the oldest versions
    of the source's pages, so a sentence the first later release already changed or dropped is
    read as changed, not as a sentence no source ever held. A KB commit off the releases' line is
    read through the commit where it left it (their merge base).

    Returns the source and the rev it gained (None: any other source comes back as it is)."""
    unchanged = (source, None)
    if not (is_git_spec(source) and is_git_spec(docs)):
        return unchanged
    try:
        src, kb = parse_spec(source), parse_spec(docs)
        if src.revs is None or "tags" in src.revs or kb.revs is None or len(kb.revs) != 1:
            return unchanged  # every tag is read already (the KB's among them), or no single KB rev
        repo = open_repository(src.repo)
        if pygit2.discover_repository(kb.repo) != pygit2.discover_repository(src.repo):
            return unchanged
        kb_commit = repo.revparse_single(kb.revs[0]).peel(pygit2.Commit)
        firsts = [repo.revparse_single(r).peel(pygit2.Commit) for r in src.revs]
        base = repo.merge_base(kb_commit.id, firsts[0].id)
    except (GitSpecError, pygit2.GitError, KeyError, ValueError, pygit2.InvalidSpecError):
        return unchanged  # the source's own loading reports what is wrong with it
    if any(c.id == kb_commit.id for c in firsts) or kb_commit.committer.time > firsts[0].committer.time:
        return unchanged
    rev = kb.revs[0]
    if base is not None and base != kb_commit.id and base not in {c.id for c in firsts}:
        # The KB's commit is a side branch of the releases (a team's edits on top of one): the
        # later releases changed the commit they grew from, not the team's edits, so that commit
        # is their oldest version; and the audit after a day's edits reads the same corpus as
        # the one before, its searches and verdicts still cached.
        rev = _tag_on(repo, base) or str(base)
    return str(GitSpec(repo=src.repo, revs=(rev, *src.revs), path=src.path)), rev
