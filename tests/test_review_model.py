"""The review workflow over many nights, checked against a reference model of it.

Hypothesis (`RuleBasedStateMachine`) draws sequences of what happens to a small KB between and
during nightly audits: audits (full, `--changed-since`, one that dies in its commit), pages
edited by hand, fixed, deleted and restored, sources changed, edits approved, rejected and
applied, applies that meet a hand edit. Each step runs against the real thing: the KB and sources
are files, the KB is a git repository, audits are `kbaudit run` through the Prefect flow, decisions
and apply are `kbaudit review` commands, all into one real store. `Model` is a plain-Python account
of what must follow (which edits are drafted, with which status; the queue; every decision; what
apply writes), and after every step the store, the queue as the CLI, the DuckDB view and the
review app show it, and the files on disk are compared with it.

Every page asks for review (`kbaudit: {review: always}`), so every drafted edit waits for a human
and the model need not predict risk scores. An edit's id is learned the first time the store
drafts it; after that the model checks that the same draft always has the same id.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule, run_state_machine_as_test

from cli.main import main as cli
from review_app.app import ReviewApp
from tests.conftest import store_sql

TODAY = "2026-11-02"
# The rules tier alone: the numbers here are contradicted by it, and a run skips loading a model.
DEPTH = "D0"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Tess",
    "GIT_AUTHOR_EMAIL": "tess@example.com",
    "GIT_COMMITTER_NAME": "Tess",
    "GIT_COMMITTER_EMAIL": "tess@example.com",
}

# Per page: the sentence (one number in it), the values the page may say, the values its source may
# say (never one the page may say, so a page is wrong until fixed or an edit is applied).
PAGES = {
    "limits.md": ("The API allows {} requests per minute per key.", (100, 150), (300, 400)),
    "retention.md": ("Audit logs are kept for {} days.", (30, 45), (90, 120)),
    "backups.md": ("Backups run every {} hours.", (6, 8), (12, 24)),
}
DOCS = sorted(PAGES)
PUBLISHED = ("2026-09-01", "2026-10-01")


def page_text(doc: str, intro: int, value: int) -> str:
    title = doc.removesuffix(".md").capitalize()
    intro_line = f"This page describes {title.lower()}." + (f" Revised {intro} times." if intro else "")
    return f"---\ntitle: {title}\nkbaudit:\n  review: always\n---\n{intro_line}\n\n{PAGES[doc][0].format(value)}\n"


def source_text(doc: str, value: int, published: str) -> str:
    return f"---\nid: {doc.removesuffix('.md')}\npublished_at: {published}\n---\n{PAGES[doc][0].format(value)}\n"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True)


# ---- the reference model --------------------------------------------------------------------
@dataclass(frozen=True)
class Draft:
    """One drafted edit as the model sees it: the page as it was audited and what changes."""

    doc: str
    page: str  # the page's text the edit was drafted against
    old: str
    new: str
    source: str  # the source's text: the evidence

    @property
    def proposal(self) -> tuple:
        """What a rejection suppresses: same sentence, same change, same evidence, whatever the rest of the page."""
        return (self.doc, self.old, self.new, self.source)


@dataclass
class Model:
    pages: dict[str, tuple[int, int] | None]  # doc -> (intro revision, value), None once deleted
    sources: dict[str, tuple[int, str]]  # doc -> (value, published)
    committed: dict[str, str | None] = field(default_factory=dict)  # the KB at git HEAD
    runs: list[tuple[str, dict[str, Draft | None]]] = field(default_factory=list)  # (scope, doc -> draft) per audit
    statuses: list[dict[Draft, str]] = field(default_factory=list)  # each run's draft statuses
    steps: dict[Draft, list[str]] = field(default_factory=dict)  # decisions and apply events, in order
    decisions: list[tuple[Draft, str]] = field(default_factory=list)

    def text(self, doc: str) -> str | None:
        page = self.pages[doc]
        return None if page is None else page_text(doc, *page)

    def sentence(self, doc: str) -> str:
        page = self.pages[doc]
        assert page is not None
        return PAGES[doc][0].format(page[1])

    def draft_for(self, doc: str) -> Draft | None:
        """The edit an audit of the page drafts now: one when the page's value is not its source's."""
        page = self.pages[doc]
        if page is None:
            return None
        value, published = self.sources[doc]
        if page[1] == value:
            return None
        return Draft(doc, self.text(doc) or "", self.sentence(doc), PAGES[doc][0].format(value), source_text(doc, value, published))

    def state(self, draft: Draft) -> str:
        """The edit's newest step: a decision or an apply event, else its newest draft's status."""
        if self.steps.get(draft):
            return self.steps[draft][-1]
        for drafts, statuses in zip(reversed(self.runs), reversed(self.statuses)):
            if drafts[1].get(draft.doc) == draft:
                return statuses[draft]
        raise AssertionError(f"never drafted: {draft}")

    def rejected(self) -> set[tuple]:
        return {d.proposal for d in self.steps if self.state(d) == "rejected"}

    def audit(self, scope: str, audited: list[str]) -> None:
        drafts = {doc: self.draft_for(doc) for doc in audited}
        rejected = self.rejected()
        statuses = {d: ("suppressed" if d.proposal in rejected else "queued") for d in drafts.values() if d is not None}
        self.runs.append((scope, drafts))
        self.statuses.append(statuses)
        for draft in statuses:  # drafted again: the page is back at the edit's base version
            if draft in self.steps:
                self.steps[draft] = [s for s in self.steps[draft] if s != "conflicted"]
        if scope == "full":
            self.committed = {doc: self.text(doc) for doc in DOCS}

    def last_full(self) -> int:
        return max(i for i, (scope, _d) in enumerate(self.runs) if scope == "full")

    def queue(self) -> set[Draft]:
        """The newest full run's drafts still waiting for a human."""
        _scope, drafts = self.runs[self.last_full()]
        return {d for d in drafts.values() if d is not None and self.state(d) == "queued"}

    def decide(self, draft: Draft, decision: str) -> None:
        self.steps.setdefault(draft, []).append("approved" if decision == "approve" else "rejected")
        self.decisions.append((draft, decision))

    def apply(self) -> dict[str, str]:
        """Each page's approved edit of the newest run that audited it since the last full run:
        written if the page is still the text it was drafted on, else marked conflicted."""
        outcome = {}
        for doc in DOCS:
            audits = [drafts for _s, drafts in self.runs[self.last_full() :] if doc in drafts]
            draft = audits[-1][doc] if audits else None
            if draft is None or self.state(draft) != "approved":
                continue
            if self.text(doc) == draft.page:
                intro, _value = self.pages[doc] or (0, 0)
                self.pages[doc] = (intro, int(next(t for t in draft.new.split() if t.isdigit())))
                self.steps[draft] += ["applying", "applied"]
                outcome[doc] = "applied"
            else:
                self.steps[draft].append("conflicted")
                outcome[doc] = "conflicted"
        return outcome


# ---- the machine ----------------------------------------------------------------------------
class CommitCrash(Exception):
    """Stands for the process dying part-way through moving a run's tables into place."""


@contextmanager
def crash_in_commit(after: int):
    """The store commit raises after moving `after` of the run's tables out of staging (before
    the `runs` row, which goes last), as a kill at that moment would leave it."""
    real = os.replace
    moved = []

    def replace(src, dst, *args, **kwargs):
        real(src, dst, *args, **kwargs)
        if ".staging" in str(src) and ".staging" not in str(dst) and "run_id=" in str(dst):
            moved.append(dst)
            if len(moved) == after:
                raise CommitCrash(f"died after moving {dst}")

    os.replace = replace
    try:
        yield
    finally:
        os.replace = real


# Sequences run and steps taken per kind, for the tests to print (how much the run covered).
COVERAGE: dict[str, int] = {}


def _count(what: str) -> None:
    COVERAGE[what] = COVERAGE.get(what, 0) + 1


class ReviewNights(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        _count("sequences")
        self.base = Path(tempfile.mkdtemp(prefix="kbaudit-nights-"))
        self.kb, self.src, self.out = self.base / "kb", self.base / "src", self.base / "store"
        self.ids: dict[Draft, str] = {}
        self.log: list[str] = []

    def note(self, what: str, kind: str) -> None:
        self.log.append(what)
        _count(kind)

    def teardown(self):
        shutil.rmtree(self.base, ignore_errors=True)

    # -- helpers
    def write_files(self) -> None:
        for doc in DOCS:
            text = self.model.text(doc)
            path = self.kb / doc
            if text is None:
                path.unlink(missing_ok=True)
            elif not path.exists() or path.read_text("utf-8") != text:
                path.write_text(text, "utf-8")
            value, published = self.model.sources[doc]
            (self.src / doc).write_text(source_text(doc, value, published), "utf-8")

    def cli_json(self, *args: str):
        import io
        from contextlib import redirect_stdout

        buffer = io.StringIO()
        with redirect_stdout(buffer):
            code = cli([*args, "--out", str(self.out)])
        assert code == 0, (args, buffer.getvalue())
        return json.loads(buffer.getvalue())

    def run_audit(self, *extra: str) -> str:
        before = set(r for (r,) in store_sql(self.out, "SELECT run_id FROM runs")) if (self.out / "kbaudit.duckdb").exists() else set()
        code = cli(["run", str(self.kb), "--sources", str(self.src), "--out", str(self.out), "--today", TODAY, "--depth", DEPTH, *extra])
        assert code == 0, f"kbaudit run {' '.join(extra)} exited {code}"
        (new,) = {r for (r,) in store_sql(self.out, "SELECT run_id FROM runs")} - before
        return new

    def learn(self, run_id: str, scope: str) -> None:
        """The run's drafts against the model's: same pages, same changes, same statuses; each
        draft's id the one it had before (a draft the model has not seen gets its id now)."""
        audited = sorted(d for (d,) in store_sql(self.out, "SELECT doc_id FROM documents_history WHERE run_id = ?", [run_id]))
        if scope == "full":
            assert audited == sorted(d for d in DOCS if self.model.pages[d] is not None)
        self.model.audit(scope, audited)
        expected = {(d.doc, d.old, d.new): (d, s) for d, s in self.model.statuses[-1].items()}
        rows = store_sql(
            self.out, "SELECT doc_id, old_text, new_text, status, edit_id FROM edits WHERE run_id = ? AND status <> 'dropped'", [run_id]
        )
        got = {(doc, old, new): status for doc, old, new, status, _e in rows}
        assert got == {k: s for k, (_d, s) in expected.items()}, (self.log, got, expected)
        for doc, old, new, _status, edit_id in rows:
            draft = expected[(doc, old, new)][0]
            known = self.ids.setdefault(draft, edit_id)
            assert known == edit_id, f"the same draft got a new id: {draft} {known} -> {edit_id}"
        assert len(set(self.ids.values())) == len(self.ids), "two different drafts share an id"

    def queued_ids(self) -> list[str]:
        return sorted(self.ids[d] for d in self.model.queue())

    # -- steps
    @initialize()
    def first_night(self):
        self.kb.mkdir(parents=True)
        self.src.mkdir()
        self.model = Model(pages={d: (0, PAGES[d][1][0]) for d in DOCS}, sources={d: (PAGES[d][2][0], PUBLISHED[1]) for d in DOCS})
        self.write_files()
        git(self.kb, "init", "-q", "-b", "main")
        self.nightly()

    def nightly(self, dies_after: int = 0) -> None:
        """The nightly full audit; the KB as audited is then committed (what the next
        `--changed-since HEAD` compares with). Now and then the run dies in its store commit
        after moving `dies_after` tables into place: nothing of it may show, and the next run
        cleans up after it."""
        if dies_after:
            self.note(f"audit dies after {dies_after} tables", "audit killed in its commit")
            before = store_sql(self.out, "SELECT count(*) FROM runs")[0][0]
            with crash_in_commit(dies_after):
                code = cli(["run", str(self.kb), "--sources", str(self.src), "--out", str(self.out), "--today", TODAY, "--depth", DEPTH])
            assert code != 0
            assert store_sql(self.out, "SELECT count(*) FROM runs")[0][0] == before
            return
        self.note("full audit", "full audit")
        run_id = self.run_audit()
        self.learn(run_id, "full")
        git(self.kb, "add", "-A")
        git(self.kb, "commit", "-q", "--allow-empty", "-m", "night")

    def changed_since(self) -> None:
        self.note("--changed-since HEAD audit", "--changed-since audit")
        run_id = self.run_audit("--changed-since", "HEAD")
        self.learn(run_id, "changed")

    def page_value_edited(self, doc: str) -> None:
        """A writer changes the page's number by hand, to its other wrong value."""
        page = self.model.pages[doc]
        if page is None:
            return
        new = next(v for v in PAGES[doc][1] if v != page[1])
        self.note(f"{doc} says {new}", "page value edited")
        self.model.pages[doc] = (page[0], new)
        self.write_files()

    def page_fixed_by_hand(self, doc: str) -> None:
        page = self.model.pages[doc]
        if page is None:
            return
        self.note(f"{doc} fixed by hand", "page fixed by hand")
        self.model.pages[doc] = (page[0], self.model.sources[doc][0])
        self.write_files()

    def page_edited_elsewhere(self, doc: str) -> None:
        page = self.model.pages[doc]
        if page is None:
            return
        self.note(f"{doc} edited elsewhere", "page edited elsewhere")
        self.model.pages[doc] = (page[0] + 1, page[1])
        self.write_files()

    def page_deleted_or_restored(self, doc: str) -> None:
        if self.model.pages[doc] is None:
            self.note(f"{doc} restored", "page restored")
            self.model.pages[doc] = (0, PAGES[doc][1][0])
        elif sum(p is not None for p in self.model.pages.values()) > 1:  # a KB keeps one page at least
            self.note(f"{doc} deleted", "page deleted")
            self.model.pages[doc] = None
        self.write_files()

    def source_changed(self, doc: str, value: int, published: str) -> None:
        self.note(f"source of {doc} says {PAGES[doc][2][value]} ({published})", "source changed")
        self.model.sources[doc] = (PAGES[doc][2][value], published)
        self.write_files()

    def decide(self, pick: int, reject: bool) -> None:
        draft = sorted(self.model.queue(), key=lambda d: self.ids[d])[pick % len(self.model.queue())]
        edit_id = self.ids[draft]
        self.note(f"{'reject' if reject else 'approve'} {draft.doc} {edit_id}", "reject" if reject else "approve")
        args = ["review", "reject", edit_id, "--note", "the page is right"] if reject else ["review", "approve", edit_id[:8]]
        assert cli([*args, "--reviewer", "ann", "--out", str(self.out)]) == 0
        self.model.decide(draft, "reject" if reject else "approve")

    def apply(self) -> None:
        self.note("apply", "apply")
        outcomes = self.cli_json("review", "apply", "--json", "--docs", str(self.kb))
        self.check_apply(outcomes, self.model.apply())

    # -- the rules: four, so that each sequence mixes audits, writers, reviewers and apply
    # (hypothesis leaves some rules out of each sequence; with a rule per operation, most
    # sequences missed the reviewers)
    @rule(kind=st.sampled_from(("full", "full", "changed", "dies")), dies_after=st.integers(1, 4))
    def audit(self, kind, dies_after):
        if kind == "changed":
            self.changed_since()
        else:
            self.nightly(dies_after if kind == "dies" else 0)

    @rule(
        op=st.sampled_from(("value", "fix", "elsewhere", "delete or restore", "source")),
        doc=st.sampled_from(DOCS),
        value=st.integers(0, 1),
        published=st.sampled_from(PUBLISHED),
    )
    def writer(self, op, doc, value, published):
        if op == "value":
            self.page_value_edited(doc)
        elif op == "fix":
            self.page_fixed_by_hand(doc)
        elif op == "elsewhere":
            self.page_edited_elsewhere(doc)
        elif op == "delete or restore":
            self.page_deleted_or_restored(doc)
        else:
            self.source_changed(doc, value, published)

    @precondition(lambda self: self.model.queue())
    @rule(reject=st.booleans(), pick=st.integers(0, 9))
    def reviewer(self, reject, pick):
        self.decide(pick, reject)

    @precondition(lambda self: any(steps[-1] == "approved" for steps in self.model.steps.values()))
    @rule(hand_edit=st.booleans(), doc=st.sampled_from(DOCS))
    def apply_edits(self, hand_edit, doc):
        """`review apply`; with `hand_edit`, someone edits the page between the audit and apply,
        so its approved edit must not be written."""
        if hand_edit:
            _count("apply after a hand edit")
            self.page_edited_elsewhere(doc)
        self.apply()

    def check_apply(self, outcomes: list[dict], expected: dict[str, str]) -> None:
        got = {o["doc_id"]: o["status"] for o in outcomes}
        assert got == expected, (self.log, got, expected)

    # -- what must hold after every step
    @invariant()
    def files_are_the_models(self):
        for doc in DOCS:
            path = self.kb / doc
            assert (path.read_text("utf-8") if path.exists() else None) == self.model.text(doc), doc

    @invariant()
    def the_queue_is_the_models_on_every_surface(self):
        if not self.model.runs:
            return
        expected = self.queued_ids()
        listed = [r["edit_id"] for r in self.cli_json("review", "list", "--json")]
        view = [e for (e,) in store_sql(self.out, "SELECT edit_id FROM review_queue")]
        app = [i["edit_id"] for i in ReviewApp(self.out).queue_data({})["items"]]
        for name, ids in (("review list", listed), ("review_queue", view), ("review app", app)):
            assert len(ids) == len(set(ids)), f"{name} lists an edit twice: {ids}"
            assert sorted(ids) == expected, (name, self.log, sorted(ids), expected)

    @invariant()
    def decisions_are_kept_and_nothing_is_applied_twice(self):
        if not self.model.runs:
            return
        rows = store_sql(self.out, "SELECT edit_id, decision FROM review_decisions ORDER BY decided_at")
        assert rows == [(self.ids[d], decision) for d, decision in self.model.decisions], (self.log, rows)
        states = dict(store_sql(self.out, "SELECT edit_id, state FROM edit_state"))
        for draft, edit_id in self.ids.items():
            assert states[edit_id] == self.model.state(draft), (self.log, draft, states[edit_id], self.model.state(draft))
        applied = store_sql(self.out, "SELECT edit_id, count(*) FROM edit_events WHERE status = 'applied' GROUP BY 1 HAVING count(*) > 1")
        assert applied == [], f"applied twice: {applied}"
        # An applied edit is never drafted again; a rejected one only as suppressed.
        for draft, edit_id in self.ids.items():
            steps = self.model.steps.get(draft, [])
            if "applied" in steps:
                later = store_sql(
                    self.out,
                    "SELECT count(*) FROM edits e JOIN runs r USING (run_id) WHERE e.edit_id = ? AND r.started_at > "
                    "(SELECT max(event_at) FROM edit_events WHERE edit_id = ? AND status = 'applied')",
                    [edit_id, edit_id],
                )
                assert later == [(0,)], (self.log, draft)


def nights(examples: int, steps: int, derandomize: bool = True):
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=derandomize,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
        print_blob=True,
    )


def run_nights(examples: int, steps: int) -> dict[str, int]:
    COVERAGE.clear()
    run_state_machine_as_test(ReviewNights, settings=nights(examples, steps))
    print(f"\nreview nights: {examples} examples of up to {steps} steps; ran {dict(sorted(COVERAGE.items()))}")
    return dict(COVERAGE)


@pytest.mark.slow
def test_review_workflow_matches_its_model(prefect_harness):
    run_nights(examples=4, steps=10)


@pytest.mark.faults
@pytest.mark.soak
def test_review_workflow_matches_its_model_soak(prefect_harness):
    ran = run_nights(examples=int(os.environ.get("KBAUDIT_NIGHTS_EXAMPLES", "20")), steps=12)
    kinds = ("full audit", "--changed-since audit", "audit killed in its commit", "page value edited", "page fixed by hand",
             "page edited elsewhere", "page deleted", "page restored", "source changed", "approve", "reject", "apply",
             "apply after a hand edit")  # fmt: skip
    assert not [k for k in kinds if not ran.get(k)], f"operations the soak never drew: {ran}"


# ---- what the model found, each on its own ---------------------------------------------------
@pytest.mark.slow
def test_a_new_version_of_another_source_keeps_an_edits_id_and_its_rejection(prefect_harness, tmp_path):
    """Each claim here is shown every source's passage (top k covers them all). A new version of
    the backups source changed the id of the limits edit too, so its rejection no longer held and
    it was queued again; only the backups edit, whose own evidence changed, may get a new id."""
    kb, src, out = tmp_path / "kb", tmp_path / "src", tmp_path / "store"
    kb.mkdir()
    src.mkdir()
    for doc in DOCS:
        (kb / doc).write_text(page_text(doc, 0, PAGES[doc][1][0]), "utf-8")
        (src / doc).write_text(source_text(doc, PAGES[doc][2][0], PUBLISHED[1]), "utf-8")

    def audit() -> dict[str, tuple[str, str]]:
        assert cli(["run", str(kb), "--sources", str(src), "--out", str(out), "--today", TODAY, "--depth", DEPTH]) == 0
        newest = "(SELECT max(run_id) FROM full_runs)"
        return {doc: (e, s) for doc, e, s in store_sql(out, f"SELECT doc_id, edit_id, status FROM edits WHERE run_id = {newest}")}

    first = audit()
    assert {s for _e, s in first.values()} == {"queued"} and set(first) == set(DOCS)
    limits = first["limits.md"][0]
    assert cli(["review", "reject", limits, "--note", "the page is right", "--out", str(out)]) == 0
    (src / "backups.md").write_text(source_text("backups.md", PAGES["backups.md"][2][0], PUBLISHED[0]), "utf-8")
    second = audit()
    assert second["limits.md"] == (limits, "suppressed")
    assert second["retention.md"] == first["retention.md"]
    assert second["backups.md"][0] != first["backups.md"][0] and second["backups.md"][1] == "queued"
    queued = {e for (e,) in store_sql(out, "SELECT edit_id FROM review_queue")}
    assert queued == {second["retention.md"][0], second["backups.md"][0]}


@pytest.mark.slow
def test_an_approved_edit_that_conflicted_is_approved_again_once_its_page_is_back(prefect_harness, tmp_path):
    """Apply met a hand edit and marked the approved edit `conflicted`; the hand edit was undone,
    so the next run drafted the very same edit (same page version, same id). The conflict stayed
    its newest step: not in the queue, not approvable, never applied, the page wrong for good."""
    kb, src, out = tmp_path / "kb", tmp_path / "src", tmp_path / "store"
    kb.mkdir()
    src.mkdir()
    doc = "limits.md"
    page = page_text(doc, 0, PAGES[doc][1][0])
    (kb / doc).write_text(page, "utf-8")
    (src / doc).write_text(source_text(doc, PAGES[doc][2][0], PUBLISHED[1]), "utf-8")

    def audit() -> None:
        assert cli(["run", str(kb), "--sources", str(src), "--out", str(out), "--today", TODAY, "--depth", DEPTH]) == 0

    audit()
    ((edit_id,),) = store_sql(out, "SELECT edit_id FROM review_queue")
    assert cli(["review", "approve", edit_id, "--out", str(out)]) == 0
    (kb / doc).write_text(page_text(doc, 0, PAGES[doc][1][1]), "utf-8")
    assert cli(["review", "apply", "--out", str(out), "--docs", str(kb)]) == 0
    assert store_sql(out, "SELECT state FROM edit_state WHERE edit_id = ?", [edit_id]) == [("conflicted",)]
    (kb / doc).write_text(page, "utf-8")  # the hand edit undone
    audit()
    assert store_sql(out, "SELECT edit_id FROM edits WHERE run_id = (SELECT max(run_id) FROM full_runs)") == [(edit_id,)]
    assert store_sql(out, "SELECT state FROM edit_state WHERE edit_id = ?", [edit_id]) == [("approved",)]
    assert cli(["review", "apply", "--out", str(out), "--docs", str(kb)]) == 0
    assert (kb / doc).read_text("utf-8") == page.replace(str(PAGES[doc][1][0]), str(PAGES[doc][2][0]))
    assert [s for (s,) in store_sql(out, "SELECT state FROM edit_history WHERE edit_id = ? ORDER BY happened_at", [edit_id])] == [
        "queued",
        "approved",
        "conflicted",
        "queued",
        "applying",
        "applied",
    ]
