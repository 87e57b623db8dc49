"""The layering of docs/CONTRACTS.md, as import-linter contracts in pyproject.toml: the top-level
packages stack one way (cli; bench; flows and review_app; tasks; reports; training; kb); kb/
never imports Prefect or another package of the project; reports and the review app never
import Prefect or the flows; inside kb imports point down the layers. The checker runs on this checkout, and on a copy with wrong imports added
to show that it does catch one."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
PACKAGES = ("kb", "flows", "tasks", "reports", "cli", "review_app", "bench", "training")


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_contracts_hold():
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 kept, 0 broken" in done.stdout


def test_a_wrong_import_breaks_its_contract(tmp_path):
    for name in PACKAGES:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "demo", "weights"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with open(tmp_path / "kb" / "store" / "cache.py", "a", encoding="utf-8") as f:
        f.write("\nfrom kb.chain import run_audit  # a lower layer importing the chain\n")
    with open(tmp_path / "reports" / "html.py", "a", encoding="utf-8") as f:
        f.write("\nimport flows.audit\n")
    done = _lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 kept, 3 broken" in done.stdout
    assert "kb.store.cache -> kb.chain" in done.stdout
    assert "reports.html -> flows.audit" in done.stdout
