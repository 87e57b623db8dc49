"""docsdrift scoring: which claims belong to a gold sentence."""

from kb.bench.drift import match_gold
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
