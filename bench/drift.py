"""Documentation drift: stale recall and false alarms on real releases (docsdrift).

``kbaudit bench drift --data DATA/docsdrift [--data DATA/docsdrift-more]
[--raw] [--today pinned|real|YYYY-MM-DD] [--depth D1] [--json OUT]``

For each project folder under every ``--data`` (``traefik``, ``black``, ``fastapi``...), the
whole pipeline (:func:`kb.chain.run_audit`, the audit's own stage chain) audits ``kb/`` against
``sources/`` (the new release) and ``sources_old/`` (the old release, older dates). With
``--raw`` the KB is the raw pages as they sit in git instead: ``<project>/kb_raw/`` where the
set has it (docsdrift-more), else ``<data>-git/<project>/kb/`` (docsdrift-git, beside
docsdrift); the sources stay the cleaned ones. ``--today pinned`` (the default) audits on the
NEW release's date (the newest source date of each project), ``--today real`` on the real date. Only then is ``gold.jsonl`` read, to score:
each gold sentence is matched to the claims split from it (same page, overlapping line, best
text similarity), and

- ``drift_stale_recall``: share of gold ``stale`` sentences with a claim labelled stale or
  contradicted (the README counts contradicted on a stale item as a hit);
- ``drift_false_alarm_rate``: share of gold ``supported`` sentences with a claim labelled stale
  or contradicted;
- ``drift_stale_precision``: share of flagged (stale or contradicted) gold-labelled sentences
  that are gold stale; ``drift_uncertain_flagged``: share of gold ``uncertain`` sentences
  flagged (informational: gold says the new pages no longer state them);
- ``drift_unmatched``: gold sentences with no claim (they count as misses / non-alarms);

per project (``<project>_drift_...``) and overall. ``_build/`` is never read. Gold lines are
lines of the cleaned page; auditing raw pages (``--raw``, ``--git``), whose lines are shifted by
front matter and markup lines, a gold sentence is scored at the nearest line (within 40) that
holds its start when the gold line does not (:func:`gold_line`).

``--git [DIR]`` (default ``<data>/../docsdrift-git``): nothing prepared. Each project's
``<DIR>/<project>.bundle`` is cloned bare into a temporary folder and the raw pages
``<DIR>/<project>/kb`` are audited against ``git:<clone>@tags:<docs path>`` (every release,
dated by its commit); the docs path is the folder of the newest tag's tree whose files the KB's
page names spell (``routing/entrypoints.md`` -> ``routing-entrypoints.md``). Scored with the same
``<data>/<project>/gold.jsonl``.
"""

from __future__ import annotations

import json
import logging
import subprocess
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Literal

import pygit2
from pydantic import BaseModel, Field
from rapidfuzz import fuzz

from kb.chain import run_audit
from kb.config import Settings
from kb.config.gitspec import open_repository
from kb.errors import ConfigError
from kb.evidence.git_source import _tags, _walk
from kb.ingest.front_matter import read_front_matter
from kb.records import Claim
from kb.verify.slots import canonical

log = logging.getLogger("kbaudit.bench.drift")
FLAGGED = ("stale", "contradicted")


class Params(BaseModel):
    """`kbaudit bench drift` parameters."""

    data: list[str] = Field(description="a docsdrift-style folder (one sub-folder per project); repeat to score several sets")
    raw: bool = Field(default=False, description="audit the raw pages (<project>/kb_raw, else <data>-git/<project>/kb) instead of kb/")
    depth: str = Field(default="D1", description="verification depth (default D1: rules + model; D0: rules only)")
    projects: str | None = Field(default=None, description="comma-separated project names (default: all)")
    today: str = Field(
        default="pinned",
        description="audit date: pinned (default: the newest source date of each project, the NEW release), real (the real date) or YYYY-MM-DD",
    )
    cache_dir: str | None = Field(default=None, description="stage cache folder reused across runs (default: a fresh one)")
    dump: str | None = Field(default=None, description="write every scored gold sentence with its claims' labels here (JSONL)")
    git: str | None = Field(
        default=None,
        description="audit the raw pages against the projects' git history (DIR: the docsdrift-git folder, default <data>/../docsdrift-git)",
        json_schema_extra={"const": "", "metavar": "DIR"},
    )
    retrieval_path: Literal["minilm", "static+minilm"] = Field(
        default="static+minilm", description="retrieval path (default static+minilm, the settings' default; docs/retrieval.md)"
    )
    rerank_candidates: int = Field(
        default=50, ge=1, description="candidates per claim the MiniLM scores on the two-stage path (default 50, as the setting)"
    )


def _newest_source_date(folder: Path) -> date | None:
    best = None
    for p in folder.glob("*.md"):
        try:
            meta, _ = read_front_matter(p.read_text(encoding="utf-8", errors="replace"))
        except Exception:
            continue
        d = meta.get("updated") or meta.get("date")
        if isinstance(d, str):
            try:
                d = date.fromisoformat(d[:10])
            except ValueError:
                d = None
        if isinstance(d, date) and (best is None or d > best):
            best = d
    return best


def raw_kb(project: Path) -> Path | None:
    """The project's raw KB pages: ``kb_raw/`` in the project, else the git set's copy beside it."""
    for folder in (project / "kb_raw", project.parent.with_name(project.parent.name + "-git") / project.name / "kb"):
        if folder.is_dir():
            return folder
    return None


def audit_project(
    project: Path, depth: str, today: date | None, cache_dir: Path | None, kb: Path | None = None, retrieval: dict | None = None
):
    """Run the pipeline on one project. Reads only the KB (kb/ unless `kb` names the raw
    pages), sources/ and sources_old/."""
    sources = [project / "sources", project / "sources_old"]
    settings = Settings(docs=kb or project / "kb", sources=[s for s in sources if s.exists()], depth=depth,
                        today=today or _newest_source_date(project / "sources"), full=True, **(retrieval or {}))  # fmt: skip
    settings.validate()
    return run_audit(settings, cache_dir=cache_dir)


def docs_path_of(repo_path: Path, kb: Path) -> str:
    """The folder of the newest tag's tree that the KB's page names come from (``a/b.md`` is
    page ``a-b.md``): the prefix most page names resolve under."""
    repo = pygit2.Repository(str(repo_path))
    tags = _tags(repo)
    tree = (tags[-1].commit if tags else repo.head.peel(pygit2.Commit)).tree
    names = {p.name for p in kb.glob("*.md")}
    votes: dict[str, int] = {}
    for path, _ in _walk(repo, tree):
        flat = path.replace("/", "-")
        for k in range(len(path)):
            if path[k] == "/" and flat[k + 1 :] in names:
                votes[path[:k]] = votes.get(path[:k], 0) + 1
    return max(votes, key=lambda p: (votes[p], -len(p))) if votes else ""


def audit_project_git(
    project: str, git_root: Path, depth: str, today: date | None, cache_dir: Path | None, work: Path, retrieval: dict | None = None
):
    """Clone ``<git_root>/<project>.bundle`` bare and audit the raw KB against every tag."""
    clone = work / f"{project}.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(git_root / f"{project}.bundle"), str(clone)],
                   check=True, capture_output=True)  # fmt: skip
    kb = git_root / project / "kb"
    docs_path = docs_path_of(clone, kb)
    tags = _tags(open_repository(str(clone)))
    newest = max((t.day for t in tags), default=None)
    spec = f"git:{clone}@tags:{docs_path}"
    log.info("%s: %s (%d tags, docs path %r)", project, spec, len(tags), docs_path)
    settings = Settings(docs=kb, sources=[spec], depth=depth, today=today or newest, full=True, **(retrieval or {}))
    settings.validate()
    return run_audit(settings, cache_dir=cache_dir)


def _claim_lines(result) -> dict[str, list[tuple[int, int, object, str]]]:
    """doc_id -> [(first line, last line, claim, label)] for every claim with a verdict."""
    docs = {d.doc_id: d for d in result.documents}
    label = {v.claim_id: v.label for v in result.verdicts}
    out: dict[str, list] = {}
    for c in result.claims:
        d = docs.get(c.doc_id)
        if d is None:
            continue
        a = d.text.count("\n", 0, c.start) + 1
        b = d.text.count("\n", 0, max(c.start, c.end - 1)) + 1
        out.setdefault(c.doc_id, []).append((a, b, c, label.get(c.claim_id, "unchecked")))
    return out


MAX_WRAPPED_LINES = 8


def match_gold(gold: dict, claims_by_doc: dict) -> list[tuple[Claim, str]]:
    """The claims split from one gold sentence (with their labels)."""
    doc = gold["doc"]
    cands = claims_by_doc.get(doc) or claims_by_doc.get(Path(doc).name) or []
    target = canonical(gold["old_text"])
    line = int(gold.get("line") or 0)

    def sim(c) -> float:
        return fuzz.partial_ratio(canonical(c.source_text), target) / 100.0

    on_line = [(c, lab) for a, b, c, lab in cands if a <= line <= b or a <= line + 1 <= b]
    hits = [(c, lab) for c, lab in on_line if sim(c) >= 0.6]
    # a sentence wrapped over several lines: its later pieces start further down, and are
    # taken only when their text lies inside the gold sentence
    hits += [(c, lab) for a, _, c, lab in cands if line + 1 < a <= line + MAX_WRAPPED_LINES and sim(c) >= 0.95]
    if hits:
        return hits
    scored = sorted(((sim(c), c, lab) for _, _, c, lab in cands), key=lambda x: -x[0])
    if scored and scored[0][0] >= 0.85:
        top = scored[0][0]
        return [(c, lab) for s, c, lab in scored if s >= top - 0.02 and abs(_line_of(c, cands) - line) <= 40]
    return []


LINE_SEARCH = 40  # how far a raw page's line of a gold sentence may lie from the cleaned page's
LINE_FIT = 90  # partial_ratio at which a raw line holds the start of the gold sentence


def gold_line(gold: dict, lines: list[str]) -> int:
    """The line of ``lines`` (the audited page) that holds the start of the gold sentence.

    Gold lines are lines of the cleaned page (docsdrift/<p>/kb). A raw page of the same release
    (--raw, --git) has front matter, markup lines and admonition titles the cleaned one has not,
    so its lines are shifted: on the gold line itself a short claim of another sentence would be
    scored for this one. The gold line is kept when it holds the sentence's start; otherwise the
    nearest line within ``LINE_SEARCH`` that holds it is taken (none: the gold line)."""
    line = int(gold.get("line") or 0)
    head = canonical(gold["old_text"])[:50]
    if not head or not lines:
        return line

    def fit(k: int) -> float:
        text = canonical(lines[k - 1]) if 1 <= k <= len(lines) else ""
        # a line much shorter than the sentence's start ("# Workers") would align inside it
        return fuzz.partial_ratio(head, text) if len(text) >= 0.8 * len(head) else 0.0

    if fit(line) >= LINE_FIT:
        return line
    near = [k for d in range(1, LINE_SEARCH + 1) for k in (line - d, line + d) if 1 <= k <= len(lines)]
    found = [k for k in near if fit(k) >= LINE_FIT]
    return found[0] if found else line


def _line_of(claim, cands) -> int:
    for a, _, c, _ in cands:
        if c is claim:
            return a
    return 0


def score_project(gold_rows: list[dict], result) -> tuple[dict[str, float], list[dict]]:
    by_doc = _claim_lines(result)
    why = {v.claim_id: v.rationale for v in result.verdicts}
    page_lines = {d.doc_id: d.text.split("\n") for d in result.documents}
    counts = {"stale": 0, "stale_hit": 0, "supported": 0, "false_alarm": 0, "uncertain": 0,
              "uncertain_flagged": 0, "unmatched": 0}  # fmt: skip
    dump = []
    for g in gold_rows:
        lines = page_lines.get(g["doc"]) or page_lines.get(Path(g["doc"]).name) or []
        matched = match_gold(dict(g, line=gold_line(g, lines)), by_doc)
        labels = [lab for _, lab in matched]
        flagged = any(lab in FLAGGED for lab in labels)
        gl = g["label"]
        if not matched:
            counts["unmatched"] += 1
        if gl == "stale":
            counts["stale"] += 1
            counts["stale_hit"] += flagged
        elif gl == "supported":
            counts["supported"] += 1
            counts["false_alarm"] += flagged
        elif gl == "uncertain":
            counts["uncertain"] += 1
            counts["uncertain_flagged"] += flagged
        dump.append({"id": g.get("id"), "doc": g["doc"], "line": g.get("line"), "gold": gl,
                     "old_text": g["old_text"], "new_text": g.get("new_text"),
                     "claims": [{"text": c.text, "label": lab, "rationale": why.get(c.claim_id, "")}
                                for c, lab in matched]})  # fmt: skip
    flagged_total = counts["stale_hit"] + counts["false_alarm"] + counts["uncertain_flagged"]
    metrics = {
        "drift_stale_recall": counts["stale_hit"] / max(1, counts["stale"]),
        "drift_false_alarm_rate": counts["false_alarm"] / max(1, counts["supported"]),
        "drift_stale_precision": counts["stale_hit"] / flagged_total if flagged_total else 0.0,
        "drift_uncertain_flagged": counts["uncertain_flagged"] / max(1, counts["uncertain"]),
        "drift_unmatched": float(counts["unmatched"]),
        "drift_stale": float(counts["stale"]),
        "drift_supported": float(counts["supported"]),
    }
    return metrics, dump


def _read_gold(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def run(args: Params) -> dict[str, float]:
    folders = args.data
    for folder in folders:
        if not Path(folder).is_dir():
            raise ConfigError(f"bench drift: --data {folder}: not a folder")
    projects = [p for data in map(Path, folders) for p in sorted(data.iterdir())
                if p.is_dir() and (p / "kb").is_dir() and not p.name.startswith("_")]  # fmt: skip
    git_root = None
    if args.git is not None:
        git_root = Path(args.git) if args.git else Path(folders[0]).parent / "docsdrift-git"
        if not git_root.is_dir():
            raise ConfigError(f"--git: no docsdrift-git folder at {git_root}")
        projects = [p for p in projects if (git_root / f"{p.name}.bundle").is_file()]
    if args.projects:
        wanted = set(args.projects.split(","))
        projects = [p for p in projects if p.name in wanted]
    when = args.today
    try:
        today = None if when == "pinned" else date.today() if when == "real" else date.fromisoformat(when)
    except ValueError:
        raise ConfigError(f"bench drift: --today {when!r}: expected pinned, real or YYYY-MM-DD") from None
    raw = args.raw
    if raw and any(raw_kb(p) is None for p in projects):
        missing = ", ".join(p.name for p in projects if raw_kb(p) is None)
        raise ConfigError(f"bench drift: --raw: no raw pages for {missing} (kb_raw/ or <data>-git/<project>/kb/)")
    tmp = None
    cache_root = args.cache_dir
    if cache_root is None:
        tmp = tempfile.TemporaryDirectory(prefix="kbaudit-drift-")
        cache_root = tmp.name
    metrics: dict[str, float] = {}
    totals = {"stale": 0.0, "stale_hit": 0.0, "supported": 0.0, "false_alarm": 0.0, "flagged": 0.0,
              "uncertain": 0.0, "uncertain_flagged": 0.0, "unmatched": 0.0}  # fmt: skip
    dumps = []
    # the settings that choose how evidence is retrieved (Settings field names)
    retrieval = {"retrieval_path": args.retrieval_path, "rerank_candidates": args.rerank_candidates}
    try:
        for project in projects:
            t0 = time.perf_counter()
            if git_root is not None:
                with tempfile.TemporaryDirectory(prefix="kbaudit-drift-git-") as work:
                    result = audit_project_git(project.name, git_root, args.depth, today, Path(cache_root) / project.name,
                                               Path(work), retrieval)  # fmt: skip
            else:
                result = audit_project(project, args.depth, today, Path(cache_root) / project.name,
                                       kb=raw_kb(project) if raw else None, retrieval=retrieval)  # fmt: skip
            audit_s = time.perf_counter() - t0
            # scoring only: gold is read after the audit is complete
            gold_rows = _read_gold(project / "gold.jsonl")
            m, dump = score_project(gold_rows, result)
            dumps.extend(dict(d, project=project.name) for d in dump)
            for k, v in m.items():
                metrics[f"{project.name}_{k}"] = v
            metrics[f"{project.name}_audit_s"] = audit_s
            metrics[f"{project.name}_claims"] = float(len(result.claims))
            log.info("%s: %d claims in %.1fs; %s", project.name, len(result.claims), audit_s,
                     {k: round(v, 3) for k, v in m.items()})  # fmt: skip
            totals["stale"] += m["drift_stale"]
            totals["stale_hit"] += m["drift_stale_recall"] * m["drift_stale"]
            totals["supported"] += m["drift_supported"]
            totals["false_alarm"] += m["drift_false_alarm_rate"] * m["drift_supported"]
            n_unc = sum(1 for g in gold_rows if g["label"] == "uncertain")
            totals["uncertain"] += n_unc
            totals["uncertain_flagged"] += m["drift_uncertain_flagged"] * n_unc
            totals["unmatched"] += m["drift_unmatched"]
    finally:
        if tmp is not None:
            tmp.cleanup()
    flagged = totals["stale_hit"] + totals["false_alarm"] + totals["uncertain_flagged"]
    metrics["drift_stale_recall"] = totals["stale_hit"] / max(1.0, totals["stale"])
    metrics["drift_false_alarm_rate"] = totals["false_alarm"] / max(1.0, totals["supported"])
    metrics["drift_stale_precision"] = totals["stale_hit"] / flagged if flagged else 0.0
    metrics["drift_uncertain_flagged"] = totals["uncertain_flagged"] / max(1.0, totals["uncertain"])
    metrics["drift_unmatched"] = totals["unmatched"]
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as fh:
            for d in dumps:
                fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    return {k: round(v, 4) for k, v in metrics.items()}
