"""The KB's git repository (pygit2): what changed since a revision, and corrections as git changes.

- `changed_documents(docs_root, rev)`: the KB files added, modified, renamed or deleted between
  REV's tree and the work tree (uncommitted and untracked files included, with rename detection),
  for `kbaudit run DOCS --changed-since REV`.
- `patch_text(...)`: accepted edits as one unified diff in git's format (`git apply` takes it).
- `commit_on_branch(...)`: accepted edits committed on a new branch, the commit built in memory
  from HEAD's tree plus the edited blobs, so the user's work tree, index and HEAD stay as they are.

Every problem with the repository (none, no commits, an unknown revision, a taken branch name,
dirty files) is a `UsageError`: one line, exit 2, nothing written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pygit2
from pygit2.enums import DeltaStatus, DiffFind, DiffOption, FileStatus

from kb.errors import UsageError

# Work-tree states of a file that mean "not what HEAD has".
DIRTY = (
    FileStatus.WT_MODIFIED
    | FileStatus.WT_DELETED
    | FileStatus.WT_TYPECHANGE
    | FileStatus.WT_RENAMED
    | FileStatus.INDEX_MODIFIED
    | FileStatus.INDEX_DELETED
    | FileStatus.INDEX_TYPECHANGE
    | FileStatus.INDEX_RENAMED
    | FileStatus.CONFLICTED
)


@dataclass
class KbRepo:
    """A KB folder inside a git work tree."""

    repo: pygit2.Repository
    workdir: Path  # the work tree's root
    prefix: str  # the KB folder relative to the work tree ("" when they are the same), posix

    def repo_path(self, doc_id: str) -> str:
        """A document id (relative to the KB folder) as a path in the repository."""
        return str(PurePosixPath(self.prefix) / doc_id) if self.prefix else doc_id

    def doc_id(self, repo_path: str) -> str | None:
        """The document id of a repository path, None when the path is outside the KB folder."""
        if not self.prefix:
            return repo_path
        head = self.prefix + "/"
        return repo_path[len(head) :] if repo_path.startswith(head) else None

    def head_commit(self) -> pygit2.Commit:
        if self.repo.head_is_unborn:
            raise UsageError(f"the git repository at {self.workdir} has no commits yet")
        return self.repo.head.peel(pygit2.Commit)

    def resolve(self, rev: str) -> pygit2.Commit:
        try:
            return self.repo.revparse_single(rev).peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
            detail = f" ({exc})" if str(exc) and str(exc) != repr(rev) and str(exc) != rev else ""
            raise UsageError(f"revision {rev!r} not found in the git repository at {self.workdir}{detail}") from None


def open_kb_repo(docs_root: str | Path, why: str) -> KbRepo:
    """The git work tree holding `docs_root`; `why` names the option that needs it."""
    root = Path(docs_root).resolve()
    found = pygit2.discover_repository(str(root))
    if found is None:
        raise UsageError(f"{why} needs the documents folder inside a git work tree; {root} is not in a git repository")
    repo = pygit2.Repository(found)
    if repo.is_bare or repo.workdir is None:
        raise UsageError(f"{why} needs a git work tree; the repository at {found} is bare")
    workdir = Path(repo.workdir).resolve()
    prefix = root.relative_to(workdir).as_posix()
    return KbRepo(repo, workdir, "" if prefix == "." else prefix)


# ---- what changed since REV ------------------------------------------------------------------
@dataclass
class Changes:
    rev: str
    commit: str  # the commit REV names
    changed: list[str] = field(default_factory=list)  # doc ids added, modified or renamed (new path)
    deleted: list[str] = field(default_factory=list)  # doc ids gone from the work tree
    renamed: dict[str, str] = field(default_factory=dict)  # new doc id -> old doc id


def changed_documents(docs_root: str | Path, rev: str) -> Changes:
    """Files under the KB folder that differ between REV's tree and the work tree.

    The work tree side includes uncommitted and untracked (not ignored) files: what a PR's
    checkout, a pre-commit hook's stash-free tree or a local edit has now. Renames are found by
    content similarity (git's default 50%), so a moved page is audited under its new path and not
    reported deleted. The caller filters the doc ids by document type and `.kbauditignore`.
    """
    kb = open_kb_repo(docs_root, "--changed-since")
    commit = kb.resolve(rev)
    flags = DiffOption.INCLUDE_UNTRACKED | DiffOption.RECURSE_UNTRACKED_DIRS
    diff = commit.tree.diff_to_workdir(flags)
    diff.find_similar(DiffFind.FIND_RENAMES | DiffFind.FIND_FOR_UNTRACKED)
    changes = Changes(rev=rev, commit=str(commit.id))
    for delta in diff.deltas:
        old_id, new_id = kb.doc_id(delta.old_file.path), kb.doc_id(delta.new_file.path)
        status = delta.status
        if status == DeltaStatus.DELETED:
            if old_id is not None:
                changes.deleted.append(old_id)
        elif status == DeltaStatus.RENAMED:
            if new_id is not None:
                changes.changed.append(new_id)
                if old_id is not None:
                    changes.renamed[new_id] = old_id
            if old_id is not None and new_id is None:  # moved out of the KB folder
                changes.deleted.append(old_id)
        elif status in (DeltaStatus.ADDED, DeltaStatus.MODIFIED, DeltaStatus.UNTRACKED, DeltaStatus.TYPECHANGE, DeltaStatus.COPIED):
            if new_id is not None:
                changes.changed.append(new_id)
    changes.changed.sort()
    changes.deleted.sort()
    return changes


# ---- corrections as git changes ----------------------------------------------------------------
@dataclass
class FileChange:
    doc_id: str
    old: bytes
    new: bytes
    edit_ids: list[str]


def patch_text(kb: KbRepo | None, changes: list[FileChange], preamble: Sequence[str] = ()) -> str:
    """One unified diff in git's format (`diff --git a/... b/...`) for every changed file.

    Paths are relative to the repository's root when the KB is in one (run `git apply` there),
    else to the KB folder. The preamble lines come first, each as a `# ` comment, which
    `git apply` and `patch` skip.
    """
    parts = [f"# {line}".rstrip() + "\n" for line in preamble]
    for change in changes:
        path = kb.repo_path(change.doc_id) if kb is not None else change.doc_id
        patch = pygit2.Patch.create_from(change.old, change.new, old_as_path=path, new_as_path=path)
        parts.append(patch.text or "")  # no text: the two sides are the same bytes
    return "".join(parts)


def dirty_documents(kb: KbRepo, doc_ids: list[str]) -> list[str]:
    """The documents whose work-tree or staged content differs from HEAD's."""
    dirty = []
    for doc_id in doc_ids:
        try:
            status = kb.repo.status_file(kb.repo_path(doc_id))
        except KeyError:  # not in the work tree, the index or HEAD
            continue
        if status & DIRTY:
            dirty.append(doc_id)
    return dirty


def head_blob(kb: KbRepo, doc_id: str) -> bytes:
    """The document's bytes in HEAD's tree (OSError when HEAD has no such file, like a read)."""
    tree = kb.head_commit().tree
    try:
        obj = tree[kb.repo_path(doc_id)]
    except KeyError:
        raise FileNotFoundError(f"{kb.repo_path(doc_id)} is not in HEAD") from None
    if not isinstance(obj, pygit2.Blob):
        raise IsADirectoryError(f"{kb.repo_path(doc_id)} is not a file in HEAD")
    return obj.data


def check_branch_name(kb: KbRepo, name: str) -> str:
    if not name or not pygit2.reference_is_valid_name(f"refs/heads/{name}"):
        raise UsageError(f"{name!r} is not a valid git branch name")
    if name in kb.repo.branches.local:
        raise UsageError(f"branch {name!r} already exists in {kb.workdir}; choose another name (nothing was written)")
    return name


def _signature(repo: pygit2.Repository) -> pygit2.Signature:
    try:
        return repo.default_signature  # user.name / user.email from the repository's config
    except (KeyError, pygit2.GitError):
        return pygit2.Signature("kbaudit", "kbaudit@localhost")


def commit_on_branch(kb: KbRepo, name: str, changes: list[FileChange], message: str) -> str:
    """Commit `changes` on a new branch `name` whose parent is HEAD; returns the commit id.

    The tree is HEAD's tree with the edited blobs put in, built in an in-memory index: the work
    tree, the repository's index and HEAD are not touched, only new objects and the branch ref.
    """
    check_branch_name(kb, name)
    head = kb.head_commit()
    index = pygit2.Index()
    index.read_tree(head.tree)
    for change in changes:
        path = kb.repo_path(change.doc_id)
        entry = index[path]  # KeyError is impossible: the bytes came from HEAD's tree
        blob = kb.repo.create_blob(change.new)
        index.add(pygit2.IndexEntry(path, blob, entry.mode))
    tree = index.write_tree(kb.repo)
    signature = _signature(kb.repo)
    commit = kb.repo.create_commit(None, signature, signature, message, tree, [head.id])
    created = kb.repo[commit]
    assert isinstance(created, pygit2.Commit)  # create_commit returns a commit's id
    kb.repo.branches.local.create(name, created)
    return str(commit)
