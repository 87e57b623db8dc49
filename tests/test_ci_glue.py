"""The drop-in CI files: the composite GitHub Action (action.yml) and the pre-commit hook
(.pre-commit-hooks.yaml), run for real against a KB in a git repository.

The Action's `run:` steps are taken from action.yml with PyYAML and run with bash the way a runner
runs them (`bash --noprofile --norc -eo pipefail`), with the `${{ ... }}` expressions of their `env:`
filled in from the inputs and the earlier steps' outputs. The install step is replaced by the
current environment (kbaudit on PATH), and `uses:` steps (setup-python, upload-sarif) cannot run
here: their wiring is checked instead. The hook runs through `pre-commit try-repo`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import DEMO_TODAY
from tests.test_pr_mode import git, make_demo_repo

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def base_env(tmp_path: Path) -> dict:
    """The environment of a CI job here: this checkout's kbaudit first on PATH."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(tmp_path / "prefect"), "KBAUDIT_TODAY": DEMO_TODAY}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return env


def contradicting_edit(repo: Path) -> None:
    page = repo / "docs" / "sla.md"
    text = page.read_text()
    assert "capped at 30% of the monthly fee" in text
    page.write_text(text.replace("capped at 30% of the monthly fee", "capped at 50% of the monthly fee"))


# ---- the Action ----------------------------------------------------------------------------
def load_action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text())


def run_action(repo: Path, tmp_path: Path, inputs: dict, github: dict) -> list[dict]:
    """Run the Action's steps in order; returns one record per step (rc, outputs, stderr)."""
    action = load_action()
    values = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    values.update(inputs)
    outputs: dict[str, dict] = {}
    records = []

    def evaluate(text: str) -> str:
        def one(match: re.Match) -> str:
            expr = match.group(1)
            if expr.startswith("inputs."):
                return values[expr.removeprefix("inputs.")]
            if expr.startswith("github."):
                return github.get(expr.removeprefix("github."), "")
            step, _, name = expr.removeprefix("steps.").partition(".outputs.")
            if expr.startswith("steps.") and step in outputs:
                return outputs[step].get(name, "")
            raise AssertionError(f"expression the test does not know: {expr}")

        return EXPRESSION.sub(one, text)

    for step in action["runs"]["steps"]:
        if "uses" in step or step.get("id") == "install":
            records.append({"step": step, "skipped": True})
            continue
        assert step["shell"] == "bash"
        assert "${{" not in step["run"], "inputs must reach a script through env, not be pasted into it"
        output_file = tmp_path / f"output-{len(records)}"
        output_file.write_text("")
        env = {**base_env(tmp_path), "GITHUB_OUTPUT": str(output_file), "RUNNER_TEMP": str(tmp_path)}
        env.update({k: evaluate(str(v)) for k, v in (step.get("env") or {}).items()})
        script = tmp_path / f"step-{len(records)}.sh"
        script.write_text(step["run"])
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        found = dict(line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line)
        if step.get("id"):
            outputs[step["id"]] = found
        records.append({"step": step, "rc": done.returncode, "outputs": found, "stdout": done.stdout, "stderr": done.stderr})
        if done.returncode != 0:
            break
    return records


def test_the_action_declares_its_inputs_and_uploads_the_sarif_report():
    action = load_action()
    assert {"docs", "sources", "fail-on", "format", "changed-since"} <= set(action["inputs"])
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    assert steps[0]["uses"].startswith("actions/setup-python@")
    install = next(s for s in steps if s.get("id") == "install")
    assert "pip install" in install["run"] and '"$KBAUDIT_ACTION_PATH"' in install["run"]
    assert install["env"]["KBAUDIT_ACTION_PATH"] == "${{ github.action_path }}"
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@"))
    assert upload["if"] == "inputs.format == 'sarif'"
    assert upload["with"]["sarif_file"] == "${{ steps.audit.outputs.report }}"
    assert steps.index(upload) < len(steps) - 1  # uploaded before the step that fails the job


def test_the_action_on_a_pull_request_audits_the_changed_page_and_fails_on_its_finding(tmp_path):
    repo = make_demo_repo(tmp_path)
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")  # what checkout with fetch-depth 0 leaves
    git(repo, "checkout", "-q", "-b", "fix-sla")
    contradicting_edit(repo)
    git(repo, "commit", "-q", "-am", "SLA credits")
    git(repo, "checkout", "-q", "--detach")  # a PR's checkout is a detached merge commit

    records = run_action(
        repo,
        tmp_path,
        {"docs": "docs", "sources": "sources", "format": "json", "out": str(tmp_path / "store")},
        {"event_name": "pull_request", "base_ref": "main", "action_path": str(ROOT)},
    )
    audit = next(r for r in records if r["step"].get("id") == "audit")
    assert audit["rc"] == 0, audit["stderr"][-2000:]
    assert "--changed-since origin/main" in audit["stdout"]
    assert audit["outputs"]["exit-code"] == "1"  # the edit contradicts the SLA policy
    report = json.loads(Path(audit["outputs"]["report"]).read_text())
    assert report["scope"] == "changed" and report["changed_since"] == "origin/main"
    assert report["documents_audited"] == ["sla.md"]
    assert report["contradicted"] >= 1
    last = records[-1]
    assert last["step"]["name"] == "Fail on findings" and last["rc"] == 1
    assert "kbaudit found claims labelled contradicted,stale (exit 1)" in last["stdout"]


def test_the_action_with_a_revision_that_does_not_exist_stops_with_exit_2(tmp_path):
    repo = make_demo_repo(tmp_path)
    records = run_action(
        repo,
        tmp_path,
        {"docs": "docs", "sources": "sources", "format": "json", "changed-since": "no-such-rev", "out": str(tmp_path / "store")},
        {"event_name": "push", "base_ref": "", "action_path": str(ROOT)},
    )
    audit = records[-1]
    assert audit["step"].get("id") == "audit" and audit["rc"] == 2
    assert audit["outputs"]["exit-code"] == "2"
    lines = audit["stderr"].strip().splitlines()
    assert len(lines) == 1 and "revision 'no-such-rev' not found" in lines[0]
    assert not (tmp_path / "store" / "runs").exists()


# ---- the pre-commit hook -----------------------------------------------------------------------
def hook_repo(tmp_path: Path) -> Path:
    repo = make_demo_repo(tmp_path)
    (repo / "kbaudit.toml").write_text(f'docs = "docs"\nsources = ["sources"]\nout = "kbaudit-out"\ntoday = "{DEMO_TODAY}"\n')
    (repo / ".gitignore").write_text("kbaudit-out/\n.prefect/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "kbaudit settings")
    return repo


def try_repo(repo: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**base_env(tmp_path), "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "kbaudit", "--verbose"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_hook_audits_the_staged_page_only_and_fails_on_its_finding(tmp_path):
    repo = hook_repo(tmp_path)
    contradicting_edit(repo)
    git(repo, "add", "docs/sla.md")
    pricing = repo / "docs" / "pricing.md"
    pricing.write_text(pricing.read_text() + "\nThe Pro plan costs $1 per month.\n")  # unstaged: not part of the commit

    done = try_repo(repo, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-3000:]
    assert "changed since HEAD: 1 document(s) audited: sla.md" in out
    assert re.search(r"contradicted\s+[1-9]", out)
    assert "$1 per month" in pricing.read_text()  # pre-commit put the unstaged change back


def test_the_hook_is_skipped_when_no_kb_page_is_staged(tmp_path):
    repo = hook_repo(tmp_path)
    (repo / "build.sh").write_text("echo hi\n")
    git(repo, "add", "build.sh")
    done = try_repo(repo, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert re.search(r"kbaudit \(fact-check the changed KB pages\)\.+\(no files to check\)Skipped", out)
