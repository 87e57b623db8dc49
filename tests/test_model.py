"""Model tier: the shipped verifier artifact, calibration, synthetic data and the splits.

The artifact tests fail (never skip) when the weights are missing: the artifact is committed
together with these tests.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kb.verify.model import ARTIFACT, MANIFEST, RELATIONS, WEIGHTS_DIR, ModelJudge
from tests.conftest import eval_data
from training import splits, synth


@pytest.fixture(scope="module")
def judge() -> ModelJudge:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    return ModelJudge()


# ---------------------------------------------------------------------------------------------
# the shipped artifact


def test_artifact_is_small_and_described():
    art = WEIGHTS_DIR / ARTIFACT
    assert art.exists(), "the trained verifier artifact must be committed with the tests"
    assert art.stat().st_size <= 25 * 1024 * 1024
    m = json.loads((WEIGHTS_DIR / MANIFEST).read_text())
    assert m["labels"] == list(RELATIONS)
    assert m["artifact_sha256"] == splits.file_fingerprint(art)
    assert m["calibration"]["temperature"] > 0
    datasets = {f["dataset"] for f in m["train_files"]}
    assert {"vitaminc", "fever"} <= datasets
    assert all("claims_dev" not in f["file"] for f in m["train_files"])
    for key in ("fever_accuracy", "vitaminc_accuracy", "vitaminc_macro_f1", "ece"):
        assert 0.0 <= m["validation"][key] <= 1.0
    assert m["split"]["rule"] == splits.SPLIT_RULE


def test_loads_offline_in_a_fresh_process():
    code = (
        "from kb.verify.model import ModelJudge; j = ModelJudge(); print(j.judge([('The port is 8080.', 'The port is 8080.')])[0].relation)"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME="/nonexistent-hf-home")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[1], timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "supports"


def test_obvious_pairs(judge):
    same = "The limit is 100 requests per minute."
    pairs = [
        (same, same),
        (same, "The limit is 500 requests per minute."),
        ("Paris is the capital of France.", "Paris is the capital and most populous city of France."),
        ("The default timeout is 30 seconds.", "The default timeout is 60 seconds."),
    ]
    js = judge.judge(pairs)
    assert js[0].relation == "supports"
    assert js[1].relation != "supports"
    assert js[2].relation == "supports"
    assert js[3].relation != "supports"
    p = judge.probs(pairs)
    assert p[1, 1] > p[1, 0]  # the changed number is more refuting than supporting
    for j in js:
        assert j.tier == "model"
        assert j.rationale.startswith(f"model: {j.relation} (p=")
        assert 0.0 < j.confidence <= 1.0


def test_probabilities_are_calibrated_distributions(judge):
    pairs = [
        ("Black requires Python 3.9+.", "Black requires Python 3.9+ to run."),
        ("Traefik listens on port 80.", "The cat sat on the mat."),
        ("The option --fast skips checks.", "The option --safe skips checks."),
    ]
    p = judge.probs(pairs)
    assert p.shape == (3, 3)
    assert np.allclose(p.sum(axis=1), 1.0)
    assert (p >= 0).all()
    assert judge.probs([]).shape == (0, 3)
    assert judge.judge([]) == []
    # order preserved despite length sorting inside the batch
    single = np.vstack([judge.probs([pr]) for pr in pairs])
    assert np.allclose(single, p, atol=2e-2)


def test_pairs_are_batched_by_tokens(judge):
    from kb.config import DEMO_ROOT

    lines = [line.strip() for path in sorted((DEMO_ROOT / "docs").glob("*.md")) + sorted((DEMO_ROOT / "sources").glob("*.md"))
             for line in path.read_text(encoding="utf-8").splitlines() if len(line.split()) >= 4]  # fmt: skip
    rng = random.Random(0)
    pairs = [(rng.choice(lines), rng.choice(lines)) for _ in range(96)]
    before = judge.positions
    judge.logits(pairs)
    tokens, size = judge.token_counts(pairs), judge.batch_size

    def padded(order: list[int]) -> int:
        return sum(max(tokens[i] for i in order[s : s + size]) * len(order[s : s + size]) for s in range(0, len(order), size))

    by_chars = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    assert judge.positions - before == padded(sorted(range(len(pairs)), key=tokens.__getitem__)) < padded(by_chars)


def test_local_path_model(tmp_path, judge):
    """Any HF sequence-classification / CrossEncoder folder can replace the shipped weights."""
    judge.model.config.id2label = {0: "entailment", 1: "contradiction", 2: "neutral"}
    judge.model.save_pretrained(tmp_path)
    judge.tokenizer.save_pretrained(tmp_path)
    judge.model.config.id2label = dict(enumerate(RELATIONS))
    (tmp_path / "kbaudit_calibration.json").write_text(json.dumps({"temperature": judge.temperature}))
    other = ModelJudge(path=str(tmp_path))
    assert other.columns == [0, 1, 2]
    pairs = [("The limit is 100 requests per minute.", "The limit is 100 requests per minute.")]
    assert np.allclose(other.probs(pairs), judge.probs(pairs), atol=5e-2)


# ---------------------------------------------------------------------------------------------
# synthetic pairs


def test_synth_refuting_transformations():
    rng = random.Random(0)
    s = "The default timeout is 30 seconds and at most 5 retries are made."
    out = synth.swap_number(s, rng)
    assert out != s and ("30" not in out or " 5 " not in out)
    assert "not" in synth.negate("The cache is enabled by default.", rng)
    assert "is" in synth.negate("The cache is not enabled by default.", rng)
    assert "not" not in synth.negate("The cache is not enabled by default.", rng)
    assert "less than" in synth.flip_comparator("It has more than 20 plugins.", rng)
    assert synth.bump_version("Requires Python 3.9 or later.", rng) != "Requires Python 3.9 or later."
    flagged = synth.swap_flag("Use --check to see what would change.", rng, ["--diff", "--quiet"])
    assert "--check" not in flagged and "--" in flagged
    assert "disabled" in synth.swap_antonym("Compression is enabled.", rng)
    assert synth.swap_year("It was released in 2019.", rng) != "It was released in 2019."


def test_synth_supporting_and_nei_transformations():
    rng = random.Random(1)
    s = "Black reformats entire files in place, which makes code review faster."
    assert synth.drop_trailing_clause(s, rng) == "Black reformats entire files in place."
    claim, ev = synth.missing_clause("The server started in 2019, with 20 workers.", rng)
    assert claim.endswith("20 workers.") and "20 workers" not in ev
    labels = set()
    for seed in range(30):
        res = synth.comparator_bound("It sold more than 23 million copies.", random.Random(seed))
        claim, label = res
        labels.add(label)
        n = float(claim.split("than ")[1].split()[0])
        if label == synth.SUPPORTS:
            assert "more than" in claim and n < 23
        elif label == synth.NEI:
            assert "more than" in claim and n > 23
        else:
            assert "less than" in claim
    assert labels == {synth.SUPPORTS, synth.REFUTES, synth.NEI}


def test_synth_generate_is_deterministic_and_labelled():
    passages = [
        [
            "The default port is 8080.",
            "Use --verbose to print every request.",
            "Version 2.3.1 added HTTP/2 support.",
            "The cache is not shared between workers.",
        ],
        ["Paris hosted the Olympic Games in 1924.", "The tower is 330 metres tall."],
    ]
    a = synth.generate(passages, 60, seed=3)
    b = synth.generate(passages, 60, seed=3)
    assert a == b and len(a) == 60
    assert {lab for _, _, lab, _ in a} <= set(synth.PAIR_LABELS)
    for claim, ev, lab, how in a:
        if how in ("number", "year", "version", "flag", "negation", "comparator", "antonym"):
            assert lab == synth.REFUTES and claim != ev


def test_sentences_from_markdown():
    md = "# Title\n\nThe server listens on port 8080 by default. See [docs](http://x).\n\n```\ncode 1 2\n```\n"
    sents = synth.sentences_from_text(md)
    assert "The server listens on port 8080 by default." in sents
    assert not any("code" in s for s in sents)


# ---------------------------------------------------------------------------------------------
# splits


def test_splits_deterministic_and_rates():
    recs = [{"page": f"Page {i}", "claim": f"claim {i}", "id": i} for i in range(4000)]
    for ds in splits.DATASETS:
        first = [splits.is_validation(ds, r) for r in recs]
        assert first == [splits.is_validation(ds, r) for r in recs]
        assert 0.12 < sum(first) / len(first) < 0.18
    assert splits.is_validation("vitaminc", {"page": "X", "claim": "a"}) == splits.is_validation("vitaminc", {"page": "X", "claim": "b"})


def test_vitaminc_split_is_page_disjoint():
    path = eval_data("vitaminc", "vitaminc_real_dev.jsonl")
    val_pages, train_pages = set(), set()
    for line in path.open(encoding="utf-8"):
        r = json.loads(line)
        (val_pages if splits.is_validation("vitaminc", r) else train_pages).add(r["page"])
    assert val_pages and train_pages and not (val_pages & train_pages)
    assert splits.trained_on(path) == "vitaminc"
    assert splits.trained_on(eval_data("scifact", "claims_dev.jsonl")) is None


def test_file_fingerprint(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text("{}\n")
    import hashlib

    assert splits.file_fingerprint(f) == hashlib.sha256(b"{}\n").hexdigest()
