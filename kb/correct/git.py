"""Accepted corrections as git changes: `kbaudit review apply --patch FILE` / `--branch NAME`.

Both take the same edits as `kbaudit review apply` (auto-accepted and approved, kb.correct.review) and the
same hash check: an edit whose document no longer has the version it was drafted against is
`conflicted`, left out and reported. Neither writes a KB file nor records an apply in the store:
the edits stay accepted until someone applies the patch or merges the branch, and the next run
audits what the KB then says.

- `--patch`: the current files are the base (the work tree, what `git apply` patches); the
  result is one unified diff in git's format, paths relative to the repository root (or to the KB
  folder when it is in no repository).
- `--branch`: HEAD's files are the base; the commit is built in memory (kb.ingest.git) on a new branch
  whose parent is HEAD, so the work tree, the index and the checked-out branch do not change. A
  KB file it would touch that is dirty (changed in the work tree or index against HEAD) stops
  it: the edits were drafted against the work tree's bytes, so a dirty file's HEAD version is
  not what the reviewer approved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from kb.correct import review
from kb.errors import UsageError
from kb.ingest import git as gitkb
from kb.store import Store, rows_of


@dataclass
class GitChange:
    outcomes: list[review.ApplyOutcome] = field(default_factory=list)  # would_apply + conflicted
    files: list[gitkb.FileChange] = field(default_factory=list)
    descriptions: list[str] = field(default_factory=list)  # one block of lines per edit
    commit: str | None = None

    @property
    def edits(self) -> int:
        return sum(len(f.edit_ids) for f in self.files)


def _root(store: Store, docs_root: str | Path | None) -> Path:
    root = Path(docs_root if docs_root is not None else review.newest_docs_root(store)).resolve()
    if not root.is_dir():
        raise UsageError(f"documents folder not found: {root}")
    return root


def _plan(store: Store, root: Path, read=None) -> GitChange:
    plans, outcomes = review.plan_edits(store, root, read)
    change = GitChange(outcomes=[o for o in outcomes if o.status in ("would_apply", "conflicted")])
    for outcome, _conflicts, new_raw in plans:
        if new_raw is None or outcome.status != "would_apply":
            continue
        old = read(outcome.doc_id) if read is not None else Path(outcome.path).read_bytes()
        change.files.append(gitkb.FileChange(outcome.doc_id, old, new_raw, list(outcome.edit_ids)))
    change.descriptions = describe(store, [e for f in change.files for e in f.edit_ids])
    return change


def describe(store: Store, edit_ids: list[str]) -> list[str]:
    """Each edit with its claim, the evidence (sentence, source, date) and the retrieval receipt."""
    if not edit_ids:
        return []
    frame = store.query(
        """SELECT s.edit_id, s.doc_id, s.run_id, s.old_text, s.new_text, s.label_before, s.state,
                  s.evidence_sentence, s.evidence_source, s.evidence_date, c.text AS claim_text,
                  (SELECT min_by(e.receipt_id, e.rank) FROM evidence e
                   WHERE e.run_id = s.run_id AND e.claim_id = s.claim_id
                     AND (s.evidence_source IS NULL OR e.source_id || '@' || e.source_version = s.evidence_source)) AS receipt_id
           FROM edit_state s
           LEFT JOIN claims_history c ON c.claim_id = s.claim_id AND c.run_id = s.run_id
           WHERE list_contains(?, s.edit_id)
           ORDER BY s.doc_id, s.start""",
        [edit_ids],
    )
    lines = []
    for r in rows_of(frame):
        date = pd.Timestamp(r["evidence_date"]).date().isoformat() if r["evidence_date"] is not None else "undated"
        lines += [
            f"{r['doc_id']}: edit {r['edit_id']} ({r['label_before']}, {r['state']}, run {r['run_id']})",
            f"  claim:    {r['claim_text'] or r['old_text']}",
            f"  was:      {r['old_text']}",
            f"  now:      {r['new_text']}",
            f"  evidence: {r['evidence_sentence'] or '(none recorded)'}",
            f"  source:   {r['evidence_source'] or '(unknown)'}, dated {date}",
            f"  receipt:  {r['receipt_id'] or '(none)'}",
        ]
    return lines


def patch(store: Store, docs_root: str | Path | None = None) -> tuple[str, GitChange]:
    """The accepted edits as one unified diff (text) and what went into it."""
    root = _root(store, docs_root)
    try:
        kb = gitkb.open_kb_repo(root, "--patch")
    except UsageError:  # not in a repository: paths relative to the KB folder
        kb = None
    change = _plan(store, root)
    header = [
        f"kbaudit: {change.edits} accepted correction(s); apply with `git apply` at "
        + ("the repository root" if kb is not None else "the KB folder (or patch -p1)"),
        "",
    ]
    text = gitkb.patch_text(kb, change.files, header + change.descriptions) if change.files else ""
    return text, change


def branch(store: Store, name: str, docs_root: str | Path | None = None) -> GitChange:
    """Commit the accepted edits on a new branch `name` (parent: HEAD)."""
    root = _root(store, docs_root)
    kb = gitkb.open_kb_repo(root, "--branch")
    gitkb.check_branch_name(kb, name)
    kb.head_commit()  # a repository without commits: refuse before planning
    frame, _ = review.candidates(store)
    dirty = gitkb.dirty_documents(kb, sorted(set(frame.doc_id)))
    if dirty:
        raise UsageError(
            f"--branch commits on top of HEAD, but {len(dirty)} KB file(s) it would change have uncommitted changes "
            f"({', '.join(dirty[:3])}{' ...' if len(dirty) > 3 else ''}); commit or stash them first (nothing was written)"
        )
    change = _plan(store, root, read=lambda doc_id: gitkb.head_blob(kb, doc_id))
    if not change.files:
        return change
    subject = f"kbaudit: {change.edits} correction(s) from the review queue"
    message = "\n".join([subject, "", *change.descriptions]) + "\n"
    change.commit = gitkb.commit_on_branch(kb, name, change.files, message)
    return change
