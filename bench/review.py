"""The review app on a large queue: how long its first page takes with N pending edits.

Builds a store of one synthesised run whose review queue holds ``--edits`` pending edits
(bench/synthetic.py: result rows shaped like an audit's, written through the store's API; an
audit that drafts 5,000 edits would take an hour), then requests the queue page from the real
app (`kbaudit review serve`'s Starlette app, in process, through its middleware):
``first_page_seconds`` is the first request of a newly started app, ``page_seconds`` the median
of the next five, ``grouped_page_seconds`` the page grouped by finding kind, ``last_page_seconds``
the last page, and ``page_bytes`` the first page's size. ``store_seconds`` is the time to write
the store.
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

from bench.synthetic import build_store
from kb.errors import ConfigError
from review_app.app import PAGE_SIZE, create_app


class Params(BaseModel):
    """`kbaudit bench review` parameters."""

    edits: int = Field(default=5000, description="pending edits in the synthesised store's review queue (default 5000)")
    workdir: str | None = Field(default=None, description="write the store here (default: a temporary folder)")


def measure(out: Path, edits: int) -> dict[str, float]:
    from starlette.testclient import TestClient  # why: httpx, only for the benches and tests

    for name in ("httpx", "httpx2"):  # the test client's HTTP library logs a line per request
        logging.getLogger(name).setLevel(logging.WARNING)

    started = time.perf_counter()
    build_store(out, claims=edits * 2, edits=edits)
    store_seconds = time.perf_counter() - started

    def timed(client, path: str) -> tuple[float, int]:
        t = time.perf_counter()
        response = client.get(path)
        if response.status_code != 200:
            raise RuntimeError(f"GET {path}: {response.status_code} {response.text[:300]}")
        return time.perf_counter() - t, len(response.content)

    started = time.perf_counter()
    app = create_app(out)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        _, first_bytes = timed(client, "/")
        first = time.perf_counter() - started
        warm = [timed(client, "/")[0] for _ in range(5)]
        grouped = timed(client, "/?group=kind")[0]
        last = timed(client, f"/?page={max(1, -(-edits // PAGE_SIZE))}")[0]
    return {
        "edits": float(edits),
        "store_seconds": round(store_seconds, 3),
        "first_page_seconds": round(first, 3),
        "page_seconds": round(statistics.median(warm), 3),
        "grouped_page_seconds": round(grouped, 3),
        "last_page_seconds": round(last, 3),
        "page_bytes": float(first_bytes),
    }


def run(params: Params) -> dict[str, float]:
    if params.workdir:
        out = Path(params.workdir)
        if out.exists() and any(out.iterdir()):
            raise ConfigError(f"bench review: --workdir {out} is not empty")
        return measure(out, params.edits)
    with tempfile.TemporaryDirectory(prefix="kbaudit-review-bench-") as tmp:
        return measure(Path(tmp) / "out", params.edits)
