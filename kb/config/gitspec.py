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
