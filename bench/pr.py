"""PR mode: a --changed-since run against full runs of the demo KB in a git repository.

The demo KB (docs and sources) is committed to a new git repository in a temporary folder,
audited once into a store (the full run: every stage computed, the models loaded), and the
store is copied, so that the two runs below start from the same warm store. Then one page
changes in the work tree (a value in one sentence, uncommitted, as in a PR's checkout) and:

- warm full run: the whole KB audited again on copy A of the store (what a nightly does);
- PR run: `--changed-since HEAD` on copy B (only the changed page is read and audited).

All three run in this process through the same core functions as `kbaudit run` (without
Prefect's start-up, which is the same for both kinds of run), and each writes its run to the store.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import tempfile
import time
from pathlib import Path

import pygit2
from pydantic import BaseModel, Field

from kb.chain import audit_and_commit
from kb.config import DEMO_ROOT, Settings
from kb.store import Store

DEMO_TODAY = dt.date(2026, 6, 1)
CHANGED_PAGE = "sla.md"


class Params(BaseModel):
    """`kbaudit bench pr` parameters."""

    depth: str = Field(default="D1", description="verification depth (default D1)")
    workdir: str | None = Field(default=None, description="keep the repository and stores here (default: a temporary folder)")


def make_repo(folder: Path) -> Path:
    """The demo KB committed to a new repository at `folder` (docs/ and sources/)."""
    shutil.copytree(DEMO_ROOT / "docs", folder / "docs")
    shutil.copytree(DEMO_ROOT / "sources", folder / "sources")
    repo = pygit2.init_repository(str(folder), initial_head="main")
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    who = pygit2.Signature("kbaudit bench", "bench@localhost")
    repo.create_commit("HEAD", who, who, "demo KB", tree, [])
    return folder


def change_one_page(docs: Path) -> str:
    """Edit one number in one sentence of one page (as a PR would)."""
    path = docs / CHANGED_PAGE
    text = path.read_text(encoding="utf-8")
    new, n = re.subn(r"\b(\d+(?:\.\d+)?)%", lambda m: f"{m.group(1)}1%", text, count=1)
    if n == 0:
        new = text.rstrip("\n") + "\n\nThe service credit for a missed month is 25% of the monthly fee.\n"
    path.write_text(new, encoding="utf-8")
    return CHANGED_PAGE


def run(params: Params) -> dict[str, float]:
    work = Path(params.workdir) if params.workdir else Path(tempfile.mkdtemp(prefix="kbaudit-pr-"))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    repo = make_repo(work / "kb")
    docs, sources = repo / "docs", repo / "sources"

    def timed(out: Path, changed_since: str | None = None):
        settings = Settings(
            docs=docs, sources=[sources], out=out, depth=params.depth, today=DEMO_TODAY, changed_since=changed_since
        ).validate()
        clock = time.perf_counter()
        result, row = audit_and_commit(settings, Store(out))
        return time.perf_counter() - clock, result, row

    full_s, full, _ = timed(work / "store")
    shutil.copytree(work / "store", work / "store-pr")
    change_one_page(docs)
    warm_s, warm, _ = timed(work / "store")
    pr_s, pr, row = timed(work / "store-pr", changed_since="HEAD")
    metrics = {
        "documents": float(len(full.documents)),
        "claims_checkworthy": float(sum(c.checkworthy for c in full.claims)),
        "full_s": full_s,
        "warm_full_s": warm_s,
        "pr_s": pr_s,
        "pr_over_full": pr_s / full_s,
        "pr_over_warm_full": pr_s / warm_s,
        "pr_documents_audited": float(len(row["documents_audited"])),
        "pr_verdicts_computed": float(sum(not v.reused for v in pr.verdicts)),
        "warm_full_verdicts_computed": float(sum(not v.reused for v in warm.verdicts)),
    }
    if not params.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return metrics
