"""`kbaudit report`, `sql`, `export` and `verify`: read the store's views; verify one answer."""

from __future__ import annotations

import sys
from pathlib import Path

from cli.output import add_format_arguments, chosen_format, dumps_json, format_summary, print_json, render_findings, write_output
from kb.config import ConfigError
from kb.evidence.receipts import verify_stored_evidence
from kb.records import LABELS
from kb.store import Store
from kb.store.remote import open_for_reading
from kb.verifyloop import PROBLEMS, VerifyLoop
from reports import queries as q
from reports.export import export_verifyloop
from reports.html import render

OUT_HELP = "store folder, or store URL such as s3://bucket/prefix (default ./kbaudit-out)"


def _root(out: str) -> Path:
    """The store folder to read: --out itself, or for a store URL its local mirror, pulled first."""

    return open_for_reading(out)


def _fail_on(raw: str | None) -> tuple[str, ...]:
    labels = tuple(p.strip() for p in (raw or "").split(",") if p.strip())
    bad = [label for label in labels if label not in LABELS]
    if bad:
        raise ConfigError(f"--fail-on takes labels from {', '.join(LABELS)}; got {', '.join(bad)}")
    return labels


def format_pages_due(pages: list[dict]) -> str:
    if not pages:
        return ""
    lines = [f"\npages due for review: {len(pages)}"]
    for p in pages:
        due = p["review_due"].isoformat() if p["review_due"] else "no review date"
        late = f", {p['days_overdue']} days overdue" if p["days_overdue"] else ""
        lines.append(f"  {p['doc_id']:<32} due {due}{late}; owner {p['owner'] or '(none)'}; {p['findings']} open finding(s)")
    return "\n".join(lines)


def cmd_report(args) -> int:
    fmt = chosen_format(args)
    fail_on = _fail_on(args.fail_on)
    store = Store(_root(args.out))
    store.connect(read_only=True).close()  # a missing store is a usage error (exit 2)
    run_id = q.resolve_run(store, args.run)
    row = q.run_row(store, run_id)
    changes = q.change_counts(q.changes(store, run_id))
    pages = q.pages_due(store, run_id)
    sent = q.notifications(store, run_id)
    if args.html:
        target = Path(args.html)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(store, run_id), "utf-8")
    previous = q.previous_run(store, run_id)
    text = (
        format_summary(row)
        + f"\n\nsince {previous or 'the start (no earlier run)'}: "
        + ", ".join(f"{n} {name.replace('_', ' ')}" for name, n in changes.items())
        + format_pages_due(pages)
        + "".join(
            f"\nnotification: {n['status']} ({n['format']}, {n['target']}, {n['attempts']} attempt(s)"
            + (f", HTTP {n['http_status']}" if n["http_status"] else "")
            + (f": {n['error']}" if n["error"] else "")
            + ")"
            for n in sent
        )
        + (f"\nhtml report: {args.html}" if args.html else "")
    )
    if fmt == "text":
        rendered = text + "\n"
    elif fmt == "json":
        rendered = (
            dumps_json(
                {**row, "changes": changes, "pages_due": pages, "notifications": sent, **({"html": str(args.html)} if args.html else {})}
            )
            + "\n"
        )
    else:
        rendered = render_findings(store, run_id, fmt, fail_on, args.junit_per_claim)
    if args.output:
        write_output(args.output, rendered)
        print(text)
    else:
        sys.stdout.write(rendered)
    return 1 if any(int(row.get(label) or 0) for label in fail_on) else 0


def cmd_sql(args) -> int:
    import duckdb

    try:
        frame = Store(_root(args.out)).query(args.query)
    except duckdb.Error as exc:
        raise ConfigError(f"query failed: {str(exc).splitlines()[0]}") from None
    if args.json:
        print(frame.to_json(orient="records", date_format="iso", default_handler=str))
    else:
        with_pd_options(lambda: print(frame.to_string(index=False)))
    return 0


def with_pd_options(fn) -> None:
    import pandas as pd

    with pd.option_context("display.max_colwidth", 80, "display.width", 200, "display.max_rows", 500):
        fn()


def cmd_export(args) -> int:
    store = Store(_root(args.out))
    store.connect(read_only=True).close()
    paths = export_verifyloop(store, Path(args.dest), args.run)
    if args.json:
        print_json({"dest": str(args.dest), "files": [str(p) for p in paths]})
    else:
        print(f"exported {len(paths)} VerifyLoop report(s) and manifest.json to {args.dest}")
    return 0


def cmd_verify(args) -> int:
    import datetime as dt

    answer_path = Path(args.answer)
    if not answer_path.is_file():
        raise ConfigError(f"answer file not found: {answer_path}")
    for src in args.sources:
        if not Path(src).exists():
            raise ConfigError(f"sources not found: {src}")
    if args.tool_logs and not Path(args.tool_logs).is_file():
        raise ConfigError(f"tool logs not found: {args.tool_logs}")
    fail_on = tuple(p.strip() for p in (args.fail_on or "").split(",") if p.strip())
    bad = [p for p in fail_on if p not in PROBLEMS]
    if bad:
        raise ConfigError(f"--fail-on takes problems from {', '.join(PROBLEMS)}; got {', '.join(bad)}")
    try:
        today = dt.date.fromisoformat(args.today) if args.today else None
    except ValueError:
        raise ConfigError(f"--today must be YYYY-MM-DD; got {args.today!r}") from None
    try:
        answer = answer_path.read_text("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"answer file is not UTF-8 text: {answer_path}") from None
    loop = VerifyLoop(depth=args.depth, today=today)
    try:
        report = loop.verify(answer=answer, sources=[Path(s) for s in args.sources], task=args.task, tool_logs=args.tool_logs)
    except ValueError as exc:  # bad tool logs, unparsable answer
        raise ConfigError(str(exc).splitlines()[0]) from None
    if args.json:
        print_json(report.to_dict())
    else:
        print(format_verify(report.to_dict()))
    return 1 if any(g["problem"] in fail_on for g in report.gaps) else 0


def format_verify(data: dict) -> str:
    claims = {c["claim_id"]: c for c in data["claims"]}
    checked = [c for c in data["claims"] if c["label"]]
    supported = sum(1 for c in checked if c["label"] == "supported")
    lines = [
        f"status: {data['status']}  score: {data['verification_score']:.2f}  depth: {data['verification_depth']}  "
        f"claims: {len(checked)} checked, {supported} supported, {len(data['gaps'])} problem(s)",
    ]
    evidence = {}  # the evidence the verdict was decided on first, else the best-ranked
    for e in sorted(data["evidence"], key=lambda e: (e["evidence_id"] not in claims[e["claim_id"]]["evidence_ids"], e["rank"])):
        evidence.setdefault(e["claim_id"], e)
    if data["gaps"]:
        lines += ["", "problems:"]
    for gap in data["gaps"]:
        claim = claims[gap["claim_id"]]
        lines.append(f"  {gap['problem']:<22}{claim['source_text']}")
        if gap["detail"]:
            lines.append(f"  {'':<22}why: {gap['detail']}")
        ev = evidence.get(gap["claim_id"])
        if ev and claim["kind"] == "source":
            lines.append(f"  {'':<22}evidence: {ev['source_id']} ({ev['source_date'] or 'undated'}): {ev['sentence']}")
        if gap["action"]:
            lines.append(f"  {'':<22}action: {gap['action']}")
    if data["corrected_answer"] is not None:
        lines += ["", "corrected answer:", data["corrected_answer"]]
    return "\n".join(lines)


def cmd_check_receipts(args) -> int:
    """Re-verify a run's stored evidence against its signed retrieval receipts."""

    store = Store(_root(args.out))
    runs = store.run_ids()
    if not runs:
        raise ConfigError(f"no completed run in {args.out}")
    run_id = args.run or runs[-1]
    if run_id not in runs:
        raise ConfigError(f"no run {run_id!r} in {args.out}")
    problems = verify_stored_evidence(store, run_id)
    if args.json:
        print_json({"run_id": run_id, "problems": problems})
    elif problems:
        print(f"run {run_id}: {len(problems)} problem(s) with stored evidence:")
        for line in problems:
            print(f"  {line}")
    else:
        print(f"run {run_id}: every stored evidence row matches its signed receipt")
    return 1 if problems else 0


def register(sub) -> None:
    check = sub.add_parser("check-receipts", help="re-verify a run's stored evidence against its signed receipts")
    check.add_argument("--run", help="run id (default: the newest)")
    check.add_argument("--out", default="kbaudit-out", help=OUT_HELP)
    check.add_argument("--json", action="store_true")
    check.set_defaults(func=cmd_check_receipts)

    report = sub.add_parser("report", help="a run's summary; --html writes the HTML report")
    report.add_argument("--run", help="run id (default: the newest)")
    report.add_argument("--out", default="kbaudit-out", help=OUT_HELP)
    report.add_argument("--html", metavar="FILE", help="write the self-contained HTML report of the run to FILE")
    report.add_argument("--json", action="store_true", help="the summary as JSON (--format json)")
    report.add_argument("--fail-on", help="comma-separated labels that make the exit status 1 (as for kbaudit run)")
    add_format_arguments(report)
    report.set_defaults(func=cmd_report)

    sql = sub.add_parser("sql", help="query the store's DuckDB views")
    sql.add_argument("query")
    sql.add_argument("--out", default="kbaudit-out", help=OUT_HELP)
    sql.add_argument("--json", action="store_true")
    sql.set_defaults(func=cmd_sql)

    export = sub.add_parser("export", help="export a run, one VerifyLoop JSON report per document")
    export.add_argument("--format", required=True, choices=["verifyloop"])
    export.add_argument("--run", help="run id (default: the newest)")
    export.add_argument("--dest", required=True, metavar="DIR", help="folder to write the reports to")
    export.add_argument("--out", default="kbaudit-out", help=OUT_HELP)
    export.add_argument("--json", action="store_true", help="print the written files as JSON")
    export.set_defaults(func=cmd_export)

    verify = sub.add_parser("verify", help="verify one answer against sources (and tool logs)")
    verify.add_argument("--answer", required=True, metavar="FILE", help="the answer to verify (text or Markdown)")
    verify.add_argument(
        "--sources", required=True, action="append", metavar="DIR", help="folder, .jsonl or .parquet of dated sources (repeatable)"
    )
    verify.add_argument("--task", help="the task the answer responds to (recorded in the report)")
    verify.add_argument("--tool-logs", metavar="FILE", help="JSON or JSON lines: the tool calls made for the answer")
    verify.add_argument("--depth", default="D3", help="D0..D5 (default D3)")
    verify.add_argument("--today", help="pin today's date (YYYY-MM-DD) for freshness checks")
    verify.add_argument(
        "--fail-on",
        help="comma-separated problems that make the exit status 1 "
        "(contradicted, stale, uncertain, missing_tool_receipt, tool_result_mismatch)",
    )
    verify.add_argument("--json", action="store_true", help="print the VerifyLoop report as JSON")
    verify.set_defaults(func=cmd_verify)
