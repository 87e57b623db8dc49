"""Chain-of-Verification (CoVe) over a chat endpoint: prompts, the five-block reply, grounding.

The verifier gets the claim with its context (TASK), the claim as written in the document (DRAFT)
and the retrieved passages, and returns five blocks::

    STATUS: verified-clean | verified-with-corrections | unverifiable
    QUESTIONS:  1. ... 2. ... 3. ...            (verification questions)
    ANSWERS:    1. ... "quoted words" [P2] ...  (each quotes or cites a passage)
    DISCREPANCIES: - ... (or "none")
    FINAL: the draft, rewritten to agree with the passages where it does not

Two modes (``CoveSettings.mode``):

* ``factored`` (the default; the variant the CoVe paper found stronger): one call plans the
  questions from the draft; each question is answered in its **own call that sees the passages
  but not the draft** (so the answers cannot copy the draft's mistakes); a last call compares the
  draft with the answers and writes STATUS, DISCREPANCIES and FINAL. ``questions + 2`` calls.
* ``joint``: one call does all of it.

Untrusted text. Document and source text only ever appear between ``<<<DATA n ...>>>`` and
``<<<END DATA n>>>`` markers (``n`` a per-prompt nonce; marker look-alikes inside the data are
defused), and the system prompt says that nothing inside them is an instruction. The protocol does
not rely on the model obeying that: a reply is **accepted** only when it is well formed and
**grounded**, i.e. every answer quotes (``"..."``) or cites (``[P2]``) the retrieved passages,
every quote is found in them (``rapidfuzz`` partial ratio at or above ``quote_match``), every
citation names a passage that exists, and at least one answer is grounded. A reply whose quotes
come from the document, the claim or anywhere else is ``ungrounded`` and not accepted, whatever
its status says.

Grounded is not enough: copying a passage is easy for any model. A grounded reply whose own parts
disagree (a clean status resting on a quote the rules tier finds in conflict with the claim, a
correction resting on a quote that states the claim, a clean FINAL that changes the draft's
numbers) is held back as ``disagreement`` (:func:`kb.escalate.cove_grounding.disagreement`).

The parser is tolerant: blocks in any order, Markdown headings or bold headers (also numbered or
bulleted), ``-``/``*``/``•`` bullets or ``1.``/``1)``/``Q1:`` numbering, multi-line items, prose
around the blocks, code fences, a reply written as one JSON object. QUESTIONS, FINAL, and
DISCREPANCIES under a clean or unverifiable status may be missing; a reply without a readable
STATUS or ANSWERS is ``malformed``.

Two repairs, once each per call (:func:`_ask`): a reply cut at ``max_tokens`` (finish reason
``length``) is asked for again with twice the tokens, and is ``truncated`` (not accepted) if cut
again; a prompt the endpoint says is over its context window is sent again with half the passages,
each half as long, and is ``context_length`` if it still does not fit.

This module runs the protocol; the prompts are in :mod:`kb.escalate.cove_prompts`, the reply
parser in :mod:`kb.escalate.cove_reply`, grounding and agreement in :mod:`kb.escalate.cove_grounding`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kb.config import CoveSettings
from kb.escalate.cove_grounding import disagreement, ground
from kb.escalate.cove_prompts import answer_messages, final_messages, joint_messages, plan_messages
from kb.escalate.cove_reply import CoveReply, items, parse_answer, parse_reply, split_blocks
from kb.escalate.llm import Cost, LLMClient, LLMError
from kb.records import Claim, Evidence

LABEL_OF_STATUS = {"verified-clean": "supported", "verified-with-corrections": "contradicted", "unverifiable": "uncertain"}


@dataclass
class CoveOutcome:
    """What the deep verifier concluded for one claim (``accepted`` False: keep the cheaper verdict)."""

    claim_id: str
    accepted: bool
    label: str | None = None  # supported | contradicted | uncertain (when accepted)
    status: str | None = None
    reason: str = ""  # why not accepted, or a short account of the verdict
    questions: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    discrepancies: list[str] = field(default_factory=list)
    corrected_text: str | None = None
    ungrounded: list[str] = field(default_factory=list)  # quotes / citations not found
    cited: list[int] = field(default_factory=list)  # 1-based passage numbers the answers rest on
    error: str | None = None  # ungrounded | malformed | truncated | disagreement | context_length | timeout | http | error
    cost: Cost = field(default_factory=Cost)

    @property
    def verified_with_discrepancy(self) -> bool:
        return self.accepted and self.status == "verified-with-corrections"


def _judge(claim: Claim, evidence: list[Evidence], reply: CoveReply, settings: CoveSettings, outcome: CoveOutcome) -> CoveOutcome:
    outcome.questions, outcome.answers = reply.questions, reply.answers
    outcome.discrepancies = reply.discrepancies
    if reply.truncated:
        outcome.error, outcome.reason = "truncated", "reply cut at the token limit"
        return outcome
    # DISCREPANCIES may be left out by a model when there are none; corrections need them listed
    required = ("status", "answers", "discrepancies") if reply.status == "verified-with-corrections" else ("status", "answers")
    missing = [b for b in required if b not in reply.found]
    if reply.status is None or missing or not reply.answers:
        what = ", ".join(missing) or ("a readable status" if reply.status is None else "answers")
        outcome.error, outcome.reason = "malformed", f"reply lacks {what}"
        return outcome
    status = reply.status
    if status == "verified-clean" and reply.discrepancies:
        status = "verified-with-corrections"  # the listed discrepancies are more specific than the status
    if status == "verified-with-corrections" and not reply.discrepancies:
        outcome.error, outcome.reason = "malformed", "corrections claimed but no discrepancy listed"
        return outcome
    g = ground(reply.answers, evidence, settings)
    outcome.ungrounded, outcome.cited = g.ungrounded, g.cited
    if not g.ok:
        outcome.error = "ungrounded"
        outcome.reason = "ungrounded: " + ("; ".join(g.ungrounded[:3]) or "no answer quotes or cites a passage")
        return outcome
    draft = (claim.source_text or claim.text).strip()
    if settings.agreement:
        why = disagreement(claim, status, reply, g.quotes)
        if why:
            outcome.error, outcome.reason = "disagreement", f"disagreement: {why}"
            return outcome
    outcome.accepted, outcome.status, outcome.label = True, status, LABEL_OF_STATUS[status]
    if status == "verified-with-corrections" and settings.rewrite and reply.final and reply.final.strip() != draft:
        outcome.corrected_text = reply.final.strip()
    outcome.reason = status + (f"; discrepancies: {'; '.join(reply.discrepancies)}" if reply.discrepancies else "")
    return outcome


def _call(client: LLMClient, messages: list[dict], cost: Cost, max_tokens: int | None = None):
    reply = client.chat(messages, max_tokens=max_tokens)
    cost.calls += 1
    cost.tokens_in += reply.tokens_in
    cost.tokens_out += reply.tokens_out
    cost.seconds += reply.seconds
    return reply


def _ask(client: LLMClient, build, settings: CoveSettings, cost: Cost):
    """One protocol step, with its two repairs: a prompt over the context window is sent once
    more with half the evidence (``build(settings)`` makes the messages); a reply cut at
    ``max_tokens`` is asked for once more with ``truncated_retry_factor`` times the tokens.
    Returns (reply, the settings its prompt was built with)."""
    used = settings
    try:
        reply = _call(client, build(used), cost)
    except LLMError as exc:
        if exc.kind != "context_length" or not settings.shrink_on_context:
            raise
        used = settings.shrunk()
        cost.context_retries += 1
        reply = _call(client, build(used), cost)  # a second context error is the outcome
    if reply.finish_reason == "length" and settings.truncated_retry_factor > 1:
        cost.truncated_retries += 1
        reply = _call(client, build(used), cost, max_tokens=int(client.max_tokens * settings.truncated_retry_factor))
    return reply, used


def verify_claim(client: LLMClient, claim: Claim, evidence: list[Evidence], settings: CoveSettings | None = None) -> CoveOutcome:
    """Run CoVe for one claim. Never raises for endpoint trouble: the outcome says what happened."""
    settings = settings or CoveSettings()
    outcome = CoveOutcome(claim.claim_id, accepted=False)
    try:
        if settings.mode == "joint":
            r, used = _ask(client, lambda st: joint_messages(claim, evidence, st), settings, outcome.cost)
            return _judge(claim, evidence, parse_reply(r.text, r.finish_reason), used, outcome)
        plan, _ = _ask(client, lambda st: plan_messages(claim, st), settings, outcome.cost)
        questions = items(split_blocks(plan.text).get("questions", plan.text))[: settings.questions]
        if plan.finish_reason == "length" or not questions:
            outcome.questions = questions
            outcome.error = "truncated" if plan.finish_reason == "length" else "malformed"
            outcome.reason = "no verification questions in the planning reply"
            return outcome
        answers = []
        shown = settings
        for q in questions:
            a, used = _ask(client, lambda st, q=q: answer_messages(q, evidence, st), settings, outcome.cost)
            shown = used if used.max_passages < shown.max_passages else shown
            if a.finish_reason == "length":
                outcome.questions, outcome.answers = questions, answers
                outcome.error, outcome.reason = "truncated", "an answer was cut at the token limit"
                return outcome
            answers.append(parse_answer(a.text))
        fin, _ = _ask(client, lambda st: final_messages(claim, evidence, questions, answers, st), settings, outcome.cost)
        reply = parse_reply(fin.text, fin.finish_reason)
        # the factored questions and answers are the ones that count, whatever the last call echoes
        reply.questions, reply.answers = questions, answers
        reply.found = tuple(sorted(set(reply.found) | {"questions", "answers"}))
        # the answers are grounded against the smallest evidence set an answer call was shown
        # (after a context-length retry, less): a quote from text left out cannot be accepted
        return _judge(claim, evidence, reply, shown, outcome)
    except LLMError as exc:
        outcome.error, outcome.reason = exc.kind, f"deep verifier call failed: {exc}"
        return outcome
