"""Loading git history as sources: its time beside the audit's, on a generated docs repository.

``kbaudit bench git [--revs 50] [--files 1000] [--kb-pages 20] [--depth D0]``

Builds (with ``git fast-import``, in a temporary folder) a docs repository of ``--files``
Markdown pages and ``--revs`` tagged releases, each release changing one number in about 5% of
the pages; then, in one process:

- ``git_load_s``: ``load_git_sources`` of ``git:<repo>@tags:docs`` (every file at every tag);
- ``audit_s``: the whole audit (``kb.chain.run_audit``) of a KB of ``--kb-pages`` pages copied from
  the oldest release, against that same git source (it loads the history again inside);
- ``load_share``: ``git_load_s / audit_s``.
"""

from __future__ import annotations

import random
import subprocess
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

from kb.chain import run_audit
from kb.config import Settings
from kb.evidence.git_source import load_git_sources

WORDS = ("request", "timeout", "cache", "worker", "queue", "upload", "token", "session", "replica", "index")


class Params(BaseModel):
    """`kbaudit bench git` parameters."""

    revs: int = Field(default=50, description="tagged releases (default 50)")
    files: int = Field(default=1000, description="Markdown pages in the docs tree (default 1000)")
    kb_pages: int = Field(default=20, description="pages of the audited KB (default 20)")
    depth: str = Field(default="D0", description="verification depth of the audit (default D0)")
    seed: int = 7


def _page(i: int, values: list[int]) -> str:
    lines = [f"# Page {i}", ""]
    for k, v in enumerate(values):
        w = WORDS[(i + k) % len(WORDS)]
        lines += [f"The {w} limit of component {i}-{k} is {v} per minute. It applies to every {w} in the cluster.", ""]
    return "\n".join(lines)


def build_repo(root: Path, revs: int, files: int, seed: int) -> Path:
    rng = random.Random(seed)
    repo = root / "docs-repo"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    values = [[rng.randint(10, 500) for _ in range(6)] for _ in range(files)]
    stream: list[bytes] = []
    when = 1_600_000_000
    for r in range(revs):
        changed = range(files) if r == 0 else rng.sample(range(files), max(1, files // 20))
        stream.append(b"commit refs/heads/main\n")
        stream.append(f"mark :{r + 1}\ncommitter bench <bench@example.com> {when + r * 86400 * 30} +0000\n".encode())
        msg = f"release {r}".encode()
        stream.append(b"data %d\n%s\n" % (len(msg), msg))
        if r:
            stream.append(f"from :{r}\n".encode())
        for i in changed:
            if r:
                values[i][rng.randrange(6)] += rng.randint(1, 50)
            body = _page(i, values[i]).encode()
            stream.append(f"M 100644 inline docs/section-{i % 25}/page-{i}.md\ndata {len(body)}\n".encode() + body + b"\n")
        stream.append(f"reset refs/tags/v1.{r}.0\nfrom :{r + 1}\n\n".encode())
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=b"".join(stream), check=True)
    return repo


def run(params: Params) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="kbaudit-bench-git-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        repo = build_repo(root, params.revs, params.files, params.seed)
        build_s = time.perf_counter() - t0
        spec = f"git:{repo}@tags:docs"
        t0 = time.perf_counter()
        sources, errors = load_git_sources(spec)
        load_s = time.perf_counter() - t0
        kb = root / "kb"
        kb.mkdir()
        first = subprocess.run(["git", "-C", str(repo), "rev-list", "--max-parents=0", "main"], check=True,
                               capture_output=True, text=True).stdout.strip()  # fmt: skip
        for i in range(params.kb_pages):
            text = subprocess.run(["git", "-C", str(repo), "show", f"{first}:docs/section-{i % 25}/page-{i}.md"],
                                  check=True, capture_output=True, text=True).stdout  # fmt: skip
            (kb / f"page-{i}.md").write_text("---\nupdated: 2020-09-13\n---\n" + text, encoding="utf-8")
        settings = Settings(docs=kb, sources=[spec], depth=params.depth, full=True).validate()
        t0 = time.perf_counter()
        result = run_audit(settings)
        audit_s = time.perf_counter() - t0
    return {
        "git_revs": float(params.revs),
        "git_files": float(params.files),
        "source_versions": float(len(sources)),
        "ingest_errors": float(len(errors)),
        "repo_build_s": build_s,
        "git_load_s": load_s,
        "audit_s": audit_s,
        "audit_claims": float(len(result.claims)),
        "load_share": load_s / audit_s if audit_s else 0.0,
    }
