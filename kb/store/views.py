"""The DuckDB views that make up the store's published interface.

`<table>` views show rows of completed runs only (a run is complete once its `runs` row
exists). `claims` and `documents` show the current state (the newest full run: a
`--changed-since` run audits a few documents and must not make the KB look as if it shrank to
them; `full_runs` lists the full ones); the other tables keep every run's rows, with `run_id`.
"""

from __future__ import annotations

from collections.abc import Callable

from kb.store import views_reports, views_review
from kb.store.schema import APPEND_ONLY, RUN_TABLES

CURRENT_STATE = ("claims", "documents")
# Columns added to a table after stores were first written: a store whose files all predate
# them still gets them (NULL), so views that name them work before its next run.
ADDED_COLUMNS: dict[str, dict[str, str]] = {
    "documents": {"owner_source": "VARCHAR", "review_interval_days": "BIGINT", "verified_until": "DATE", "review_due": "DATE"},
}
LATEST_FULL_RUN = "(SELECT max(run_id) FROM full_runs)"


def _read(glob: str, table: str = "") -> str:
    quoted = glob.replace("'", "''")
    scan = f"read_parquet('{quoted}', hive_partitioning = true, hive_types_autocast = false, union_by_name = true)"
    added = ADDED_COLUMNS.get(table)
    if not added:
        return scan
    typed = ", ".join(f"NULL::{kind} AS {name}" for name, kind in added.items())
    return f"(SELECT * FROM {scan} UNION ALL BY NAME SELECT {typed} WHERE false)"


def view_sql(glob_for: Callable[[str], str], runs_have_scope: bool = True) -> list[str]:
    """`runs_have_scope`: False for a store whose runs were all written before the `scope` column
    existed (every one of them is a full run)."""
    statements = [
        f"CREATE OR REPLACE VIEW runs AS SELECT * FROM {_read(glob_for('runs'))}",
        "CREATE OR REPLACE VIEW full_runs AS SELECT * FROM runs" + (" WHERE coalesce(scope, 'full') = 'full'" if runs_have_scope else ""),
    ]
    latest = LATEST_FULL_RUN
    for table in APPEND_ONLY:
        statements.append(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM {_read(glob_for(table))}")
    for table in RUN_TABLES:
        if table == "runs":
            continue
        source = _read(glob_for(table), table)
        complete = f"SELECT * FROM {source} WHERE run_id IN (SELECT run_id FROM runs)"
        if table in CURRENT_STATE:
            statements.append(f"CREATE OR REPLACE VIEW {table}_history AS {complete}")
            statements.append(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM {table}_history WHERE run_id = {latest}")
        else:
            statements.append(f"CREATE OR REPLACE VIEW {table} AS {complete}")
    statements += [
        # The newest verdict for each claim that the KB still has.
        """CREATE OR REPLACE VIEW latest_verdicts AS
           SELECT v.*, c.doc_id, c.text AS claim_text, c.type, c.risk
           FROM verdicts v JOIN claims c USING (claim_id)
           QUALIFY row_number() OVER (PARTITION BY v.claim_id ORDER BY v.run_id DESC) = 1""",
        # Edits waiting for a human, newest run first, with the document's owner.
        """CREATE OR REPLACE VIEW review_queue AS
           SELECT e.*, d.owner, d.title
           FROM edits e LEFT JOIN documents d USING (doc_id)
           WHERE e.status = 'queued' AND e.run_id = (SELECT max(run_id) FROM full_runs)""",
    ]
    # Views that other stages publish (review workflow, reports) come after the base views.
    return statements + views_review.view_sql() + views_reports.view_sql()
