"""The findings of one run, read back from the store: what every output format renders.

One model for SARIF (reports/sarif.py), GitHub annotations (reports/github.py), JUnit
(reports/junit.py) and the notification (reports/notify.py). It reads the store only through
reports/queries.py (its views), plus the KB files for the document text (below).

A finding is a check-worthy claim whose label, as of the run, is not ``supported``, or a page
that the previous run had and this run does not (``removed``). Kinds (one rule each in SARIF):
``contradicted``, ``stale``, ``uncertain``, ``ungrounded-tool-claim`` (the claim states a tool or
query result, requirement ``tool_receipt``, and no evidence supports it) and ``removed``.

Line and column come from the claim's character span in the document version it was split
from, in the file as the run read it. The store keeps the text of the versions a run accepted
(``versions.content``), not of the versions it read, so the text is recovered (``KbFiles``):
first from ``versions`` by version id (``location_basis`` ``version``); else from the KB file
when its bytes still hash to that version id: a folder's file now (``kb_file``), a KB read from
git (``git:REPO@REV:PATH``) at the commit the run read (``git_rev``, from the run's
``docs_commit``); else, for a folder in a git work tree whose file changed since, from the file
at the commit the run recorded (``git_rev``); else by searching the current file for the claim
as written (``search``) and, failing that, the finding points at the file only (``file``).
Paths are relative to the repository root when the KB is in git (read from git included), else
to the KB folder.

Level: a label named in ``--fail-on`` is ``error`` and the others are ``note``; with no
``--fail-on``, contradicted is ``error``, stale and ungrounded tool claims ``warning``,
uncertain and removed ``note``. The fingerprint is a hash of the document id, the claim as
written (NFKC, case-folded, whitespace collapsed) and the kind: no run id, so it is the same
in every run that still finds the same problem.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from kb.config.gitspec import is_git_spec, parse_spec
from kb.evidence.git_source import KbAtRev, kb_at_rev
from kb.ingest.owners import file_at, repository_info
from kb.records import content_hash
from kb.store import Store
from reports import queries as q

LABEL_KINDS = ("contradicted", "stale", "uncertain")
KINDS = ("contradicted", "stale", "uncertain", "ungrounded-tool-claim", "removed")
MAX_EVIDENCE = 3
# Edits offered as a fix: proposed ones, deletions of removed facts included. Dropped (the draft
# did not re-verify as supported), suppressed (rejected before), needs_rewrite (no minimal edit)
# are not.
FIX_STATUSES = ("auto", "queued")


@dataclass(frozen=True)
class Rule:
    kind: str
    name: str
    short: str
    help: str


RULES: dict[str, Rule] = {
    "contradicted": Rule(
        "contradicted",
        "ContradictedClaim",
        "The page states something current evidence contradicts.",
        "The newest authoritative source conflicts with this sentence and no older version of a source "
        "explains it. Check the evidence quoted in the message; apply the proposed fix (the conflicting "
        "value replaced with the source's) or correct the page by hand, then rerun kbaudit.",
    ),
    "stale": Rule(
        "stale",
        "StaleClaim",
        "The page states something a newer source version superseded.",
        "The sentence agrees with an older version of a source that a newer version replaced, or it is "
        "time-sensitive and its newest evidence is older than its freshness window. Update the value to "
        "the newer source's (the proposed fix does so) or confirm it with a current source.",
    ),
    "uncertain": Rule(
        "uncertain",
        "UncertainClaim",
        "No source settles this claim.",
        "The sources do not say enough to support or refute the sentence, they disagree, or the verdict "
        "stayed low-confidence. Add or cite a source that settles it, reword the sentence, or mark the "
        "passage <!-- kbaudit: ignore --> if it is not meant to be checked.",
    ),
    "ungrounded-tool-claim": Rule(
        "ungrounded-tool-claim",
        "UngroundedToolClaim",
        "The page claims a tool or query result that no evidence backs.",
        "The sentence reports the result of a tool, query or measurement, and no source or tool log "
        "supports it. Link the result's source (a dated export or log) in the sources, or remove the claim.",
    ),
    "removed": Rule(
        "removed",
        "RemovedPage",
        "A page that had findings was removed from the knowledge base.",
        "The previous run audited this page and it is gone now. Its open findings are no longer "
        "tracked; check that the information it held (and its corrections) still lives elsewhere.",
    ),
}


@dataclass(frozen=True)
class Region:
    start_line: int
    start_column: int  # 1-based, in Unicode code points
    end_line: int
    end_column: int  # exclusive


@dataclass(frozen=True)
class Evidence:
    source_id: str
    source_version: str | None
    source_date: object  # date or None
    authority: float | None
    sentence: str
    rank: int
    source_rev: str | None = None  # the git rev (tag, branch) of a source read from git

    def cited_version(self) -> str:
        """ ", rev v2.0.0" for a source read from git (the rev as the user named it), else
        ", version 1a2b3c4d" (the content hash of the source version), else ""."""
        if self.source_rev:
            return f", rev {self.source_rev}"
        return f", version {self.source_version[:8]}" if self.source_version else ""


@dataclass(frozen=True)
class Fix:
    edit_id: str
    status: str
    risk: str | None
    old_text: str
    new_text: str
    region: Region | None


@dataclass
class Finding:
    kind: str
    label: str | None
    level: str
    doc_id: str
    title: str | None
    owner: str | None
    owner_source: str | None
    claim_id: str | None = None
    claim_text: str = ""
    source_text: str = ""
    confidence: float | None = None
    rationale: str = ""
    action: str | None = None
    section: str = ""
    change: str | None = None  # new_contradiction / newly_stale / newly_uncertain: new in this run
    region: Region | None = None
    location_basis: str = "file"  # version | kb_file | search | file
    evidence: list[Evidence] = field(default_factory=list)
    fix: Fix | None = None
    detail: str = ""  # for `removed`: what the page had

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.doc_id, self.source_text or self.claim_text, self.kind)

    def message(self) -> str:
        """One paragraph: the claim, why, the evidence (source, date, sentence), the proposed edit."""
        if self.kind == "removed":
            return f"Page {self.doc_id} was removed since the previous run. {self.detail}".strip()
        head = {
            "contradicted": "Contradicted by current evidence",
            "stale": "Stale: a newer source version supersedes this",
            "uncertain": "Uncertain: no source settles this",
            "ungrounded-tool-claim": "Ungrounded tool claim: no evidence backs this result",
        }[self.kind]
        parts = [
            f'{head} ({self.label}, confidence {self.confidence:.2f}): "{self.source_text.strip()}"'
            if self.confidence is not None
            else f'{head}: "{self.source_text.strip()}"'
        ]
        if self.rationale:
            parts.append(f"Why: {self.rationale}")
        if self.evidence:
            e = self.evidence[0]
            parts.append(f'Evidence: {e.source_id} ({_date(e.source_date)}{e.cited_version()}): "{e.sentence.strip()}"')
        if self.fix is not None:
            parts.append(f'Proposed edit ({self.fix.status}): "{self.fix.old_text}" -> "{self.fix.new_text}"')
        if self.owner:
            parts.append(f"Owner: {self.owner}")
        return "\n".join(parts)


def _date(value) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else (str(value) if value else "undated")


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text or "")).strip().casefold()


def fingerprint(doc_id: str, claim_text: str, kind: str) -> str:
    return hashlib.sha256(f"{doc_id}\n{normalise(claim_text)}\n{kind}".encode()).hexdigest()[:32]


def level_for(kind: str, label: str | None, fail_on: tuple[str, ...]) -> str:
    if fail_on:
        return "error" if label in fail_on else "note"
    return {"contradicted": "error", "stale": "warning", "ungrounded-tool-claim": "warning"}.get(kind, "note")


def region_of(text: str, start: int, end: int) -> Region:
    """1-based line and column (code points) of text[start:end]; the end column is exclusive."""
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))

    def at(i: int) -> tuple[int, int]:
        line = text.count("\n", 0, i) + 1
        return line, i - (text.rfind("\n", 0, i) + 1) + 1

    (l1, c1), (l2, c2) = at(start), at(max(end, start))
    return Region(l1, c1, l2, c2)


def order_evidence(rows: list[dict], cited: list[str], deciding: str | None, label: str) -> list[dict]:
    """The evidence to show, deciding passage first, one row per (source version, sentence).

    First the passage whose sentence the verdict names (the newest such), or for a stale claim
    the newest version of that passage's source (what the page should say now); then the
    passages the verdict cites, in its order; then the rest by rank."""
    order = {eid: i for i, eid in enumerate(cited)}
    base = sorted(rows, key=lambda e: (order.get(e["evidence_id"], len(order)), e["rank"]))
    newest = lambda e: e["source_date"] or dt.date.min  # noqa: E731
    deciding = (deciding or "").strip()
    first = [e for e in base if deciding and (e["sentence"] or "").strip() == deciding]
    if first and label == "stale":
        first = [e for e in base if e["source_id"] == first[0]["source_id"]]
    first = sorted(first, key=newest, reverse=True)[:1]
    out, seen = [], set()
    for e in first + base:
        key = (e["source_id"], e["source_version"], (e["sentence"] or "").strip())
        if key not in seen:  # two passages of one source often align the same sentence
            seen.add(key)
            out.append(e)
    return out


def _decode(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text[1:] if text.startswith("\ufeff") else text  # as kb.parse reads it


@dataclass
class Findings:
    run: dict
    run_id: str
    previous_run: str | None
    docs_root: Path | None
    fail_on: tuple[str, ...]
    documents: list[dict]
    findings: list[Finding]
    pages_due: list[dict]
    claims: list[dict]  # every check-worthy claim of the run with its label (JUnit per claim)
    repository: dict | None = None  # root, revision, branch, tag, remote of the KB's repository (KbFiles)
    kb_prefix: str = ""  # the KB root relative to the repository root ("" outside git or at its root)
    kb: KbFiles | None = None  # where the KB's files are

    @property
    def exit_code(self) -> int:
        """1 when the run has a claim labelled with a --fail-on label (what `kbaudit run` returns)."""
        return 1 if any(int(self.run.get(label) or 0) for label in self.fail_on) else 0

    def path_of(self, doc_id: str) -> str:
        """The document's path as a CI tool needs it: relative to the repository root when the KB
        is in a git repository (a KB read from git included), else relative to the KB root."""
        if self.kb is not None:
            return self.kb.path_of(doc_id)
        return f"{self.kb_prefix}{doc_id}"

    def by_owner(self, only_new: bool = False) -> dict[str, list[Finding]]:
        out: dict[str, list[Finding]] = {}
        for f in self.findings:
            if only_new and not (f.change or f.kind == "removed"):
                continue
            out.setdefault(f.owner or "(no owner)", []).append(f)
        return dict(sorted(out.items(), key=lambda kv: (kv[0] == "(no owner)", kv[0])))

    def summary(self) -> dict:
        counts = {kind: sum(1 for f in self.findings if f.kind == kind) for kind in KINDS}
        return {
            "run_id": self.run_id,
            "depth": self.run.get("depth"),
            "documents": self.run.get("documents"),
            "checkworthy": self.run.get("checkworthy"),
            **{label: int(self.run.get(label) or 0) for label in q.LABELS},
            "findings": counts,
            "new_findings": sum(1 for f in self.findings if f.change),
            "pages_due": len(self.pages_due),
        }


class _Texts:
    """Document text by (doc_id, version_id): see the module docstring for the order."""

    def __init__(self, store: Store, kb: KbFiles, version_ids: list[str]):
        self.stored = q.version_texts(store, version_ids)
        self.kb = kb
        self._files: dict[str, tuple[str | None, str | None]] = {}

    def _file(self, doc_id: str) -> tuple[str | None, str | None]:
        """(text, version id) of the KB file (a folder's now, a git KB's at its commit), or (None, None)."""
        if doc_id not in self._files:
            raw = self.kb.read(doc_id)
            self._files[doc_id] = (_decode(raw), content_hash(raw)) if raw is not None else (None, None)
        return self._files[doc_id]

    def exact(self, doc_id: str, version_id: str) -> tuple[str | None, str]:
        if version_id in self.stored:
            return self.stored[version_id], "version"
        text, current = self._file(doc_id)
        if text is not None and current == version_id:
            return text, "git_rev" if self.kb.at_rev is not None else "kb_file"
        raw = self.kb.committed(doc_id)  # a folder KB's file changed since: as the run's commit has it
        if raw is not None and content_hash(raw) == version_id:
            return _decode(raw), "git_rev"
        return None, "file"

    def current(self, doc_id: str) -> str | None:
        return self._file(doc_id)[0]


@dataclass
class KbFiles:
    """Where a run's KB files are: a folder (maybe inside a git work tree) or a git rev
    (``git:REPO@REV:PATH``); what reports need to read a page and to name its path."""

    docs_root: Path | None  # the KB folder (None: a KB read from git, or unknown)
    at_rev: KbAtRev | None = None  # a KB read from git, at the commit the run read
    repository: dict | None = None  # root, revision, branch, tag, remote (kb.ingest.owners.repository_info)
    prefix: str = ""  # the KB folder relative to the repository root ("" outside git or at its root)

    @classmethod
    def of_run(cls, run: dict) -> KbFiles:
        docs_root, commit = run.get("docs_root"), run.get("docs_commit") or None
        if not docs_root:
            return cls(None)
        if is_git_spec(docs_root):
            spec = parse_spec(docs_root)
            at_rev = kb_at_rev(docs_root, commit)
            if at_rev is None:  # the repository is gone: paths as the spec names them, no text
                root = Path(spec.repo).resolve()
                prefix = spec.path + "/" if spec.path and not any(ch in spec.path for ch in "*?[") else ""
                return cls(None, None, {"root": root, "revision": commit, "branch": None, "tag": None, "remote": None}, prefix)
            repository = {
                "root": Path(at_rev.root),
                "revision": at_rev.commit,
                "branch": at_rev.branch,
                "tag": at_rev.tag,
                "remote": _origin(at_rev),
                "rev": at_rev.rev,
            }
            return cls(None, at_rev, repository, "")
        folder = Path(docs_root)
        repo = repository_info(folder, commit) if folder.is_dir() else None
        prefix = ""
        if repo is not None:
            rel = folder.resolve().relative_to(repo["root"]).as_posix()
            prefix = "" if rel == "." else rel + "/"
        return cls(folder, None, repo, prefix)

    def path_of(self, doc_id: str) -> str:
        if self.at_rev is not None:
            return self.at_rev.paths.get(doc_id, doc_id)
        return f"{self.prefix}{doc_id}"

    def read(self, doc_id: str) -> bytes | None:
        if self.at_rev is not None:
            return self.at_rev.read(doc_id)
        if self.docs_root is None:
            return None
        path = self.docs_root / doc_id
        try:
            return path.read_bytes() if path.is_file() else None
        except OSError:
            return None

    def committed(self, doc_id: str) -> bytes | None:
        """A folder KB's file as the run's commit holds it (None outside git)."""
        if self.at_rev is not None or self.repository is None or not self.repository.get("revision"):
            return None
        return file_at(self.repository["root"], self.repository["revision"], self.path_of(doc_id))

    def exists(self, doc_id: str) -> bool:
        if self.at_rev is not None:
            return doc_id in self.at_rev.paths
        return self.docs_root is not None and (self.docs_root / doc_id).exists()


def _origin(at_rev: KbAtRev) -> str | None:
    try:
        return at_rev.repo.remotes["origin"].url
    except (KeyError, ValueError, pygit2.GitError):
        return None


def _locate(texts: _Texts, doc_id: str, version_id: str, start: int, end: int, written: str) -> tuple[Region | None, str]:
    text, basis = texts.exact(doc_id, version_id)
    if text is not None:
        return region_of(text, start, end), basis
    current = texts.current(doc_id)
    if current is not None and written.strip():
        i = current.find(written.strip())
        if i >= 0:
            return region_of(current, i, i + len(written.strip())), "search"
    return None, "file"


def load(store: Store, run_id: str | None = None, fail_on: tuple[str, ...] = ()) -> Findings:
    """The findings of a run (default: the newest) read back from the store."""
    run_id = q.resolve_run(store, run_id)
    run = q.run_row(store, run_id)
    kb = KbFiles.of_run(run)
    documents = q.documents(store, run_id)
    doc_by_id = {d["doc_id"]: d for d in documents}
    claims = [c for c in q.claims(store, run_id) if c["checkworthy"]]
    evidence: dict[str, list[dict]] = {}
    for e in q.evidence(store, run_id):
        evidence.setdefault(e["claim_id"], []).append(e)
    edits: dict[str, dict] = {}
    for ed in q.edits(store, run_id):
        # a removal's edit (new_text "": the fact is gone from the newest sources) deletes the claim
        if ed["status"] in FIX_STATUSES and ed["new_text"] is not None and ed["new_text"] != ed["old_text"]:
            edits.setdefault(ed["claim_id"], ed)
    changed = {c["claim_id"]: c["change"] for c in q.changes(store, run_id) if c["change"] != "fixed"}
    texts = _Texts(store, kb, [c["version_id"] for c in claims] + [e["base_version"] for e in edits.values()])

    findings: list[Finding] = []
    for c in claims:
        label = c["label"]
        if label is None or label == "supported":
            continue
        kind = "ungrounded-tool-claim" if "tool_receipt" in (c.get("requirements") or []) else label
        doc = doc_by_id.get(c["doc_id"], {})
        region, basis = _locate(texts, c["doc_id"], c["version_id"], c["start"], c["end"], c["source_text"])
        fix = None
        ed = edits.get(c["claim_id"])
        if ed is not None:
            edit_region, _ = _locate(texts, ed["doc_id"], ed["base_version"], ed["start"], ed["end"], ed["old_text"])
            fix = Fix(ed["edit_id"], ed["status"], ed["risk"], ed["old_text"], ed["new_text"], edit_region)
        ranked = order_evidence(evidence.get(c["claim_id"], []), c.get("evidence_ids") or [], c.get("evidence_sentence"), label)
        findings.append(
            Finding(
                kind=kind,
                label=label,
                level=level_for(kind, label, fail_on),
                doc_id=c["doc_id"],
                title=doc.get("title"),
                owner=doc.get("owner"),
                owner_source=doc.get("owner_source"),
                claim_id=c["claim_id"],
                claim_text=c["text"],
                source_text=c["source_text"],
                confidence=c["confidence"],
                rationale=c["rationale"] or "",
                action=c["action"],
                section=c["section"] or "",
                change=changed.get(c["claim_id"]),
                region=region,
                location_basis=basis,
                evidence=[
                    Evidence(
                        e["source_id"],
                        e["source_version"],
                        e["source_date"],
                        e["authority"],
                        e["sentence"] or "",
                        e["rank"],
                        e.get("source_rev") or None,
                    )
                    for e in ranked[:MAX_EVIDENCE]
                ],
                fix=fix,
            )
        )
    for d in q.removed_documents(store, run_id):
        if kb.exists(d["doc_id"]):
            continue  # not audited by this run (a partial run), but still in the KB
        findings.append(
            Finding(
                kind="removed",
                label=None,
                level=level_for("removed", None, fail_on),
                doc_id=d["doc_id"],
                title=d["title"],
                owner=d["owner"],
                owner_source=d["owner_source"],
                source_text=d["doc_id"],
                detail=f"It had {d['findings']} open finding(s) in run {q.previous_run(store, run_id)}.",
            )
        )
    findings.sort(key=lambda f: (f.doc_id, f.region.start_line if f.region else 0, f.region.start_column if f.region else 0, f.kind))

    return Findings(
        run=run,
        run_id=run_id,
        previous_run=q.previous_run(store, run_id),
        docs_root=kb.docs_root,
        fail_on=tuple(fail_on),
        documents=documents,
        findings=findings,
        pages_due=q.pages_due(store, run_id),
        claims=claims,
        repository=kb.repository,
        kb_prefix=kb.prefix,
        kb=kb,
    )


def as_json(findings: Findings) -> dict:
    """The findings as plain JSON data (the notification's json payload uses it)."""

    def one(f: Finding) -> dict:
        data = dataclasses.asdict(f)
        data["fingerprint"] = f.fingerprint
        data["path"] = findings.path_of(f.doc_id)
        return json.loads(json.dumps(data, default=str))

    return {
        "summary": findings.summary(),
        "findings": [one(f) for f in findings.findings],
        "pages_due": json.loads(json.dumps(findings.pages_due, default=str)),
    }
