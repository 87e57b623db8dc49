"""Finding precision you can check by reading: a sample of one docs history's findings to judge.

``kbaudit bench findings --project NAME [--data DIR] [--old TAG] [--revs T1,T2,T3] --sample-csv FILE``
audits one project of a docs-histories folder (git bundles plus ``manifest.json``) in git mode, as
a new user would: the old release's docs are the KB (``git:<clone>@<old>:<docs path>``) and the
later releases are the sources (``git:<clone>@<revs>:<docs path>``), dated by their commits, the
audit's date the newest release's. It writes a random sample of the findings (stale and
contradicted claims) and a sample of supported claims to a CSV, each row with the claim, its
label and confidence, the evidence sentence, the rationale and the text of the same page at the
newest release, and an empty ``verdict`` column for a person to fill:

- a finding row: ``real`` (the newest release states another fact) or ``false``;
- a supported row: ``right`` (still true) or ``missed`` (the fact changed: missed drift).

``kbaudit bench findings --score FILE[,FILE...]`` reads judged CSVs (pooled) and prints the precision of the
findings with its 95% Wilson interval (``precision``, ``precision_lo``, ``precision_hi``), the
same at stricter confidence floors (``precision_at_0.2``, ``precision_at_0.4``, ``precision_at_0.5``,
with the findings kept, ``judged_at_0.2``...), the mean confidence of the findings (``mean_confidence``: calibrated,
it is near the precision) and the share of supported claims judged right (``supported_right``, with
its interval). Unjudged rows are counted (``unjudged``) and left out. A finding's confidence is
its kind's, read from its label and rationale with the calibration ``--calibration`` names
(``shipped``, ``none``: the sample's confidence column, or a file), so a sample judged before a
calibration existed is scored as one would be now (kb/verify/calibration.py).

``kbaudit bench findings --fit A.csv,B.csv --fit-out FILE`` fits a finding calibration on judged
samples (the findings of each kind judged, and judged real) and writes it to FILE, for the
``finding_calibration`` setting. Never score a sample with a calibration fitted on it.

``--facts FILE`` scores recall on changed facts found in the release diffs before the findings
are read: a CSV with ``doc_id`` (the page, relative to the docs folder of the old release) and
``old_text`` (words of the sentence as the old release states it), one row per fact that a later
release changed or removed. A fact is found when a claim of that page holding those words is
stale or contradicted; where the splitter cut the sentence into several claims (or the fact runs
over two sentences), the fewest claims in a row that hold its words between them stand for it,
and one of them flagged finds it (``facts``, ``facts_found``, ``facts_recall`` with its interval,
``facts_without_claim``: no claims hold the words, so the parser lost them; ``facts_found_at_0.4``...:
found by a finding at or above that confidence floor); each missed fact is logged.

``--rejudge FILE`` (with ``--project``) reads a judged sample of the same project, audits it as
it stands, and prints which judged findings are still reported: ``rejudged`` (judged findings
whose claim this audit still has; ``rejudged_unmatched`` those it has not, a parser change),
``rejudged_real_kept`` and ``rejudged_false_kept`` (still stale or contradicted), and
``rejudged_precision`` (real among those kept), the same at the stricter floors
(``rejudged_real_kept_at_0.4``...: this audit's calibrated confidences), so a change to the rules is read against a
person's verdicts without judging again. Claims are matched by page and text; figures on a
sample the rules were tuned on are development figures.

The data folder comes from ``--data`` or ``$KBAUDIT_DATA/docs-histories``.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import random
import re
import subprocess
import tempfile
import time
from datetime import date
from pathlib import Path

import pygit2
from pydantic import BaseModel, Field

from bench import data_path
from kb.chain import run_audit
from kb.config import Settings
from kb.config.gitspec import open_repository
from kb.errors import ConfigError
from kb.evidence.git_source import _tags
from kb.verify import calibration

log = logging.getLogger("kbaudit.bench.findings")

FINDING_LABELS = ("stale", "contradicted")
COLUMNS = ("row", "project", "kind", "doc_id", "claim", "label", "confidence", "evidence", "evidence_source", "rationale",
           "newest_page", "newest_text", "verdict", "note")  # fmt: skip
# what a person writes in the verdict column, read loosely (case, surrounding space)
REAL, FALSE, RIGHT, MISSED = ("real", "yes", "y", "1", "true"), ("false", "no", "n", "0"), ("right", "ok", "correct"), ("missed",)
STRICTER = (0.2, 0.4, 0.5)  # calibrated: the kinds real one time in five or more, nearly half, and more often than not
NEWEST_TEXT_CHARS = 20_000  # a judge reads the page; a wiki-sized page is cut here


class Params(BaseModel):
    """`kbaudit bench findings` parameters."""

    project: str | None = Field(default=None, description="the project of the docs-histories folder to audit")
    data: str = Field(
        default_factory=lambda: data_path("docs-histories"),
        description="a docs-histories folder: <project>.bundle files and manifest.json (default: $KBAUDIT_DATA/docs-histories)",
    )
    old: str | None = Field(default=None, description="the release audited as the KB (default: the fourth newest)")
    revs: str | None = Field(
        default=None, description="comma-separated releases read as sources (default: the three after --old, newest last)"
    )
    sample: int = Field(default=40, description="findings to sample (default 40)")
    supported_sample: int = Field(default=20, description="supported claims to sample (default 20)")
    seed: int = 24
    depth: str = Field(default="D1", description="verification depth (default D1)")
    sample_csv: str | None = Field(default=None, description="write the sample to judge here (CSV)")
    score: str | None = Field(
        default=None, description="score a judged sample CSV (or several, comma-separated, pooled) instead of auditing"
    )
    facts: str | None = Field(
        default=None, description="a CSV of changed facts (doc_id, old_text) found in the diffs: print the recall on them"
    )
    workdir: str | None = Field(default=None, description="keep the clone and the stage caches here (default: a temporary folder)")
    calibration: str = Field(
        default="shipped", description="with --score: the finding calibration to read confidences with (shipped, none or a file)"
    )
    fit: str | None = Field(default=None, description="comma-separated judged sample CSVs to fit a finding calibration on")
    fit_out: str | None = Field(default=None, description="with --fit: write the calibration here (JSON)")
    rejudge: str | None = Field(
        default=None, description="a judged sample CSV of this project: print which of its judged findings this audit still reports"
    )


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion (sound at the small n a judged sample has)."""
    if n == 0:
        return 0.0, 0.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def read_judged(path: Path, flag: str = "--score") -> list[dict]:
    """The rows of a judged sample CSV."""
    if not path.is_file():
        raise ConfigError(f"bench findings: {flag} {path}: no such file")
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    missing = {"kind", "label", "confidence", "rationale", "verdict"} - set(rows[0] if rows else {})
    if missing:
        raise ConfigError(f"bench findings: {flag} {path}: not a findings sample (no {', '.join(sorted(missing))} column)")
    return rows


def judged_findings(rows: list[dict]) -> list[tuple[str, str, bool]]:
    """(label, rationale, judged real) of each judged finding row."""
    out = []
    for row in rows:
        verdict = (row.get("verdict") or "").strip().lower()
        if row["kind"] == "finding" and verdict:
            if verdict not in REAL + FALSE:
                raise ConfigError(f"bench findings: row {row.get('row')}: verdict {verdict!r}: a finding is judged real or false")
            out.append((row["label"], row["rationale"], verdict in REAL))
    return out


def fit(paths: list[Path], out: Path) -> dict[str, float]:
    """Fit a finding calibration on judged samples and write it (see the module docstring)."""
    found = calibration.fit((p.stem, judged_findings(read_judged(p, "--fit"))) for p in paths)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(found.to_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    log.info("finding calibration of %d judged findings written to %s", sum(found.fitted_on.values()), out)
    metrics: dict[str, float] = {"samples": float(len(paths)), "judged": float(sum(found.fitted_on.values()))}
    metrics.update({f"prior_{label}": share for label, share in found.prior.items()})
    return metrics


def score(paths: Path | list[Path], calibration_setting: str = "shipped") -> dict[str, float]:
    """Precision of a judged sample, or of several pooled (see the module docstring)."""
    rows = [row for path in ([paths] if isinstance(paths, Path) else paths) for row in read_judged(path)]
    found = calibration.load(calibration_setting)
    out: dict[str, float] = {"unjudged": 0.0}
    findings, supported = [], []
    for row in rows:
        verdict = (row.get("verdict") or "").strip().lower()
        if not verdict:
            out["unjudged"] += 1
            continue
        if row["kind"] == "finding":
            if verdict not in REAL + FALSE:
                raise ConfigError(f"bench findings: row {row.get('row')}: verdict {verdict!r}: a finding is judged real or false")
            conf = found.confidence(row["label"], row["rationale"]) if found else float(row["confidence"] or 0)
            findings.append((conf, verdict in REAL))
        else:
            if verdict not in RIGHT + MISSED:
                raise ConfigError(f"bench findings: row {row.get('row')}: verdict {verdict!r}: a supported claim is judged right or missed")
            supported.append(verdict in RIGHT)
    hits = sum(real for _, real in findings)
    lo, hi = wilson(hits, len(findings))
    out.update(judged=float(len(findings)), precision=hits / len(findings) if findings else 0.0, precision_lo=lo, precision_hi=hi)
    out["mean_confidence"] = sum(conf for conf, _ in findings) / len(findings) if findings else 0.0
    for floor in STRICTER:
        kept = [real for conf, real in findings if conf >= floor]
        out[f"precision_at_{floor}"] = sum(kept) / len(kept) if kept else 0.0
        out[f"judged_at_{floor}"] = float(len(kept))
    right = sum(supported)
    lo, hi = wilson(right, len(supported))
    out.update(supported_judged=float(len(supported)), supported_right=right / len(supported) if supported else 0.0,
               supported_right_lo=lo, supported_right_hi=hi)  # fmt: skip
    return {k: round(v, 4) for k, v in out.items()}


_FENCE_LINE = re.compile(r"(?m)^[ \t]*(?:`{3,}|~{3,})[^\n]*$")
_LINK = re.compile(r"\[([^\]\n]*)\](?:\([^)\n]*\)|\[[^\]\n]*\])")  # [text](target), [text][reference]


def _words(text: str) -> str:
    """Text without markup, case or table punctuation: a table row (`| Default: | 20 |`) and its
    claim (`Default:: 20`) read alike, and so do a page's lines with their code fences, links and
    code spans (`` `yarn`). ``) and the words a reader sees ("yarn).")."""
    text = _LINK.sub(r"\1", _FENCE_LINE.sub(" ", text))
    return " ".join(re.sub(r"[:|]", " ", re.sub(r"[`*\[\]]", "", text.replace("_", ""))).lower().split())


def read_facts(path: Path) -> list[dict]:
    if not path.is_file():
        raise ConfigError(f"bench findings: --facts {path}: no such file")
    with path.open(newline="", encoding="utf-8-sig") as fh:  # a spreadsheet saves a byte-order mark
        rows = list(csv.DictReader(fh))
    missing = {"doc_id", "old_text"} - set(rows[0] if rows else {})
    if missing:
        raise ConfigError(f"bench findings: --facts {path}: not a facts file (no {', '.join(sorted(missing))} column)")
    for n, row in enumerate(rows, start=1):
        # no words would be held by every claim of the page (or a short row by none): refuse it
        if not (row.get("doc_id") or "").strip() or not _words(row.get("old_text") or ""):
            raise ConfigError(f"bench findings: --facts {path}: row {n} has no doc_id or no old_text")
    return rows


def _holds(text: str, words: str) -> bool:
    """``text`` holds ``words`` as whole words: "timeout is 3" is not in "timeout is 30"."""
    return re.search(rf"(?<!\w){re.escape(words)}(?!\w)", _words(text)) is not None


MAX_PARTS = 4  # claims in a row that may hold one fact between them


def _parts_holding(claims: list, page_text: str, words: str) -> list:
    """The fewest claims in a row (page order) whose span of the page holds ``words``: a fact the
    splitter cut into parts ("All content is written in Markdown" / "is located in the docs
    directory", the "and" between them in neither), or one stated over two sentences."""
    for n in range(2, MAX_PARTS + 1):
        for k in range(len(claims) - n + 1):
            run = claims[k : k + n]
            if _holds(page_text[run[0].start : run[-1].end], words):
                return run
    return []


def facts_recall(result, facts: list[dict]) -> dict[str, float]:
    """Recall on changed facts: a fact counts found when a claim of its page that holds its words
    (markup and case aside) is stale or contradicted, or, where no claim holds them all, one of the
    fewest claims in a row that hold them between them."""
    labels = {v.claim_id: v.label for v in result.verdicts}
    confidence = {v.claim_id: v.confidence for v in result.verdicts}
    at_floor = dict.fromkeys(STRICTER, 0)
    by_doc: dict[str, list] = {}
    for c in sorted(result.claims, key=lambda c: (c.doc_id, c.start, c.end)):
        by_doc.setdefault(c.doc_id, []).append(c)
    texts = {d.doc_id: d.text for d in getattr(result, "documents", None) or []}
    found = without_claim = 0
    for fact in facts:
        words = _words(fact["old_text"])
        page = by_doc.get(fact["doc_id"], [])
        holders = [c for c in page if _holds(c.source_text or "", words) or _holds(c.text, words)]
        holders = holders or _parts_holding(page, texts.get(fact["doc_id"], ""), words)
        if not holders:
            without_claim += 1
            log.info("changed fact without a claim: %s: %s", fact["doc_id"], fact["old_text"])
        elif any(labels.get(c.claim_id) in FINDING_LABELS for c in holders):
            found += 1
            surest = max(confidence[c.claim_id] for c in holders if labels.get(c.claim_id) in FINDING_LABELS)
            for floor in STRICTER:
                at_floor[floor] += surest >= floor
        else:
            got = ", ".join(sorted({labels.get(c.claim_id, "none") for c in holders}))
            log.info("changed fact missed (%s): %s: %s", got, fact["doc_id"], fact["old_text"])
    lo, hi = wilson(found, len(facts))
    return {"facts": float(len(facts)), "facts_found": float(found), "facts_recall": found / len(facts) if facts else 0.0,
            "facts_recall_lo": lo, "facts_recall_hi": hi, "facts_without_claim": float(without_claim),
            **{f"facts_found_at_{floor}": float(n) for floor, n in at_floor.items()}}  # fmt: skip


def rejudged(result, rows: list[dict]) -> dict[str, float]:
    """Which judged findings of a sample the audit ``result`` still reports (see the module docstring)."""
    verdicts = {v.claim_id: v for v in result.verdicts}
    # (page, claim text) -> (label, confidence) of every claim so written: a page repeats short
    # cells ("True", "Yes"), and the judged one is the one still reported, if any is
    written: dict[tuple[str, str], list[tuple[str | None, float]]] = {}
    for claim in result.claims:
        v = verdicts.get(claim.claim_id)
        written.setdefault((claim.doc_id, claim.source_text), []).append((v.label, v.confidence) if v else (None, 0.0))
    reported = {key: max(found, key=lambda f: (f[0] in FINDING_LABELS, f[1])) for key, found in written.items()}
    kept: list[tuple[float, bool]] = []
    out: dict[str, float] = dict.fromkeys(
        ("rejudged", "rejudged_unmatched", "rejudged_real_kept", "rejudged_false_kept", "rejudged_real"), 0.0
    )
    for row in rows:
        verdict = (row.get("verdict") or "").strip().lower()
        if row.get("kind") != "finding" or verdict not in REAL + FALSE:
            continue
        key = (row.get("doc_id", ""), row.get("claim", ""))
        if key not in reported:
            out["rejudged_unmatched"] += 1
            continue
        label, confidence = reported[key]
        real = verdict in REAL
        out["rejudged"] += 1
        out["rejudged_real"] += real
        if label in FINDING_LABELS:
            out["rejudged_real_kept" if real else "rejudged_false_kept"] += 1
            kept.append((confidence, real))
            if not real:
                log.info("still a finding, judged false: %s: %s", key[0], key[1][:120])
        else:
            log.info("no longer a finding (judged %s, now %s): %s: %s", verdict, label, key[0], key[1][:120])
    out["rejudged_precision"] = sum(real for _, real in kept) / len(kept) if kept else 0.0
    for floor in STRICTER:  # the operating points a team may choose, read from this audit's confidences
        above = [real for conf, real in kept if conf >= floor]
        out[f"rejudged_real_kept_at_{floor}"] = float(sum(above))
        out[f"rejudged_false_kept_at_{floor}"] = float(len(above) - sum(above))
    return out


def project_entry(data: Path, name: str) -> dict:
    manifest = data / "manifest.json"
    if not manifest.is_file():
        raise ConfigError(f"bench findings: {data} has no manifest.json (pass --data, a docs-histories folder)")
    entries = {e["project"]: e for e in json.loads(manifest.read_text("utf-8"))}
    if name not in entries:
        raise ConfigError(f"bench findings: no project {name!r} in {manifest} (projects: {', '.join(sorted(entries))})")
    return entries[name]


def docs_path_at(repo: pygit2.Repository, rev: str, candidates: list[str]) -> str:
    """The first of the manifest's docs paths that the release's tree holds."""
    tree = repo.revparse_single(rev).peel(pygit2.Commit).tree
    for path in candidates:
        try:
            tree[path.rstrip("/")]
        except KeyError:
            continue
        return path.rstrip("/")
    raise ConfigError(f"bench findings: {rev} holds none of the docs paths {', '.join(candidates)}")


def choose_revs(tags: list[str], old: str | None, revs: str | None) -> tuple[str, list[str]]:
    if old is None:
        if len(tags) < 2:
            raise ConfigError("bench findings: the history needs at least two releases")
        old = tags[max(0, len(tags) - 4)]
    if old not in tags:
        raise ConfigError(f"bench findings: --old {old}: not a release of this history ({', '.join(tags)})")
    later = tags[tags.index(old) + 1 :]
    chosen = [r.strip() for r in revs.split(",") if r.strip()] if revs else later[-3:]
    unknown = [r for r in chosen if r not in tags]
    if unknown or not chosen:
        raise ConfigError(f"bench findings: --revs {revs}: {', '.join(unknown) or 'none'} not releases of this history")
    return old, chosen


def page_text(repo: pygit2.Repository, rev: str, path: str) -> str:
    try:
        blob = repo.revparse_single(rev).peel(pygit2.Commit).tree[path]
    except KeyError:
        return ""
    return blob.data.decode("utf-8", errors="replace")[:NEWEST_TEXT_CHARS] if isinstance(blob, pygit2.Blob) else ""


def sample_rows(result, repo, project: str, newest: str, docs_path: str, params: Params) -> list[dict]:
    claims = {c.claim_id: c for c in result.claims}
    rng = random.Random(params.seed)
    findings = [v for v in result.verdicts if v.label in FINDING_LABELS and v.claim_id in claims]
    supported = [v for v in result.verdicts if v.label == "supported" and v.claim_id in claims]
    picked = [("finding", v) for v in rng.sample(findings, min(params.sample, len(findings)))]
    picked += [("supported", v) for v in rng.sample(supported, min(params.supported_sample, len(supported)))]
    evidence = result.evidence
    rows = []
    for n, (kind, v) in enumerate(picked, 1):
        claim = claims[v.claim_id]
        ev = [e for e in evidence.get(v.claim_id, []) if e.evidence_id in set(v.evidence_ids)] if v.evidence_ids else []
        source = f"{ev[0].source_id}@{ev[0].source_version}" if ev else ""
        path = f"{docs_path}/{claim.doc_id}" if docs_path else claim.doc_id
        rows.append({
            "row": n, "project": project, "kind": kind, "doc_id": claim.doc_id, "claim": claim.source_text, "label": v.label,
            "confidence": round(v.confidence, 3), "evidence": v.evidence_sentence or (ev[0].sentence if ev else ""),
            "evidence_source": source, "rationale": v.rationale, "newest_page": f"{path}@{newest}",
            "newest_text": page_text(repo, newest, path), "verdict": "", "note": "",
        })  # fmt: skip
    return rows


def audit(params: Params, work: Path) -> dict[str, float]:
    if not params.project:
        raise ConfigError("bench findings: pass --project NAME (or --score FILE)")
    if not params.data:
        raise ConfigError("bench findings: pass --data (a docs-histories folder) or set KBAUDIT_DATA")
    facts = read_facts(Path(params.facts)) if params.facts else None
    data = Path(params.data)
    entry = project_entry(data, params.project)
    clone = work / f"{params.project}.git"
    if not clone.exists():
        subprocess.run(["git", "clone", "--quiet", "--bare", str(data / entry["bundle"]), str(clone)], check=True, capture_output=True)
    repo = open_repository(str(clone))
    tags = [t.name for t in _tags(repo)]
    old, revs = choose_revs(tags, params.old, params.revs)
    newest = revs[-1]
    kb_path, src_path = docs_path_at(repo, old, entry["docs_paths"]), docs_path_at(repo, newest, entry["docs_paths"])
    today = date.fromtimestamp(repo.revparse_single(newest).peel(pygit2.Commit).committer.time)
    settings = Settings(docs=f"git:{clone}@{old}:{kb_path}", sources=[f"git:{clone}@{','.join(revs)}:{src_path}"],
                        depth=params.depth, today=today, full=True)  # fmt: skip
    settings.validate()
    log.info("%s: KB %s@%s, sources %s", params.project, kb_path, old, ",".join(revs))
    t0 = time.perf_counter()
    result = run_audit(settings, cache_dir=work / "cache")
    audit_s = time.perf_counter() - t0
    labels = result.label_counts()
    checkworthy = sum(1 for c in result.claims if c.checkworthy)
    found = sum(labels[label] for label in FINDING_LABELS)
    if params.sample_csv:
        rows = sample_rows(result, repo, params.project, newest, src_path, params)
        with open(params.sample_csv, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        log.info("%s: %d rows to judge in %s", params.project, len(rows), params.sample_csv)
    metrics = {
        "claims": float(len(result.claims)), "checkworthy": float(checkworthy), "findings": float(found),
        "findings_per_100_checkworthy": 100.0 * found / checkworthy if checkworthy else 0.0,
        **{f"label_{k}": float(v) for k, v in labels.items()}, "audit_s": audit_s,
        **(facts_recall(result, facts) if facts is not None else {}),
        **(rejudged(result, read_judged(Path(params.rejudge), "--rejudge")) if params.rejudge else {}),
    }  # fmt: skip
    return {k: round(v, 4) for k, v in metrics.items()}


def run(params: Params) -> dict[str, float]:
    if params.fit:
        if not params.fit_out:
            raise ConfigError("bench findings: --fit needs --fit-out FILE (where to write the calibration)")
        return fit([Path(p.strip()) for p in params.fit.split(",") if p.strip()], Path(params.fit_out))
    if params.score:
        return score([Path(p.strip()) for p in params.score.split(",") if p.strip()], params.calibration)
    if params.workdir:
        Path(params.workdir).mkdir(parents=True, exist_ok=True)
        return audit(params, Path(params.workdir))
    with tempfile.TemporaryDirectory(prefix="kbaudit-findings-") as tmp:
        return audit(params, Path(tmp))
