"""The audit users run, timed on a real docs history: ``kbaudit bench speed --git BUNDLE``.

``kbaudit bench speed --git DIR/httpx.bundle [--old TAG] [--revs T1,T2,T3]`` clones the bundle
(one commit per release tag) and audits it in git mode as a new user would: the old release's docs
are the KB and the later releases the sources (the defaults: the fourth-newest release against the
three newest, as ``bench findings``), dated by their commits, the run's date the newest release's.
The docs path comes from the ``manifest.json`` beside the bundle, else ``docs``. Each audit
runs in a new process, timed from its start to the end of its audit (imports and model loads
count, as in a user's run; the bench's own count of settled claims after it does not):

- cold: a fresh store and caches, the product's default settings;
- warm: the same audit again on that store (every stage reads its cache);
- 1% changed: the KB at a commit on top of the old release where one page in a hundred (at least
  one) gained a sentence, audited on that store, as a nightly run after a day's edits is;
- the same cold audit on the MiniLM-only path (``retrieval_path = "minilm"``, the MiniLM in
  torch as the reference: every passage embedded, every claim searched and every passage judged);
- and once more on the MiniLM-only path as a user selects it today (``retrieval_path = "minilm"``
  alone: both models in ONNX Runtime), so the speed-up from the path itself is printed beside the
  one that also counts the backends (``speedup_over_minilm_onnx``).

It prints, for the default path and the MiniLM-only path: check-worthy claims per second, texts
the MiniLM embedded, (claim, passage) pairs the verifier judged, the share of claims settled
without a model (stated as written in the newest corpus, nothing dated after it) and the peak RSS
of the default run; and the ratios ``speedup_over_minilm``, ``speedup_over_minilm_onnx``,
``warm_over_cold`` and ``change1pct_over_cold`` (with ``pages_changed``).
"""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import pygit2

from kb.chain import AuditResult
from kb.config import ConfigError, Settings
from kb.config.gitspec import open_repository, parse_spec
from kb.evidence.git_source import _object, _tags
from kb.store import Store
from kb.verify import settled_without_model


def _docs_paths(bundle: Path) -> list[str]:
    manifest = bundle.parent / "manifest.json"
    if manifest.is_file():
        for entry in json.loads(manifest.read_text("utf-8")):
            if entry.get("bundle") == bundle.name:
                return list(entry["docs_paths"])
    return ["docs/"]


def git_settings(bundle: Path, work: Path, old: str | None, revs: str | None, depth: str) -> Settings:
    """Settings of a git-mode audit of ``bundle``: the old release's docs against the later ones."""
    from bench.findings import choose_revs, docs_path_at

    if not bundle.is_file():
        raise ConfigError(f"bench speed: --git {bundle}: no such bundle")
    clone = work / "repo.git"
    if not clone.exists():
        done = subprocess.run(["git", "clone", "--quiet", "--bare", str(bundle), str(clone)], capture_output=True, text=True)
        if done.returncode:
            raise ConfigError(f"bench speed: --git {bundle}: not a git bundle ({done.stderr.strip().splitlines()[-1:]})")
    repo = open_repository(str(clone))
    old, chosen = choose_revs([t.name for t in _tags(repo)], old, revs)
    candidates = _docs_paths(bundle)
    kb_path, src_path = docs_path_at(repo, old, candidates), docs_path_at(repo, chosen[-1], candidates)
    today = date.fromtimestamp(repo.revparse_single(chosen[-1]).peel(pygit2.Commit).committer.time)
    return Settings(docs=f"git:{clone}@{old}:{kb_path}", sources=[f"git:{clone}@{','.join(chosen)}:{src_path}"], depth=depth, today=today)


PAGE_SUFFIXES = (".md", ".mdx", ".markdown", ".rst", ".txt", ".html", ".htm")
EDITED_SENTENCE = "\n\nThis page was reviewed for the next release.\n"
CHANGED_SHARE = 0.01


def one_percent_changed(docs: str, seed: int = 7) -> tuple[str, int]:
    """The KB spec ``docs`` (``git:REPO@REV:PATH``) at a new commit on top of REV in which one page
    of a hundred (at least one, chosen at random with ``seed``) gained a sentence at its end; and
    how many pages changed. The commit is written to the repository, no branch moves."""
    spec = parse_spec(docs)
    repo = open_repository(spec.repo)
    commit = repo.revparse_single((spec.revs or ("HEAD",))[0]).peel(pygit2.Commit)
    index = pygit2.Index()
    index.read_tree(commit.tree)
    prefix = spec.path.strip("/") + "/" if spec.path else ""
    pages = sorted(e.path for e in index if e.path.startswith(prefix) and e.path.lower().endswith(PAGE_SUFFIXES))
    if not pages:
        raise ConfigError(f"bench speed --git: no pages under {spec.path or 'the root'} at {spec.revs}")
    chosen = random.Random(seed).sample(pages, max(1, math.ceil(len(pages) * CHANGED_SHARE)))
    for path in chosen:
        entry = index[path]
        text = _object(repo, entry.id, pygit2.Blob).data.decode("utf-8", errors="replace").rstrip("\n") + EDITED_SENTENCE
        index.add(pygit2.IndexEntry(path, repo.create_blob(text.encode("utf-8")), entry.mode))
    signature = pygit2.Signature("kbaudit bench", "bench@kbaudit.invalid", commit.committer.time, commit.committer.offset)
    new = repo.create_commit(None, signature, signature, "pages edited for the 1% run", index.write_tree(repo), [commit.id])
    return f"git:{spec.repo}@{new}:{spec.path}", len(chosen)


def _work_done(result: AuditResult) -> tuple[int, int, int]:
    """Check-worthy claims, of them those settled without a model, and the pairs the verifier judged."""
    claims = {c.claim_id: c for c in result.claims if c.checkworthy}
    settled = pairs = 0
    for claim in claims.values():
        evidence = list(result.evidence.get(claim.claim_id, []))
        if settled_without_model(claim, evidence) is not None:
            settled += 1
        else:
            pairs += len(evidence)
    return len(claims), settled, pairs


def audit_once(settings_json: str) -> None:
    """One cold audit in this process (a fresh interpreter): prints its figures as one JSON line."""
    from bench.speed import _peak_rss_mb, _timed_run

    settings = Settings.from_public_dict(json.loads(settings_json)).validate()
    seconds, result = _timed_run(settings, Store(settings.out))
    done_at = time.time()  # what follows is the bench's bookkeeping, not the user's run
    n, settled, pairs = _work_done(result)
    if settings.retrieval_path == "minilm":  # the reference judges every pair it found
        settled, pairs = 0, sum(len(result.evidence.get(c.claim_id, [])) for c in result.claims if c.checkworthy)
    print(json.dumps({"seconds": seconds, "claims": n, "settled": settled, "pairs": pairs, "peak_rss_mb": _peak_rss_mb(),
                      "done_at": done_at}))  # fmt: skip


def _cold(settings: Settings) -> dict:
    """An audit in a new process, timed from its start to its audit's end: imports and model loads
    count, as they do for a user's run, and neither path inherits the other's loaded models. (The
    wall clock, not a process's own counter, spans the two processes.)"""
    started = time.time()
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from bench.speed_git import audit_once; audit_once(sys.argv[1])",
         json.dumps(settings.public_dict())],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"bench speed --git: the audit failed: {done.stderr.strip()[-2000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["wall_s"] = figures.pop("done_at") - started
    return figures


def run_git(
    bundle: str, old: str | None, revs: str | None, depth: str, workdir: str | None, rerank_candidates: int = 50
) -> dict[str, float]:
    from bench.speed import _minilm_encodings

    work = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="kbaudit-speed-git-"))
    try:
        base = git_settings(Path(bundle), work, old, revs, depth)
        default = base.replace(out=work / "store", rerank_candidates=rerank_candidates).validate()
        minilm = base.replace(
            out=work / "store-minilm", retrieval_path="minilm", embed_backend="torch", verifier_backend="torch"
        ).validate()
        minilm_onnx = base.replace(out=work / "store-minilm-onnx", retrieval_path="minilm").validate()
        for folder in (default.out, minilm.out, minilm_onnx.out):
            shutil.rmtree(folder, ignore_errors=True)
        cold = _cold(default)
        texts_embedded = _minilm_encodings(default.out)  # the cold run's: the later runs add to the cache
        warm = _cold(default)  # the same inputs on the same store: every stage reads its cache
        edited_docs, pages_changed = one_percent_changed(str(default.docs))
        change = _cold(default.replace(docs=edited_docs).validate())  # the next night, on the same store
        other = _cold(minilm)
        other_onnx = _cold(minilm_onnx)
        n = cold["claims"]
        metrics = {
            "claims": float(n),
            "cold_s": cold["wall_s"],
            "cold_claims_per_s": n / cold["wall_s"],
            "cold_audit_s": cold["seconds"],
            "texts_embedded": float(texts_embedded),
            "verifier_pairs": float(cold["pairs"]),
            "settled_without_model_share": cold["settled"] / n if n else 0.0,
            "peak_rss_mb": cold["peak_rss_mb"],
            "warm_s": warm["wall_s"],
            "warm_over_cold": warm["wall_s"] / cold["wall_s"],
            "pages_changed": float(pages_changed),
            "change1pct_s": change["wall_s"],
            "change1pct_over_cold": change["wall_s"] / cold["wall_s"],
            "cold_s_minilm": other["wall_s"],
            "cold_claims_per_s_minilm": other["claims"] / other["wall_s"],
            "cold_audit_s_minilm": other["seconds"],
            "texts_embedded_minilm": float(_minilm_encodings(minilm.out)),
            "verifier_pairs_minilm": float(other["pairs"]),
            "peak_rss_mb_minilm": other["peak_rss_mb"],
            "speedup_over_minilm": (n / cold["wall_s"]) / (other["claims"] / other["wall_s"]),
            "cold_s_minilm_onnx": other_onnx["wall_s"],
            "speedup_over_minilm_onnx": (n / cold["wall_s"]) / (other_onnx["claims"] / other_onnx["wall_s"]),
        }
    finally:
        if not workdir:
            shutil.rmtree(work, ignore_errors=True)
    print(git_targets(metrics))
    return {k: round(v, 4) for k, v in metrics.items()}


def git_targets(m: dict) -> str:
    rows = [
        ("cold, default over the MiniLM-only path >= 5 (stretch 10)", m["speedup_over_minilm"], m["speedup_over_minilm"] >= 5),
        ("claims settled without a model >= 0.60", m["settled_without_model_share"], m["settled_without_model_share"] >= 0.6),
        ("1% of pages changed, over the cold run <= 0.05", m["change1pct_over_cold"], m["change1pct_over_cold"] <= 0.05),
    ]
    lines = [f"target  {name:<72}{value:>10.3f}  {'met' if ok else 'NOT met'}" for name, value, ok in rows]
    if "speedup_over_minilm_onnx" in m:
        name = "(the same over the MiniLM-only path in ONNX Runtime, no target)"
        lines.insert(1, f"        {name:<72}{m['speedup_over_minilm_onnx']:>10.3f}")
    return "\n".join(lines)
