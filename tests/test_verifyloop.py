"""Single-answer verification (kb/verifyloop/__init__.py) and `kbaudit verify`."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import jsonschema
import pytest

from kb.verifyloop import (
    ToolEntry,
    VerifyLoop,
    apply_corrections,
    build_report,
    check_tool_claim,
    is_tool_claim,
    load_schema,
    load_tool_logs,
)

TODAY = dt.date(2026, 6, 1)
ANSWER = (
    "The Pro plan costs 49 dollars per month. "
    "Backups are kept for 30 days. "
    "The Team plan costs 79 dollars per month. "
    "I ran the query and it returned 42 rows.\n"
)
WRONG = "The Team plan costs 79 dollars per month."
TOOL = "I ran the query and it returned 42 rows."


def _validator(name: str = "verifyloop-report.schema.json"):
    return jsonschema.Draft202012Validator(load_schema(name), format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize(
    "sentence, expected",
    [
        (TOOL, True),
        ("We executed the migration script twice.", True),
        ("The query returned 17 rows for March.", True),
        ("The test suite passed on the main branch.", True),
        ("The search showed three matching incidents.", True),
        ("The Pro plan costs 49 dollars per month.", False),
        ("A query can return at most 500 rows.", False),
        ("Backups are kept for 30 days.", False),
    ],
)
def test_tool_claims_are_recognised(sentence, expected):
    assert is_tool_claim(sentence) is expected


def test_tool_claims_match_only_an_entry_of_the_same_kind_with_the_same_numbers():
    sql = ToolEntry("duckdb", "SELECT * FROM orders", [{"id": i} for i in range(42)], entry_id="t1")
    count = ToolEntry("sql", "SELECT count(*) FROM orders", {"count": 41}, entry_id="t2")
    search = ToolEntry("web_search", "rate limits", "42 results", entry_id="t3")
    assert check_tool_claim(TOOL, [search]) == ("missing_tool_receipt", None)
    assert check_tool_claim(TOOL, []) == ("missing_tool_receipt", None)
    assert check_tool_claim(TOOL, [count]) == ("tool_result_mismatch", count)
    assert check_tool_claim(TOOL, [count, sql]) == ("supported", sql)  # 42 rows: the list's length
    assert check_tool_claim("The search showed 42 results.", [sql, search]) == ("supported", search)


def test_tool_logs_load_from_json_jsonl_and_objects(tmp_path: Path):
    entries = [{"tool": "sql", "input": "SELECT 1", "output": [1]}, {"name": "search", "args": {"q": "x"}, "result": "none"}]
    as_json, as_jsonl = tmp_path / "a.json", tmp_path / "a.jsonl"
    as_json.write_text(json.dumps({"entries": entries}))
    as_jsonl.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    loaded = load_tool_logs(as_json)
    assert [(e.tool, e.input, e.output) for e in loaded] == [("sql", "SELECT 1", [1]), ("search", {"q": "x"}, "none")]
    assert [e.entry_id for e in load_tool_logs(as_jsonl)] == [e.entry_id for e in loaded]  # content ids
    assert load_tool_logs(entries)[0].receipt["input_hash"] == loaded[0].receipt["input_hash"]
    bad = tmp_path / "bad.json"
    bad.write_text('[{"input": "no tool name"}]')
    with pytest.raises(ValueError, match="no 'tool' name"):
        load_tool_logs(bad)


def test_apply_corrections_replaces_spans_and_tidies_spaces():
    text = "A is 1. B is 2. C is 3."
    assert apply_corrections(text, [(5, 6, "7"), (8, 15, "")]) == "A is 7. C is 3."


def test_an_empty_report_validates_against_the_schema():
    report = build_report(
        trace_id="t",
        subject={"kind": "answer", "doc_id": None, "version_id": "v", "title": None, "run_id": None},
        answer="",
        task=None,
        depth="D3",
        status="UNCERTAIN",
        score=0.0,
        score_components={},
        claims=[],
        verdicts=[],
        evidence=[],
        receipts=[],
        edits=[],
        corrected_answer=None,
    )
    _validator().validate(report)


# ---- end to end on a small sources folder ------------------------------------------------
@pytest.fixture(scope="module")
def case(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("verifyloop")
    sources = root / "sources"
    sources.mkdir()
    (sources / "pricing.md").write_text(
        "---\nid: pricing\ntitle: Pricing\npublished_at: 2025-03-01\n---\n\n# Pricing\n\n"
        "The Pro plan costs 49 dollars per month. The Team plan costs 99 dollars per month.\n"
    )
    (sources / "backups.md").write_text(
        "---\nid: backups\ntitle: Backup policy\npublished_at: 2025-02-01\n---\n\n# Backups\n\n"
        "Backups are kept for 30 days. Backups run every 6 hours.\n"
    )
    answer = root / "answer.md"
    answer.write_text(ANSWER)
    logs = root / "tools.jsonl"  # the agent searched the web, but never ran a query
    logs.write_text(json.dumps({"tool": "web_search", "input": "team plan price", "output": "3 results"}) + "\n")
    report = VerifyLoop(depth="D3", today=TODAY).verify(task="Summarise our plans", answer=ANSWER, sources=sources, tool_logs=logs)
    return {"root": root, "sources": sources, "answer": answer, "logs": logs, "report": report}


@pytest.mark.slow
def test_verify_reports_exactly_the_wrong_number_and_the_unsupported_tool_claim(case):
    report = case["report"]
    data = report.to_dict()
    _validator().validate(data)
    claims = {c["claim_id"]: c for c in data["claims"]}
    problems = sorted((g["problem"], claims[g["claim_id"]]["source_text"]) for g in report.gaps)
    assert problems == [("contradicted", WRONG), ("missing_tool_receipt", TOOL)], json.dumps(data["claims"], indent=1)
    labels = {c["source_text"]: c["label"] for c in data["claims"] if c["checkworthy"]}
    assert labels["The Pro plan costs 49 dollars per month."] == "supported"
    assert labels["Backups are kept for 30 days."] == "supported"
    assert report.status != "VERIFIED"
    assert "99 dollars" in report.corrected_answer and "79" not in report.corrected_answer
    assert "42 rows" not in report.corrected_answer and "Backups are kept for 30 days." in report.corrected_answer
    wrong = next(c for c in data["claims"] if c["source_text"] == WRONG)
    decided = [e for e in data["evidence"] if e["evidence_id"] in wrong["evidence_ids"]]
    assert decided and any("99 dollars" in e["sentence"] for e in decided)


@pytest.mark.slow
def test_verify_cli_prints_the_problems_and_gates_on_fail_on(case, capsys):
    from cli.main import main

    args = [
        "verify",
        "--answer",
        str(case["answer"]),
        "--sources",
        str(case["sources"]),
        "--tool-logs",
        str(case["logs"]),
        "--today",
        TODAY.isoformat(),
    ]
    assert main(args + ["--fail-on", "missing_tool_receipt"]) == 1
    text = capsys.readouterr().out
    problem_lines = [line.split()[0] for line in text.splitlines() if line.startswith("  ") and not line.startswith("   ")]
    assert problem_lines == ["contradicted", "missing_tool_receipt"], text
    assert "corrected answer:" in text
    assert main(args + ["--json"]) == 0  # --json never changes the exit status; no --fail-on, no failure
    assert [g["problem"] for g in json.loads(capsys.readouterr().out)["gaps"]] == ["contradicted", "missing_tool_receipt"]
    assert main(["verify", "--answer", str(case["root"] / "missing.md"), "--sources", str(case["sources"])]) == 2
    assert main(args + ["--fail-on", "bogus"]) == 2


@pytest.mark.slow
def test_verify_reads_the_deep_verifier_endpoint_from_kbaudit_toml(case, tmp_path, monkeypatch, capsys):
    """`kbaudit verify` makes its settings as every command does: the endpoint configured in
    kbaudit.toml is the one the D3 escalation calls, and no message asks for what is set."""
    from cli.main import main
    from tests.test_llm import Server, completion

    server = Server(lambda body, headers, n: (200, completion("I cannot verify this from the evidence."), None, 0))
    try:
        workdir = tmp_path / "project"
        workdir.mkdir()
        (workdir / "kbaudit.toml").write_text(f'llm_base_url = "{server.base_url}"\nllm_model = "scripted"\n')
        monkeypatch.chdir(workdir)
        for name in ("KBAUDIT_LLM_BASE_URL", "KBAUDIT_LLM_MODEL"):
            monkeypatch.delenv(name, raising=False)
        loop = VerifyLoop(today=TODAY)
        assert (loop.settings.llm_base_url, loop.settings.llm_model, loop.depth) == (server.base_url, "scripted", "D3")
        code = main(["verify", "--answer", str(case["answer"]), "--sources", str(case["sources"]), "--today", TODAY.isoformat(), "--json"])
        assert code == 0
        report = json.loads(capsys.readouterr().out)
        assert server.requests, "the endpoint from kbaudit.toml was never called"
        assert "no deep verifier configured" not in json.dumps(report)
    finally:
        server.close()


def test_a_missing_endpoint_setting_is_named(monkeypatch):
    from kb.config import Settings
    from kb.escalate.route import missing_endpoint_settings

    message = missing_endpoint_settings(Settings(llm_base_url="http://127.0.0.1:9/v1"))
    assert "llm_model (KBAUDIT_LLM_MODEL)" in message and "llm_base_url" not in message
