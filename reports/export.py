"""`kbaudit export --format verifyloop`: one VerifyLoop report (JSON) per document of a run.

The shape is ``kb/verifyloop/schemas/verifyloop-report.schema.json`` (the same one ``kbaudit verify``
writes); ``manifest.json`` (``kb/verifyloop/schemas/verifyloop-export-manifest.schema.json``) lists the files.

The store keeps claims, spans and edits but not whole document texts, so ``answer`` is the
document's text read from the run's documents folder (for a KB read from git, the file at the
commit the run read) when that file still has the exact version the run audited (its content
hash is the version id), else null; ``corrected_answer`` then is
that text with every drafted replacement applied (the proposed corrected document).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from collections import defaultdict
from pathlib import Path

from kb.config.gitspec import is_git_spec
from kb.evidence.git_source import KbAtRev, kb_at_rev
from kb.records import content_hash
from kb.store import Store
from kb.verifyloop import apply_corrections, build_report
from reports import queries as q

MANIFEST_SCHEMA_ID = "kbaudit/verifyloop-export-manifest/1"


def file_name(doc_id: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", doc_id.replace("/", "__")).lstrip(".") or "document"
    name = f"{base}.json"
    if name in taken:
        name = f"{base}-{content_hash(doc_id, 8)}.json"
    taken.add(name)
    return name


@functools.lru_cache(maxsize=8)
def _kb_at(spec: str, commit: str | None) -> KbAtRev | None:
    return kb_at_rev(spec, commit)


def document_text(docs_root: str | None, doc_id: str, version_id: str, commit: str | None = None) -> str | None:
    """The document's text if the file under ``docs_root`` is still exactly that version; for a
    KB read from git (``docs_root`` a ``git:`` spec), the file at ``commit`` (the run's
    ``docs_commit``; else the commit its rev names now)."""
    if not docs_root:
        return None
    if is_git_spec(docs_root):
        at = _kb_at(docs_root, commit)
        raw = at.read(doc_id) if at is not None else None
    else:
        root = Path(docs_root).resolve()
        path = (root / doc_id).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            return None
        try:
            raw = path.read_bytes()
        except OSError:
            return None
    if raw is None or content_hash(raw) != version_id:
        return None
    return raw.decode("utf-8", errors="replace")


def export_verifyloop(store: Store, dest: Path, run_id: str | None = None) -> list[Path]:
    """Write one JSON per document of the run (default: the newest) and manifest.json; returns the paths."""
    run_id = q.resolve_run(store, run_id)
    run = q.run_row(store, run_id)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    by_doc: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    claims = q.claims(store, run_id)
    doc_of_claim = {c["claim_id"]: c["doc_id"] for c in claims}
    for c in claims:
        by_doc[c["doc_id"]]["claims"].append(c)
    for e in q.evidence(store, run_id):
        by_doc[doc_of_claim[e["claim_id"]]]["evidence"].append(e)
    for ed in q.edits(store, run_id):
        by_doc[ed["doc_id"]]["edits"].append(ed)
    receipt_rows = {
        r["receipt_id"]: r
        for r in q.receipts(store, [e["receipt_id"] for d in by_doc.values() for e in d["evidence"] if e.get("receipt_id")])
    }

    written, taken, manifest = [], set(), []
    for doc in q.documents(store, run_id):
        parts = by_doc[doc["doc_id"]]
        text = document_text(run.get("docs_root"), doc["doc_id"], doc["version_id"], run.get("docs_commit"))
        replacements = [
            (int(ed["start"]), int(ed["end"]), ed["new_text"])
            for ed in parts["edits"]
            if ed["status"] not in ("needs_rewrite", "rejected", "conflicted") and ed["new_text"] != ed["old_text"]
        ]
        corrected = apply_corrections(text, replacements) if text is not None and replacements else None
        doc_receipts = sorted({e["receipt_id"] for e in parts["evidence"] if e.get("receipt_id")})
        report = build_report(
            trace_id=content_hash(f"{run_id}|{doc['doc_id']}|{doc['version_id']}"),
            subject={
                "kind": "kb_document",
                "doc_id": doc["doc_id"],
                "version_id": doc["version_id"],
                "title": doc["title"],
                "run_id": run_id,
            },
            answer=text,
            task=None,
            depth=run["depth"],
            status=doc["status"],
            score=doc["score"] or 0.0,
            score_components=json.loads(doc["score_components"] or "{}"),
            claims=parts["claims"],
            verdicts=[c for c in parts["claims"] if c["label"]],
            evidence=parts["evidence"],
            receipts=[receipt_rows[r] for r in doc_receipts if r in receipt_rows],
            edits=parts["edits"],
            corrected_answer=corrected,
        )
        name = file_name(doc["doc_id"], taken)
        path = dest / name
        path.write_text(json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", "utf-8")
        written.append(path)
        manifest.append(
            {
                "doc_id": doc["doc_id"],
                "file": name,
                "status": report["status"],  # VerifyLoop's code (kbaudit's: the documents view)
                "verification_score": report["verification_score"],
                "gaps": len(report["gaps"]),
            }
        )
    (dest / "manifest.json").write_text(
        json.dumps(
            {
                "schema": MANIFEST_SCHEMA_ID,
                "run_id": run_id,
                "depth": run["depth"],
                "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "documents": manifest,
            },
            indent=2,
        )
        + "\n",
        "utf-8",
    )
    return written
