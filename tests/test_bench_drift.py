"""docsdrift scoring: which claims belong to a gold sentence."""

import pytest

from bench.drift import Params, match_gold, raw_kb, run
from kb.errors import ConfigError
from kb.records import Claim


def _claim(text: str) -> Claim:
    return Claim(claim_id=text, doc_id="crd.md", version_id="v", start=0, end=len(text), source_text=text, text=text)


def test_every_piece_of_a_sentence_wrapped_over_several_lines_is_scored():
    gold = {"doc": "crd.md", "line": 10, "old_text": "A label selector can be defined to filter on specific resource "
            "objects only, this applies only to Traefik Custom Resources and has no effect on Kubernetes Secrets, "
            "Endpoints and Services."}  # fmt: skip
    pieces = [
        (10, 10, _claim("A label selector can be defined to filter on specific resource objects only"), "supported"),
        (11, 11, _claim("this applies only to Traefik Custom Resources"), "supported"),
        (12, 12, _claim("has no effect on Kubernetes Secrets, Endpoints and Services."), "stale"),
        (13, 13, _claim("The namespace option restricts which namespaces are watched."), "supported"),
    ]
    matched = match_gold(gold, {"crd.md": pieces})
    assert [lab for _, lab in matched] == ["supported", "supported", "stale"]


def _project(root, name, kb_raw=False):
    for sub in ("kb", "sources") + (("kb_raw",) if kb_raw else ()):
        (root / name / sub).mkdir(parents=True)
    return root / name


def test_raw_pages_are_found_in_the_project_or_in_the_git_set_beside_it(tmp_path):
    more = _project(tmp_path / "docsdrift-more", "jest", kb_raw=True)
    assert raw_kb(more) == more / "kb_raw"
    dev = _project(tmp_path / "docsdrift", "black")
    assert raw_kb(dev) is None
    (tmp_path / "docsdrift-git" / "black" / "kb").mkdir(parents=True)
    assert raw_kb(dev) == tmp_path / "docsdrift-git" / "black" / "kb"


def test_bad_options_are_usage_errors(tmp_path):
    _project(tmp_path / "docsdrift", "black")
    args = Params(data=[str(tmp_path / "docsdrift")], depth="D0", today="yesterday")
    with pytest.raises(ConfigError, match="--today 'yesterday'"):
        run(args)
    with pytest.raises(ConfigError, match="no raw pages for black"):
        run(args.model_copy(update={"today": "real", "raw": True}))
    with pytest.raises(ConfigError, match="not a folder"):
        run(args.model_copy(update={"data": [str(tmp_path / "nowhere")]}))


def test_a_gold_line_is_found_again_in_a_raw_page_whose_lines_are_shifted():
    from bench.drift import gold_line

    gold = {"doc": "p.md", "line": 4, "old_text": "Workers restart after 500 requests by default."}
    cleaned = ["# Workers", "", "Intro.", "Workers restart after 500 requests by default."]
    assert gold_line(gold, cleaned) == 4
    raw = ["---", "updated: 2024-01-01", "---", "# Workers", "{: .subtitle }", "", '!!! note "Limits"', "",
           "    Workers restart after 500 requests by default."]  # fmt: skip
    assert gold_line(gold, raw) == 9
    # a sentence the page no longer holds keeps the gold line
    assert gold_line({**gold, "old_text": "Queues are drained on shutdown."}, raw) == 4
