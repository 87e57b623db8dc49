"""Canned queries over the store's published views (kb/store/views.py, kb/store/views_reports.py).

Everything in `reports/` reads the store through these functions, and these read only views,
with values passed as parameters (never formatted into the SQL). Each returns plain Python rows
(dicts; None for SQL NULL, lists for lists, dates and datetimes as such).
"""

from __future__ import annotations

import math

from kb.config import ConfigError
from kb.records import LABELS
from kb.store import Store

CHANGES = ("new_contradiction", "newly_stale", "newly_uncertain", "fixed")


def _value(v):
    if v is None:
        return None
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):  # numpy arrays and scalars
        v = v.tolist()
    to_pydatetime = getattr(v, "to_pydatetime", None)  # pandas Timestamp
    if to_pydatetime is not None:
        return to_pydatetime()
    if isinstance(v, float) and math.isnan(v):
        return None
    try:
        import pandas as pd

        if not isinstance(v, (list, dict, str)) and pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return v


# DATE columns come back from pandas as midnight datetimes; give them back as dates.
DATE_COLUMNS = frozenset({"source_date", "updated", "night", "evidence_date", "verified_until", "review_due", "run_date"})


def rows(store: Store, sql: str, params: list | None = None) -> list[dict]:
    frame = store.query(sql, params or [])
    out = []
    for rec in frame.to_dict("records"):
        row = {k: _value(v) for k, v in rec.items()}
        for k in DATE_COLUMNS & row.keys():
            as_date = getattr(row[k], "date", None)  # a datetime or Timestamp
            if as_date is not None:
                row[k] = as_date()
        out.append(row)
    return out


def resolve_run(store: Store, run_id: str | None) -> str:
    """The run asked for, or the newest; a usage error when there is none."""
    run_ids = store.run_ids()
    if not run_ids:
        raise ConfigError(f"no completed run in {store.root}")
    if run_id is None:
        return run_ids[-1]
    if run_id not in run_ids:
        raise ConfigError(f"no run {run_id!r} in {store.root}")
    return run_id


def previous_run(store: Store, run_id: str) -> str | None:
    # The full run before it: a --changed-since run is compared with the KB's last full audit.
    found = rows(store, "SELECT max(run_id) AS prev FROM full_runs WHERE run_id < ?", [run_id])
    return found[0]["prev"] if found else None


def run_row(store: Store, run_id: str) -> dict:
    return rows(store, "SELECT * FROM runs WHERE run_id = ?", [run_id])[0]


def documents(store: Store, run_id: str) -> list[dict]:
    """The run's documents with status, score and claims per label (as of that run)."""
    counts = ", ".join(f"count(*) FILTER (WHERE a.label = '{label}') AS {label}" for label in LABELS)
    return rows(
        store,
        f"""WITH a AS ({_AS_OF_SQL})
            SELECT d.doc_id, d.version_id, d.title, d.owner, d.owner_source, d.risk, d.updated, d.status, d.score,
                   d.score_components, d.review_interval_days, d.verified_until, d.review_due, {counts}, count(a.label) AS verdicts
            FROM documents_history d LEFT JOIN a ON a.doc_id = d.doc_id
            WHERE d.run_id = ?
            GROUP BY ALL
            ORDER BY d.score, d.doc_id""",
        [run_id, run_id, run_id],
    )


# A claim's verdict "as of" a run: its newest verdict in that run or before (parameters: run, run).
_AS_OF_SQL = """
    SELECT c.claim_id, c.doc_id, c.version_id, c.start, c."end", c.source_text, c.text, c.type, c.risk,
           c.checkworthy, c.section, c.requirements, v.run_id AS verdict_run, v.label, v.confidence, v.tier, v.rationale,
           v.gap_type, v.gap_severity, v.action, v.evidence_ids, v.claim_value, v.evidence_value,
           v.evidence_sentence, v.reused
    FROM claims_history c LEFT JOIN verdicts v ON v.claim_id = c.claim_id AND v.run_id <= ?
    WHERE c.run_id = ?
    QUALIFY row_number() OVER (PARTITION BY c.claim_id ORDER BY v.run_id DESC NULLS LAST) = 1"""


def claims(store: Store, run_id: str) -> list[dict]:
    """Every claim of the run with its verdict as of that run (label None: not checked)."""
    return rows(store, f"SELECT * FROM ({_AS_OF_SQL}) ORDER BY doc_id, start, claim_id", [run_id, run_id])


def evidence(store: Store, run_id: str, per_claim: int | None = None, per_supported: int | None = None) -> list[dict]:
    """The evidence each claim's verdict was decided on, best rank first. ``per_claim``: only the
    best that many of each claim (``per_supported``: of each supported claim), with the columns
    the report shows and ``passages``, how many the claim has in all."""
    if per_claim is None:
        return rows(
            store,
            f"""WITH a AS ({_AS_OF_SQL})
                SELECT e.* FROM evidence e JOIN a ON e.claim_id = a.claim_id AND e.run_id = a.verdict_run
                ORDER BY e.claim_id, e.rank""",
            [run_id, run_id],
        )
    return rows(
        store,
        f"""WITH a AS ({_AS_OF_SQL})
            SELECT e.claim_id, e.evidence_id, e.rank, e.source_id, e.source_date, e.score_fused, e.passage, e.sentence,
                   count(*) OVER (PARTITION BY e.claim_id) AS passages
            FROM evidence e JOIN a ON e.claim_id = a.claim_id AND e.run_id = a.verdict_run
            QUALIFY row_number() OVER (PARTITION BY e.claim_id ORDER BY e.rank)
                    <= CASE WHEN a.label = 'supported' THEN coalesce(?, ?) ELSE ? END
            ORDER BY e.claim_id, e.rank""",
        [run_id, run_id, per_supported, per_claim, per_claim],
    )


def edits(store: Store, run_id: str) -> list[dict]:
    return rows(store, "SELECT * FROM edits WHERE run_id = ? ORDER BY doc_id, start, edit_id", [run_id])


def receipts(store: Store, receipt_ids: list[str]) -> list[dict]:
    if not receipt_ids:
        return []
    return rows(
        store,
        "SELECT * FROM receipts WHERE list_contains(?, receipt_id) "
        "QUALIFY row_number() OVER (PARTITION BY receipt_id ORDER BY run_id) = 1 ORDER BY receipt_id",
        [sorted(set(receipt_ids))],
    )


def ingest_errors(store: Store, run_id: str) -> list[dict]:
    return rows(store, "SELECT path, stage, error FROM ingest_errors WHERE run_id = ? ORDER BY path", [run_id])


def label_trend(store: Store, until: str | None = None) -> list[dict]:
    return rows(store, "SELECT * FROM label_trend WHERE run_id <= coalesce(?, run_id) ORDER BY run_id", [until])


def changes(store: Store, run_id: str) -> list[dict]:
    """What changed in this run against the one before it (see the claim_changes macro)."""
    return rows(store, "SELECT * FROM claim_changes(?, ?)", [run_id, previous_run(store, run_id)])


def change_counts(found: list[dict]) -> dict[str, int]:
    return {name: sum(1 for r in found if r["change"] == name) for name in CHANGES}


def pages_due(store: Store, run_id: str) -> list[dict]:
    """The run's pages due for review (the pages_due_in macro, kb/store/views_reports.py)."""
    return rows(store, "SELECT * FROM pages_due_in(?)", [run_id])


def version_texts(store: Store, version_ids: list[str]) -> dict[str, str]:
    """The content of document versions the store holds (versions accepted by a run)."""
    if not version_ids:
        return {}
    found = rows(store, "SELECT version_id, content FROM versions WHERE list_contains(?, version_id)", [sorted(set(version_ids))])
    return {r["version_id"]: r["content"] for r in found if r["content"] is not None}


def removed_documents(store: Store, run_id: str) -> list[dict]:
    """Documents the previous run had and this run does not, with their open findings then."""
    previous = previous_run(store, run_id)
    if previous is None:
        return []
    return rows(
        store,
        f"""WITH a AS ({_AS_OF_SQL})
            SELECT p.doc_id, p.title, p.owner, p.owner_source,
                   count(a.claim_id) FILTER (WHERE a.label IN ('contradicted', 'stale', 'uncertain')) AS findings
            FROM documents_history p LEFT JOIN a ON a.doc_id = p.doc_id
            WHERE p.run_id = ? AND p.doc_id NOT IN (SELECT doc_id FROM documents_history WHERE run_id = ?)
            GROUP BY ALL ORDER BY p.doc_id""",
        [previous, previous, previous, run_id],
    )


def notifications(store: Store, run_id: str) -> list[dict]:
    return rows(store, "SELECT * EXCLUDE (run_id) FROM notifications WHERE run_id = ? ORDER BY sent_at", [run_id])
