"""Progress of the long stages: the console (terminal bar, plain lines), the events the real
stages send, the Prefect progress artifacts, and Ctrl-C during a stage."""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kb import progress
from kb.config import DEMO_ROOT, Settings

REPO = Path(__file__).resolve().parents[1]
TODAY = "2026-06-01"
SMALL_DOCS = ("backups.md", "pricing.md", "rate-limits.md")


def _small_kb(root: Path) -> Path:
    (root / "docs").mkdir(parents=True, exist_ok=True)
    for name in SMALL_DOCS:
        shutil.copy(DEMO_ROOT / "docs" / name, root / "docs" / name)
    return root / "docs"


def test_plain_lines_carry_counts_rate_and_eta():
    out = io.StringIO()
    console = progress.Console(stream=out, tty=False, interval=0.0)
    progress.add_listener(console)
    try:
        with progress.track("verification", total=4, unit="claims") as bar:
            for _ in range(4):
                time.sleep(0.6)  # past the tracker's 0.5 s throttle, so each update is sent
                bar.update(1)
    finally:
        progress.remove_listener(console)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("kbaudit: verification: 0/4 claims (0%)"), lines
    middle = [line for line in lines if re.search(r": [123]/4 claims", line)]
    assert middle and all(re.search(r"\d+\.\d claims/s, ETA \d+s$", line) for line in middle), lines
    assert lines[-1].startswith("kbaudit: verification: 4/4 claims (100%)") and lines[-1].endswith("done"), lines


def test_the_eta_reads_the_stages_own_rate_not_its_nested_steps_or_skipped_items():
    events: list[progress.Event] = []
    with progress.listening(events.append):
        with progress.track("retrieval", total=100, unit="claims") as bar:
            bar.skip(60)  # settled without a search: no work, no time
            with progress.track("embedding", total=10, unit="texts") as inner:
                time.sleep(1.0)  # the embedding pass inside retrieval, counted as its own stage
                inner.update(10)
            time.sleep(0.55)
            bar.update(10)  # 10 claims searched in about 0.55 s of retrieval's own time
    last = [e for e in events if e.stage == "retrieval" and not e.finished][-1]
    assert last.done == 70 and last.skipped == 60 and last.nested >= 1.0
    # 30 claims left at about 0.055 s each; counting the embedding pass or the 60 settled claims
    # would read 4.6 s or 0.7 s
    assert last.eta is not None and 1.2 <= last.eta <= 2.5, last
    assert progress.Event("x", 0, 10, "u", 5.0, skipped=0).eta is None


def test_a_stage_two_levels_down_counts_once_in_the_outer_stages_nested_time():
    with progress.track("audit", total=1) as outer:
        with progress.track("retrieval", total=1):
            with progress.track("embedding", total=1):
                time.sleep(0.4)
        inside = outer.nested
    assert 0.4 <= inside < 0.75, inside  # the embedding pass once, inside retrieval's time


def test_plain_lines_are_periodic():
    out = io.StringIO()
    console = progress.Console(stream=out, tty=False, interval=3600.0)
    with progress.listening(console):
        with progress.track("retrieval", total=50, unit="claims") as bar:
            for _ in range(50):
                bar.update(1)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines  # the start and the end; nothing between within the interval
    assert "50/50 claims" in lines[-1]


def test_terminal_bar_has_counts_rate_and_eta():
    out = io.StringIO()
    console = progress.Console(stream=out, tty=True)
    with progress.listening(console):
        with progress.track("embedding", total=3, unit="texts") as bar:
            for _ in range(3):
                time.sleep(0.6)
                bar.update(1)
    text = out.getvalue()
    assert "\r" in text  # redrawn in place
    final = text.split("\r")[-1]
    assert final.startswith("embedding: 100%") and "3/3" in final, final
    # elapsed<remaining (the ETA) and the rate
    assert re.search(r"3/3 \[\d\d:\d\d<\d\d:\d\d, +[\d.]+ texts/s\]", final), final


def test_listener_failure_does_not_stop_a_stage():
    def broken(event):
        raise RuntimeError("display gone")

    with progress.listening(broken):
        with progress.track("verification", total=2, unit="claims") as bar:
            bar.update(2)
    assert bar.done == 2


def test_a_stage_stopped_by_an_error_says_so():
    events = []
    with pytest.raises(KeyboardInterrupt):
        with progress.listening(events.append):
            with progress.track("retrieval", total=10, unit="claims") as bar:
                bar.update(3)
                raise KeyboardInterrupt
    assert events[-1].finished and events[-1].failed and events[-1].done == 3
    assert events[-1].line().endswith("stopped")


def test_real_stages_report_progress(tmp_path):
    """The demo KB through the real chain: retrieval and verification count every claim they
    compute; a rerun computes nothing and reports nothing to do."""
    from kb.chain import run_audit

    settings = Settings(docs=_small_kb(tmp_path), sources=[DEMO_ROOT / "sources"], depth="D1", today=None).validate()
    events: list[progress.Event] = []
    with progress.listening(events.append):
        result = run_audit(settings, cache_dir=tmp_path / "cache")
    checkworthy = sum(c.checkworthy for c in result.claims)
    last = {e.stage: e for e in events if e.finished}
    assert last["retrieval"].done == last["retrieval"].total == checkworthy
    assert last["verification"].done == last["verification"].total == checkworthy
    assert not last["retrieval"].failed and not last["verification"].failed

    events.clear()
    with progress.listening(events.append):
        run_audit(settings, cache_dir=tmp_path / "cache")
    assert {e.stage for e in events} == set()  # all cached: no stage had anything to do


def test_the_collector_waits_longer_only_while_audits_run(tmp_path):
    """A run raises the cycle collector's young threshold for its stages, and the last of several
    audits running at once in threads puts the caller's thresholds back."""
    import gc
    from concurrent.futures import ThreadPoolExecutor

    from kb.chain import GC_YOUNG_THRESHOLD, run_audit, run_here

    settings = Settings(docs=_small_kb(tmp_path), sources=[DEMO_ROOT / "sources"], depth="D0", today=None).validate()
    seen: list[int] = []

    def runner(name, fn, *args, **kwargs):
        seen.append(gc.get_threshold()[0])
        return run_here(name, fn, *args, **kwargs)

    saved = gc.get_threshold()
    gc.set_threshold(900, 11, 12)
    try:
        with ThreadPoolExecutor(2) as pool:
            audits = [pool.submit(run_audit, settings, runner, cache_dir=tmp_path / f"c{i}") for i in range(2)]
            assert all(audit.result().verdicts for audit in audits)
        assert seen and set(seen) == {GC_YOUNG_THRESHOLD}
        assert gc.get_threshold() == (900, 11, 12)
    finally:
        gc.set_threshold(*saved)


def test_embedding_reports_progress(tmp_path, monkeypatch):
    from kb.evidence.embed import Embedder

    # every update reaches the listener: the ONNX encoder embeds 600 short texts within the
    # half second between events a console gets, so the default interval would show none
    monkeypatch.setattr(progress, "MIN_INTERVAL", 0.0)
    events: list[progress.Event] = []
    texts = [f"Short sentence number {i} about the cache." for i in range(600)]
    with progress.listening(events.append):
        vecs = Embedder(cache_dir=tmp_path).encode(texts)
    assert vecs.shape[0] == 600
    embedding = [e for e in events if e.stage == "embedding"]
    assert embedding[0].done == 0 and embedding[0].total == 600
    assert embedding[-1].finished and embedding[-1].done == 600
    assert any(0 < e.done < 600 for e in embedding)  # updated while it ran, not only at the end


def test_prefect_progress_artifacts(prefect_harness, tmp_path):
    """A real flow run under the test harness leaves a progress artifact per long stage, at 100%."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from flows.audit import audit

    settings = Settings(docs=_small_kb(tmp_path), sources=[DEMO_ROOT / "sources"], out=tmp_path / "out", depth="D1")
    audit(settings.public_dict())

    import asyncio

    async def read():
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["retrieval-progress", "verification-progress"]))
            )

    artifacts = asyncio.run(read())
    latest = {}
    for a in sorted(artifacts, key=lambda a: a.created):
        latest[a.key] = a
    assert set(latest) == {"retrieval-progress", "verification-progress"}
    for key, artifact in latest.items():
        assert artifact.type == "progress"
        assert float(artifact.data) == pytest.approx(100.0), (key, artifact.data)
        assert artifact.description.endswith("done") and "claims/s" in artifact.description


def _files(out: Path) -> dict[str, bytes]:
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and not p.relative_to(out).as_posix().startswith((".staging/", "cache/", ".lock")) and p.name != "kbaudit.duckdb"
    }


@pytest.mark.parametrize("stage", ["retrieval", "verification"])
def test_ctrl_c_during_a_stage_leaves_the_store_as_it_was(prefect_harness, tmp_path, stage):
    """Ctrl-C (SIGINT) while the stage runs, seen on its progress line: exit 3, and the store
    shows exactly the runs and files it had before."""
    from prefect.settings import PREFECT_API_URL

    from flows.audit import audit
    from kb.store import Store

    docs = _small_kb(tmp_path)
    out = tmp_path / "out"
    audit(Settings(docs=docs, sources=[DEMO_ROOT / "sources"], out=out, depth="D1", today=None).public_dict())
    before, runs = _files(out), Store(out).run_ids()
    page = docs / "pricing.md"
    page.write_text(page.read_text() + "\n\nThe Team plan includes 40 seats and costs 30 dollars a month.\n")
    # a fresh embedding cache, so the stage has model work to do while the signal arrives
    shutil.rmtree(out / "cache")

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PYTHONUNBUFFERED": "1",
           "KBAUDIT_PROGRESS_INTERVAL": "0", "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}  # fmt: skip
    log = tmp_path / "run.log"
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "run", str(docs), "--sources", str(DEMO_ROOT / "sources"), "--out", str(out), "--depth", "D1"],
            stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
        )  # fmt: skip
    marker = f"kbaudit: {stage}: 0/"
    deadline = time.monotonic() + 300
    while marker not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"never saw {marker!r}:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=120)
    text = log.read_text(errors="replace")
    assert code == 3, text[-3000:]
    assert "interrupted; the store is unchanged" in text, text[-3000:]
    assert Store(out).run_ids() == runs
    assert _files(out) == before


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed interrupt, on purpose
def test_a_ctrl_c_that_a_finalizer_swallowed_still_stops_the_commit(tmp_path):
    """Python drops a KeyboardInterrupt raised inside ``__del__``; the run then went on. The
    CLI's SIGINT handler remembers the signal and the commit refuses: the store stays as it was."""
    from kb.chain import audit_and_commit
    from kb.store import Store

    class Finalized:
        def __del__(self):
            progress.on_sigint(signal.SIGINT, None)  # the signal lands while a finalizer runs

    docs = _small_kb(tmp_path)
    out = tmp_path / "out"
    settings = Settings(docs=docs, sources=[DEMO_ROOT / "sources"], out=out, depth="D0", today=None).validate()
    store = Store(out)
    audit_and_commit(settings, store)
    before, runs = _files(out), store.run_ids()
    progress.reset_interrupt()
    try:
        Finalized()  # dropped at once: its KeyboardInterrupt is printed and swallowed
        with pytest.raises(KeyboardInterrupt):
            audit_and_commit(settings, store)
    finally:
        progress.reset_interrupt()
    assert Store(out).run_ids() == runs
    assert _files(out) == before
    audit_and_commit(settings, store)  # after a reset the next run commits
    assert len(Store(out).run_ids()) == len(runs) + 1
