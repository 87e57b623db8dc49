"""The cycle collector tuned for the length of an audit."""

from __future__ import annotations

import contextlib
import gc
import threading

# While any audit runs, the cycle collector's youngest generation waits for this many new
# objects instead of 700. A run builds hundreds of thousands of small records that live until it
# ends and are freed by reference counting; each collection walked them and found nothing to
# free (an unchanged rerun of the speed bench's KB: 4.1 s at 700, 3.6-3.9 s at 100,000).
GC_YOUNG_THRESHOLD = 100_000


class _FewerCollections(contextlib.ContextDecorator):
    """The collector's thresholds raised while any audit runs (audits can run in threads at
    once: the first to start raises them, the last to end puts them back)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._saved = gc.get_threshold()

    def __enter__(self) -> None:
        with self._lock:
            if self._running == 0:
                self._saved = gc.get_threshold()
                gc.set_threshold(max(self._saved[0], GC_YOUNG_THRESHOLD), *self._saved[1:])
            self._running += 1

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                gc.set_threshold(*self._saved)


fewer_collections = _FewerCollections()
