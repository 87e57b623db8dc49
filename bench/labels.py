"""Labelling quality on real labelled data: full verifier vs rules only vs a lexical baseline.

``kbaudit bench labels --fever F --vitaminc V --scifact-claims C --scifact-corpus K [--limit N] [--json OUT]``

Three systems are measured in one run on the same inputs:

- the full verifier (rules + the shipped model, ``Verifier(VerifierSettings())``): no prefix;
- rules only (depth D0): prefix ``rules_``;
- the lexical-overlap baseline (:mod:`bench.lexical`): prefix ``lexical_``.

The full and rules-only systems label through ``Verifier.label`` (the revision contrast between
dated versions, then the policy, as a run does); the lexical baseline through the same policy
(:func:`kb.verify.policy.decide`) without the contrast.

Metrics:

- ``fever_accuracy``: FEVER-Lite, claim + its gold evidence sentences (joined into one
  passage); 2-way, supported vs not.
- ``vitaminc_accuracy``, ``vitaminc_macro_f1``: VitaminC pairs, 3-way (supported ->
  SUPPORTS, contradicted -> REFUTES, anything else -> NOT ENOUGH INFO).
- ``scifact_macro_f1``: SciFact claims end to end: retrieval over the whole corpus (top 3),
  verification and the policy; SUPPORT -> supported, CONTRADICT -> contradicted, no evidence
  -> uncertain (a predicted stale counts as not supported/contradicted).
- ``stale_f1``, ``supported_f1``, ``contradicted_f1``: built from VitaminC records that share
  a claim: two evidence sentences given as two dated versions of one source (older, newer).
  Gold: stale when the older supports and the newer refutes; supported when the newer
  supports; contradicted when both refute (other combinations are not used). Every ordered
  pair of distinct sentences of a claim makes one case.
- ``claims_per_s``: verification throughput (judgements + policy) on the SciFact claims with
  their top-3 evidence (without SciFact: 100 VitaminC claims, each with three sentences of its
  page); ``embed_floor_claims_per_s``: the embedding floor in the same run (the same claim
  texts encoded once by the retrieval embedder, no cache). The model is loaded and run once on
  other text before timing (steady state, as in a nightly batch), and ``--model-cache`` is
  bypassed while timing.
- ``ece``: expected calibration error (15 equal-width bins) of the per-pair judgement
  confidence on the VitaminC pairs (3-way).
- ``n_*``: how many records each figure is computed on; ``model_loaded``: 1 when the full
  verifier had its model.

A file the shipped verifier was trained on (its sha256 is in ``kb/verify/weights/manifest.json``)
counts only with its validation part (``training/splits.py``); any other file of the same
format counts whole.
"""

from __future__ import annotations

import contextlib
import json
import logging
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping
from datetime import date
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from bench.lexical import judge_lexical
from kb.evidence.embed import Embedder
from kb.evidence.retrieve import Retriever
from kb.evidence.sources import load_sources
from kb.records import Claim, Evidence, Judgement, Verdict
from kb.verify import Verifier, VerifierSettings
from kb.verify.policy import decide
from training import splits

log = logging.getLogger("kbaudit.bench.labels")
TODAY = date(2026, 1, 1)
OLDER, NEWER = date(2020, 1, 1), date(2021, 1, 1)
VITC = {"SUPPORTS": "supported", "REFUTES": "contradicted", "NOT ENOUGH INFO": "uncertain"}
SCIFACT = {"SUPPORT": "supported", "CONTRADICT": "contradicted"}


class Params(BaseModel):
    """`kbaudit bench labels` parameters."""

    fever: str | None = Field(None, description="FEVER-Lite JSONL (claim, label, evidence: [sentences])")
    vitaminc: str | None = Field(None, description="VitaminC JSONL (claim, evidence, label, page)")
    scifact_claims: str | None = Field(None, description="SciFact claims JSONL (id, claim, evidence)")
    scifact_corpus: str | None = Field(None, description="SciFact corpus JSONL (doc_id, title, abstract)")
    limit: int | None = Field(None, description="at most N records of each set (after the split)")
    model_path: str | None = Field(None, description="a local CrossEncoder replacing the shipped verifier")
    verifier_backend: str = Field("onnx", description="onnx or torch: where the shipped verifier runs (Settings.verifier_backend)")
    cache_dir: str | None = Field(None, description="embedding cache for the SciFact corpus (default: a fresh one)")
    systems: str = Field("full,rules,lexical", description="comma-separated subset of full,rules,lexical")
    model_cache: str | None = Field(
        None, description="pickle file of model probabilities per (claim, sentence), reused across runs (figures only)"
    )


class CachedModel:
    """Wraps a model judge: probabilities are computed once per (claim, sentence) and kept in a
    file, so re-running the bench after a rules or policy change costs no model time."""

    def __init__(self, model, path: str):
        import pickle

        self.model, self.path = model, Path(path)
        self.tier = getattr(model, "tier", "model")
        self.rows: dict = {}
        if self.path.exists():
            with open(self.path, "rb") as fh:
                self.rows = pickle.load(fh)

    def probs(self, pairs):
        todo = [p for p in dict.fromkeys(pairs) if p not in self.rows]
        if todo:
            fresh = self.model.probs(todo)
            for p, row in zip(todo, fresh):
                self.rows[p] = [float(x) for x in row]
            self.save()
        return np.array([self.rows[p] for p in pairs], dtype=float).reshape(len(pairs), 3)

    def save(self) -> None:
        import pickle

        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(self.rows, fh)
        tmp.replace(self.path)


# ---------------------------------------------------------------------------------------------
# systems: each turns (claims, evidence) into judgements per passage, then the same policy
# ---------------------------------------------------------------------------------------------


class LexicalSystem:
    tier_counts: dict = {}
    model_error = None

    def judge_pairs(self, claims: list[Claim], evidence: dict[str, list[Evidence]]) -> dict[str, list[Judgement]]:
        return {c.claim_id: [judge_lexical(c.text, e.sentence or e.passage) for e in evidence.get(c.claim_id, [])] for c in claims}


def verify_with(
    system, claims: list[Claim], evidence: Mapping[str, list[Evidence]], memo: dict | None = None
) -> tuple[list[Verdict], dict]:
    """Judge every passage (once per distinct claim/sentence pair when ``memo`` is given), then
    the policy. Judgements depend only on the pair, so the stale cases reuse the VitaminC ones."""
    if memo is None:
        judged = system.judge_pairs(claims, evidence)
    else:
        todo_claims, todo_ev, seen = [], {}, set()
        for c in claims:
            for e in evidence.get(c.claim_id, []):
                key = (c.text, e.sentence)
                if key not in memo and key not in seen:
                    seen.add(key)
                    cid = f"m{len(seen)}"
                    todo_claims.append(_claim(cid, c.text))
                    todo_ev[cid] = [e]
        if todo_claims:
            fresh = system.judge_pairs(todo_claims, todo_ev)
            for c in todo_claims:
                memo[(c.text, todo_ev[c.claim_id][0].sentence)] = fresh[c.claim_id][0]
        judged = {c.claim_id: [memo[(c.text, e.sentence)] for e in evidence.get(c.claim_id, [])] for c in claims}
    if hasattr(system, "label"):
        verdicts = [system.label(c, evidence.get(c.claim_id, []), judged[c.claim_id], TODAY) for c in claims]
    else:
        verdicts = [decide(c, evidence.get(c.claim_id, []), judged[c.claim_id], TODAY) for c in claims]
    return verdicts, judged


def make_systems(args: Params) -> dict[str, Verifier | LexicalSystem]:
    wanted = [s.strip() for s in (getattr(args, "systems", None) or "full,rules,lexical").split(",") if s.strip()]
    out: dict[str, Verifier | LexicalSystem] = {}
    if "full" in wanted:
        backend = getattr(args, "verifier_backend", None) or "onnx"
        out[""] = Verifier(VerifierSettings(model_path=getattr(args, "model_path", None), use_model=True, backend=backend))
    if "rules" in wanted:
        out["rules_"] = Verifier(VerifierSettings(use_model=False))
    if "lexical" in wanted:
        out["lexical_"] = LexicalSystem()
    return out


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------


def read_jsonl(path: str | Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def reportable(path: str | Path, rows: list[dict]) -> tuple[list[dict], str]:
    """Only the validation part of a file the verifier was trained on; all of any other file."""

    dataset = splits.trained_on(path)
    if dataset is None:
        return rows, "whole file (not trained on)"
    return [r for r in rows if splits.is_validation(dataset, r)], f"validation part ({dataset})"


def _claim(cid: str, text: str) -> Claim:
    return Claim(claim_id=cid, doc_id="bench", version_id="bench", start=0, end=len(text), source_text=text, text=text)


def _evidence(cid: str, sentence: str, source_id: str = "src", day: date | None = NEWER, rank: int = 1) -> Evidence:
    return Evidence(claim_id=cid, rank=rank, passage_id=f"{source_id}:{day}:{rank}", source_id=source_id,
                    source_version=f"{source_id}@{day}", source_date=day, authority=1.0, passage=sentence,
                    sentence=sentence, score_bm25=0.0, score_dense=0.0, score_fused=0.0)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------------------------


def f1_per_label(gold: list[str], pred: list[str], labels) -> dict[str, float]:
    out = {}
    for lab in labels:
        tp = sum(1 for g, p in zip(gold, pred) if g == lab and p == lab)
        fp = sum(1 for g, p in zip(gold, pred) if g != lab and p == lab)
        fn = sum(1 for g, p in zip(gold, pred) if g == lab and p != lab)
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        out[lab] = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return out


def macro_f1(gold: list[str], pred: list[str], labels) -> float:
    f = f1_per_label(gold, pred, labels)
    return float(np.mean([f[lab] for lab in labels]))


def ece(confidences: list[float], correct: list[bool], bins: int = 15) -> float:
    if not confidences:
        return 0.0
    c = np.asarray(confidences, dtype=float)
    y = np.asarray(correct, dtype=float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.clip(np.digitize(c, edges[1:-1], right=True), 0, bins - 1)
    total = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.sum() / len(c) * abs(c[m].mean() - y[m].mean())
    return float(total)


# ---------------------------------------------------------------------------------------------
# the sets
# ---------------------------------------------------------------------------------------------


def bench_fever(systems, rows) -> dict[str, float]:
    claims = [_claim(f"f{i}", r["claim"]) for i, r in enumerate(rows)]
    evidence = {c.claim_id: [_evidence(c.claim_id, " ".join(r["evidence"]))] for c, r in zip(claims, rows)}
    gold = [r["label"] == "SUPPORTS" for r in rows]
    out = {}
    for prefix, system in systems.items():
        verdicts, _ = verify_with(system, claims, evidence)
        pred = [v.label == "supported" for v in verdicts]
        out[f"{prefix}fever_accuracy"] = float(np.mean([g == p for g, p in zip(gold, pred)])) if rows else 0.0
    return out


def bench_vitaminc(systems, rows, memos: dict | None = None) -> dict[str, float]:
    claims = [_claim(f"v{i}", r["claim"]) for i, r in enumerate(rows)]
    evidence = {c.claim_id: [_evidence(c.claim_id, r["evidence"])] for c, r in zip(claims, rows)}
    gold = [VITC[r["label"]] for r in rows]
    rel_gold = {"supported": "supports", "contradicted": "refutes", "uncertain": "nei"}
    out = {}
    for prefix, system in systems.items():
        memo = memos.setdefault(prefix, {}) if memos is not None else None
        verdicts, judged = verify_with(system, claims, evidence, memo)
        pred = [v.label if v.label in ("supported", "contradicted") else "uncertain" for v in verdicts]
        out[f"{prefix}vitaminc_accuracy"] = float(np.mean([g == p for g, p in zip(gold, pred)])) if rows else 0.0
        out[f"{prefix}vitaminc_macro_f1"] = macro_f1(gold, pred, ("supported", "contradicted", "uncertain"))
        js = [judged[c.claim_id][0] for c in claims]
        out[f"{prefix}ece"] = ece([j.confidence for j in js], [j.relation == rel_gold[g] for j, g in zip(js, gold)])
    return out


def stale_cases(rows) -> list[tuple[str, str, str, str]]:
    """(claim, older sentence, newer sentence, gold label) from records sharing a claim."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[r["claim"].strip()].append(r)
    cases = []
    for claim, rs in groups.items():
        seen = {}
        for r in rs:
            seen.setdefault(r["evidence"].strip(), r["label"])
        items = list(seen.items())
        for i, (e_old, l_old) in enumerate(items):
            for j, (e_new, l_new) in enumerate(items):
                if i == j:
                    continue
                if l_new == "SUPPORTS":
                    gold = "supported"
                elif l_old == "SUPPORTS" and l_new == "REFUTES":
                    gold = "stale"
                elif l_old == "REFUTES" and l_new == "REFUTES":
                    gold = "contradicted"
                else:
                    continue
                cases.append((claim, e_old, e_new, gold))
    return cases


def bench_stale(systems, rows, memos: dict | None = None) -> dict[str, float]:
    cases = stale_cases(rows)
    claims = [_claim(f"s{i}", c) for i, (c, _, _, _) in enumerate(cases)]
    evidence = {
        cl.claim_id: [_evidence(cl.claim_id, old, "page", OLDER, 1), _evidence(cl.claim_id, new, "page", NEWER, 2)]
        for cl, (_, old, new, _) in zip(claims, cases)
    }
    gold = [g for *_, g in cases]
    out = {"n_stale_cases": float(len(cases)), "n_stale_gold_stale": float(gold.count("stale"))}
    for prefix, system in systems.items():
        memo = memos.setdefault(prefix, {}) if memos is not None else None
        verdicts, _ = verify_with(system, claims, evidence, memo)
        pred = [v.label for v in verdicts]
        f = f1_per_label(gold, pred, ("stale", "supported", "contradicted"))
        out[f"{prefix}stale_f1"] = f["stale"]
        out[f"{prefix}supported_f1"] = f["supported"]
        out[f"{prefix}contradicted_f1"] = f["contradicted"]
    return out


def bench_throughput(systems, rows, n: int = 100) -> dict[str, float]:
    """claims/s with top-3 evidence when no SciFact run measures it: VitaminC claims, each
    with its own sentence and two other sentences of the same page (model uncached)."""
    by_page: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        by_page[r.get("page", "")].append(r["evidence"])
    picked = rows[:n]
    claims = [_claim(f"t{i}", r["claim"]) for i, r in enumerate(picked)]
    evidence = {}
    for c, r in zip(claims, picked):
        others = [e for e in dict.fromkeys(by_page[r.get("page", "")]) if e != r["evidence"]][:2]
        evidence[c.claim_id] = [_evidence(c.claim_id, s, rank=k + 1) for k, s in enumerate([r["evidence"]] + others)]
    out = {}
    for prefix, system in systems.items():
        with _real_model(system):
            t = time.perf_counter()
            verify_with(system, claims, evidence)
            secs = time.perf_counter() - t
        out[f"{prefix}claims_per_s"] = len(claims) / secs if secs else 0.0
    return out


@contextlib.contextmanager
def _real_model(system):
    """Time real model calls: bypass a ``--model-cache`` wrapper, and load the model and run it
    once on text of its own first (the first forward passes set up the CPU kernels, a one-off
    cost of a process, not of verifying claims)."""
    wrapper = getattr(system, "_model", None)
    if isinstance(wrapper, CachedModel):
        system._model = wrapper.model
    try:
        model = getattr(system, "model", None)
        if model is not None:
            model.probs([("Warm-up claim about one thing.", "A warm-up sentence about another thing.")] * 16)
        yield
    finally:
        if isinstance(wrapper, CachedModel):
            system._model = wrapper


def scifact_gold(row: dict) -> str:
    labels = [e["label"] for evs in (row.get("evidence") or {}).values() for e in evs]
    if not labels:
        return "uncertain"
    return SCIFACT[max(set(labels), key=labels.count)]


def bench_scifact(systems, rows, corpus_path, cache_dir, limit_corpus=None) -> dict[str, float]:
    sources, _ = load_sources(corpus_path)
    claims = [_claim(f"sf{r['id']}", r["claim"]) for r in rows]
    gold = [scifact_gold(r) for r in rows]
    t0 = time.perf_counter()
    embedder = Embedder(cache_dir=Path(cache_dir))
    retriever = Retriever(embedder)
    retriever.index(sources)
    index_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    evidence = retriever.search(claims, k=3)
    search_s = time.perf_counter() - t1
    # the embedding floor: the same claim texts, encoded once, no cache
    floor = Embedder()
    floor._model = embedder.model
    t2 = time.perf_counter()
    floor.embed_uncached([c.text for c in claims])
    floor_s = time.perf_counter() - t2
    out = {
        "scifact_index_s": index_s,
        "retrieval_claims_per_s": len(claims) / search_s if search_s else 0.0,
        "embed_floor_claims_per_s": len(claims) / floor_s if floor_s else 0.0,
    }
    # the verifier sees the top 3 passages only (other versions do not exist in SciFact)
    evidence = {cid: evs[:3] for cid, evs in evidence.items()}
    for prefix, system in systems.items():
        with _real_model(system):
            t = time.perf_counter()
            verdicts, _ = verify_with(system, claims, evidence)
            secs = time.perf_counter() - t
        pred = [v.label if v.label in ("supported", "contradicted") else "uncertain" for v in verdicts]
        out[f"{prefix}scifact_macro_f1"] = macro_f1(gold, pred, ("supported", "contradicted", "uncertain"))
        out[f"{prefix}claims_per_s"] = len(claims) / secs if secs else 0.0
    return out


def run(args: Params) -> dict[str, float]:
    systems = make_systems(args)
    limit = args.limit
    metrics: dict[str, float] = {}
    full = systems.get("")
    if isinstance(full, Verifier):  # "" is the full verifier
        metrics["model_loaded"] = 0.0 if full.model is None else 1.0
        if full.model is not None and args.model_cache:
            full._model = CachedModel(full.model, args.model_cache)
        if full.model_error:
            log.warning("full verifier runs without its model: %s", full.model_error)
    if args.fever:
        rows, part = reportable(args.fever, read_jsonl(args.fever))
        rows = rows[:limit] if limit else rows
        log.info("FEVER-Lite: %d claims (%s)", len(rows), part)
        metrics["n_fever"] = float(len(rows))
        metrics.update(bench_fever(systems, rows))
    if args.vitaminc:
        rows, part = reportable(args.vitaminc, read_jsonl(args.vitaminc))
        rows = rows[:limit] if limit else rows
        log.info("VitaminC: %d pairs (%s)", len(rows), part)
        metrics["n_vitaminc"] = float(len(rows))
        memos: dict = {}
        metrics.update(bench_vitaminc(systems, rows, memos))
        metrics.update(bench_stale(systems, rows, memos))
        if not (args.scifact_claims and args.scifact_corpus):
            metrics.update(bench_throughput(systems, rows))
    if args.scifact_claims and args.scifact_corpus:
        rows = read_jsonl(args.scifact_claims)
        rows = rows[:limit] if limit else rows
        log.info("SciFact: %d claims against the whole corpus", len(rows))
        metrics["n_scifact"] = float(len(rows))
        tmp = None
        cache_dir = args.cache_dir
        if cache_dir is None:
            tmp = tempfile.TemporaryDirectory(prefix="kbaudit-labels-")
            cache_dir = tmp.name
        try:
            metrics.update(bench_scifact(systems, rows, args.scifact_corpus, cache_dir))
        finally:
            if tmp is not None:
                tmp.cleanup()
    return {k: round(float(v), 4) for k, v in metrics.items()}
