"""Corrections: a minimal, re-verified edit for each contradicted or stale claim.

For each contradicted or stale verdict the correction step drafts one edit of the claim's span in
the document:

1. **slot swap** (the default): only the conflicting slot (``Verdict.claim_value``) is replaced with
   the value the deciding evidence gives (``Verdict.evidence_value``); the rest of the sentence is
   kept as written. Values are matched token by token, tolerant of spacing ("99.9 %" finds
   "99.9%"), and words both values share ("at least 7 days" / "at least 14 days") are left alone.
2. **deep rewrite**: when there is no single slot to swap and the deep verifier wrote a final text
   (a ``corrected_text`` attribute on the verdict), that text is the draft.
3. otherwise the edit is marked ``needs_rewrite`` with the evidence sentence attached, for a human.

Every draft is re-verified with the same verifier against the same evidence; only a draft that
comes out **supported** is proposed. A draft that does not is kept as a ``dropped`` edit whose
reason says why. A draft that a reviewer rejected before, against the same evidence, is kept as a
``suppressed`` edit and not proposed again (see ``proposal_key``).

Each proposed edit gets a risk (``edit_risk``) from the claim's risk, the document's front matter,
the size of the change, the evidence's authority, the verifier's confidence and the number of edits
in the document. Edits at a risk in ``CorrectionSettings.auto_accept`` are accepted automatically
(status ``auto``: they go into a new document version in the store, see ``kb.correct.versions``); the
others are ``queued`` for a human. KB files change only on ``kbaudit run --apply`` or
``kbaudit review apply`` (``kb.correct.review.apply_edits``).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

from kb.config import CorrectionSettings, Settings
from kb.records import Claim, Document, Edit, Evidence, Verdict, content_hash
from kb.verify import verifier_for
from kb.verify.policy import REMOVED_ACTION

CORRECTABLE = ("contradicted", "stale")
# Statuses that draft_edits gives; review adds approved, rejected, applying, applied, conflicted.
DRAFT_STATUSES = ("auto", "queued", "needs_rewrite", "dropped", "suppressed")
RISK_POINTS = {"low": 0.0, "medium": 1.0, "high": 3.0}


@dataclass(frozen=True)
class DraftEdit(Edit):
    """An `Edit` (the `edits` table) plus what the `edit_details` table keeps about it."""

    method: str = ""  # slot | rewrite | none
    label_before: str = ""
    confidence_before: float | None = None
    label_after: str | None = None  # the re-verification of the drafted text
    confidence_after: float | None = None
    rationale_after: str | None = None
    claim_value: str | None = None
    evidence_value: str | None = None
    evidence_sentence: str | None = None
    evidence_source: str | None = None  # source_id@source_version of the deciding evidence
    evidence_date: date | None = None
    evidence_authority: float | None = None
    evidence_key: str = ""  # fingerprint of the evidence the edit was drafted from
    proposal_key: str = ""  # what a rejection suppresses (see proposal_key())
    risk_score: float = 0.0
    risk_factors: str = "{}"  # JSON: the points each factor added
    draft_text: str | None = None  # the claim text that was re-verified


# ---- slot replacement ----------------------------------------------------------------------
_TOKEN = re.compile(r"\w+(?:[.,:/+-]\w+)*|[^\w\s]")
_NO_SPACE_BEFORE = re.compile(r"\s+(?=[%,.;:)\]])")
_NO_SPACE_AFTER = re.compile(r"(?<=[$€£(\[])\s+")
_JOINED = re.compile(r"(?<=\w)\s*([-/:])\s*(?=\w)")


_MARKUP = {"`", "*", "_"}


def _tokens(value: str) -> list[str]:
    """Words, numbers (with their inner . , : / + -) and symbols; markup characters are left out,
    so they stay in the text around a swapped value."""
    return [t for t in _TOKEN.findall(value) if t not in _MARKUP]


def _strip_common(old: list[str], new: list[str]) -> tuple[list[str], list[str]]:
    """Drop the words both values share at either end: only the part that differs is swapped."""
    i = 0
    while i < min(len(old), len(new)) - 1 and old[i].lower() == new[i].lower():
        i += 1
    j = 0
    while j < min(len(old), len(new)) - i - 1 and old[-1 - j].lower() == new[-1 - j].lower():
        j += 1
    return old[i : len(old) - j], new[i : len(new) - j]


_PREFIX_COMPARATORS = (
    ("up", "to"),
    ("at", "least"),
    ("at", "most"),
    ("more", "than"),
    ("less", "than"),
    ("fewer", "than"),
    ("no", "more", "than"),
    ("under",),
    ("over",),
    ("within",),
    ("about",),
    ("approximately",),
    ("around",),
)
_SUFFIX_COMPARATORS = (("or", "later"), ("or", "newer"), ("or", "more"), ("or", "higher"), ("or", "less"), ("+",))


def _keep_comparator(old: list[str], new: list[str]) -> list[str]:
    """Leave the claim's comparator in place when the evidence value states none ("up to 3" -> "5")."""
    low_old, low_new = [t.lower() for t in old], [t.lower() for t in new]
    for words in _PREFIX_COMPARATORS:
        n = len(words)
        if tuple(low_old[:n]) == words and len(old) > n and not any(tuple(low_new[: len(w)]) == w for w in _PREFIX_COMPARATORS):
            return old[n:]
    for words in _SUFFIX_COMPARATORS:
        n = len(words)
        if tuple(low_old[-n:]) == words and len(old) > n and not any(tuple(low_new[-len(w) :]) == w for w in _SUFFIX_COMPARATORS):
            return old[:-n]
    return old


def _pattern(tokens: list[str]) -> re.Pattern:
    body = r"\s*".join(re.escape(t) for t in tokens)
    return re.compile(r"(?<![\w.])" + body + r"(?![\w])", re.IGNORECASE)


def _render(tokens: list[str], matched: str) -> str:
    """The new value written in the style of the text it replaces (spacing around % - / :)."""
    text = _NO_SPACE_AFTER.sub("", _NO_SPACE_BEFORE.sub("", " ".join(tokens)))
    if not re.search(r"\s", matched):
        text = _JOINED.sub(r"\1", text)
    return text


def replace_slot(text: str, old: str, new: str) -> str | None:
    """`text` with the value `old` replaced by `new`, once; None if `old` is absent or ambiguous."""
    old_tokens, new_tokens = _strip_common(_tokens(old), _tokens(new))
    old_tokens = _keep_comparator(old_tokens, new_tokens)
    if not old_tokens or not new_tokens:
        return None
    hits = list(_pattern(old_tokens).finditer(text))
    if len(hits) != 1:
        return None
    hit = hits[0]
    replacement = _render(new_tokens, hit.group(0))
    if hit.group(0)[:1].isupper() and replacement[:1].islower() and hit.start() == 0:
        replacement = replacement[:1].upper() + replacement[1:]
    return text[: hit.start()] + replacement + text[hit.end() :]


# ---- risk ----------------------------------------------------------------------------------
def change_size(old: str, new: str) -> int:
    """Words changed (replaced, added or removed) between two texts."""
    a, b = _tokens(old), _tokens(new)
    changed = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            changed += max(i2 - i1, j2 - j1)
    return changed


def edit_risk(
    claim: Claim,
    doc: Document,
    verdict: Verdict,
    *,
    old_text: str = "",
    new_text: str = "",
    authority: float | None = None,
    confidence_after: float | None = None,
    edits_in_doc: int = 1,
    settings: CorrectionSettings | None = None,
) -> tuple[str, float, dict[str, float]]:
    """(risk level, points, the points each factor added)."""
    settings = settings or CorrectionSettings()
    raw_meta = doc.meta.get("kbaudit")
    kb_meta = raw_meta if isinstance(raw_meta, dict) else {}
    factors: dict[str, float] = {}
    factors["claim_risk"] = RISK_POINTS.get(claim.risk, 1.0)
    factors["document_risk"] = RISK_POINTS.get(doc.risk or "low", 1.0)
    if kb_meta.get("auto_accept") is False or str(kb_meta.get("review", "")).lower() in ("always", "required"):
        factors["document_requires_review"] = settings.high_at
    size = change_size(old_text, new_text)
    factors["change_size"] = 0.0 if size <= 2 else 1.0 if size <= 6 else 2.0
    auth = 1.0 if authority is None else authority
    factors["evidence_authority"] = 0.0 if auth >= 0.95 else 0.5 if auth >= 0.8 else 1.5
    conf = min(verdict.confidence, confidence_after if confidence_after is not None else 1.0)
    factors["confidence"] = 0.0 if conf >= 0.9 else 0.5 if conf >= 0.75 else 1.0 if conf >= 0.6 else settings.high_at
    factors["edits_in_document"] = 0.0 if edits_in_doc <= 2 else 0.5 if edits_in_doc <= 5 else 1.5
    factors = {k: v for k, v in factors.items() if v}
    points = sum(factors.values())
    level = "high" if points >= settings.high_at else "medium" if points >= settings.medium_at else "low"
    return level, points, factors


# ---- keys ----------------------------------------------------------------------------------
def evidence_key(verdict: Verdict, evidence: list[Evidence]) -> str:
    """Fingerprint of the evidence a verdict rests on (passage ids carry the source version).

    The passages whose sentence decided the verdict, not every passage it was shown
    (`Verdict.evidence_ids` lists all of them): otherwise a new version of any other source in a
    claim's top k gave its edit a new id, and every decision on the edit was lost."""
    deciding = [e for e in evidence if verdict.evidence_sentence and e.sentence == verdict.evidence_sentence]
    deciding = deciding or [e for e in evidence if e.evidence_id in set(verdict.evidence_ids)] or evidence
    return content_hash("|".join(sorted(e.passage_id for e in deciding)) + "|" + (verdict.evidence_sentence or ""))


def make_edit_id(claim_id: str, base_version: str, new_text: str, ev_key: str) -> str:
    """Same claim, same document version, same change, same evidence: the same edit in every run,
    so a decision on it holds until the document or the evidence changes."""
    return content_hash(f"{claim_id}|{base_version}|{new_text}|{ev_key}")


def proposal_key(claim_id: str, old_text: str, new_text: str, ev_key: str) -> str:
    """Same claim, same change, same evidence: a rejection of one suppresses the others.

    The document version is not part of the key, so an unrelated edit elsewhere in the document
    does not bring a rejected edit back; new evidence (a new source version) does.
    """
    return content_hash(f"{claim_id}|{old_text}|{new_text}|{ev_key}")


def aligned_slot(text: str, sentence: str, max_words: int = 4) -> tuple[str, str] | None:
    """The one differing span of two near-identical sentences, as (claim value, evidence value).

    The fallback when the verdict names no slot but carries its evidence sentence: "retained for
    1 year" / "retained for 2 years" gives ("1 year", "2 years"). None unless the sentences
    differ in exactly one short span and agree on most words.
    """
    a, b = _tokens(text), _tokens(sentence)
    matcher = difflib.SequenceMatcher(a=[t.lower() for t in a], b=[t.lower() for t in b], autojunk=False)
    ops = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace" or matcher.ratio() < 0.6:
        return None
    _, i1, i2, j1, j2 = ops[0]
    if i2 - i1 > max_words or j2 - j1 > max_words:
        return None
    return " ".join(a[i1:i2]), " ".join(b[j1:j2])


def _deciding(verdict: Verdict, evidence: list[Evidence]) -> Evidence | None:
    if verdict.evidence_sentence:
        for e in evidence:
            if e.sentence == verdict.evidence_sentence:
                return e
    chosen = [e for e in evidence if e.evidence_id in set(verdict.evidence_ids)]
    if chosen:
        return max(chosen, key=lambda e: (e.source_date or date.min, -e.rank))
    return evidence[0] if evidence else None


def _make_verifier(settings: Settings | None):
    if settings is None:
        return verifier_for(None, True)
    return verifier_for(settings.model_path, settings.depth != "D0", backend=settings.verifier_backend)


# ---- drafting ------------------------------------------------------------------------------
@dataclass
class _Draft:
    claim: Claim
    doc: Document
    verdict: Verdict
    old_text: str
    new_text: str
    draft_claim_text: str | None
    method: str
    deciding: Evidence | None
    ev_key: str
    slot: tuple[str, str] | None = None  # (claim value, evidence value) that was swapped


def _draft(claim: Claim, doc: Document, verdict: Verdict, evidence: list[Evidence]) -> _Draft:
    old_text = doc.text[claim.start : claim.end]
    if (verdict.action or "").startswith(REMOVED_ACTION):
        # the fact is gone from the newest source: the draft deletes the sentence, for a human
        # to confirm or to rewrite (never accepted automatically, nothing to re-verify)
        return _Draft(claim, doc, verdict, old_text, "", None, "delete", _deciding(verdict, evidence),
                      evidence_key(verdict, evidence), None)  # fmt: skip
    new_text = draft_claim = None
    method = "none"
    slots, used = [], None
    if verdict.claim_value and verdict.evidence_value:
        slots.append((verdict.claim_value, verdict.evidence_value))
    if verdict.evidence_sentence:
        slots.append(aligned_slot(old_text, verdict.evidence_sentence))
    for slot in filter(None, slots):
        new_text = replace_slot(old_text, *slot)
        if new_text is not None and new_text != old_text:
            method = "slot"
            draft_claim = replace_slot(claim.text, *slot) or new_text
            used = slot
            break
        new_text = None
    rewrite = getattr(verdict, "corrected_text", None)
    if new_text is None and rewrite and rewrite.strip() and rewrite.strip() != old_text.strip():
        new_text, draft_claim, method = rewrite.strip(), rewrite.strip(), "rewrite"
    return _Draft(
        claim,
        doc,
        verdict,
        old_text,
        new_text if new_text is not None else old_text,
        draft_claim,
        method,
        _deciding(verdict, evidence),
        evidence_key(verdict, evidence),
        used,
    )


def _recheck(drafts: list[_Draft], evidence: Mapping[str, list[Evidence]], verifier, today: date) -> dict[str, Verdict]:
    """Re-verify each drafted text with the same verifier against the claim's same evidence."""
    wanted = [d for d in drafts if d.draft_claim_text is not None]
    if not wanted or verifier is None:
        return {}
    claims = [dataclasses.replace(d.claim, text=d.draft_claim_text, source_text=d.new_text) for d in wanted]
    verdicts = verifier.verify(claims, {c.claim_id: evidence.get(c.claim_id, []) for c in claims}, today)
    return {v.claim_id: v for v in verdicts}


def draft_edits(
    documents: list[Document],
    claims: list[Claim],
    verdicts: list[Verdict],
    evidence: Mapping[str, list[Evidence]] | None = None,
    *,
    settings: Settings | None = None,
    verifier=None,
    today: date | None = None,
    suppressed: Mapping[str, str] | None = None,
    correction: CorrectionSettings | None = None,
) -> list[DraftEdit]:
    """One edit per contradicted or stale verdict, re-verified, with risk and status.

    ``evidence``: the run's evidence (claim id -> ranked evidence), which drafts are re-verified
    against; ``verifier``: an object with ``.verify(claims, evidence, today)`` (default: built from
    ``settings`` the way ``kb.chain.verify_stage`` builds it); ``today``: the run's date (default:
    ``settings.run_date``; re-verifying drafts needs one of them);
    ``suppressed``: proposal keys of rejected edits -> the rejection (``kb.correct.review.rejected_proposals``).
    Without ``evidence`` nothing can be re-verified, so every draft is dropped with that reason.
    """
    # One pass on purpose: a draft's status depends on its own re-verification and on the rejected proposals.
    docs = {d.doc_id: d for d in documents}
    claims_by_id = {c.claim_id: c for c in claims}
    suppressed = suppressed or {}
    correction = correction or (settings.correct if settings is not None else CorrectionSettings())
    if today is None and settings is not None:
        today = settings.run_date
    drafts: list[_Draft] = []
    for verdict in verdicts:
        if verdict.label not in CORRECTABLE or verdict.claim_id not in claims_by_id:
            continue
        claim = claims_by_id[verdict.claim_id]
        if claim.doc_id not in docs:
            continue
        drafts.append(_draft(claim, docs[claim.doc_id], verdict, (evidence or {}).get(claim.claim_id, [])))

    if evidence is not None and today is None and drafts:
        raise ValueError("draft_edits: re-verifying drafts needs the run's date (today=, or settings=)")
    if evidence is not None and verifier is None and any(d.draft_claim_text for d in drafts):
        verifier = _make_verifier(settings)
    rechecked = _recheck(drafts, evidence, verifier, today) if evidence is not None and today is not None else {}

    results: list[tuple[_Draft, Verdict | None, str, str]] = []
    for d in drafts:
        after = rechecked.get(d.claim.claim_id)
        key = proposal_key(d.claim.claim_id, d.old_text, d.new_text, d.ev_key)
        if d.method == "delete":
            status = "removal"
            reason = f"{d.verdict.label}: {d.verdict.action}. {d.verdict.rationale}"
        elif d.method == "none":
            status = "needs_rewrite"
            reason = f"{d.verdict.label}: no single slot to replace; needs a human rewrite. Evidence says: {d.verdict.evidence_sentence or 'n/a'}"
        elif evidence is None or after is None:
            status, reason = "dropped", f"{d.verdict.label}: draft not re-verified (no evidence or verifier given); not proposed"
        elif after.label != "supported":
            status = "dropped"
            reason = f"{d.verdict.label}: draft re-verified as {after.label} ({after.confidence:.2f}: {after.rationale}); not proposed"
        else:
            status = "proposed"
            swap = f"{d.slot[0]!r} -> {d.slot[1]!r}" if d.slot else "deep verifier rewrite"
            reason = f"{d.verdict.label}: {swap}; draft re-verified as supported ({after.confidence:.2f}). {d.verdict.rationale}"
        if key in suppressed and status in ("proposed", "needs_rewrite", "removal"):
            status, reason = "suppressed", f"rejected before with the same evidence ({suppressed[key]}); not proposed again"
        results.append((d, after, status, reason))

    per_doc: dict[str, int] = {}
    for d, _after, status, _reason in results:
        if status == "proposed":
            per_doc[d.doc.doc_id] = per_doc.get(d.doc.doc_id, 0) + 1

    edits: list[DraftEdit] = []
    for d, after, status, reason in results:
        authority = d.deciding.authority if d.deciding else None
        risk, points, factors = edit_risk(
            d.claim,
            d.doc,
            d.verdict,
            old_text=d.old_text,
            new_text=d.new_text,
            authority=authority,
            confidence_after=after.confidence if after else None,
            edits_in_doc=per_doc.get(d.doc.doc_id, 1),
            settings=correction,
        )
        if status == "removal":
            status = "queued"
        elif status == "proposed":
            status = "auto" if risk in correction.auto_accept else "queued"
            reason += f" Risk {risk} ({points:g} points: {', '.join(f'{k} +{v:g}' for k, v in factors.items()) or 'none'})."
        e = d.deciding
        edits.append(
            DraftEdit(
                edit_id=make_edit_id(d.claim.claim_id, d.doc.version_id, d.new_text, d.ev_key),
                claim_id=d.claim.claim_id,
                doc_id=d.doc.doc_id,
                base_version=d.doc.version_id,
                start=d.claim.start,
                end=d.claim.end,
                old_text=d.old_text,
                new_text=d.new_text,
                risk=risk,
                status=status,
                reason=reason,
                method=d.method,
                label_before=d.verdict.label,
                confidence_before=d.verdict.confidence,
                label_after=after.label if after else None,
                confidence_after=after.confidence if after else None,
                rationale_after=after.rationale if after else None,
                claim_value=d.slot[0] if d.slot else d.verdict.claim_value,
                evidence_value=d.slot[1] if d.slot else d.verdict.evidence_value,
                evidence_sentence=d.verdict.evidence_sentence or (e.sentence if e else None),
                evidence_source=f"{e.source_id}@{e.source_version}" if e else None,
                evidence_date=e.source_date if e else None,
                evidence_authority=authority,
                evidence_key=d.ev_key,
                proposal_key=proposal_key(d.claim.claim_id, d.old_text, d.new_text, d.ev_key),
                risk_score=points,
                risk_factors=json.dumps(factors, sort_keys=True),
                draft_text=d.draft_claim_text,
            )
        )
    return edits
