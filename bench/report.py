"""The HTML report at wiki scale: its size and the time to write it for a run of N claims.

Builds a store of one synthesised run of ``--claims`` claims (bench/synthetic.py: result rows
shaped like an audit's, about 95 claims a page, five passages of evidence a check-worthy claim,
written through the store's API; auditing 50,000 claims for real would take hours), then writes
the report with the same code as ``kbaudit report --html`` (reports.html.render).
``report_bytes`` is the file's size, ``report_seconds`` the time to render and write it,
``store_seconds`` the time to write the store.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

from bench.synthetic import build_store
from kb.errors import ConfigError
from kb.store import Store
from reports.html import render


class Params(BaseModel):
    """`kbaudit bench report` parameters."""

    claims: int = Field(default=5000, description="claims in the synthesised run (default 5000)")
    workdir: str | None = Field(default=None, description="write the store and report.html here (default: a temporary folder)")


def measure(work: Path, claims: int) -> dict[str, float]:
    started = time.perf_counter()
    counts = build_store(work / "out", claims=claims)
    store_seconds = time.perf_counter() - started
    started = time.perf_counter()
    page = work / "report.html"
    page.write_text(render(Store(work / "out")), encoding="utf-8")
    seconds = time.perf_counter() - started
    return {
        "claims": float(claims),
        "documents": float(counts["documents"]),
        "store_seconds": round(store_seconds, 3),
        "report_bytes": float(page.stat().st_size),
        "report_seconds": round(seconds, 3),
    }


def run(params: Params) -> dict[str, float]:
    if params.claims < 1:
        raise ConfigError("bench report: --claims must be at least 1")
    if params.workdir:
        work = Path(params.workdir)
        if (work / "out").exists():
            raise ConfigError(f"bench report: {work / 'out'} exists; give an empty --workdir")
        work.mkdir(parents=True, exist_ok=True)
        return measure(work, params.claims)
    with tempfile.TemporaryDirectory(prefix="kbaudit-report-bench-") as tmp:
        return measure(Path(tmp), params.claims)
