"""`kbaudit bench nights`: nightly audits of a copy of the demo KB with scripted changes and
decisions, the review invariants checked after each night (bench/nights.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main as cli


@pytest.mark.slow
def test_bench_nights_prints_a_night_per_line_and_the_invariants_hold(tmp_path: Path, capsys):
    out = tmp_path / "nights.json"
    # Five nights: decisions on nights 2 (approve), 3 (reject), 4 (approve), apply on night 4,
    # a page edited on night 5; the rules tier (D0) drafts the demo's edits without loading a model.
    assert cli(["bench", "nights", "--nights", "5", "--depth", "D0", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    lines = [line for line in printed.splitlines() if line.strip()[:1].isdigit() and line.split()[0].isdigit()]
    assert [int(line.split()[0]) for line in lines] == [1, 2, 3, 4, 5]
    assert all(line.rstrip().endswith("ok") for line in lines), printed
    metrics = json.loads(out.read_text())
    assert metrics["invariants_held"] is True and metrics["violations"] == 0
    assert metrics["decisions"] == 3  # nights 2, 3 and 4, as the script above decides
    assert metrics["max_queue"] > 0 and metrics["edits_applied"] > 0
    assert metrics["store_mb_last"] > metrics["store_mb_first"] > 0
