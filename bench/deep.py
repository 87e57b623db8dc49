"""The deep verifier (D3: CoVe over a chat endpoint) against D1, on labelled data and the demo KB.

``kbaudit bench deep [--base-url URL --model NAME] [--fever F] [--vitaminc V] [--claims FILE]
[--limit 200] [--no-demo] [--json OUT]``

With no ``--base-url`` it starts the bundled llama.cpp server (Gemma 3 270M, the ``llm-test``
extra; :mod:`bench.llamaserver`) on a free loopback port and stops it at the end.

One run, the same inputs through both depths:

- **D1**: rules + the shipped model, then the policy (``Verifier``, as ``bench labels`` does).
- **D3**: the D1 verdicts routed by :func:`kb.escalate.route.escalate` (low-confidence claims go to
  the endpoint; its answers are accepted only when well formed, grounded and self-consistent).

Sets: the demo KB (every stage, scored against ``expected_labels.csv``; at D3 the evidence is
the wider D2 retrieval, so ``demo_d2_accuracy``, D3 before escalation, is reported too), the
first ``--limit`` validation pairs of FEVER-Lite (2-way: supported or not) and of VitaminC (3-way),
and ``--claims FILE`` (JSONL ``{"claim", "evidence": text or [texts], "label"}``, labels as in
VitaminC or kbaudit's own; all of it counts). A file the shipped verifier was trained on counts
only with its validation part (:func:`bench.labels.reportable`): training parts are never used.

Figures (``--json``: one flat object of name -> number): ``d1_accuracy``, ``d3_accuracy`` (over
every item of every set), per set ``<set>_d1_accuracy``, ``<set>_d3_accuracy`` and per gold label
``<set>_<depth>_<label>_accuracy``; ``escalated``, ``calls``, ``prompt_tokens``,
``completion_tokens``, ``latency_p50_s``, ``latency_p95_s`` (per chat call, retries included);
``accepted``, ``rejected`` and ``rejected_<reason>`` for unparsable, ungrounded, disagreement,
timeout, server_error, truncated, context_length; ``changed``, ``fixed``, ``broke`` (D3 labels
that differ from D1, and whether they became right or wrong); the endpoint's repairs
(``retries``, ``truncated_retries``, ``context_retries``, ``rate_limited``, ``server_errors``);
the budget (``skipped_by_budget``, ``budget_calls``, ``budget_tokens``, ``budget_used``: the
largest used fraction of calls, tokens and seconds) and ``deep_seconds``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections import Counter
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from bench.demo import load_expected, sentence_labels
from bench.labels import TODAY, VITC, _claim, _evidence, read_jsonl, reportable, verify_with
from bench.llamaserver import LocalServer, ServerError, available
from kb.chain import ingest_stage, retrieve_stage, run_audit, sources_stage, split_stage, verify_stage
from kb.config import ConfigError, CoveSettings, RouteSettings, Settings
from kb.escalate.llm import LLMClient
from kb.escalate.route import escalate
from kb.records import LABELS
from kb.verify import Verifier, VerifierSettings

log = logging.getLogger("kbaudit.bench.deep")

# CoveOutcome.error -> the reason a bench reports
REASONS = {"malformed": "unparsable", "ungrounded": "ungrounded", "disagreement": "disagreement", "timeout": "timeout",
           "http": "server_error", "error": "server_error", "truncated": "truncated", "context_length": "context_length"}  # fmt: skip
REASON_NAMES = tuple(dict.fromkeys(REASONS.values()))
OWN_LABELS = {**VITC, **{lab: lab for lab in LABELS}, "SUPPORTED": "supported", "REFUTED": "contradicted", "NEI": "uncertain"}


class Params(BaseModel):
    """`kbaudit bench deep` parameters."""

    base_url: str | None = Field(
        default=None, description="an OpenAI-compatible endpoint up to /v1 (default: start the bundled llama.cpp server)"
    )
    model: str | None = Field(default=None, description="the model name the endpoint serves (needed with --base-url)")
    fever: str | None = Field(default=None, description="FEVER-Lite JSONL (claim, label, evidence: [sentences])")
    vitaminc: str | None = Field(default=None, description="VitaminC JSONL (claim, evidence, label, page)")
    claims: str | None = Field(default=None, description="JSONL of labelled claims: claim, evidence (text or list), label")
    limit: int = Field(default=200, description="at most N validation records of each set (default 200)")
    skip: int = Field(
        default=0,
        description="leave out the first N validation records of each set (a development run on records a report does not use)",
    )
    dump: str | None = Field(
        default=None, description="write one JSON line per escalated claim (route, reason, answers, labels) to this file"
    )
    no_demo: bool = Field(default=False, description="leave out the demo KB")
    mode: Literal["joint", "factored"] = Field(default="joint", description="CoVe mode (default joint: 1 call a claim)")
    threshold: float | None = Field(default=None, description="escalate below this confidence (default 0.8, as a run)")
    questions: int = Field(default=2, description="verification questions per claim (default 2)")
    max_tokens_per_call: int = Field(default=256, description="max_tokens of each request (default 256)")
    timeout: float = Field(default=60.0, description="seconds per request (default 60)")
    max_seconds: float = Field(default=1800.0, description="deep verifier time per set (default 1800)")
    max_calls: int = Field(default=2000, description="deep verifier calls per set (default 2000)")
    concurrency: int | None = Field(default=None, description="requests in flight (default 1 for the bundled server, else 4)")
    n_ctx: int = Field(default=2048, description="bundled server: context window in tokens (default 2048)")
    threads: int = Field(default=1, description="bundled server: CPU threads (default 1)")


class TimedClient(LLMClient):
    """The client, also keeping the wall time of each chat call (retries included)."""

    def __post_init__(self):
        super().__post_init__()
        self.latencies: list[float] = []

    def chat(self, messages, max_tokens=None):
        started = time.perf_counter()
        try:
            return super().chat(messages, max_tokens=max_tokens)
        finally:
            with self._lock:
                self.latencies.append(time.perf_counter() - started)


@contextlib.contextmanager
def endpoint(params: Params):
    """(base_url, model, server-or-None): the given endpoint, or the bundled server started here."""
    if params.base_url:
        if not params.model:
            raise ConfigError("--base-url needs --model NAME (the model the endpoint serves)")
        yield params.base_url, params.model, None
        return
    why = available()
    if why:
        raise ConfigError(f"no --base-url and no bundled server: {why}")
    try:
        server = LocalServer(n_ctx=params.n_ctx, threads=params.threads).start()
    except ServerError as exc:
        raise ConfigError(str(exc).splitlines()[0]) from None
    log.info("bundled llama.cpp server ready on %s in %.1f s", server.base_url, server.started_s)
    try:
        yield server.base_url, server.alias, server
    finally:
        server.stop()


def route_settings(params: Params) -> RouteSettings:
    bundled = not params.base_url
    cove = CoveSettings(mode=params.mode, questions=params.questions)
    extra: dict[str, Any] = {} if params.threshold is None else {"threshold": params.threshold}  # else the run's default
    return RouteSettings(
        **extra, timeout=params.timeout, max_seconds=params.max_seconds, max_calls=params.max_calls, max_retries=2,
        concurrency=params.concurrency or (1 if bundled else 4), max_tokens_per_call=params.max_tokens_per_call, cove=cove,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# the sets: each gives (claims, evidence, gold) and how a label is scored
# ---------------------------------------------------------------------------------------------


def fever_set(rows):
    claims = [_claim(f"f{i}", r["claim"]) for i, r in enumerate(rows)]
    evidence = {c.claim_id: [_evidence(c.claim_id, " ".join(r["evidence"]))] for c, r in zip(claims, rows)}
    gold = ["supported" if r["label"] == "SUPPORTS" else "refuted" for r in rows]
    return claims, evidence, gold, lambda label: "supported" if label == "supported" else "refuted"


def vitaminc_set(rows):
    claims = [_claim(f"v{i}", r["claim"]) for i, r in enumerate(rows)]
    evidence = {c.claim_id: [_evidence(c.claim_id, r["evidence"])] for c, r in zip(claims, rows)}
    gold = [VITC[r["label"]] for r in rows]
    return claims, evidence, gold, lambda label: label if label in ("supported", "contradicted") else "uncertain"


def claims_set(rows):
    claims, evidence, gold = [], {}, []
    for i, r in enumerate(rows):
        label = OWN_LABELS.get(str(r.get("label", "")).strip())
        if label is None or not str(r.get("claim", "")).strip():
            raise ConfigError(f"--claims: record {i + 1} needs a claim and a label of {', '.join(sorted(OWN_LABELS))}")
        c = _claim(f"c{i}", r["claim"])
        texts = r.get("evidence") or []
        texts = [texts] if isinstance(texts, str) else [str(t) for t in texts]
        claims.append(c)
        evidence[c.claim_id] = [_evidence(c.claim_id, t, rank=k + 1) for k, t in enumerate(texts) if t.strip()]
        gold.append(label)
    return claims, evidence, gold, lambda label: label


def _accuracy(prefix: str, gold: list[str], pred: list[str]) -> dict[str, float]:
    out = {f"{prefix}_accuracy": float(np.mean([g == p for g, p in zip(gold, pred)])) if gold else 0.0}
    for label in sorted(set(gold)):
        pairs = [(g, p) for g, p in zip(gold, pred) if g == label]
        out[f"{prefix}_{label}_accuracy"] = sum(g == p for g, p in pairs) / len(pairs)
    return out


class Tally:
    """What the deep verifier did, summed over the sets."""

    def __init__(self):
        self.n = self.d1_right = self.d3_right = 0
        self.changed = self.fixed = self.broke = 0
        self.counts: Counter = Counter()
        self.rejected: Counter = Counter()
        self.budget_used = 0.0
        self.details: list[dict] = []

    def add_escalation(self, r, rs: RouteSettings, name: str = "", gold: dict | None = None) -> None:
        for d in r.details:
            self.details.append({"set": name, "gold": (gold or {}).get(d.get("claim_id")), **d})
        c = r.cost
        self.counts.update(escalated=r.escalated, accepted=r.accepted, calls=c.calls, prompt_tokens=c.tokens_in,
                           completion_tokens=c.tokens_out, skipped_by_budget=r.skipped_by_budget,
                           would_escalate=r.would_escalate, retries=c.retries, truncated_retries=c.truncated_retries,
                           context_retries=c.context_retries, rate_limited=c.rate_limited, server_errors=c.server_errors)  # fmt: skip
        self.counts["deep_seconds"] += r.seconds
        for kind, n in r.not_accepted.items():
            self.rejected[REASONS.get(kind, "server_error")] += n
        self.budget_used = max(self.budget_used, c.calls / rs.max_calls, c.tokens / rs.max_tokens, r.seconds / rs.max_seconds)

    def add_labels(self, gold, d1, d3) -> None:
        self.n += len(gold)
        self.d1_right += sum(g == p for g, p in zip(gold, d1))
        self.d3_right += sum(g == p for g, p in zip(gold, d3))
        for g, a, b in zip(gold, d1, d3):
            if a != b:
                self.changed += 1
                self.fixed += b == g
                self.broke += a == g


def bench_pairs(name, claims, evidence, gold, score, verifier, client, rs, tally) -> dict[str, float]:
    d1_verdicts, _ = verify_with(verifier, claims, evidence)
    settings = Settings(depth="D3")
    r = escalate(claims, evidence, d1_verdicts, settings, TODAY, route=rs, client=client)
    d1 = [score(v.label) for v in d1_verdicts]
    d3 = [score(v.label) for v in r.verdicts]
    tally.add_escalation(r, rs, name, {c.claim_id: g for c, g in zip(claims, gold)})
    tally.add_labels(gold, d1, d3)
    out = {f"n_{name}": float(len(claims)), f"{name}_escalated": float(r.escalated), f"{name}_accepted": float(r.accepted)}
    out.update(_accuracy(f"{name}_d1", gold, d1))
    out.update(_accuracy(f"{name}_d3", gold, d3))
    log.info("%s: %d items, D1 %.4f, D3 %.4f; %d escalated, %d accepted; %s", name, len(claims), out[f"{name}_d1_accuracy"],
             out[f"{name}_d3_accuracy"], r.escalated, r.accepted, "; ".join(r.summary_notes))  # fmt: skip
    return out


def bench_demo(client, rs, tally) -> dict[str, float]:
    expected = load_expected()
    gold = [e.label for e in expected]

    def labels_of(documents, claims, verdicts):
        by_id = {c.claim_id: c for c in claims}
        spans = [(by_id[v.claim_id].doc_id, by_id[v.claim_id].start, by_id[v.claim_id].end, v.label) for v in verdicts]
        return [p or "unmatched" for p in sentence_labels({d.doc_id: d.text for d in documents}, spans, expected)]

    d1_result = run_audit(Settings(depth="D1").validate())
    d1 = labels_of(d1_result.documents, d1_result.claims, d1_result.verdicts)
    settings = Settings(depth="D3").validate()
    documents, _ = ingest_stage(settings)
    claims, _ = split_stage(documents, settings=settings.claims)
    sources, _ = sources_stage(settings)
    evidence, _ = retrieve_stage(sources, claims, settings)
    d2_verdicts = verify_stage(claims, evidence, settings)
    r = escalate([c for c in claims if c.checkworthy], evidence, d2_verdicts, settings, settings.run_date, route=rs, client=client)
    d2 = labels_of(documents, claims, d2_verdicts)
    d3 = labels_of(documents, claims, r.verdicts)
    tally.add_escalation(r, rs, "demo")
    tally.add_labels(gold, d1, d3)
    out = {"n_demo": float(len(gold)), "demo_escalated": float(r.escalated), "demo_accepted": float(r.accepted)}
    out.update(_accuracy("demo_d1", gold, d1))
    out.update(_accuracy("demo_d2", gold, d2))
    out.update(_accuracy("demo_d3", gold, d3))
    log.info("demo: %d sentences, D1 %.4f, D2 %.4f, D3 %.4f; %s", len(gold), out["demo_d1_accuracy"], out["demo_d2_accuracy"],
             out["demo_d3_accuracy"], "; ".join(r.summary_notes))  # fmt: skip
    return out


def _window(rows: list[dict], params: Params) -> list[dict]:
    skip = max(0, params.skip)
    return rows[skip : skip + params.limit]


def run(params: Params) -> dict[str, float]:
    if params.limit < 1:
        raise ConfigError("--limit must be at least 1")
    sets = []
    if params.fever:
        rows, part = reportable(params.fever, read_jsonl(params.fever))
        log.info("FEVER-Lite: %s, %d records from %d", part, params.limit, params.skip)
        sets.append(("fever", fever_set(_window(rows, params))))
    if params.vitaminc:
        rows, part = reportable(params.vitaminc, read_jsonl(params.vitaminc))
        log.info("VitaminC: %s, %d records from %d", part, params.limit, params.skip)
        sets.append(("vitaminc", vitaminc_set(_window(rows, params))))
    if params.claims:
        rows, part = reportable(params.claims, read_jsonl(params.claims))
        sets.append(("claims", claims_set(_window(rows, params))))
    if not sets and params.no_demo:
        raise ConfigError("nothing to measure: give --fever, --vitaminc or --claims, or leave out --no-demo")
    rs = route_settings(params)
    metrics: dict[str, float] = {}
    tally = Tally()
    with endpoint(params) as (base_url, model, server):
        client = TimedClient(base_url, model, api_key=os.environ.get("KBAUDIT_LLM_API_KEY") or None, timeout=rs.timeout,
                             max_retries=rs.max_retries, backoff=rs.backoff, max_backoff=rs.max_backoff,
                             concurrency=rs.concurrency, max_tokens=rs.max_tokens_per_call)  # fmt: skip
        try:
            if sets:
                verifier = Verifier(VerifierSettings())
                for name, (claims, evidence, gold, score) in sets:
                    metrics.update(bench_pairs(name, claims, evidence, gold, score, verifier, client, rs, tally))
            if not params.no_demo:
                metrics.update(bench_demo(client, rs, tally))
        finally:
            client.close()
        if server is not None:
            metrics["server_start_s"] = server.started_s
    lat = client.latencies
    if params.dump:
        with open(params.dump, "w", encoding="utf-8") as fh:
            for row in tally.details:
                fh.write(json.dumps(row, default=str) + "\n")
    metrics.update({
        "d1_accuracy": tally.d1_right / tally.n if tally.n else 0.0,
        "d3_accuracy": tally.d3_right / tally.n if tally.n else 0.0,
        "n_items": float(tally.n), "changed": float(tally.changed), "fixed": float(tally.fixed), "broke": float(tally.broke),
        "latency_p50_s": float(np.percentile(lat, 50)) if lat else 0.0,
        "latency_p95_s": float(np.percentile(lat, 95)) if lat else 0.0,
        "rejected": float(sum(tally.rejected.values())),
        "budget_calls": float(rs.max_calls), "budget_tokens": float(rs.max_tokens), "budget_used": tally.budget_used,
    })  # fmt: skip
    for name in ("escalated", "accepted", "calls", "prompt_tokens", "completion_tokens", "skipped_by_budget", "would_escalate",
                 "retries", "truncated_retries", "context_retries", "rate_limited", "server_errors", "deep_seconds"):  # fmt: skip
        metrics[name] = float(tally.counts.get(name, 0))
    for reason in REASON_NAMES:
        metrics[f"rejected_{reason}"] = float(tally.rejected.get(reason, 0))
    return {k: round(float(v), 4) for k, v in sorted(metrics.items())}
