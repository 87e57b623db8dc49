"""Views of the review workflow (edits, decisions, versions). Appended after the base views.

- `edit_history`: every step of every edit, oldest first: drafted by a run (its draft status),
  approved or rejected by a reviewer, applying / applied / conflicted by apply.
- `edit_state`: one row per edit: its newest `edits` row, the `edit_details` of that run, and
  `state`, the newest step (a decision or an apply event overrides the draft status; a
  `conflicted` event only until a run drafts the same edit again). `new_text`
  is the reviewer's text when an approval gave one (edit-then-approve; the newest such
  decision), else the drafted text, which stays in `drafted_text`.
- `review_queue` (replaces the base view): edits of the newest full run still waiting for a human
  (`queued`, or `needs_rewrite` with the evidence attached), with the document's owner and title.
- `version_history`: document versions the runs accepted (`diffs`) and the files that apply
  wrote (`applied_versions`).
"""

_DECISION_STATE = "CASE decision WHEN 'approve' THEN 'approved' ELSE 'rejected' END"


def view_sql() -> list[str]:
    return [
        f"""CREATE OR REPLACE VIEW edit_history AS
            SELECT e.edit_id, e.doc_id, e.run_id, e.status AS state, NULL AS actor, e.reason AS note,
                   r.finished_at AS happened_at, 'run' AS origin
            FROM edits e JOIN runs r USING (run_id)
            UNION ALL BY NAME
            SELECT edit_id, {_DECISION_STATE} AS state, reviewer AS actor, note, decided_at AS happened_at, origin
            FROM review_decisions
            UNION ALL BY NAME
            SELECT edit_id, doc_id, status AS state, actor, note, event_at AS happened_at, 'apply' AS origin
            FROM edit_events""",
        f"""CREATE OR REPLACE VIEW edit_state AS
            WITH latest AS (
                -- Not `row_number() ... = 1`: DuckDB 2.0.1 rewrites that into a self-join of the
                -- Parquet scans on file row ids, and a run-time filter on run_id (a hive partition
                -- column, as in review_queue) prunes files in one scan only, so no row matches
                -- (tests/test_queue_rerun.py). A run drafts an edit id once, so this keeps one row.
                SELECT * FROM edits
                QUALIFY run_id = max(run_id) OVER (PARTITION BY edit_id)
            ), drafted AS (
                SELECT e.edit_id, max(r.finished_at) AS drafted_at FROM edits e JOIN runs r USING (run_id) GROUP BY e.edit_id
            ), acts AS (
                SELECT s.* FROM (
                    SELECT edit_id, {_DECISION_STATE} AS state, reviewer AS actor, note, decided_at AS happened_at
                    FROM review_decisions
                    UNION ALL
                    SELECT edit_id, status, actor, note, event_at FROM edit_events
                ) s LEFT JOIN drafted d ON d.edit_id = s.edit_id
                -- A conflict is about the file apply found. A run that drafts the same edit after
                -- it found the file back at the edit's base version (the id names it), so the edit
                -- is again what its decision (or its draft) says, and apply may write it.
                WHERE NOT (s.state = 'conflicted' AND s.happened_at < d.drafted_at)
                QUALIFY row_number() OVER (PARTITION BY s.edit_id ORDER BY s.happened_at DESC) = 1
            ), texts AS (
                SELECT edit_id, new_text AS reviewed_text, reviewer AS text_by FROM review_decisions
                WHERE new_text IS NOT NULL
                QUALIFY row_number() OVER (PARTITION BY edit_id ORDER BY decided_at DESC) = 1
            )
            SELECT l.* REPLACE (coalesce(t.reviewed_text, l.new_text) AS new_text),
                   l.new_text AS drafted_text, t.text_by,
                   coalesce(a.state, l.status) AS state, a.actor AS state_by, a.note AS state_note,
                   a.happened_at AS state_at, d.method, d.label_before, d.confidence_before, d.label_after,
                   d.confidence_after, d.rationale_after, d.claim_value, d.evidence_value,
                   d.evidence_sentence, d.evidence_source, d.evidence_date, d.evidence_authority,
                   d.risk_score, d.risk_factors, d.proposal_key, d.evidence_key
            FROM latest l
            LEFT JOIN acts a ON a.edit_id = l.edit_id
            LEFT JOIN texts t ON t.edit_id = l.edit_id
            LEFT JOIN edit_details d ON d.edit_id = l.edit_id AND d.run_id = l.run_id""",
        # The newest full run's drafts, by id: an edit that a later `--changed-since` run drafted
        # again has that run's row in edit_state and is still the full run's to review. The owner
        # and title are those of the edit's run.
        """CREATE OR REPLACE VIEW review_queue AS
           SELECT s.*, d.owner, d.title
           FROM edit_state s LEFT JOIN documents_history d ON d.doc_id = s.doc_id AND d.run_id = s.run_id
           WHERE s.state IN ('queued', 'needs_rewrite')
             AND s.edit_id IN (SELECT edit_id FROM edits WHERE run_id = (SELECT max(run_id) FROM full_runs))""",
        """CREATE OR REPLACE VIEW version_history AS
           SELECT 'run' AS origin, f.run_id, f.version_id, f.parent_version, f.doc_id, f.edit_ids,
                  f.unified_diff, f.score_before, f.score_after, NULL AS actor, r.finished_at AS happened_at
           FROM diffs f JOIN runs r USING (run_id)
           UNION ALL BY NAME
           SELECT 'applied' AS origin, version_id, parent_version, doc_id, edit_ids, unified_diff, actor,
                  applied_at AS happened_at
           FROM applied_versions""",
    ]
