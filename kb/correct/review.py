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

import datetime as dt
import getpass
import os
import stat
import tempfile
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pandas as pd

from kb.config import DEMO_ROOT, ConfigError
from kb.records import Edit, content_hash
from kb.store import Store
from kb.correct.versions import BOM, encode_like, splice, unified_diff

DECISIONS = {
    "approve": "approve", "approved": "approve", "accept": "approve", "accepted": "approve", "yes": "approve",
    "reject": "reject", "rejected": "reject", "no": "reject",
}
# Which states a decision may follow.
APPROVABLE = ("queued", "auto", "approved", "rejected")
REJECTABLE = ("queued", "auto", "approved", "rejected", "needs_rewrite")
TMP_SUFFIX = ".kbaudit-tmp"


def default_reviewer() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (containers without a passwd entry)
        return os.environ.get("USER") or "unknown"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


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
    sql += " ORDER BY CASE risk WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END, risk_score DESC, doc_id, start"
    return _query(store, sql, params)


def resolve(store: Store, edit_id: str, known: list[str] | None = None) -> str:
    """A full edit id from an id or a unique prefix of at least 6 characters."""
    edit_id = edit_id.strip()
    if len(edit_id) < 6:
        raise ConfigError(f"edit id {edit_id!r} is too short (give at least 6 characters)")
    if known is None:
        known = _query(store, "SELECT edit_id FROM edit_state").edit_id.tolist()
    found = [k for k in known if k.startswith(edit_id)]
    if not found:
        raise ConfigError(f"no edit {edit_id!r} in {store.root}")
    if len(found) > 1:
        raise ConfigError(f"edit id {edit_id!r} is ambiguous ({len(found)} edits start with it)")
    return found[0]


def show(store: Store, edit_id: str) -> dict:
    """One edit: its state and details, its history, and the change as a diff."""
    edit_id = resolve(store, edit_id)
    def records(frame: pd.DataFrame) -> list[dict]:  # NaN/NaT as None, so the row is valid JSON
        return frame.astype(object).where(frame.notna(), None).to_dict(orient="records")

    row = records(_query(store, "SELECT * FROM edit_state WHERE edit_id = ?", [edit_id]))[0]
    row["history"] = records(_query(store, "SELECT * FROM edit_history WHERE edit_id = ? ORDER BY happened_at", [edit_id]))
    row["diff"] = unified_diff(row["old_text"] + "\n", row["new_text"] + "\n", row["doc_id"])
    return row


def rejected_proposals(store: Store) -> dict[str, str]:
    """Proposal keys of rejected edits -> who rejected them, when and why (for `draft_edits`)."""
    if not store.run_ids():
        return {}
    try:
        frame = store.query(
            "SELECT proposal_key, state_by, state_at, state_note FROM edit_state "
            "WHERE state = 'rejected' AND proposal_key IS NOT NULL"
        )
    except duckdb.Error:  # a store written before the review views existed
        return {}
    return {
        r.proposal_key: f"rejected by {r.state_by} on {pd.Timestamp(r.state_at).date()}: {r.state_note or 'no note'}"
        for r in frame.itertuples()
    }


# ---- decisions ---------------------------------------------------------------------------
def _decision_rows(store: Store, items: list[tuple[str, str, str]], reviewer: str, origin: str) -> list[dict]:
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
        elif decision == "approve" and state not in APPROVABLE:
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


def decide(store: Store, edit_ids: list[str], decision: str, reviewer: str | None = None, note: str = "", origin: str = "cli") -> list[dict]:
    """Append one decision per edit (all validated first; nothing is written if one is bad)."""
    rows = _decision_rows(store, [(e, decision, note) for e in edit_ids], reviewer or default_reviewer(), origin)
    if rows:
        store.append_table("review_decisions", rows)
    return rows


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
    items = [
        (r.edit_id, r.decision, r.note)
        for r in frame.itertuples(index=False)
        if str(r.decision).strip() and not (isinstance(r.decision, float) and pd.isna(r.decision))
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
        edit_id=row.edit_id, claim_id=row.claim_id, doc_id=row.doc_id, base_version=row.base_version,
        start=int(row.start), end=int(row.end), old_text=row.old_text, new_text=row.new_text,
        risk=row.risk, status=row.state, reason=row.reason,
    )


def _candidates(store: Store) -> tuple[pd.DataFrame, dict[str, str]]:
    """Accepted edits of the newest run, plus edits an interrupted apply left `applying`
    (with the version that apply was about to write)."""
    frame = _query(
        store,
        "SELECT * FROM edit_state WHERE (state IN ('auto', 'approved') AND run_id = (SELECT max(run_id) FROM runs)) "
        "OR state = 'applying' ORDER BY doc_id, start",
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
    return {"edit_id": edit_id, "doc_id": doc_id, "status": status, "base_version": base, "version_id": version, "actor": actor, "note": note, "event_at": at}


def _plan(root: Path, doc_id: str, rows: list, targets: dict[str, str]) -> tuple[ApplyOutcome, list[tuple[Edit, str]], bytes | None]:
    """What apply would do to one document: (outcome, [(edit, conflict reason)], new bytes or None)."""
    path = (root / doc_id).resolve()
    outcome = ApplyOutcome(doc_id=doc_id, path=str(path), status="conflicted")
    edits = [_edit(r) for r in rows]
    if not path.is_relative_to(root):
        return outcome, [(e, f"path {doc_id!r} leaves the KB folder") for e in edits], None
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return outcome, [(e, f"cannot read {path}: {exc.strerror or exc}") for e in edits], None
    current = content_hash(raw)
    outcome.version_before = current
    # An apply killed after writing this file: the file already has the version it was writing.
    done = [e for e in edits if e.status == "applying" and targets.get(e.edit_id) == current]
    if done:
        outcome.status, outcome.version_after, outcome.edit_ids = "recovered", current, [e.edit_id for e in done]
        outcome.reason = "an interrupted apply had already written this version"
        return outcome, [(e, "document changed since the edit was drafted") for e in edits if e not in done and e.base_version != current], None
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


def apply_edits(
    store: Store, docs_root: str | Path | None = None, *, dry_run: bool = False, actor: str | None = None
) -> list[ApplyOutcome]:
    """Write the accepted edits (auto-accepted and approved) of the newest run to the KB files."""
    actor = actor or default_reviewer()
    if docs_root is None:
        docs_root = _query(store, "SELECT docs_root FROM runs ORDER BY run_id DESC LIMIT 1").docs_root.iloc[0]
    root = writable_root(Path(docs_root))
    frame, targets = _candidates(store)
    by_doc: dict[str, list] = {}
    for row in frame.itertuples(index=False):
        by_doc.setdefault(row.doc_id, []).append(row)

    plans = []
    for doc_id in sorted(by_doc):
        outcome, conflicts, new_raw = _plan(root, doc_id, by_doc[doc_id], targets)
        plans.append((outcome, conflicts, new_raw))
    outcomes = [p[0] for p in plans]
    for outcome, conflicts, _ in plans:
        for edit, reason in conflicts:
            outcomes.append(ApplyOutcome(edit.doc_id, outcome.path, "conflicted", [edit.edit_id], outcome.version_before, None, "", reason))
    outcomes = [o for o in outcomes if o.edit_ids]
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
                    {"version_id": o.version_after, "parent_version": o.version_before, "doc_id": o.doc_id, "path": o.path,
                     "edit_ids": o.edit_ids, "unified_diff": o.diff, "actor": actor, "applied_at": at}
                )
        elif o.status == "conflicted":
            events += [_event(e, o.doc_id, "conflicted", None, o.version_before, actor, o.reason, at) for e in o.edit_ids]
    if versions:
        store.append_table("applied_versions", versions, refresh=False)
    if events:
        store.append_table("edit_events", events, refresh=False)
    store.refresh_views()
    return outcomes
