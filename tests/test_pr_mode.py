"""PR mode (`kbaudit run DOCS --changed-since REV`) on the demo KB in a real git repository.

One full run makes a warm store (module fixture); each test copies the repository and the store,
changes files with the git CLI or in the work tree, and runs the real CLI under the Prefect
test harness.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from cli.main import main as cli
from kb.config import DEMO_ROOT
from kb.store import Store
from tests.conftest import DEMO_TODAY, store_sql

pytestmark = pytest.mark.slow

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Tess",
    "GIT_AUTHOR_EMAIL": "tess@example.com",
    "GIT_COMMITTER_NAME": "Tess",
    "GIT_COMMITTER_EMAIL": "tess@example.com",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True, text=True)
    return done.stdout


def make_demo_repo(root: Path) -> Path:
    repo = root / "kb"
    shutil.copytree(DEMO_ROOT / "docs", repo / "docs")
    shutil.copytree(DEMO_ROOT / "sources", repo / "sources")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "demo KB")
    return repo


def run_json(capsys, *args: str) -> tuple[int, dict | None, str]:
    capsys.readouterr()
    code = cli(list(args))
    captured = capsys.readouterr()
    try:
        row = json.loads(captured.out)
    except json.JSONDecodeError:
        row = None
    return code, row, captured.err


def audit_args(repo: Path, out: Path, *extra: str, as_json: bool = True) -> list[str]:
    return [
        "run",
        str(repo / "docs"),
        "--sources",
        str(repo / "sources"),
        "--out",
        str(out),
        "--today",
        DEMO_TODAY,
        *(["--json"] if as_json else []),
        *extra,
    ]


@pytest.fixture(scope="module")
def warm(prefect_harness, tmp_path_factory):
    """The demo KB committed to a repository, and a store holding one full run of it."""
    root = tmp_path_factory.mktemp("warm")
    repo = make_demo_repo(root)
    out = root / "out"
    assert cli(audit_args(repo, out, as_json=False)) in (0, 1)
    return root


@pytest.fixture
def work(warm, tmp_path):
    shutil.copytree(warm, tmp_path / "w")
    return tmp_path / "w" / "kb", tmp_path / "w" / "out"


def test_changed_since_audits_changed_renamed_and_new_files_and_reports_deleted(work, capsys):
    repo, out = work
    docs = repo / "docs"
    full_claims = store_sql(out, "SELECT count(*) FROM claims")[0][0]
    sla = (docs / "sla.md").read_text()
    (docs / "sla.md").write_text(sla.replace("99.95%", "99.99%"))  # uncommitted edit
    git(repo, "mv", "docs/webhooks.md", "docs/integrations-webhooks.md")  # staged rename
    git(repo, "rm", "-q", "docs/regions.md")
    git(repo, "commit", "-q", "-m", "rename webhooks, drop regions")
    (docs / "status-page.md").write_text("# Status page\n\nThe Enterprise plan guarantees 99.95% monthly uptime.\n")  # untracked
    (docs / "notes.bin").write_bytes(b"\x00\x01")  # not a KB document type: ignored

    code, row, err = run_json(capsys, *audit_args(repo, out, "--changed-since", "HEAD~1"))
    assert code in (0, 1), err
    assert row["scope"] == "changed" and row["changed_since"] == "HEAD~1"
    assert row["documents_audited"] == ["integrations-webhooks.md", "sla.md", "status-page.md"]
    assert row["documents_deleted"] == ["regions.md"]
    assert row["documents"] == 3
    assert any("renamed webhooks.md -> integrations-webhooks.md" in note for note in json.loads(row["notes"]))

    run_id = row["run_id"]
    audited_docs = {r[0] for r in store_sql(out, "SELECT DISTINCT doc_id FROM claims_history WHERE run_id = ?", [run_id])}
    assert audited_docs == {"integrations-webhooks.md", "sla.md", "status-page.md"}
    # The KB's current state is still the full run's: the store did not shrink to three pages.
    assert store_sql(out, "SELECT count(*) FROM claims")[0][0] == full_claims
    assert store_sql(out, "SELECT count(DISTINCT doc_id) FROM documents")[0][0] == 15
    assert store_sql(out, "SELECT count(*) FROM runs")[0][0] == 2
    assert store_sql(out, "SELECT count(*) FROM full_runs")[0][0] == 1
    assert store_sql(out, "SELECT count(*) FROM label_trend")[0][0] == 1
    # The changed sentence was verified again.
    changed = store_sql(
        out,
        "SELECT v.label, v.reused FROM verdicts v JOIN claims_history c USING (run_id, claim_id) "
        "WHERE v.run_id = ? AND c.source_text LIKE '%99.99%%'",
        [run_id],
    )
    assert changed and all(not reused for _, reused in changed)
    new_page = store_sql(
        out,
        "SELECT v.label FROM verdicts v JOIN claims_history c USING (run_id, claim_id) WHERE v.run_id = ? AND c.doc_id = 'status-page.md'",
        [run_id],
    )
    assert [label for (label,) in new_page] == ["supported"]


def test_changed_sources_bring_in_the_documents_whose_evidence_changed(work, capsys):
    repo, out = work
    src = repo / "sources" / "sla-policy.md"
    text = src.read_text()
    assert "99.95%" in text
    src.write_text(text.replace("99.95%", "99.9%"))  # the Enterprise uptime now contradicts sla.md

    code, row, err = run_json(capsys, *audit_args(repo, out, "--changed-since", "HEAD"))
    assert code in (0, 1), err
    # No KB file changed; the page whose claims cite the edited source is audited for it.
    assert "sla.md" in row["documents_audited"]
    assert len(row["documents_audited"]) < 15
    assert row["documents_deleted"] == []
    assert any("sources changed since full run" in note for note in json.loads(row["notes"]))
    labels = store_sql(
        out,
        "SELECT v.label FROM verdicts v JOIN claims_history c USING (run_id, claim_id) "
        "WHERE v.run_id = ? AND c.source_text LIKE '%Enterprise plan guarantees 99.95%%'",
        [row["run_id"]],
    )
    assert labels and labels[0][0] in ("contradicted", "stale")


def test_nothing_changed_audits_nothing_and_a_detached_head_works(work, capsys):
    repo, out = work
    git(repo, "checkout", "-q", "--detach", "HEAD")  # what a CI checkout of a pull request has
    code, row, err = run_json(capsys, *audit_args(repo, out, "--changed-since", "main"))
    assert code == 0, err
    assert row["documents_audited"] == [] and row["documents_deleted"] == [] and row["claims"] == 0
    assert store_sql(out, "SELECT count(DISTINCT doc_id) FROM documents")[0][0] == 15


def test_text_summary_names_the_audited_documents(work, capsys):
    repo, out = work
    (repo / "docs" / "sla.md").write_text((repo / "docs" / "sla.md").read_text() + "\nThe Pro plan guarantees 99.9% monthly uptime.\n")
    capsys.readouterr()
    code = cli(audit_args(repo, out, "--changed-since", "HEAD", as_json=False))
    text = capsys.readouterr().out
    assert code in (0, 1)
    assert "changed since HEAD: 1 document(s) audited: sla.md" in text
    assert "deleted since HEAD: none" in text


@pytest.mark.parametrize(
    "case, expected",
    [
        ("unknown revision", "revision 'no-such-branch' not found in the git repository"),
        ("not a repository", "needs the documents folder inside a git work tree"),
        ("demo", "--changed-since needs DOCS"),
        ("shards", "does not take --shards"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_the_store_is_unchanged(work, capsys, tmp_path, case, expected):
    repo, out = work
    before = Store(out).run_ids()
    if case == "unknown revision":
        args = audit_args(repo, out, "--changed-since", "no-such-branch")
    elif case == "not a repository":
        plain = tmp_path / "plain"
        shutil.copytree(repo / "docs", plain / "docs")
        shutil.copytree(repo / "sources", plain / "sources")
        args = audit_args(plain, out, "--changed-since", "HEAD")
    elif case == "demo":
        args = ["run", "--out", str(out), "--changed-since", "HEAD"]
    else:
        args = audit_args(repo, out, "--changed-since", "HEAD", "--shards", "2")
    code, row, err = run_json(capsys, *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], err
    assert Store(out).run_ids() == before


def test_a_store_written_before_run_scopes_takes_a_pr_run(work, capsys):
    """Runs files without the scope columns and views without `full_runs` (an older kbaudit's store)."""
    import pyarrow.parquet as pq

    repo, out = work
    for path in (out / "runs").rglob("*.parquet"):
        table = pq.read_table(path)
        pq.write_table(
            table.drop_columns(
                [c for c in ("scope", "changed_since", "documents_audited", "documents_deleted", "corpus") if c in table.column_names]
            ),
            path,
        )
    con = duckdb.connect(str(out / "kbaudit.duckdb"))
    con.execute("DROP VIEW IF EXISTS full_runs")
    con.close()
    (repo / "docs" / "sla.md").write_text((repo / "docs" / "sla.md").read_text().replace("99.95%", "99.99%"))

    code, row, err = run_json(capsys, *audit_args(repo, out, "--changed-since", "HEAD"))
    assert code in (0, 1), err
    # The old run has no corpus fingerprint: every other claim's evidence is compared, and none changed.
    assert row["documents_audited"] == ["sla.md"]
    assert store_sql(out, "SELECT count(*) FROM full_runs")[0][0] == 1
    assert store_sql(out, "SELECT count(DISTINCT doc_id) FROM documents")[0][0] == 15
