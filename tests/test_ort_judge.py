"""The shipped verifier in ONNX Runtime: torch's probabilities on real pairs, one checked export
per cache, an audit that imports neither torch nor transformers once the exports are checked, a
changed or disagreeing export checked again or refused, and the setting that chooses the path."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

from kb.config import DEMO_ROOT, Settings, load_settings
from kb.errors import ConfigError
from kb.evidence.ort_encoder import PARITY_RECORD
from kb.verify import verifier_for
from kb.verify.model import ModelJudge
from kb.verify.ort_judge import PARITY_MAX_DIFF, LightJudge, _export, export_dir, load_judge


def _demo_pairs() -> list[tuple[str, str]]:
    """Real (claim, evidence) pairs: each paragraph of the demo KB against the demo sources'
    paragraphs, short and long, some truncated to the model's 128 tokens."""
    docs = [p.strip() for f in sorted((DEMO_ROOT / "docs").glob("*.md")) for p in f.read_text("utf-8").split("\n\n") if p.strip()]
    srcs = [p.strip() for f in sorted((DEMO_ROOT / "sources").glob("*.md")) for p in f.read_text("utf-8").split("\n\n") if p.strip()]
    return [(d, s) for d, s in zip(docs, srcs * (len(docs) // len(srcs) + 1))][:60]


def test_onnx_judge_matches_torch_and_its_checked_export_is_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    pairs = _demo_pairs()
    assert len(pairs) >= 40
    torch_fp32 = ModelJudge(precision="fp32")
    first = load_judge()
    assert isinstance(first, LightJudge) and first.exported
    ours, theirs = first.probs(pairs), torch_fp32.probs(pairs)
    assert ours.shape == theirs.shape == (len(pairs), 3)
    assert (ours.argmax(axis=1) == theirs.argmax(axis=1)).all()
    assert float(np.abs(ours - theirs).max()) <= PARITY_MAX_DIFF
    assert [j.relation for j in first.judge(pairs)] == [j.relation for j in torch_fp32.judge(pairs)]
    assert first.token_counts(pairs) == torch_fp32.token_counts(pairs)
    assert first.model_id == torch_fp32.model_id and first.temperature == torch_fp32.temperature

    export = export_dir() / "model.onnx"
    record = json.loads((export.parent / PARITY_RECORD).read_text("utf-8"))
    assert record["argmax"] is True and record["max_abs_diff"] <= PARITY_MAX_DIFF
    mtime = export.stat().st_mtime_ns
    again = load_judge()
    assert isinstance(again, LightJudge) and not again.exported
    assert export.stat().st_mtime_ns == mtime
    assert np.array_equal(again.probs(pairs), ours)
    # batched as the torch judge batches: shortest first, pad positions counted alike
    assert again.positions == torch_fp32.positions // 2  # torch_fp32 ran the pairs twice (probs, judge)


def test_a_default_audit_with_checked_exports_imports_neither_torch_nor_transformers(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "user-cache"))
    audit = (
        "import json, sys; from pathlib import Path; from kb.chain import run_audit; "
        "from kb.config import DEMO_ROOT, Settings; from kb.verify import verifier_for; "
        "s = Settings(docs=DEMO_ROOT / 'docs', sources=[DEMO_ROOT / 'sources'], today='2026-01-01').validate(); "
        "r = run_audit(s, cache_dir=Path(sys.argv[1])); v = verifier_for(None, True, True); "
        "print(json.dumps({'labels': {x.claim_id: [x.label, x.confidence] for x in r.verdicts}, "
        "'judge': type(v._model).__name__, 'model_pairs': v.tier_counts.get('model', 0), "
        "'torch': 'torch' in sys.modules, 'transformers': 'transformers' in sys.modules}))"
    )

    def run(cache: str) -> dict:
        done = subprocess.run([sys.executable, "-c", audit, str(tmp_path / cache)], capture_output=True, text=True, env=env, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = run("first")  # exports the MiniLM and the verifier, checking both against torch
    assert first["judge"] == "LightJudge" and first["torch"]
    second = run("second")  # a fresh stage cache: every claim is verified again
    assert second["judge"] == "LightJudge" and second["model_pairs"] > 0
    assert not second["torch"] and not second["transformers"]
    assert second["labels"] == first["labels"] and len(second["labels"]) > 10


def test_a_changed_export_is_checked_again_and_a_disagreeing_one_refused(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    pairs = _demo_pairs()[:12]
    checked = load_judge()
    assert isinstance(checked, LightJudge)
    export = checked.path
    record = export.with_name(PARITY_RECORD)
    # a touched export no longer matches its record: not trusted until checked again
    os.utime(export, ns=(export.stat().st_atime_ns, export.stat().st_mtime_ns + 1))
    assert LightJudge.open() is None
    rechecked = load_judge()
    assert isinstance(rechecked, LightJudge) and not rechecked.exported
    assert isinstance(LightJudge.open(), LightJudge)
    # a copy cut short is exported again
    export.write_bytes(export.read_bytes()[:4096])
    remade = load_judge()
    assert isinstance(remade, LightJudge) and remade.exported and export.stat().st_size > 50 * 2**20
    assert np.allclose(remade.probs(pairs), checked.probs(pairs), atol=1e-6)

    # an export of other weights (a head moved) fails the check: refused in one line, judged by torch
    other = ModelJudge(precision="fp32")
    head = other.model.classifier.bias  # pyright: ignore[reportAttributeAccessIssue]
    head.data[0] += 4.0
    _export(other, export)
    record.unlink()
    with caplog.at_level(logging.WARNING, logger="kbaudit"):
        refused = load_judge()
    assert isinstance(refused, ModelJudge)
    warned = [r.getMessage() for r in caplog.records if "verifier" in r.getMessage()]
    assert len(warned) == 1 and "\n" not in warned[0]
    assert warned[0].startswith("verifier: judging with torch: the ONNX export disagrees with torch (argmax differs")
    assert not record.exists() and LightJudge.open() is None
    # the torch fallback judges with the shipped weights, not the exported ones
    torch_fp32 = ModelJudge(precision="fp32")
    refused.bf16 = False
    assert np.allclose(refused.probs(pairs), torch_fp32.probs(pairs), atol=1e-6)


def test_verifier_backend_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert Settings().verifier_backend == "onnx"
    with pytest.raises(ConfigError, match="verifier_backend must be one of onnx, torch; got 'tensorrt'"):
        Settings(verifier_backend="tensorrt").validate()
    settings = load_settings(cwd=tmp_path, environ={"KBAUDIT_VERIFIER_BACKEND": "torch"})
    assert settings.verifier_backend == "torch"
    verifier = verifier_for(settings.model_path, True, backend=settings.verifier_backend)
    assert type(verifier.model) is ModelJudge and not any(tmp_path.rglob("model.onnx"))


def test_a_pair_met_again_in_a_later_batch_reaches_the_model_once():
    from datetime import date

    from kb.records import Claim, Evidence
    from kb.verify import Verifier, VerifierSettings

    judge, sent = load_judge(), []

    class Counting:
        def probs(self, pairs):
            sent.append(list(pairs))
            return judge.probs(pairs)

    def batch(prefix: str, pairs: list[tuple[str, str]]):
        claims = [Claim(claim_id=f"{prefix}{k}", doc_id="kb/page.md", version_id="v", start=0, end=len(c), source_text=c, text=c)
                  for k, (c, _) in enumerate(pairs)]  # fmt: skip
        evidence = {c.claim_id: [Evidence(claim_id=c.claim_id, rank=1, passage_id=f"p{k}", source_id="src.md", source_version="src.md@1",
                                          source_date=date(2025, 1, 1), authority=1.0, passage=s, sentence=s, score_bm25=1.0,
                                          score_dense=0.5, score_fused=0.5)]
                    for k, (c, (_, s)) in enumerate(zip(claims, pairs))}  # fmt: skip
        return claims, evidence

    pairs = _demo_pairs()[:16]
    verifier = Verifier(VerifierSettings())
    verifier._model = Counting()
    today = date(2025, 6, 1)
    first = verifier.verify(*batch("a", pairs[:10]), today)
    repeated = set(pairs[4:10]) & set(sent[0])
    assert len(sent) == 1 and repeated  # the rules left pairs of the repeated claims to the model
    # a later batch: claims of the same texts (a KB repeats sentences) against the same sentences, and new ones
    later = verifier.verify(*batch("b", pairs[4:]), today)
    assert len(sent) == 2 and sent[1] and not set(sent[1]) & set(sent[0])
    # the same verdicts as a verifier that judges the later batch afresh, and as the first batch's
    fresh = Verifier(VerifierSettings())
    fresh._model = judge
    alone = fresh.verify(*batch("b", pairs[4:]), today)
    assert [(v.label, v.confidence, v.tier, v.rationale) for v in later] == [(v.label, v.confidence, v.tier, v.rationale) for v in alone]
    assert [(v.label, v.confidence, v.rationale) for v in first[4:]] == [(v.label, v.confidence, v.rationale) for v in later[:6]]
