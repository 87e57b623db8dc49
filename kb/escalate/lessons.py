"""Lessons: what the deep verifier found wrong, kept so the next run looks harder at similar claims.

When the deep verifier (``kb.escalate.route``) accepts a verdict with a discrepancy, it writes one row to
the ``lessons`` table (a run table: visible once the run completes):

* ``lesson``: one line a reviewer can read ("numeric claims in billing.md > Plans: ...");
* ``mistake``: the claim as the document wrote it;
* ``correction``: the deep verifier's final text, else its discrepancies;
* ``trigger``: what makes another claim *similar*: the claim type and the claim's content words
  (stemmed, sorted), as ``type|word word word``.

The next run reads every lesson (``load_lessons``) and ``kb.escalate.route`` gives a claim that
``matches`` one a higher escalation threshold and a place at the front of the budget queue.
Similar means: the same claim type, and either the same document or at least half of the
trigger's words (and at least two) among the claim's words.

Prefect-free.
"""

from __future__ import annotations

from datetime import date

from kb.log import logger
from kb.records import Claim, content_hash
from kb.verify.slots import content_words, word_tokens

MAX_TRIGGER_WORDS = 12


def keywords(text: str) -> list[str]:
    seen: list[str] = []
    for w in content_words(word_tokens(text)):
        if w not in seen:
            seen.append(w)
    return seen


def trigger_for(claim: Claim) -> str:
    words = sorted(keywords(claim.text))[: MAX_TRIGGER_WORDS * 2]
    return f"{claim.type}|{' '.join(words)}"


def lesson_row(claim: Claim, discrepancies: list[str], corrected_text: str | None, found_on: date, tier_before: str) -> dict:
    where = claim.doc_id + (f" > {claim.section}" if claim.section else "")
    first = discrepancies[0] if discrepancies else "the deep verifier found a discrepancy"
    return {
        "lesson_id": content_hash(f"{claim.claim_id}|{claim.text}|{first}"),
        "claim_id": claim.claim_id,
        "doc_id": claim.doc_id,
        "claim_type": claim.type,
        "lesson": f"{claim.type} claims in {where} can be wrong where the {tier_before} tier was unsure: {first}"[:500],
        "mistake": (claim.source_text or claim.text)[:2000],
        "correction": (corrected_text or "; ".join(discrepancies))[:2000],
        "trigger": trigger_for(claim),
        "found_on": found_on,
    }


def matches(claim: Claim, lesson: dict) -> bool:
    trigger = str(lesson.get("trigger") or "")
    ctype, _, words = trigger.partition("|")
    if ctype and ctype != claim.type:
        return False
    if lesson.get("claim_id") == claim.claim_id or lesson.get("doc_id") == claim.doc_id:
        return True
    want = set(words.split())
    if len(want) < 2:
        return False
    shared = want & set(keywords(claim.text))
    return len(shared) >= 2 and len(shared) * 2 >= len(want)


def matching(claims: list[Claim], lessons: list[dict] | None) -> set[str]:
    """Ids of the claims that some lesson matches."""
    if not lessons:
        return set()
    return {c.claim_id for c in claims if any(matches(c, row) for row in lessons)}


def load_lessons(store, limit: int = 5000) -> list[dict]:
    """Lessons of completed runs, newest first; [] for a new store or one without the table."""
    try:
        if not store.run_ids():
            return []
        frame = store.query(f"SELECT * FROM lessons ORDER BY run_id DESC LIMIT {int(limit)}")
    except Exception as exc:  # an older store without the table, or no view yet
        logger.debug("no lessons read: %s", exc)
        return []
    return frame.to_dict("records")
