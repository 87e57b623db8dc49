"""Progress of the long stages (embedding, retrieval, verification, escalation).

A stage reports through :func:`track`::

    with progress.track("retrieval", total=len(claims), unit="claims") as bar:
        for batch in batches:
            ...
            bar.update(len(batch))

and whoever wants to watch subscribes a *listener*, a callable that takes a :class:`Event`:

- :class:`Console` (installed by the command line): a tqdm bar with counts, rate and ETA when
  stderr is a terminal, else one plain log line every ``interval`` seconds (logs, CI);
- the Prefect layer (tasks/, flows/) plugs in a listener that keeps a progress artifact per
  stage up to date. This module knows nothing of Prefect.

Listeners are global (:func:`add_listener`) or scoped to the current context
(:func:`listening`, a context manager; each thread or task has its own). A tracker takes the
listeners present when it starts, so updates from worker threads reach them too.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tqdm import tqdm

log = logging.getLogger("kbaudit.progress")


@dataclass(frozen=True)
class Event:
    stage: str
    done: int
    total: int
    unit: str
    elapsed: float  # seconds since the stage started
    finished: bool = False  # the last event of a stage (also after an error or Ctrl-C)
    failed: bool = False
    # of ``done``, items that cost no work (claims settled without a search); of ``elapsed``,
    # seconds spent in stages nested in this one (the embedding pass inside retrieval): the ETA
    # reads the stage's own rate, which neither should inflate or deflate
    skipped: int = 0
    nested: float = 0.0

    @property
    def rate(self) -> float:
        return self.done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left at the stage's own rate so far: items that cost work over the time not
        spent in nested stages (None before the first such item)."""
        worked, own = self.done - self.skipped, self.elapsed - self.nested
        if worked <= 0 or self.total <= 0 or own <= 0:
            return None
        return max(0.0, (self.total - self.done) * own / worked)

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.total if self.total > 0 else 100.0

    def line(self) -> str:
        """One plain line: counts, rate and ETA."""
        eta = self.eta
        tail = (
            "done"
            if self.finished and not self.failed
            else ("stopped" if self.finished else f"ETA {_duration(eta)}" if eta is not None else "ETA ?")
        )
        return f"{self.stage}: {self.done:,}/{self.total:,} {self.unit} ({self.percent:.0f}%), {self.rate:.1f} {self.unit}/s, {tail}"


Listener = Callable[[Event], None]

_global: list[Listener] = []
_scoped: contextvars.ContextVar[tuple[Listener, ...]] = contextvars.ContextVar("kbaudit_progress", default=())
_lock = threading.Lock()


def add_listener(listener: Listener) -> None:
    with _lock:
        if listener not in _global:
            _global.append(listener)


def remove_listener(listener: Listener) -> None:
    with _lock:
        if listener in _global:
            _global.remove(listener)


@contextlib.contextmanager
def listening(listener: Listener):
    """``listener`` gets the events of the stages started inside this block (this context only)."""
    token = _scoped.set(_scoped.get() + (listener,))
    try:
        yield listener
    finally:
        _scoped.reset(token)


def _listeners() -> tuple[Listener, ...]:
    with _lock:
        return tuple(_global) + _scoped.get()


MIN_INTERVAL = 0.5  # seconds between a stage's events (its first and last are always sent)


class Tracker:
    """One stage's counter. ``update(n)`` is thread-safe; events are sent at most every
    ``MIN_INTERVAL`` seconds (the first and the last always)."""

    def __init__(self, stage: str, total: int, unit: str, listeners: tuple[Listener, ...]):
        self.stage, self.total, self.unit = stage, int(total), unit
        self.done = 0
        self._listeners = listeners
        self._started = time.monotonic()
        self._last_sent = float("-inf")
        self._lock = threading.Lock()
        self._closed = False
        self.skipped = 0
        self.nested = 0.0

    def _event(self, finished: bool = False, failed: bool = False) -> Event:
        elapsed = time.monotonic() - self._started
        return Event(self.stage, self.done, self.total, self.unit, elapsed, finished, failed, self.skipped, self.nested)

    def skip(self, n: int) -> None:
        """Count ``n`` items done that cost no work: they move the count, not the rate."""
        with self._lock:
            self.skipped += int(n)
        self.update(n)

    def _send(self, event: Event) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:  # noqa: BLE001 - a broken display must never stop a stage
                log.debug("progress listener failed", exc_info=True)

    def update(self, n: int = 1) -> None:
        with self._lock:
            if self._closed:
                return
            self.done += int(n)
            now = time.monotonic()
            if now - self._last_sent < MIN_INTERVAL and self.done < self.total:
                return
            self._last_sent = now
            event = self._event()
        self._send(event)

    def start(self) -> Tracker:
        self._last_sent = time.monotonic()
        self._send(self._event())
        return self

    def close(self, failed: bool = False) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            event = self._event(finished=True, failed=failed)
        self._send(event)


@contextlib.contextmanager
def track(stage: str, total: int, unit: str = "items", min_total: int = 1):
    """A :class:`Tracker` for one stage; nothing is shown when ``total < min_total`` (short
    calls, such as a search batch's few new passages, would only add noise)."""
    listeners = _listeners() if total >= min_total else ()
    tracker = Tracker(stage, total, unit, listeners)
    outer = _open.get()
    token = _open.set((*outer, tracker))
    if listeners:
        tracker.start()
    try:
        yield tracker
    except BaseException:
        tracker.close(failed=True)
        raise
    finally:
        _open.reset(token)
        if outer:  # the enclosing stage's; its own parent counts this time within the enclosing one's
            outer[-1].nested += time.monotonic() - tracker._started
    tracker.close()


# the trackers open in this context, outermost first: a stage's time inside a nested one is
# not its own (see Event.nested)
_open: contextvars.ContextVar[tuple[Tracker, ...]] = contextvars.ContextVar("kbaudit_progress_open", default=())


# Ctrl-C. Python's own handler raises KeyboardInterrupt wherever the main thread is, and one
# raised inside a finalizer (``__del__``) is printed and dropped: the run then went on and
# committed. The CLI installs ``on_sigint``, which also remembers the signal, and the commit
# calls ``check_interrupt`` first, so a Ctrl-C that was dropped still leaves the store as it was.
_interrupted = threading.Event()


def on_sigint(signum, frame) -> None:
    _interrupted.set()
    raise KeyboardInterrupt


def check_interrupt() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C came since ``reset_interrupt`` (see ``on_sigint``)."""
    if _interrupted.is_set():
        raise KeyboardInterrupt


def reset_interrupt() -> None:
    _interrupted.clear()


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class Console:
    """Progress on the console: a tqdm bar per stage on a terminal, else a plain log line every
    ``interval`` seconds and one when the stage ends."""

    def __init__(self, stream=None, tty: bool | None = None, interval: float | None = None):
        self._stream = stream  # None: whatever sys.stderr is when an event comes
        self._tty = tty
        if interval is None:
            interval = float(os.environ.get("KBAUDIT_PROGRESS_INTERVAL", "30"))
        self.interval = interval
        self._bars: dict[str, tqdm] = {}
        self._last_line: dict[str, float] = {}
        self._lock = threading.Lock()

    @property
    def stream(self):
        return self._stream if self._stream is not None else sys.stderr

    @property
    def tty(self) -> bool:
        if self._tty is not None:
            return self._tty
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError):
            return False

    def __call__(self, event: Event) -> None:
        with self._lock:
            if self.tty:
                self._bar(event)
            else:
                self._plain(event)

    def _bar(self, event: Event) -> None:
        bar = self._bars.get(event.stage)
        if bar is None:
            bar = tqdm(
                total=event.total,
                desc=event.stage,
                unit=f" {event.unit}",
                file=self.stream,
                dynamic_ncols=True,
                leave=True,
                mininterval=0.5,
            )
            self._bars[event.stage] = bar
        bar.update(event.done - bar.n)
        if event.finished:
            bar.close()
            del self._bars[event.stage]

    def _plain(self, event: Event) -> None:
        now = time.monotonic()
        last = self._last_line.get(event.stage)
        if event.finished:
            self._last_line.pop(event.stage, None)
        elif last is None:
            self._last_line[event.stage] = now  # the start: say what is coming, no rate yet
        elif now - last < self.interval:
            return
        else:
            self._last_line[event.stage] = now
        print(f"kbaudit: {event.line()}", file=self.stream, flush=True)
