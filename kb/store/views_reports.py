"""Views for the questions reviewers ask. Appended after the base views (kb/store/views.py).

Every statement only reads other views, so it sees completed runs only. Documented, with each
query and its output on the demo store, in docs/reports.md.

- ``label_trend``: claims per label for every full run (one row per run, oldest first), with
  the UTC date the run started (``night``) and its depth (``--changed-since`` runs audit a few
  documents, so their counts are left out).
- ``label_trend_nightly``: the same, keeping only the last run of each night.
- ``claim_changes(run, previous)``: a table macro: what changed between two runs, one row per
  claim whose label moved into ``contradicted`` (``new_contradiction``), ``stale``
  (``newly_stale``) or ``uncertain`` (``newly_uncertain``), or out of contradicted/stale into
  ``supported`` or out of the document altogether while the document is still there
  (``fixed``: the sentence was corrected or removed). A claim's label "as of" a run is its
  newest verdict in that run or before it, so incremental runs that re-verify only a part of
  the KB compare correctly.
- ``changes_since_previous``: ``claim_changes`` for the newest full run against the full one before it
  (against nothing for a store with one run: every problem is new).
- ``document_labels``: the newest run's documents with status, score and claims per label.
- ``documents_by_status``: documents of the newest run counted by status and risk.
- ``review_queue_by_owner``: the review queue counted by document owner.
- ``pages_due_in(run)``: a table macro: the run's pages due for review (front matter
  ``review_interval`` / ``verified_until``, kb/ingest/owners.py) on the run's date (its pinned ``today``,
  else the UTC day it started), with owner, days overdue and the page's open findings
  (contradicted, stale, uncertain claims as of that run); a page with an interval and no date
  to count from is due (``review_due`` NULL). ``pages_due``: the same for the newest run.
"""

from __future__ import annotations

LABEL_COUNTS = ",\n".join(
    f"count(v.claim_id) FILTER (WHERE v.label = '{label}') AS {label}" for label in ("supported", "contradicted", "stale", "uncertain")
)

_AS_OF = """
    SELECT c.claim_id, c.doc_id, c.text AS claim_text, c.risk, v.label
    FROM claims_history c
    JOIN verdicts v ON v.claim_id = c.claim_id AND v.run_id <= {run}
    WHERE c.run_id = {run}
    QUALIFY row_number() OVER (PARTITION BY c.claim_id ORDER BY v.run_id DESC) = 1"""

CHANGE_RULE = """CASE
        WHEN cur.label = 'contradicted' AND prev.label IS DISTINCT FROM 'contradicted' THEN 'new_contradiction'
        WHEN cur.label = 'stale' AND prev.label IS DISTINCT FROM 'stale' THEN 'newly_stale'
        WHEN cur.label = 'uncertain' AND prev.label IS DISTINCT FROM 'uncertain' THEN 'newly_uncertain'
        WHEN prev.label IN ('contradicted', 'stale') AND cur.label = 'supported' THEN 'fixed'
        WHEN prev.label IN ('contradicted', 'stale') AND cur.claim_id IS NULL
             AND prev.doc_id IN (SELECT doc_id FROM documents_history WHERE run_id = cur_run) THEN 'fixed'
    END"""


def view_sql() -> list[str]:
    return [
        f"""CREATE OR REPLACE VIEW label_trend AS
            SELECT r.run_id, CAST(timezone('UTC', r.started_at) AS DATE) AS night, r.depth,
                   {LABEL_COUNTS},
                   count(v.claim_id) AS verdicts
            FROM full_runs r LEFT JOIN verdicts v ON v.run_id = r.run_id
            GROUP BY r.run_id, r.started_at, r.depth
            ORDER BY r.run_id""",
        """CREATE OR REPLACE VIEW label_trend_nightly AS
            SELECT * FROM label_trend
            QUALIFY row_number() OVER (PARTITION BY night ORDER BY run_id DESC) = 1
            ORDER BY night""",
        f"""CREATE OR REPLACE MACRO claim_changes(cur_run, prev_run) AS TABLE
            WITH cur AS ({_AS_OF.format(run="cur_run")}),
                 prev AS ({_AS_OF.format(run="prev_run")}),
                 paired AS (
                    SELECT coalesce(cur.claim_id, prev.claim_id) AS claim_id,
                           coalesce(cur.doc_id, prev.doc_id) AS doc_id,
                           coalesce(cur.claim_text, prev.claim_text) AS claim_text,
                           coalesce(cur.risk, prev.risk) AS risk,
                           prev.label AS previous_label,
                           cur.label AS label,
                           {CHANGE_RULE} AS change
                    FROM cur FULL OUTER JOIN prev ON cur.claim_id = prev.claim_id)
            SELECT cur_run AS run_id, prev_run AS previous_run_id, change, doc_id, claim_id,
                   previous_label, label, risk, claim_text
            FROM paired WHERE change IS NOT NULL
            ORDER BY change, doc_id, claim_id""",
        """CREATE OR REPLACE VIEW changes_since_previous AS
            SELECT * FROM claim_changes(
                (SELECT max(run_id) FROM full_runs),
                (SELECT max(run_id) FROM full_runs WHERE run_id < (SELECT max(run_id) FROM full_runs)))""",
        f"""CREATE OR REPLACE VIEW document_labels AS
            SELECT d.doc_id, d.title, d.owner, d.risk, d.status, d.score,
                   {LABEL_COUNTS},
                   count(v.claim_id) AS verdicts
            FROM documents d LEFT JOIN latest_verdicts v ON v.doc_id = d.doc_id
            GROUP BY d.doc_id, d.title, d.owner, d.risk, d.status, d.score
            ORDER BY d.score, d.doc_id""",
        """CREATE OR REPLACE VIEW documents_by_status AS
            SELECT status, coalesce(risk, 'unset') AS risk, count(*) AS documents,
                   round(avg(score), 3) AS mean_score, list(doc_id ORDER BY doc_id) AS doc_ids
            FROM documents
            GROUP BY status, coalesce(risk, 'unset')
            ORDER BY status, risk""",
        f"""CREATE OR REPLACE MACRO pages_due_in(due_run) AS TABLE
            WITH r AS (
                SELECT run_id, coalesce(TRY_CAST(json_extract_string(config, '$.today') AS DATE),
                                        CAST(timezone('UTC', started_at) AS DATE)) AS run_date
                FROM runs WHERE run_id = due_run
            ), a AS ({_AS_OF.format(run="due_run")})
            SELECT d.run_id, d.doc_id, d.title, d.owner, d.owner_source, d.updated, d.review_interval_days,
                   d.verified_until, d.review_due, r.run_date,
                   CASE WHEN d.review_due IS NULL THEN NULL ELSE r.run_date - d.review_due END AS days_overdue,
                   count(a.claim_id) FILTER (WHERE a.label IN ('contradicted', 'stale', 'uncertain')) AS findings
            FROM documents_history d JOIN r ON r.run_id = d.run_id LEFT JOIN a ON a.doc_id = d.doc_id
            WHERE d.review_due <= r.run_date OR (d.review_due IS NULL AND d.review_interval_days IS NOT NULL)
            GROUP BY ALL
            ORDER BY d.review_due NULLS FIRST, d.doc_id""",
        """CREATE OR REPLACE VIEW pages_due AS SELECT * FROM pages_due_in((SELECT max(run_id) FROM runs))""",
        """CREATE OR REPLACE VIEW review_queue_by_owner AS
            SELECT coalesce(owner, '(no owner)') AS owner, count(*) AS edits,
                   count(DISTINCT doc_id) AS documents,
                   count(*) FILTER (WHERE risk = 'high') AS high_risk,
                   list(DISTINCT doc_id ORDER BY doc_id) AS doc_ids
            FROM review_queue
            GROUP BY coalesce(owner, '(no owner)')
            ORDER BY edits DESC, owner""",
    ]
