"""The process environment the command line sets up: Prefect's home is in the user's cache, so a
run leaves nothing in the folder it was started from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.env import prefect_home, prepare_environment

REPO = Path(__file__).resolve().parent.parent


def test_prefect_home_is_in_the_user_cache_unless_set(monkeypatch, tmp_path):
    monkeypatch.delenv("PREFECT_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    prepare_environment()
    assert os.environ["PREFECT_HOME"] == str(tmp_path / "xdg" / "kbaudit" / "prefect")
    assert (tmp_path / "xdg" / "kbaudit" / "prefect").is_dir()  # Prefect makes its home but not the folders above
    assert list(tmp_path.iterdir()) == [tmp_path / "xdg"]
    assert prefect_home({"HOME": "/home/u"}) == Path.home() / ".cache" / "kbaudit" / "prefect"
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "mine"))
    prepare_environment()
    assert os.environ["PREFECT_HOME"] == str(tmp_path / "mine")  # an explicit PREFECT_HOME wins


@pytest.mark.slow
def test_kbaudit_run_leaves_nothing_in_the_working_folder(tmp_path):
    kb, sources, here = tmp_path / "kb", tmp_path / "sources", tmp_path / "here"
    for folder in (kb, sources, here):
        folder.mkdir()
    (kb / "limits.md").write_text("# Limits\n\nThe default timeout is 30 seconds for every request.\n", "utf-8")
    (sources / "limits.md").write_text(
        "---\nid: limits\ntitle: Limits\npublished_at: 2025-01-01\n---\nThe default timeout is 60 seconds for every request.\n",
        "utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_HOME"}
    env.update(PYTHONPATH=str(REPO), XDG_CACHE_HOME=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "cli.main", "run", str(kb), "--sources", str(sources), "--out", str(tmp_path / "store"),
           "--depth", "D0", "--today", "2025-06-01"]  # fmt: skip
    done = subprocess.run(cmd, cwd=here, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(here.iterdir()) == []  # no .prefect, nothing else
    assert (tmp_path / "cache" / "kbaudit" / "prefect").is_dir()
