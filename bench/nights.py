"""Thirty nights in a row: the review queue of the demo KB under nightly audits, changes and decisions.

A copy of the demo KB (docs and sources) in a temporary folder is audited once a night into one
store, through the same core functions as `kbaudit run` (without Prefect's start-up). Between
nights a script changes it and decides, the same way every time:

- every 5th night a page is edited elsewhere than its claims (a sentence added at its end, a
  new document version: its edits get new ids, its rejections hold as `suppressed`);
- every 7th night a source gets a new version (its `published_at` a day later: the edits whose
  deciding passage it gives get new ids; a rejected one may be proposed again);
- every 2nd night the riskiest `queued` edit is approved, every 3rd the next one rejected with
  a note (decisions as `kbaudit review` records them, under the store's lock);
- every 4th night the accepted edits are applied to the copy's files.

After each night the invariants are checked from the store's tables, independently of the views:
the queue is the newest full run's drafts whose newest step is still `queued` or `needs_rewrite`,
each once, and the same through `kb.correct.review.queue` (what `kbaudit review list` prints), the
`review_queue` view and the review app; every decision made is still recorded, with the state it
gave unless apply wrote or conflicted the edit since; no edit is applied twice or drafted again as
`queued`/`auto` after it was applied; a rejected edit is never queued again (a new proposal needs
new evidence, which gives a new id). One line per night: what changed, the queue, decisions kept
of made, edits applied, the store's size, the run's time and the verdict.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

from kb.chain import audit_and_commit
from kb.config import DEMO_ROOT, Settings
from kb.correct import review
from kb.store import Store
from review_app.app import ReviewApp

DEMO_TODAY = dt.date(2026, 6, 1)
PENDING = ("queued", "needs_rewrite")


class Params(BaseModel):
    """`kbaudit bench nights` parameters."""

    nights: int = Field(default=30, description="nights to run (default 30)")
    depth: str = Field(default="D1", description="verification depth (default D1)")
    workdir: str | None = Field(default=None, description="keep the KB copy and the store here (default: a temporary folder)")


def store_mb(out: Path) -> float:
    return sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 1e6


def edit_page(docs: Path, night: int) -> str:
    pages = sorted(p.name for p in docs.glob("*.md"))
    name = pages[(night // 5) % len(pages)]
    path = docs / name
    path.write_text(path.read_text("utf-8").rstrip("\n") + f"\n\nReviewed by the docs team on night {night}.\n", "utf-8")
    return f"page {name} edited"


def new_source_version(sources: Path, night: int) -> str:
    files = sorted(sources.glob("*.md"))
    path = files[(night // 7) % len(files)]
    text = path.read_text("utf-8")
    found = re.search(r"^published_at: (\d{4}-\d{2}-\d{2})", text, re.MULTILINE)
    if found is None:
        return f"source {path.name} has no date"
    later = dt.date.fromisoformat(found.group(1)) + dt.timedelta(days=1)
    path.write_text(text.replace(found.group(0), f"published_at: {later.isoformat()}", 1), "utf-8")
    return f"source {path.name} dated {later}"


class Ledger:
    """What the script did, to check the store against: decisions in order, edits applied."""

    def __init__(self) -> None:
        self.decisions: list[tuple[str, str]] = []
        self.applied: dict[str, int] = {}  # edit id -> night apply wrote it

    def check(self, store: Store, out: Path) -> tuple[list[str], int, int]:
        """The night's violations, the queue's size and the decisions kept."""
        problems: list[str] = []
        newest_full = str(store.query("SELECT max(run_id) AS r FROM full_runs").r.iloc[0])
        drafts = store.query("SELECT edit_id, run_id, status FROM edits ORDER BY run_id")
        steps = store.query(
            "SELECT edit_id, CASE decision WHEN 'approve' THEN 'approved' ELSE 'rejected' END AS state, decided_at AS happened_at "
            "FROM review_decisions UNION ALL SELECT edit_id, status, event_at FROM edit_events ORDER BY happened_at"
        )
        newest_step = steps.groupby("edit_id").state.last().to_dict() if not steps.empty else {}
        newest_draft = drafts.groupby("edit_id").status.last().to_dict()
        state = {e: newest_step.get(e, s) for e, s in newest_draft.items()}
        pending = sorted({e for e in drafts.loc[drafts.run_id == newest_full].edit_id if state[e] in PENDING})

        listed = list(review.queue(store).edit_id)
        view = [r[0] for r in store.query("SELECT edit_id FROM review_queue").itertuples(index=False)]
        app = [i["edit_id"] for i in ReviewApp(out).queue_data({})["items"]]
        for name, ids in (("review list", listed), ("review_queue", view), ("review app", app)):
            if len(ids) != len(set(ids)):
                problems.append(f"{name} lists an edit twice")
            if sorted(ids) != pending:
                problems.append(f"{name} shows {len(ids)} edits, {len(pending)} are pending")

        recorded = list(
            store.query("SELECT edit_id, decision FROM review_decisions ORDER BY decided_at").itertuples(index=False, name=None)
        )
        if recorded != self.decisions:
            problems.append(f"{len(self.decisions)} decisions made, {len(recorded)} recorded")
        views_state = dict(store.query("SELECT edit_id, state FROM edit_state").itertuples(index=False, name=None))
        last_decision = dict(self.decisions)
        kept = 0
        for edit_id, decision in last_decision.items():
            expected = "approved" if decision == "approve" else "rejected"
            if views_state.get(edit_id) in (expected, "applying", "applied", "conflicted"):
                kept += 1
            else:
                problems.append(f"the decision on {edit_id} is lost: its state is {views_state.get(edit_id)}")
        applied = steps.loc[steps.state == "applied"].edit_id.value_counts()
        problems += [f"{e} applied {n} times" for e, n in applied.items() if n > 1]
        runs_after = store.query("SELECT run_id, started_at FROM runs")
        for edit_id in self.applied:
            at = steps.loc[(steps.edit_id == edit_id) & (steps.state == "applied")].happened_at.max()
            later = set(runs_after.loc[runs_after.started_at > at].run_id)
            again = drafts.loc[(drafts.edit_id == edit_id) & drafts.run_id.isin(later) & drafts.status.isin(["queued", "auto"])]
            if not again.empty:
                problems.append(f"applied edit {edit_id} proposed again")
        rejected = {e for e, d in last_decision.items() if d == "reject"}
        if rejected & set(pending):
            problems.append(f"rejected edits queued again: {sorted(rejected & set(pending))}")
        return problems, len(pending), kept


def run(params: Params) -> dict[str, float]:
    work = Path(params.workdir) if params.workdir else Path(tempfile.mkdtemp(prefix="kbaudit-nights-"))
    shutil.rmtree(work, ignore_errors=True)
    docs, sources, out = work / "docs", work / "sources", work / "store"
    shutil.copytree(DEMO_ROOT / "docs", docs)
    shutil.copytree(DEMO_ROOT / "sources", sources)
    settings = Settings(docs=docs, sources=[sources], out=out, depth=params.depth, today=DEMO_TODAY).validate()
    store = Store(out)
    ledger = Ledger()
    violations, queue_sizes, sizes, seconds, unchanged_growth = 0, [], [], [], []
    print(f"{'night':>5}  {'change':<52}{'queue':>6}{'decisions':>11}{'applied':>8}{'store MB':>10}{'run s':>8}  verdict")
    for night in range(1, params.nights + 1):
        changes: list[str] = []
        decided = night % 2 == 0 or night % 3 == 0 or night % 4 == 0
        if night % 5 == 0:
            changes.append(edit_page(docs, night))
        if night % 7 == 0:
            changes.append(new_source_version(sources, night))
        before = store_mb(out) if out.exists() else 0.0
        clock = time.perf_counter()
        audit_and_commit(settings, store)
        seconds.append(time.perf_counter() - clock)

        store.lock()
        try:
            queue = review.queue(store)
            queue = queue.loc[queue.state == "queued"]  # one that needs a rewrite is approved only with a reviewer's text
            if night % 2 == 0 and len(queue):
                edit_id = str(queue.edit_id.iloc[0])
                review.decide(store, [edit_id], "approve", reviewer="ann")
                ledger.decisions.append((edit_id, "approve"))
            queue = review.queue(store)
            if night % 3 == 0 and len(queue) > 1:
                edit_id = str(queue.edit_id.iloc[1])
                review.decide(store, [edit_id], "reject", reviewer="bob", note="the page is right for our plan")
                ledger.decisions.append((edit_id, "reject"))
            if night % 4 == 0:
                for outcome in review.apply_edits(store, docs, actor="ann"):
                    if outcome.status == "applied":
                        ledger.applied.update({e: night for e in outcome.edit_ids})
                changes.append("apply")
        finally:
            store.unlock()

        problems, pending, kept = ledger.check(store, out)
        violations += len(problems)
        size = store_mb(out)
        sizes.append(size)
        queue_sizes.append(pending)
        if not changes and not decided:
            unchanged_growth.append(size - before)
        verdict = "ok" if not problems else "; ".join(problems[:2]) + (f" (+{len(problems) - 2})" if len(problems) > 2 else "")
        print(
            f"{night:>5}  {', '.join(changes) or 'unchanged':<52}{pending:>6}{f'{kept}/{len(dict(ledger.decisions))}':>11}"
            f"{len(ledger.applied):>8}{size:>10.2f}{seconds[-1]:>8.1f}  {verdict}",
            flush=True,
        )
    if not params.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "nights": params.nights,
        "invariants_held": violations == 0,
        "violations": violations,
        "max_queue": max(queue_sizes),
        "decisions": len(ledger.decisions),
        "edits_applied": len(ledger.applied),
        "store_mb_first": round(sizes[0], 3),
        "store_mb_last": round(sizes[-1], 3),
        # growth of the store on a night with no change, decision or apply (the first night aside)
        "store_mb_per_unchanged_night": round(sum(unchanged_growth[1:]) / max(len(unchanged_growth) - 1, 1), 3),
        "unchanged_nights": max(len(unchanged_growth) - 1, 0),
        "run_s_first": round(seconds[0], 2),
        "run_s_mean_after_first": round(sum(seconds[1:]) / max(len(seconds) - 1, 1), 2),
    }
