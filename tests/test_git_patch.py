"""Corrections as git changes: `kbaudit review apply --patch FILE` and `--branch NAME`, on the demo
KB in a real git repository, checked with the real git CLI (`git apply`, `git status`, `git show`)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from bench.demo import load_expected
from cli.main import main as cli
from kb.store import Store
from tests.conftest import store_sql
from tests.test_pr_mode import audit_args, git, make_demo_repo, run_json

pytestmark = pytest.mark.slow


def tree_digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def accepted_edits(out: Path) -> list[tuple]:
    return store_sql(
        out, "SELECT edit_id, doc_id, old_text, new_text, state FROM edit_state WHERE state IN ('auto', 'approved') ORDER BY doc_id, start"
    )


@pytest.fixture(scope="module")
def reviewed(prefect_harness, tmp_path_factory):
    """A full run of the demo KB in a repository, with the queued edits a reviewer would take
    approved: those that write the demo's expected correction (a queued edit is one a human must
    check; some are wrong, e.g. a value taken from an older source)."""
    root = tmp_path_factory.mktemp("reviewed")
    repo = make_demo_repo(root)
    out = root / "out"
    assert cli(audit_args(repo, out, as_json=False)) in (0, 1)
    corrections = {plain(e.correction) for e in load_expected() if e.correction}
    queued = store_sql(out, "SELECT edit_id, new_text FROM review_queue WHERE state = 'queued'")
    right = [edit_id for edit_id, new_text in queued if plain(new_text) in corrections]
    assert right
    assert cli(["review", "approve", *right, "--out", str(out), "--reviewer", "tess"]) == 0
    return root


def plain(text: str) -> str:
    """Text without inline Markdown and list markers, as claims and the expected labels have it."""
    return " ".join(text.replace("`", "").replace("*", "").lstrip("- ").split())


@pytest.fixture
def work(reviewed, tmp_path):
    shutil.copytree(reviewed, tmp_path / "w")
    return tmp_path / "w" / "kb", tmp_path / "w" / "out"


def apply_args(repo: Path, out: Path, *extra: str) -> list[str]:
    return ["review", "apply", "--out", str(out), "--docs", str(repo / "docs"), *extra]


def test_patch_goes_through_git_apply_and_the_next_run_supports_the_corrections(work, tmp_path, capsys):
    repo, out = work
    edits = accepted_edits(out)
    assert len(edits) >= 2
    before, status_before = tree_digest(repo), git(repo, "status", "--porcelain")
    patch = tmp_path / "fixes.patch"

    code, _, err = run_json(capsys, *apply_args(repo, out, "--patch", str(patch)))
    assert code == 0, err
    assert tree_digest(repo) == before and git(repo, "status", "--porcelain") == status_before  # touched no file
    text = patch.read_text()
    assert text.count("diff --git a/docs/") == len({e[1] for e in edits})
    for edit_id, *_ in edits:
        assert edit_id in text  # each edit is described in the patch's comment lines

    git(repo, "apply", "--check", str(patch))
    git(repo, "apply", str(patch))
    for _, doc_id, old_text, new_text, _ in edits:
        page = (repo / "docs" / doc_id).read_text()
        assert new_text in page and old_text not in page

    code, row, err = run_json(capsys, *audit_args(repo, out, "--changed-since", "HEAD"))
    assert code in (0, 1), err
    assert row["documents_audited"] == sorted({e[1] for e in edits})
    labels = dict(
        store_sql(
            out,
            "SELECT c.source_text, v.label FROM verdicts v JOIN claims_history c USING (run_id, claim_id) WHERE v.run_id = ?",
            [row["run_id"]],
        )
    )
    for _, _, _, new_text, _ in edits:
        found = [
            label for source_text, label in labels.items() if plain(new_text) in plain(source_text) or plain(source_text) in plain(new_text)
        ]
        assert found and set(found) == {"supported"}, (new_text, found)


def test_patch_leaves_out_an_edit_whose_file_changed_since_drafting(work, tmp_path, capsys):
    repo, out = work
    edits = accepted_edits(out)
    changed_doc = edits[0][1]
    page = repo / "docs" / changed_doc
    page.write_text(page.read_text() + "\nA line someone added after the audit.\n")
    patch = tmp_path / "fixes.patch"
    capsys.readouterr()
    assert cli(apply_args(repo, out, "--patch", str(patch))) == 0
    printed = capsys.readouterr().out
    assert f"conflicted          {changed_doc}" in printed and "document changed since the edit was drafted" in printed
    text = patch.read_text()
    assert f"a/docs/{changed_doc}" not in text
    assert text.count("diff --git") == len({e[1] for e in edits} - {changed_doc})
    git(repo, "apply", "--check", str(patch))


def test_branch_commits_the_edits_and_leaves_the_work_tree_and_head_alone(work, tmp_path, capsys):
    repo, out = work
    edits = accepted_edits(out)
    (repo / "notes.txt").write_text("an untracked file\n")  # the user's own work in progress
    (repo / "sources" / "product-limits.md").write_text((repo / "sources" / "product-limits.md").read_text() + "\nDraft.\n")
    git(repo, "add", "sources/product-limits.md")

    def state():
        return (
            git(repo, "status", "--porcelain"),
            git(repo, "rev-parse", "HEAD"),
            git(repo, "symbolic-ref", "HEAD"),  # noqa: E731
            tree_digest(repo),
            (repo / ".git" / "index").read_bytes(),
        )

    before = state()

    code, _, err = run_json(capsys, *apply_args(repo, out, "--branch", "kbaudit/fixes"))
    assert code == 0, err
    assert state() == before

    head = before[1].strip()
    assert git(repo, "rev-parse", "kbaudit/fixes^").strip() == head
    changed = sorted(git(repo, "diff", "--name-only", "HEAD", "kbaudit/fixes").split())
    assert changed == sorted({f"docs/{e[1]}" for e in edits})
    for _, doc_id, old_text, new_text, _ in edits:
        committed = git(repo, "show", f"kbaudit/fixes:docs/{doc_id}")
        assert new_text in committed and old_text not in committed
    message = git(repo, "log", "-1", "--format=%B", "kbaudit/fixes")
    receipts = {r[0] for r in store_sql(out, "SELECT DISTINCT receipt_id FROM evidence")}
    for edit_id, _doc_id, _old_text, new_text, _ in edits:
        assert edit_id in message and new_text in message
    assert "evidence:" in message and "dated 20" in message
    assert message.count("  receipt:  ") == len(edits) and "receipt:  (none)" not in message
    assert all(line.split("receipt:  ")[1] in receipts for line in message.splitlines() if "receipt:  " in line)
    # The branch's tree is HEAD's plus the edits: the staged source change is not in it.
    assert "Draft." not in git(repo, "show", "kbaudit/fixes:sources/product-limits.md")


def test_branch_from_a_detached_head(work, capsys):
    repo, out = work
    git(repo, "checkout", "-q", "--detach")
    head = git(repo, "rev-parse", "HEAD").strip()
    code, _, err = run_json(capsys, *apply_args(repo, out, "--branch", "fixes"))
    assert code == 0, err
    assert git(repo, "rev-parse", "fixes^").strip() == head
    assert git(repo, "rev-parse", "HEAD").strip() == head and git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize(
    "case, expected",
    [
        ("existing branch", "branch 'main' already exists"),
        ("bad branch name", "is not a valid git branch name"),
        ("dirty KB file", "have uncommitted changes"),
        ("not a repository", "needs the documents folder inside a git work tree"),
        ("no commits", "has no commits yet"),
        ("patch and dry run", "--dry-run does not go with --patch or --branch"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_is_written(work, tmp_path, capsys, case, expected):
    repo, out = work
    docs = repo / "docs"
    extra = ["--branch", "main"] if case == "existing branch" else ["--branch", "fixes"]
    if case == "bad branch name":
        extra = ["--branch", "bad..name"]
    elif case == "dirty KB file":
        doc = accepted_edits(out)[0][1]
        (docs / doc).write_text((docs / doc).read_text() + "\nUncommitted.\n")
    elif case == "not a repository":
        shutil.rmtree(repo / ".git")
    elif case == "no commits":
        shutil.rmtree(repo / ".git")
        git(repo, "init", "-q", "-b", "main")
    elif case == "patch and dry run":
        extra = ["--patch", str(tmp_path / "p.patch"), "--dry-run"]
    before_tree = tree_digest(repo)
    branches = git(repo, "branch", "--list") if (repo / ".git").is_dir() else ""
    events = len(Store(out).query("SELECT * FROM edit_events"))
    code, _, err = run_json(capsys, *apply_args(repo, out, *extra))
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], err
    assert tree_digest(repo) == before_tree
    if (repo / ".git").is_dir():
        assert git(repo, "branch", "--list") == branches
    assert len(Store(out).query("SELECT * FROM edit_events")) == events
    assert not (tmp_path / "p.patch").exists()


def test_patch_outside_a_repository_is_relative_to_the_kb_folder(work, tmp_path, capsys):
    repo, out = work
    shutil.rmtree(repo / ".git")
    patch = tmp_path / "fixes.patch"
    assert cli(apply_args(repo, out, "--patch", str(patch))) == 0
    text = patch.read_text()
    assert "diff --git a/docs/" not in text and "diff --git a/" in text
    git(repo / "docs", "apply", "--check", str(patch))  # outside a repository git apply patches plain files
    json_out = run_json(capsys, *apply_args(repo, out, "--patch", str(tmp_path / "again.patch"), "--json"))[1]
    assert json_out["edits"] == len(accepted_edits(out)) and (tmp_path / "again.patch").read_text() == text
