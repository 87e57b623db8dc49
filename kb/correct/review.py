"""The human review queue: list, show, decide, import decisions, apply accepted edits to the KB.

Nothing here overwrites the store: decisions (`review_decisions`), status events (`edit_events`)
and the versions apply writes (`applied_versions`) are append-only tables. The state of an edit
is its newest step (view `edit_state`).

Apply writes each KB file atomically (a temporary file in the same folder, fsync, `os.replace`)
and only if the file still has the hash the edit was drafted against; otherwise the edit is
marked `conflicted` and the file is left alone. Before writing, apply records an `applying`
event with the version it is about to write, so an apply killed half-way is finished (or marked
conflicted) by the next one.

The callers hold the store's write lock (`Store.lock`): the CLI for review commands, the audit
flow for `kbaudit run --apply`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import getpass
import json
import os
import stat
import tempfile
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pandas as pd

from kb.config import DEMO_ROOT, ConfigError
from kb.correct.versions import encode_like, splice, unified_diff
from kb.errors import StoreError
from kb.records import Claim, Edit, Evidence, Verdict, content_hash
from kb.store import Store, rows_of
from kb.verify import Verifier, verifier_for  # the model loads on first use, not on import

DECISIONS = {
    "approve": "approve",
    "approved": "approve",
    "accept": "approve",
    "accepted": "approve",
    "yes": "approve",
    "reject": "reject",
    "rejected": "reject",
    "no": "reject",
}
# Which states a decision may follow. An edit that needs a rewrite is approved only with the
# reviewer's text, once the verifier has found that text supported (`approve_edited`).
APPROVABLE = ("queued", "auto", "approved", "rejected")
REJECTABLE = ("queued", "auto", "approved", "rejected", "needs_rewrite")
APPROVABLE_WITH_TEXT = APPROVABLE + ("needs_rewrite",)
TMP_SUFFIX = ".kbaudit-tmp"
# An edit's newest step as one string: a decision made against a page showing an older step is
# refused (`expected=` in `decide`), so two reviewers deciding at once cannot both win silently.
STATE_TOKEN_SQL = "state || '|' || coalesce(CAST(epoch_us(state_at) AS VARCHAR), '') || '|' || run_id"
# The queue's order: riskiest first (`queue`, `kbaudit review list`, the review app).
QUEUE_ORDER_SQL = "CASE risk WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END, risk_score DESC, doc_id, start"


class DecisionConflict(ConfigError):
    """Someone else decided (or applied) the edit after the page the decision was made on."""


def default_reviewer() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (containers without a passwd entry)
        return os.environ.get("USER") or "unknown"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _query(store: Store, sql: str, params: list | None = None) -> pd.DataFrame:
    if not store.run_ids():
        raise ConfigError(f"no completed run in {store.root} (run `kbaudit run` first)")
    return store.query(sql, params)


# ---- reading -----------------------------------------------------------------------------
def queue(store: Store, risk: str | None = None, doc: str | None = None) -> pd.DataFrame:
    """Edits waiting for a human (view `review_queue`), riskiest first."""
    sql, params = "SELECT * FROM review_queue WHERE 1 = 1", []
    if risk:
        sql += " AND risk = ?"
        params.append(risk)
    if doc:
        sql += " AND doc_id = ?"
        params.append(doc)
    sql += " ORDER BY " + QUEUE_ORDER_SQL
    return _query(store, sql, params)


def resolve(store: Store, edit_id: str, known: list[str] | None = None) -> str:
    """A full edit id from an id or a unique prefix of at least 6 characters."""
    edit_id = edit_id.strip()
    if len(edit_id) < 6:
        raise ConfigError(f"edit id {edit_id!r} is too short (give at least 6 characters)")
    if known is None:
        known = list(_query(store, "SELECT edit_id FROM edit_state").edit_id.tolist())
    found = [k for k in known if k.startswith(edit_id)]
    if not found:
        raise ConfigError(f"no edit {edit_id!r} in {store.root}")
    if len(found) > 1:
        raise ConfigError(f"edit id {edit_id!r} is ambiguous ({len(found)} edits start with it)")
    return found[0]


def show(store: Store, edit_id: str) -> dict:
    """One edit: its state and details, its history, and the change as a diff."""
    edit_id = resolve(store, edit_id)

    records = rows_of  # NaN/NaT as None, so the row is valid JSON

    row = records(_query(store, "SELECT * FROM edit_state WHERE edit_id = ?", [edit_id]))[0]
    row["history"] = records(_query(store, "SELECT * FROM edit_history WHERE edit_id = ? ORDER BY happened_at", [edit_id]))
    row["diff"] = unified_diff(row["old_text"] + "\n", row["new_text"] + "\n", row["doc_id"])
    return row


def rejected_proposals(store: Store) -> dict[str, str]:
    """Proposal keys of rejected edits -> who rejected them, when and why (for `draft_edits`)."""
    if not store.run_ids():
        return {}
    if not (store.has_appended_rows("review_decisions") or store.has_appended_rows("edit_events")):
        return {}  # a rejection is a decision or an event; the view's query reads every run's edits
    try:
        frame = store.query(
            "SELECT proposal_key, state_by, state_at, state_note FROM edit_state WHERE state = 'rejected' AND proposal_key IS NOT NULL"
        )
    except duckdb.Error:  # a store written before the review views existed
        return {}
    return {
        r.proposal_key: f"rejected by {r.state_by} on {pd.Timestamp(r.state_at).date()}: {r.state_note or 'no note'}"  # pyright: ignore[reportAttributeAccessIssue]  # pandas-stubs: itertuples() rows typed as plain tuples
        for r in frame.itertuples()
    }


# ---- decisions ---------------------------------------------------------------------------
def _date_of(value) -> dt.date:
    """A run's timestamp as a date (a missing one is a damaged runs row)."""
    stamp = pd.Timestamp(value)
    if not isinstance(stamp, pd.Timestamp) or pd.isna(stamp):
        raise StoreError("a run without a start time: the runs table is damaged")
    return stamp.date()


def state_tokens(store: Store) -> dict[str, tuple[str, str, str | None]]:
    """Edit id -> (state token, state, who made the newest step)."""
    frame = _query(store, f"SELECT edit_id, {STATE_TOKEN_SQL} AS token, state, state_by FROM edit_state")
    return {
        str(edit_id): (str(token), str(state), None if pd.isna(state_by) else str(state_by))
        for edit_id, token, state, state_by in zip(frame.edit_id, frame.token, frame.state, frame.state_by)
    }


def check_unchanged(store: Store, expected: dict[str, str]) -> None:
    """Raise `DecisionConflict` if an edit's state token is no longer the one given."""
    tokens = state_tokens(store)
    stale = [(e, tokens[e]) for e, token in expected.items() if e in tokens and tokens[e][0] != token]
    if stale:
        what = "; ".join(f"{e} is now {state}{f' (by {by})' if by else ''}" for e, (_t, state, by) in stale[:3])
        more = f" (and {len(stale) - 3} more)" if len(stale) > 3 else ""
        raise DecisionConflict(f"changed since the page was loaded: {what}{more}; nothing was recorded, reload to see the newest state")


def _decision_rows(
    store: Store, items: list[tuple[str, str, str]], reviewer: str, origin: str, approvable: tuple[str, ...] = APPROVABLE
) -> list[dict]:
    """Validate (edit id or prefix, decision, note) items; all or none become rows."""
    rows, problems = [], []
    states = dict(_query(store, "SELECT edit_id, state FROM edit_state").itertuples(index=False, name=None))
    at = _now()
    for raw_id, raw_decision, note in items:
        decision = DECISIONS.get(str(raw_decision).strip().lower())
        note = "" if note is None or (isinstance(note, float) and pd.isna(note)) else str(note).strip()
        try:
            edit_id = resolve(store, str(raw_id), list(states))
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        state = states.get(edit_id)
        if decision is None:
            problems.append(f"{edit_id}: decision must be approve or reject, got {raw_decision!r}")
        elif decision == "approve" and state not in approvable:
            problems.append(f"{edit_id}: cannot approve an edit that is {state}")
        elif decision == "reject" and state not in REJECTABLE:
            problems.append(f"{edit_id}: cannot reject an edit that is {state}")
        elif decision == "reject" and not note:
            problems.append(f"{edit_id}: a rejection needs a note (--note TEXT) saying why")
        else:
            rows.append({"edit_id": edit_id, "decision": decision, "reviewer": reviewer, "note": note, "decided_at": at, "origin": origin})
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ConfigError("; ".join(problems[:3]) + more)
    return rows


def decide(
    store: Store,
    edit_ids: list[str],
    decision: str,
    reviewer: str | None = None,
    note: str = "",
    origin: str = "cli",
    expected: dict[str, str] | None = None,
) -> list[dict]:
    """Append one decision per edit (all validated first; nothing is written if one is bad).

    ``expected``: edit id -> the state token (``STATE_TOKEN_SQL``) the reviewer saw; if any edit
    has had a step since, `DecisionConflict` is raised and nothing is written. The caller holds
    the store's write lock, so the check and the append are one step for every writer."""
    if expected:
        check_unchanged(store, expected)
    rows = _decision_rows(store, [(e, decision, note) for e in edit_ids], reviewer or default_reviewer(), origin)
    if rows:
        store.append_table("review_decisions", rows)
    return rows


def _arrow_rows(store: Store, sql: str, params: list) -> list[dict]:
    con = store.connect(read_only=True)
    try:
        return con.sql(sql, params=params).to_arrow_table().to_pylist()
    finally:
        con.close()


def run_verifier(store: Store, run_id: str) -> tuple[Verifier, dt.date]:
    """The verifier the run used (its depth and model), and the run's date."""
    config = json.loads(_query(store, "SELECT config FROM runs WHERE run_id = ?", [run_id]).config.iloc[0] or "{}")
    today = dt.date.fromisoformat(config["today"]) if config.get("today") else None
    if today is None:
        today = _date_of(_query(store, "SELECT started_at FROM runs WHERE run_id = ?", [run_id]).started_at.iloc[0])
    depth = str(config.get("depth") or "D1")
    return verifier_for(config.get("model_path"), depth != "D0", backend=config.get("verifier_backend") or "onnx"), today


def recheck_inputs(store: Store, edit_id: str, text: str) -> tuple[Claim, list[Evidence]]:
    """The claim of an edit with ``text`` in place of the sentence it was written from, and the
    evidence the edit was drafted on (the claim's ranked evidence of the edit's run).

    The claim's self-contained wording (``Claim.text``) gets the reviewer's text in place of that
    sentence; where it does not contain the sentence, the text is checked as written."""
    text = text.strip()
    if not text:
        raise ConfigError(f"{edit_id}: the edited text is empty")
    edit = _arrow_rows(store, "SELECT claim_id, run_id, old_text FROM edit_state WHERE edit_id = ?", [edit_id])[0]
    claims = _arrow_rows(store, "SELECT * FROM claims_history WHERE run_id = ? AND claim_id = ?", [edit["run_id"], edit["claim_id"]])
    if not claims:
        raise ConfigError(f"{edit_id}: its claim is not in run {edit['run_id']}")
    names = {f.name for f in dataclasses.fields(Claim)}
    claim = Claim(**{k: v for k, v in claims[0].items() if k in names})
    claim = dataclasses.replace(
        claim,
        requirements=tuple(claim.requirements or ()),
        text=claim.text.replace(edit["old_text"], text) if edit["old_text"] and edit["old_text"] in claim.text else text,
        source_text=text,
    )
    names = {f.name for f in dataclasses.fields(Evidence)}
    evidence = [
        Evidence(**{k: v for k, v in row.items() if k in names})
        for row in _arrow_rows(
            store, "SELECT * FROM evidence WHERE run_id = ? AND claim_id = ? ORDER BY rank", [edit["run_id"], edit["claim_id"]]
        )
    ]
    return claim, evidence


def reverify(store: Store, edit_id: str, text: str, verifier=None, today: dt.date | None = None) -> Verdict:
    """The verifier's verdict on ``text`` in place of the edit's claim, against the same evidence
    the edit was drafted on (`recheck_inputs`), as drafts are checked; by default with the run's
    own verifier and date (`run_verifier`)."""
    edit_id = resolve(store, edit_id)
    claim, evidence = recheck_inputs(store, edit_id, text)
    if verifier is None or today is None:
        run_id = _query(store, "SELECT run_id FROM edit_state WHERE edit_id = ?", [edit_id]).run_id.iloc[0]
        default_verifier, run_today = run_verifier(store, run_id)
        verifier, today = verifier or default_verifier, today or run_today
    return verifier.verify([claim], {claim.claim_id: evidence}, today)[0]


def record_edited(
    store: Store,
    edit_id: str,
    text: str,
    verdict: Verdict,
    reviewer: str | None = None,
    note: str = "",
    origin: str = "cli",
    expected: dict[str, str] | None = None,
) -> list[dict]:
    """Append an approval with the reviewer's ``text`` and the verifier's ``verdict`` on it (from
    `reverify` of that same text); nothing unless the verdict is `supported`."""
    edit_id = resolve(store, edit_id)
    if expected:
        check_unchanged(store, expected)
    if verdict.label != "supported":
        return []
    rows = _decision_rows(store, [(edit_id, "approve", note)], reviewer or default_reviewer(), origin, approvable=APPROVABLE_WITH_TEXT)
    for row in rows:
        row.update(
            new_text=text.strip(), check_label=verdict.label, check_confidence=float(verdict.confidence), check_rationale=verdict.rationale
        )
    store.append_table("review_decisions", rows)
    return rows


def approve_edited(
    store: Store,
    edit_id: str,
    text: str,
    reviewer: str | None = None,
    note: str = "",
    origin: str = "cli",
    expected: dict[str, str] | None = None,
    verifier=None,
    today: dt.date | None = None,
) -> tuple[Verdict, list[dict]]:
    """Edit-then-approve: re-verify the reviewer's ``text`` (`reverify`) and, only if the verifier
    finds it supported, append an approval carrying the text and the verifier's conclusion.
    Returns (the verdict, the rows written: none when the text was not supported)."""
    edit_id = resolve(store, edit_id)
    if expected:
        check_unchanged(store, expected)
    verdict = reverify(store, edit_id, text, verifier=verifier, today=today)
    return verdict, record_edited(store, edit_id, text, verdict, reviewer, note, origin, expected)


def read_decisions_file(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"decisions file not found: {path}")
    try:
        if path.suffix.lower() == ".parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except Exception as exc:
        raise ConfigError(f"cannot read decisions file {path}: {type(exc).__name__}: {exc}") from None
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    missing = {"edit_id", "decision"} - set(frame.columns)
    if missing:
        raise ConfigError(f"decisions file {path} needs columns edit_id, decision (and note); missing {', '.join(sorted(missing))}")
    if "note" not in frame.columns:
        frame["note"] = ""
    return frame


def import_decisions(store: Store, path: str | Path, reviewer: str | None = None) -> list[dict]:
    """Decisions from a CSV or Parquet file of edit_id, decision, note (rows without a decision are skipped)."""
    frame = read_decisions_file(path)
    items: list[tuple[str, str, str]] = [  # pyright: ignore[reportAssignmentType]  # pandas-stubs: itertuples() fields untyped
        (r.edit_id, r.decision, r.note)  # pyright: ignore[reportAttributeAccessIssue]  # pandas-stubs: itertuples() rows typed as plain tuples
        for r in frame.itertuples(index=False)
        if str(r.decision).strip() and not (isinstance(r.decision, float) and pd.isna(r.decision))  # pyright: ignore[reportAttributeAccessIssue]
    ]
    rows = _decision_rows(store, items, reviewer or default_reviewer(), f"import:{Path(path).name}")
    if rows:
        store.append_table("review_decisions", rows)
    return rows


# ---- apply -------------------------------------------------------------------------------
@dataclass
class ApplyOutcome:
    doc_id: str
    path: str
    status: str  # applied | would_apply | conflicted | recovered
    edit_ids: list[str] = field(default_factory=list)
    version_before: str | None = None
    version_after: str | None = None
    diff: str = ""
    reason: str = ""


def writable_root(root: Path) -> Path:
    """The KB folder apply may write to (never the demo that ships with the package)."""
    root = Path(root).resolve()
    if root == (DEMO_ROOT / "docs").resolve():
        raise ConfigError("refusing to modify the bundled demo KB; audit a copy of it (kbaudit run DOCS ...) to apply edits")
    if not root.is_dir():
        raise ConfigError(f"documents folder not found: {root}")
    return root


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a reader (or a crash) sees the old bytes or the new, never a mix."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        with suppress(OSError):
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    with suppress(OSError):  # make the rename itself durable
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _edit(row) -> Edit:
    return Edit(
        edit_id=row.edit_id,
        claim_id=row.claim_id,
        doc_id=row.doc_id,
        base_version=row.base_version,
        start=int(row.start),
        end=int(row.end),
        old_text=row.old_text,
        new_text=row.new_text,
        risk=row.risk,
        status=row.state,
        reason=row.reason,
    )


def candidates(store: Store) -> tuple[pd.DataFrame, dict[str, str]]:
    """Accepted edits of the newest run that audited each document (the newest full run, or a
    `--changed-since` run after it), plus edits an interrupted apply left `applying` (with the
    version that apply was about to write)."""
    frame = _query(
        store,
        """WITH audited AS (
               SELECT doc_id, max(run_id) AS run_id FROM documents_history
               WHERE run_id >= coalesce((SELECT max(run_id) FROM full_runs), '') GROUP BY doc_id)
           SELECT s.* FROM edit_state s
           WHERE (s.state IN ('auto', 'approved')
                  AND EXISTS (SELECT 1 FROM audited a WHERE a.doc_id = s.doc_id AND a.run_id = s.run_id))
              OR s.state = 'applying'
           ORDER BY s.doc_id, s.start""",
    )
    targets = dict(
        _query(
            store,
            "SELECT edit_id, version_id FROM edit_events WHERE status = 'applying' "
            "QUALIFY row_number() OVER (PARTITION BY edit_id ORDER BY event_at DESC) = 1",
        ).itertuples(index=False, name=None)
    )
    return frame, targets


def _event(edit_id: str, doc_id: str, status: str, base: str | None, version: str | None, actor: str, note: str, at) -> dict:
    return {
        "edit_id": edit_id,
        "doc_id": doc_id,
        "status": status,
        "base_version": base,
        "version_id": version,
        "actor": actor,
        "note": note,
        "event_at": at,
    }


def _plan(
    root: Path, doc_id: str, rows: list, targets: dict[str, str], read=None
) -> tuple[ApplyOutcome, list[tuple[Edit, str]], bytes | None]:
    """What apply would do to one document: (outcome, [(edit, conflict reason)], new bytes or None).

    `read(doc_id) -> bytes` gives the document's current bytes (default: the file under root;
    `--branch` reads HEAD's blob)."""
    path = (root / doc_id).resolve()
    outcome = ApplyOutcome(doc_id=doc_id, path=str(path), status="conflicted")
    edits = [_edit(r) for r in rows]
    if not path.is_relative_to(root):
        return outcome, [(e, f"path {doc_id!r} leaves the KB folder") for e in edits], None
    try:
        raw = read(doc_id) if read is not None else path.read_bytes()
    except OSError as exc:
        return outcome, [(e, f"cannot read {path}: {exc.strerror or exc}") for e in edits], None
    current = content_hash(raw)
    outcome.version_before = current
    # An apply killed after writing this file: the file already has the version it was writing.
    done = [e for e in edits if e.status == "applying" and targets.get(e.edit_id) == current]
    if done:
        outcome.status, outcome.version_after, outcome.edit_ids = "recovered", current, [e.edit_id for e in done]
        outcome.reason = "an interrupted apply had already written this version"
        return (
            outcome,
            [(e, "document changed since the edit was drafted") for e in edits if e not in done and e.base_version != current],
            None,
        )
    conflicts = [
        (e, f"document changed since the edit was drafted (drafted against {e.base_version}, file is {current})")
        for e in edits
        if e.base_version != current
    ]
    ready = [e for e in edits if e.base_version == current]
    if not ready:
        return outcome, conflicts, None
    text = raw.decode("utf-8")
    bom = text.startswith("\ufeff")
    text = text[1:] if bom else text
    new_text, taken, skipped = splice(text, ready)
    conflicts += skipped
    if not taken:
        return outcome, conflicts, None
    new_raw = encode_like(new_text, bom)
    outcome.status, outcome.edit_ids = "would_apply", [e.edit_id for e in taken]
    outcome.version_after = content_hash(new_raw)
    outcome.diff = unified_diff(text, new_text, doc_id)
    return outcome, conflicts, new_raw


def _remove_leftovers(root: Path) -> None:
    """Temporary files of an apply that was killed before its rename (the KB file is intact)."""
    for tmp in root.rglob(f".*{TMP_SUFFIX}"):
        with suppress(OSError):
            tmp.unlink()


def newest_docs_root(store: Store) -> str:
    return str(_query(store, "SELECT docs_root FROM runs ORDER BY run_id DESC LIMIT 1").docs_root.iloc[0])


def plan_edits(store: Store, root: Path, read=None) -> tuple[list[tuple[ApplyOutcome, list, bytes | None]], list[ApplyOutcome]]:
    """What apply would write, without writing: the per-document plans (outcome, conflicts, new
    bytes or None) and the outcomes to report (`would_apply`, `recovered`, `conflicted` with its
    reason). `read` as for `_plan`."""
    frame, targets = candidates(store)
    by_doc: dict[str, list] = {}
    for row in frame.itertuples(index=False):
        by_doc.setdefault(row.doc_id, []).append(row)  # pyright: ignore[reportAttributeAccessIssue]  # pandas-stubs: itertuples() rows typed as plain tuples
    plans = [_plan(root, doc_id, by_doc[doc_id], targets, read) for doc_id in sorted(by_doc)]
    outcomes = [p[0] for p in plans]
    for outcome, conflicts, _ in plans:
        for edit, reason in conflicts:
            outcomes.append(ApplyOutcome(edit.doc_id, outcome.path, "conflicted", [edit.edit_id], outcome.version_before, None, "", reason))
    return plans, [o for o in outcomes if o.edit_ids]


def apply_edits(
    store: Store, docs_root: str | Path | None = None, *, dry_run: bool = False, actor: str | None = None
) -> list[ApplyOutcome]:
    """Write the accepted edits (auto-accepted and approved) of the newest run to the KB files."""
    actor = actor or default_reviewer()
    root = writable_root(Path(docs_root if docs_root is not None else newest_docs_root(store)))
    plans, outcomes = plan_edits(store, root)
    if dry_run:
        return outcomes

    _remove_leftovers(root)
    at = _now()
    writes = [(o, raw) for o, _c, raw in plans if raw is not None]
    if writes:  # intent first: a crash from here on is finished by the next apply
        store.append_table(
            "edit_events",
            [_event(e, o.doc_id, "applying", o.version_before, o.version_after, actor, "", at) for o, _ in writes for e in o.edit_ids],
            refresh=False,
        )
    for outcome, raw in writes:
        path = Path(outcome.path)
        if content_hash(path.read_bytes()) != outcome.version_before:  # edited while we were planning
            outcome.status, outcome.reason = "conflicted", "document changed during apply"
        else:
            write_atomic(path, raw)
            outcome.status = "applied"
    at = max(_now(), at + dt.timedelta(microseconds=1))  # after the intent, so it is the newest step
    events, versions = [], []
    for o in outcomes:
        if o.status in ("applied", "recovered"):
            events += [_event(e, o.doc_id, "applied", o.version_before, o.version_after, actor, o.reason, at) for e in o.edit_ids]
            if o.status == "applied":
                versions.append(
                    {
                        "version_id": o.version_after,
                        "parent_version": o.version_before,
                        "doc_id": o.doc_id,
                        "path": o.path,
                        "edit_ids": o.edit_ids,
                        "unified_diff": o.diff,
                        "actor": actor,
                        "applied_at": at,
                    }
                )
        elif o.status == "conflicted":
            events += [_event(e, o.doc_id, "conflicted", None, o.version_before, actor, o.reason, at) for e in o.edit_ids]
    if versions:
        store.append_table("applied_versions", versions, refresh=False)
    if events:
        store.append_table("edit_events", events, refresh=False)
    store.refresh_views()
    return outcomes
