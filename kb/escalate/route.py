"""Confidence-gated routing by depth, and escalation to the deep verifier within a budget.

Routing by depth (docs/deep-verifier.md): D0 rules only; D1 + model; D2 + wider retrieval (both in
``kb.chain``); and here, after the cheaper verdicts exist:

* **D3** (``strict``): per-claim escalation of low-confidence claims to the deep verifier (CoVe
  over an OpenAI-compatible endpoint, :mod:`kb.escalate.cove`). A claim escalates when it is
  check-worthy, has evidence, is not excluded, and its verdict is ``uncertain`` or its calibrated
  confidence is below its threshold: ``max(threshold, by_type[type], by_risk[risk])``, raised to
  ``lesson_threshold`` when a lesson of an earlier run matches it (:mod:`kb.escalate.lessons`).
* **D4**: every eligible claim gets the deep verifier as a second, independent verifier; the two
  must agree (supported / contradicted-or-stale / uncertain), else the claim is ``uncertain``
  with a systemic gap and "human review".
* **D5** (``audit``): D4, and every claim that is not supported is flagged for a human
  (action "human review", ``human_review`` in the side table).

Budget: calls, tokens and seconds per run (``RouteSettings.max_*``). Claims are taken in priority
order (lesson matches first, then higher risk, then lower confidence); a claim whose estimated
cost no longer fits is **skipped by budget**: it keeps its cheaper verdict, its rationale says so,
and it is counted in ``EscalationResult.skipped_by_budget``.

Excluded claim types (default: speculative, normative) and documents (glob patterns on
``doc_id``) never go to the endpoint.

With no endpoint configured (``KBAUDIT_LLM_BASE_URL`` and ``KBAUDIT_LLM_MODEL``), D3+ runs
complete offline: each claim that would have escalated keeps its label and gets a systemic gap
("configure a deep verifier ... or review by hand"), and the summary notes say how many.

Accepted deep verdicts are :class:`DeepVerdict` (a ``Verdict`` with extra attributes the store
ignores and ``kb.correct.draft`` reads: ``corrected_text``); the same metadata is in the rationale and
in ``EscalationResult.details`` (one row per claim routing touched).

The routing knobs are ``settings.escalate`` (``[escalate]`` in ``kbaudit.toml``, or the
``KBAUDIT_ESCALATE_*`` / ``KBAUDIT_LLM_*`` environment variables: docs/deep-verifier.md); a
caller may pass other ``RouteSettings`` as ``route=``.

Prefect-free.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date

from kb import progress
from kb.config import RouteSettings, Settings
from kb.escalate.cove import CoveOutcome, verify_claim
from kb.escalate.lessons import lesson_row, matching
from kb.escalate.llm import Cost, LLMClient, estimate_tokens
from kb.log import logger
from kb.records import Claim, Evidence, Verdict

DEEP_DEPTHS = ("D3", "D4", "D5")
NO_ENDPOINT_ACTION = "configure a deep verifier (KBAUDIT_LLM_BASE_URL) or review by hand"
HUMAN = "human review"
RISK_ORDER = {"high": 0, "medium": 1, "low": 2}


@dataclass(frozen=True)
class DeepVerdict(Verdict):
    """A verdict the routing step touched. The store keeps the ``Verdict`` columns only."""

    corrected_text: str | None = None  # CoVe FINAL on a discrepancy (kb.correct.draft drafts from it)
    verified_with_discrepancy: bool = False
    skipped_by_budget: bool = False
    ungrounded: bool = False
    human_review: bool = False  # D5: queued for a human
    escalated: bool = False  # the deep verifier was asked


@dataclass
class EscalationResult:
    verdicts: list[Verdict]
    cost: Cost = field(default_factory=Cost)
    escalated: int = 0  # claims the deep verifier was asked about
    skipped_by_budget: int = 0
    would_escalate: int = 0  # claims that met the routing rule (asked, skipped or no endpoint)
    excluded: int = 0
    accepted: int = 0
    not_accepted: dict[str, int] = field(default_factory=dict)  # reason kind -> claims
    discrepancies: int = 0
    disagreements: int = 0  # D4/D5: the two verifiers disagreed
    human_review: int = 0  # D5: non-supported claims flagged for a human
    lessons: list[dict] = field(default_factory=list)  # rows for the `lessons` table
    details: list[dict] = field(default_factory=list)  # one row per claim routing touched
    summary_notes: list[str] = field(default_factory=list)
    seconds: float = 0.0  # wall-clock time of the escalation step


class Budget:
    """Per-run limits; a claim reserves its estimated cost before it starts (thread-safe)."""

    def __init__(self, calls: int, tokens: int, seconds: float):
        self.calls, self.tokens, self.seconds = calls, tokens, seconds
        self.used_calls = self.used_tokens = 0
        self.started = time.perf_counter()
        self._lock = threading.Lock()

    def reserve(self, calls: int, tokens: int) -> str | None:
        """None when reserved, else the limit that does not fit."""
        with self._lock:
            if time.perf_counter() - self.started >= self.seconds:
                return "seconds"
            if self.used_calls + calls > self.calls:
                return "calls"
            if self.used_tokens + tokens > self.tokens:
                return "tokens"
            self.used_calls += calls
            self.used_tokens += tokens
            return None

    def settle(self, reserved_calls: int, reserved_tokens: int, cost: Cost) -> None:
        with self._lock:
            self.used_calls += cost.calls - reserved_calls
            self.used_tokens += cost.tokens - reserved_tokens


def endpoint_configured(settings: Settings) -> bool:
    return bool(settings.llm_base_url and settings.llm_model)


def missing_endpoint_settings(settings: Settings) -> str:
    """What is left to configure for the deep verifier, by the names a user sets."""
    missing = [f"{key} (KBAUDIT_{key.upper()})" for key in ("llm_base_url", "llm_model") if not getattr(settings, key)]
    return "set " + " and ".join(missing) + " in kbaudit.toml or the environment"


def _estimate_tokens(claim: Claim, evidence: list[Evidence], rs: RouteSettings) -> int:
    passages = sum(min(len(e.passage or e.sentence), rs.cove.passage_chars) for e in evidence[: rs.cove.max_passages])
    prompt = estimate_tokens("x" * (passages + 2 * len(claim.text) + 1500))
    calls = rs.cove.calls_per_claim()
    return calls * (prompt + rs.max_tokens_per_call)


def _note(v: Verdict, text: str) -> str:
    return f"{v.rationale} [{text}]" if v.rationale else f"[{text}]"


def _deep(v: Verdict, **changes) -> DeepVerdict:
    base = {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
    base.update(changes)
    names = {f.name for f in dataclasses.fields(DeepVerdict)}
    return DeepVerdict(**{k: val for k, val in base.items() if k in names})


def _side(v: Verdict) -> str:
    return {"supported": "supports", "contradicted": "refutes", "stale": "refutes"}.get(v.label, "nei")


def _evidence_sentence(outcome: CoveOutcome, evidence: list[Evidence], fallback: str | None) -> str | None:
    if outcome.cited and 1 <= outcome.cited[0] <= len(evidence):
        e = evidence[outcome.cited[0] - 1]
        return e.sentence or e.passage
    return fallback


def _deep_verdict(claim: Claim, before: Verdict, outcome: CoveOutcome, evidence: list[Evidence], rs: RouteSettings) -> DeepVerdict:
    """The deep verifier's verdict (D3), from an accepted outcome."""
    label = outcome.label
    conf = rs.llm_confidence.get(label or "", 0.5)  # accepted outcomes carry a label
    how = f"deep verifier (CoVe {rs.cove.mode}, {len(outcome.questions)} questions): {outcome.reason}"
    if outcome.cited:
        how += f"; cites {', '.join(f'P{i}' for i in outcome.cited)}"
    how += f"; cheaper verdict was {before.label} ({before.confidence:.2f}, {before.tier})"
    common = dict(tier="llm", escalated=True, verified_with_discrepancy=outcome.verified_with_discrepancy,
                  evidence_sentence=_evidence_sentence(outcome, evidence, before.evidence_sentence))  # fmt: skip
    if label == "supported":
        return _deep(before, label="supported", confidence=conf, rationale=how, gap_type=None, gap_severity=None,
                     action=None, claim_value=None, evidence_value=None, **common)  # fmt: skip
    if label == "contradicted":
        if outcome.corrected_text:
            how += f"; corrected text: {outcome.corrected_text}"
        if before.label in ("contradicted", "stale"):  # the deep verifier confirms: keep the slot values
            return _deep(before, confidence=round(max(before.confidence, conf), 4), rationale=how,
                         corrected_text=outcome.corrected_text, **{**common, "evidence_sentence": before.evidence_sentence or common["evidence_sentence"]})  # fmt: skip
        correctable = bool(outcome.corrected_text)
        return _deep(
            before, label="contradicted", confidence=conf, rationale=how,
            gap_type="technical" if correctable else "systemic",
            gap_severity="high" if claim.risk in ("high", "medium") else "medium",
            action=HUMAN if claim.risk == "high" or not correctable else "correct from the deep verifier's rewrite",
            claim_value=None, evidence_value=None, corrected_text=outcome.corrected_text, **common,
        )  # fmt: skip
    return _deep(before, label="uncertain", confidence=conf, rationale=how, gap_type="technical",
                 gap_severity=before.gap_severity or ("high" if claim.risk == "high" else "medium"),
                 action=HUMAN, claim_value=None, evidence_value=None, **common)  # fmt: skip


def _agree(claim: Claim, before: Verdict, outcome: CoveOutcome, evidence: list[Evidence], rs: RouteSettings) -> tuple[DeepVerdict, bool]:
    """D4/D5: the cheaper verdict and the deep verifier must agree, else uncertain."""
    deep = _deep_verdict(claim, before, outcome, evidence, rs)
    if _side(before) == _side(deep):
        conf = 1.0 - (1.0 - before.confidence) * (1.0 - deep.confidence)
        label = before.label  # keeps stale vs contradicted and the slot values
        v = _deep(before, confidence=round(min(conf, 0.995), 4), tier=before.tier,
                  rationale=f"{before.rationale} [D4: deep verifier agrees: {outcome.reason}]",
                  escalated=True, verified_with_discrepancy=outcome.verified_with_discrepancy,
                  corrected_text=outcome.corrected_text if label != "supported" else None)  # fmt: skip
        return v, True
    v = _deep(
        before, label="uncertain", confidence=0.5, tier="llm",
        rationale=f"D4: verifiers disagree: {before.tier} says {before.label} ({before.confidence:.2f}: "
        f"{before.rationale}); deep verifier says {deep.label} ({outcome.reason})",
        gap_type="systemic", gap_severity="high" if claim.risk in ("high", "medium") else "medium",
        action=HUMAN, claim_value=None, evidence_value=None, escalated=True,
        verified_with_discrepancy=outcome.verified_with_discrepancy, corrected_text=outcome.corrected_text,
    )  # fmt: skip
    return v, False


def _candidates(claims_by_id, evidence, verdicts, depth, rs, lesson_ids, result) -> list[int]:
    """Indexes of the verdicts the routing rule sends to the deep verifier, in priority order."""
    chosen = []
    for i, v in enumerate(verdicts):
        claim = claims_by_id.get(v.claim_id)
        if claim is None or not claim.checkworthy or not evidence.get(v.claim_id):
            continue
        lesson = claim.claim_id in lesson_ids
        if depth == "D3" and not (v.label == "uncertain" or v.confidence < rs.threshold_for(claim, lesson)):
            continue
        why = rs.excluded(claim)
        if why:
            result.excluded += 1
            result.details.append({"claim_id": v.claim_id, "route": "excluded", "reason": why})
            continue
        chosen.append(i)

    def priority(i):
        v = verdicts[i]
        claim = claims_by_id[v.claim_id]
        return (claim.claim_id not in lesson_ids, RISK_ORDER.get(claim.risk, 3), v.confidence, i)

    return sorted(chosen, key=priority)


def escalate(
    claims: list[Claim],
    evidence: Mapping[str, list[Evidence]],
    verdicts: list[Verdict],
    settings: Settings,
    today: date,
    lessons: list[dict] | None = None,
    *,
    route: RouteSettings | None = None,
    client: LLMClient | None = None,
) -> EscalationResult:
    """Route the cheaper verdicts by ``settings.depth``; see the module docstring.

    ``verdicts`` come back in the same order, the escalated ones replaced.
    """
    started = time.perf_counter()
    depth = settings.depth
    result = EscalationResult(verdicts=list(verdicts))
    if depth not in DEEP_DEPTHS:
        return result
    rs = route or settings.escalate
    claims_by_id = {c.claim_id: c for c in claims}
    lesson_ids = matching([c for c in claims if c.checkworthy], lessons)
    order = _candidates(claims_by_id, evidence, result.verdicts, depth, rs, lesson_ids, result)
    result.would_escalate = len(order)
    if result.excluded:
        result.summary_notes.append(
            f"{result.excluded} claims that would have escalated are excluded from the deep verifier by type or document"
        )

    if order and client is None and not endpoint_configured(settings):
        for i in order:
            v = result.verdicts[i]
            result.verdicts[i] = _deep(
                v, gap_type="systemic", gap_severity=v.gap_severity or "low", action=NO_ENDPOINT_ACTION,
                rationale=_note(v, f"{depth}: would have escalated to a deep verifier; none is configured"),
            )  # fmt: skip
            result.details.append({"claim_id": v.claim_id, "route": "no_endpoint", "label_before": v.label, "label_after": v.label})
        result.summary_notes.append(
            f"no deep verifier configured: {len(order)} claims that would have escalated got a systemic gap "
            f"({missing_endpoint_settings(settings)})"
        )
    elif order:
        own = client is None
        if own:
            base_url, model = settings.llm_base_url, settings.llm_model
            assert base_url and model  # endpoint_configured(settings) held, or the branch above ran
            client = LLMClient(
                base_url, model, api_key=settings.llm_api_key,
                timeout=rs.timeout, max_retries=rs.max_retries, backoff=rs.backoff, max_backoff=rs.max_backoff,
                concurrency=rs.concurrency, max_tokens=rs.max_tokens_per_call,
            )  # fmt: skip
        try:
            _run_deep(order, claims_by_id, evidence, depth, rs, client, lesson_ids, today, result)
        finally:
            if own:
                client.close()

    if depth == "D5":
        for i, v in enumerate(result.verdicts):
            claim = claims_by_id.get(v.claim_id)
            if v.label == "supported" or claim is None or not claim.checkworthy:
                continue
            result.verdicts[i] = _deep(
                v, action=HUMAN, gap_type=v.gap_type or "systemic", gap_severity=v.gap_severity or "medium",
                rationale=_note(v, "D5: queued for human review"), human_review=True,
            )  # fmt: skip
            result.human_review += 1
        result.summary_notes.append(f"D5: {result.human_review} claims that are not supported are flagged for human review")
    result.seconds = time.perf_counter() - started
    result.cost.seconds = result.seconds
    return result


def _run_deep(order, claims_by_id, evidence, depth, rs, client, lesson_ids, today, result) -> None:
    # One function on purpose: the worker threads share the budget's reservations and the result lists.
    budget = Budget(rs.max_calls, rs.max_tokens, rs.max_seconds)
    # the per-run limit also bounds the calls in flight, not only which claims may start
    deadline, outer = time.monotonic() + rs.max_seconds, getattr(client, "deadline", None)
    client.deadline = deadline if outer is None else min(outer, deadline)
    per_claim_calls = rs.cove.calls_per_claim()
    lock = threading.Lock()

    def work(i: int):
        v = result.verdicts[i]
        claim = claims_by_id[v.claim_id]
        evs = evidence.get(v.claim_id, [])
        tokens = _estimate_tokens(claim, evs, rs)
        limit = budget.reserve(per_claim_calls, tokens)
        if limit:
            bar.update(1)
            return i, None, limit
        outcome = verify_claim(client, claim, evs, rs.cove)
        budget.settle(per_claim_calls, tokens, outcome.cost)
        bar.update(1)
        return i, outcome, None

    try:
        with progress.track("escalation", len(order), "claims") as bar:
            with ThreadPoolExecutor(max_workers=max(1, rs.concurrency), thread_name_prefix="kbaudit-deep") as pool:
                done = list(pool.map(work, order))
    finally:
        client.deadline = outer

    for name in ("attempts", "retries", "failures", "rate_limited", "server_errors", "transport_errors"):
        setattr(result.cost, name, getattr(client.cost, name))
    skipped_by: dict[str, int] = {}
    for i, outcome, limit in done:
        before = result.verdicts[i]
        claim = claims_by_id[before.claim_id]
        row = {"claim_id": before.claim_id, "label_before": before.label, "lesson_match": claim.claim_id in lesson_ids}
        if outcome is None:
            assert limit is not None  # work() returns the limit whenever it returns no outcome
            result.skipped_by_budget += 1
            skipped_by[limit] = skipped_by.get(limit, 0) + 1
            result.verdicts[i] = _deep(before, skipped_by_budget=True,
                                       rationale=_note(before, f"{depth}: deep verifier skipped: run budget of {limit} spent"))  # fmt: skip
            result.details.append({**row, "route": "skipped_by_budget", "reason": f"budget: {limit}", "label_after": before.label})
            continue
        with lock:
            result.cost.add(outcome.cost)
        result.escalated += 1
        row.update(route="escalated", calls=outcome.cost.calls, tokens=outcome.cost.tokens,
                   questions=outcome.questions, answers=outcome.answers, discrepancies=outcome.discrepancies,
                   corrected_text=outcome.corrected_text, ungrounded=outcome.ungrounded, status=outcome.status)  # fmt: skip
        if not outcome.accepted:
            kind = outcome.error or "error"
            result.not_accepted[kind] = result.not_accepted.get(kind, 0) + 1
            new = _deep(before, escalated=True, ungrounded=kind == "ungrounded",
                        rationale=_note(before, f"{depth}: deep verifier not accepted ({kind}): {outcome.reason}"))  # fmt: skip
            if depth in ("D4", "D5"):
                # no second verdict, so no agreement: say so, keep the label
                new = _deep(new, gap_type=new.gap_type or "systemic", gap_severity=new.gap_severity or "low",
                            action=new.action or "rerun the deep verifier or review by hand")  # fmt: skip
            result.verdicts[i] = new
            result.details.append({**row, "accepted": False, "reason": outcome.reason, "label_after": before.label})
            continue
        result.accepted += 1
        if depth == "D3":
            new = _deep_verdict(claim, before, outcome, evidence.get(claim.claim_id, []), rs)
        else:
            new, agreed = _agree(claim, before, outcome, evidence.get(claim.claim_id, []), rs)
            if not agreed:
                result.disagreements += 1
        if outcome.verified_with_discrepancy:
            result.discrepancies += 1
            result.lessons.append(lesson_row(claim, outcome.discrepancies, outcome.corrected_text, today, before.tier))
        result.verdicts[i] = dataclasses.replace(new, reused=False)  # decided afresh this run
        result.details.append({**row, "accepted": True, "reason": outcome.reason, "label_after": new.label,
                               "verified_with_discrepancy": outcome.verified_with_discrepancy})  # fmt: skip

    c = result.cost
    result.summary_notes.append(
        f"deep verifier ({depth}, CoVe {rs.cove.mode}): {result.escalated} claims escalated, {result.accepted} accepted, "
        f"{result.discrepancies} with a discrepancy; {c.calls} calls, {c.tokens_in} tokens in, {c.tokens_out} out"
    )
    if result.not_accepted:
        result.summary_notes.append(
            "deep verdicts not accepted (cheaper verdict kept): " + ", ".join(f"{k} {n}" for k, n in sorted(result.not_accepted.items()))
        )
    repairs = {"429 answers": c.rate_limited, "5xx answers": c.server_errors, "transport errors": c.transport_errors,
               "retries": c.retries, "truncated replies asked again with more tokens": c.truncated_retries,
               "prompts over the context window sent again with less evidence": c.context_retries}  # fmt: skip
    if any(repairs.values()):
        result.summary_notes.append("deep verifier endpoint: " + ", ".join(f"{k} {n}" for k, n in repairs.items() if n))
    if result.disagreements:
        result.summary_notes.append(f"D4: the two verifiers disagreed on {result.disagreements} claims (now uncertain)")
    if result.skipped_by_budget:
        result.summary_notes.append(
            f"budget: {result.skipped_by_budget} claims skipped (cheaper verdict kept; limits reached: "
            + ", ".join(f"{k} {n}" for k, n in sorted(skipped_by.items()))
            + ")"
        )
    logger.info("; ".join(result.summary_notes[-3:]))
