"""`kbaudit report` and `kbaudit sql`: read the store's views."""

from __future__ import annotations

from flows.output import format_summary, print_json
from kb.config import ConfigError


def cmd_report(args) -> int:
    from kb.store import Store

    store = Store(args.out)
    run_ids = store.run_ids()
    if not run_ids:
        raise ConfigError(f"no completed run in {args.out}")
    run_id = args.run or run_ids[-1]
    if run_id not in run_ids:
        raise ConfigError(f"no run {run_id!r} in {args.out}")
    frame = store.query("SELECT * FROM runs WHERE run_id = ?", [run_id])
    row = frame.iloc[0].to_dict()
    if args.json:
        print_json(row)
    else:
        print(format_summary(row))
    return 0


def cmd_sql(args) -> int:
    import duckdb

    from kb.store import Store

    try:
        frame = Store(args.out).query(args.query)
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


def register(sub) -> None:
    report = sub.add_parser("report", help="print a run's summary")
    report.add_argument("--run", help="run id (default: the newest)")
    report.add_argument("--out", default="kbaudit-out")
    report.add_argument("--json", action="store_true")
    report.set_defaults(func=cmd_report)

    sql = sub.add_parser("sql", help="query the store's DuckDB views")
    sql.add_argument("query")
    sql.add_argument("--out", default="kbaudit-out")
    sql.add_argument("--json", action="store_true")
    sql.set_defaults(func=cmd_sql)
