"""Document versions and diffs: what the accepted edits of a run make of each document.

A version is the document's bytes with the accepted edits spliced in; its id is the content hash
of those bytes (as for every document version), its parent the version the edits were drafted
against. Each version has a diff: the unified diff, the structured list of changes, and the
document's verification score before and after (the edited claims counted with their
re-verification verdicts).

``run_tables`` gives the rows a run writes (`versions`, `diffs`, `edit_details`);
``splice`` and ``unified_diff`` are shared with ``kb.correct.review.apply_edits``, which writes the same
kind of version to the KB files.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Iterable

from kb.records import Claim, Document, Edit, Verdict, content_hash
from kb.verify.policy import document_status

ACCEPTED_IN_RUN = ("auto",)  # statuses the run itself accepts into a new version


def splice(text: str, edits: Iterable[Edit]) -> tuple[str, list[Edit], list[tuple[Edit, str]]]:
    """`text` with each edit's span replaced by its new text.

    Returns (new text, edits applied, [(edit, why skipped)]): an edit whose span no longer holds
    its old text, or that overlaps an edit already taken, is skipped.
    """
    taken: list[Edit] = []
    skipped: list[tuple[Edit, str]] = []
    for edit in sorted(edits, key=lambda e: (e.start, e.end, e.edit_id)):
        if text[edit.start : edit.end] != edit.old_text:
            skipped.append((edit, "the span no longer holds the text the edit was drafted against"))
        elif taken and edit.start < taken[-1].end:
            skipped.append((edit, f"overlaps edit {taken[-1].edit_id}"))
        else:
            taken.append(edit)
    out = text
    for edit in reversed(taken):
        out = out[: edit.start] + edit.new_text + out[edit.end :]
    return out, taken, skipped


def unified_diff(old: str, new: str, doc_id: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{doc_id}", f"b/{doc_id}"))


BOM = b"\xef\xbb\xbf"


def encode_like(text: str, bom: bool) -> bytes:
    """`text` as the bytes of a file (the parser drops a UTF-8 BOM from the text; put it back)."""
    return (BOM if bom else b"") + text.encode("utf-8")


def document_score(claims: list[Claim], verdicts: list[Verdict]) -> float:
    """The document's verification score, as the run computes it (kb.verify.policy)."""
    return float(document_status(claims, verdicts)[1])


def _change(edit: Edit) -> dict:
    return {
        "edit_id": edit.edit_id,
        "claim_id": edit.claim_id,
        "start": edit.start,
        "end": edit.end,
        "old": edit.old_text,
        "new": edit.new_text,
        "label_before": getattr(edit, "label_before", None),
        "label_after": getattr(edit, "label_after", None),
    }


def versions_for_run(
    documents: list[Document], claims: list[Claim], verdicts: list[Verdict], edits: list[Edit]
) -> tuple[list[dict], list[dict]]:
    """(`versions` rows, `diffs` rows) for the documents with edits the run accepted."""
    docs = {d.doc_id: d for d in documents}
    by_doc: dict[str, list[Edit]] = {}
    for edit in edits:
        if edit.status in ACCEPTED_IN_RUN and edit.doc_id in docs:
            by_doc.setdefault(edit.doc_id, []).append(edit)
    verdict_of = {v.claim_id: v for v in verdicts}
    claims_of: dict[str, list[Claim]] = {}
    for claim in claims:
        if claim.claim_id in verdict_of:
            claims_of.setdefault(claim.doc_id, []).append(claim)

    versions, diffs = [], []
    for doc_id in sorted(by_doc):
        doc = docs[doc_id]
        new_text, taken, _skipped = splice(doc.text, by_doc[doc_id])
        if not taken:
            continue
        raw = encode_like(new_text, bom=doc.bytes == len(doc.text.encode("utf-8")) + len(BOM))
        version_id = content_hash(raw)
        edit_ids = [e.edit_id for e in taken]
        doc_claims = claims_of.get(doc_id, [])
        before = [verdict_of[c.claim_id] for c in doc_claims]
        after_of = {  # drafts (kb.correct.draft.DraftEdit) say what the re-check found
            e.claim_id: dataclasses.replace(
                verdict_of[e.claim_id], label=label_after, confidence=getattr(e, "confidence_after", None) or 0.0
            )
            for e in taken
            if (label_after := getattr(e, "label_after", None)) and e.claim_id in verdict_of
        }
        after = [after_of.get(c.claim_id, verdict_of[c.claim_id]) for c in doc_claims]
        versions.append(
            {
                "version_id": version_id,
                "parent_version": doc.version_id,
                "doc_id": doc_id,
                "edit_ids": edit_ids,
                "bytes": len(raw),
                "content": new_text,
            }
        )
        diffs.append(
            {
                "version_id": version_id,
                "parent_version": doc.version_id,
                "doc_id": doc_id,
                "edit_ids": edit_ids,
                "unified_diff": unified_diff(doc.text, new_text, doc_id),
                "changes": json.dumps([_change(e) for e in taken], sort_keys=True),
                "score_before": document_score(doc_claims, before),
                "score_after": document_score(doc_claims, after),
            }
        )
    return versions, diffs


def run_tables(documents: list[Document], claims: list[Claim], verdicts: list[Verdict], edits: list[Edit]) -> dict[str, list[dict]]:
    """The rows of the tables the correction step adds to a run: `edit_details`, `versions`, `diffs`."""
    versions, diffs = versions_for_run(documents, claims, verdicts, edits)
    details = [dataclasses.asdict(e) for e in edits if hasattr(e, "proposal_key")]
    return {"edit_details": details, "versions": versions, "diffs": diffs}
