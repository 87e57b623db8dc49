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

import argparse
import random
import subprocess
import tempfile
import time
from pathlib import Path

from kb.chain import run_audit
from kb.config import Settings
from kb.evidence.git_source import load_git_sources

WORDS = ("request", "timeout", "cache", "worker", "queue", "upload", "token", "session", "replica", "index")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--revs", type=int, default=50, help="tagged releases (default 50)")
    parser.add_argument("--files", type=int, default=1000, help="Markdown pages in the docs tree (default 1000)")
    parser.add_argument("--kb-pages", type=int, default=20, help="pages of the audited KB (default 20)")
    parser.add_argument("--depth", default="D0", help="verification depth of the audit (default D0)")
    parser.add_argument("--seed", type=int, default=7)


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


def run(args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="kbaudit-bench-git-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        repo = build_repo(root, args.revs, args.files, args.seed)
        build_s = time.perf_counter() - t0
        spec = f"git:{repo}@tags:docs"
        t0 = time.perf_counter()
        sources, errors = load_git_sources(spec)
        load_s = time.perf_counter() - t0
        kb = root / "kb"
        kb.mkdir()
        first = subprocess.run(["git", "-C", str(repo), "rev-list", "--max-parents=0", "main"], check=True,
                               capture_output=True, text=True).stdout.strip()  # fmt: skip
        for i in range(args.kb_pages):
            text = subprocess.run(["git", "-C", str(repo), "show", f"{first}:docs/section-{i % 25}/page-{i}.md"],
                                  check=True, capture_output=True, text=True).stdout  # fmt: skip
            (kb / f"page-{i}.md").write_text("---\nupdated: 2020-09-13\n---\n" + text, encoding="utf-8")
        settings = Settings(docs=kb, sources=[spec], depth=args.depth, full=True).validate()
        t0 = time.perf_counter()
        result = run_audit(settings)
        audit_s = time.perf_counter() - t0
    return {
        "git_revs": float(args.revs),
        "git_files": float(args.files),
        "source_versions": float(len(sources)),
        "ingest_errors": float(len(errors)),
        "repo_build_s": build_s,
        "git_load_s": load_s,
        "audit_s": audit_s,
        "audit_claims": float(len(result.claims)),
        "load_share": load_s / audit_s if audit_s else 0.0,
    }
