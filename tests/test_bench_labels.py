"""`kbaudit bench labels` on small files of the benchmark formats (written here, not the real data)."""

import json

import pytest

from bench import labels


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


VITAMINC = [
    # one claim against two revisions of its sentence: the pairs stale cases are built from
    {"claim": "The film has a rating of under 89 % .", "label": "SUPPORTS", "page": "Film",
     "evidence": "On the aggregator the film holds a rating of 88 % based on 80 reviews ."},
    {"claim": "The film has a rating of under 89 % .", "label": "REFUTES", "page": "Film",
     "evidence": "On the aggregator the film holds a rating of 91 % based on 82 reviews ."},
    {"claim": "The band was formed after 1978 .", "label": "SUPPORTS", "page": "Band",
     "evidence": "The band was formed in 1979 in New York City ."},
    {"claim": "The band was formed after 1978 .", "label": "REFUTES", "page": "Band",
     "evidence": "The band was formed in 1977 in New York City ."},
    {"claim": "The river is longer than 300 km .", "label": "NOT ENOUGH INFO", "page": "River",
     "evidence": "The river flows through three countries ."},
]  # fmt: skip
FEVER = [
    {"claim": "The band was formed in 1979.", "label": "SUPPORTS", "evidence": ["The band was formed in 1979 in New York City."]},
    {"claim": "The band was formed in 1990.", "label": "REFUTES", "evidence": ["The band was formed in 1979 in New York City."]},
]


@pytest.mark.slow
def test_bench_labels_reports_every_documented_metric_on_files_of_the_format(tmp_path):
    args = labels.Params(
        fever=_write(tmp_path / "fever.jsonl", FEVER), vitaminc=_write(tmp_path / "vitc.jsonl", VITAMINC),
        scifact_claims=None, scifact_corpus=None, limit=None, model_path=None, cache_dir=None,
        systems="full,rules,lexical", model_cache=str(tmp_path / "probs.pkl"),
    )  # fmt: skip
    m = labels.run(args)
    # files the verifier was not trained on count whole
    assert m["n_fever"] == 2 and m["n_vitaminc"] == 5 and m["model_loaded"] == 1.0
    # ordered pairs of a claim's two sentences: (supports, refutes) is stale, (refutes, supports) supported
    assert m["n_stale_cases"] == 4 and m["n_stale_gold_stale"] == 2
    for prefix in ("", "rules_", "lexical_"):
        for name in ("fever_accuracy", "vitaminc_accuracy", "vitaminc_macro_f1", "stale_f1", "supported_f1",
                     "contradicted_f1", "claims_per_s", "ece"):  # fmt: skip
            assert f"{prefix}{name}" in m, f"{prefix}{name}"
    # the revision contrast reads the changed value against the claim's comparator: every case right
    assert m["rules_stale_f1"] == 1.0 and m["rules_supported_f1"] == 1.0
    assert m["stale_f1"] == 1.0
    # the model's probabilities were kept for a re-run
    assert (tmp_path / "probs.pkl").exists()
