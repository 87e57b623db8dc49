"""Corrections: a minimal edit for each contradicted or stale claim.

Only the conflicting slot is replaced with the value the deciding evidence gives; the rest of
the sentence is kept. A conflict that is not a slot becomes an edit marked `needs_rewrite`
with the evidence sentence attached, for a human. High-risk edits are queued for review,
low-risk ones are accepted automatically into a new version in the store (the KB files change
only on `--apply`).
"""

from __future__ import annotations

import re

from kb.records import Claim, Document, Edit, Verdict, content_hash

CORRECTABLE = ("contradicted", "stale")


def _replace_slot(text: str, old: str, new: str) -> str | None:
    """Replace one occurrence of `old` in `text` as a whole token; None if absent or ambiguous."""
    pattern = re.compile(r"(?<![\w.])" + re.escape(old) + r"(?![\w])")
    hits = pattern.findall(text)
    if len(hits) != 1:
        return None
    return pattern.sub(lambda _m: new, text, count=1)


def edit_risk(claim: Claim, doc: Document, verdict: Verdict) -> str:
    if claim.risk == "high" or doc.risk == "high" or verdict.confidence < 0.7:
        return "high"
    return claim.risk


def draft_edits(documents: list[Document], claims: list[Claim], verdicts: list[Verdict]) -> list[Edit]:
    docs = {d.doc_id: d for d in documents}
    claims_by_id = {c.claim_id: c for c in claims}
    edits: list[Edit] = []
    for verdict in verdicts:
        if verdict.label not in CORRECTABLE:
            continue
        claim = claims_by_id[verdict.claim_id]
        doc = docs[claim.doc_id]
        old_text = doc.text[claim.start : claim.end]
        new_text = None
        if verdict.claim_value and verdict.evidence_value:
            new_text = _replace_slot(old_text, verdict.claim_value, verdict.evidence_value)
        risk = edit_risk(claim, doc, verdict)
        if new_text is None or new_text == old_text:
            status = "needs_rewrite"
            reason = f"{verdict.label}: no single slot to replace; evidence says: {verdict.evidence_sentence or 'n/a'}"
            new_text = old_text
        else:
            status = "queued" if risk == "high" else "auto"
            reason = f"{verdict.label}: {verdict.claim_value!r} -> {verdict.evidence_value!r} ({verdict.rationale})"
        edit_id = content_hash(f"{claim.claim_id}|{doc.version_id}|{new_text}")
        edits.append(
            Edit(
                edit_id=edit_id,
                claim_id=claim.claim_id,
                doc_id=doc.doc_id,
                base_version=doc.version_id,
                start=claim.start,
                end=claim.end,
                old_text=old_text,
                new_text=new_text,
                risk=risk,
                status=status,
                reason=reason,
            )
        )
    return edits
