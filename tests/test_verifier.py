"""Verifier end to end, rules only (D0): no model artifact needed."""

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import date

from kb.records import Claim, Evidence
from kb.verify import Verifier, VerifierSettings, verifier_for


def _claim(cid, text):
    return Claim(claim_id=cid, doc_id="kb/getting_started.md", version_id="v", start=0, end=len(text),
                 source_text=text, text=text)  # fmt: skip


def _ev(cid, sid, day, passage, sentence, rank):
    return Evidence(claim_id=cid, rank=rank, passage_id=f"{sid}{day}{rank}", source_id=sid,
                    source_version=f"{sid}@{day}", source_date=day, authority=1.0, passage=passage,
                    sentence=sentence, score_bm25=1.0, score_dense=0.5, score_fused=0.5)  # fmt: skip


OLD, NEW = date(2022, 1, 29), date(2025, 1, 28)
OLD_PAGE = "Black can be installed by running pip install black. It requires Python 3.6.2+ to run."
NEW_PAGE = "Black can be installed by running pip install black. It requires Python 3.9+ to run."


def test_rules_only_verifier_labels_a_small_batch():
    claims = [
        _claim("a", "It requires Python 3.6.2+ to run."),
        _claim("b", "Black can be installed by running `pip install black`."),
        _claim("c", "Black reformats entire files in place."),
        _claim("d", "Black keeps 120 characters per line by default."),
    ]
    evidence = {
        "a": [_ev("a", "getting_started.md", OLD, OLD_PAGE, OLD_PAGE.split(". ")[1], 1),
              _ev("a", "getting_started.md", NEW, NEW_PAGE, NEW_PAGE.split(". ")[1], 2)],
        "b": [_ev("b", "getting_started.md", NEW, NEW_PAGE, NEW_PAGE.split(". ")[0] + ".", 1)],
        "c": [],
        "d": [_ev("d", "the_black_code_style.md", NEW, "Black defaults to 88 characters per line.",
                  "Black defaults to 88 characters per line.", 1)],
    }  # fmt: skip
    v = Verifier(VerifierSettings(use_model=False))
    out = v.verify(claims, evidence, date(2025, 6, 1))
    assert [x.claim_id for x in out] == ["a", "b", "c", "d"]
    a, b, c, d = out
    assert a.label == "stale" and (a.claim_value, a.evidence_value) == ("3.6.2+", "3.9+")
    assert a.evidence_sentence == "It requires Python 3.9+ to run."
    assert b.label == "supported" and b.tier == "rules"
    assert c.label == "uncertain" and c.action == "add a source"
    assert d.label == "contradicted" and "number: claim 120 vs evidence 88" in d.rationale
    assert v.model_error is None  # rules only never tries to load the model


def test_rules_look_at_other_sentences_of_the_passage():
    claim = _claim("a", "It requires Python 3.6.2+ to run.")
    # the retriever picked the wrong sentence of the passage; the rules find the aligned one
    e = _ev("a", "getting_started.md", NEW, NEW_PAGE, NEW_PAGE.split(". ")[0] + ".", 1)
    (v,) = Verifier(VerifierSettings(use_model=False)).verify([claim], {"a": [e]}, date(2025, 6, 1))
    assert v.label == "contradicted" and v.evidence_value == "3.9+"


class _StubModel:
    """Stands in for ModelJudge: records calls, answers fixed probabilities."""

    def __init__(self, answer):
        self.calls = []
        self.answer = answer

    def probs(self, pairs):
        import numpy as np

        self.calls.append(list(pairs))
        return np.array([self.answer(c, e) for c, e in pairs], dtype=float)


def test_model_gets_one_batched_call_for_what_the_rules_leave_open():
    claims = [
        _claim("a", "It requires Python 3.6.2+ to run."),  # rules: sure conflict, no model
        _claim("b", "Black produces small diffs to speed up reviews."),  # rules undecided: model
        _claim("c", "Black was written in Rust."),  # rules undecided: model
    ]
    e = {
        "a": [_ev("a", "gs.md", NEW, NEW_PAGE, "It requires Python 3.9+ to run.", 1)],
        "b": [_ev("b", "index.md", NEW, "Black makes code review faster by producing the smallest diffs possible.",
                  "Black makes code review faster by producing the smallest diffs possible.", 1)],
        "c": [_ev("c", "index.md", NEW, "Black is written in Python and compiled with mypyc.",
                  "Black is written in Python and compiled with mypyc.", 1)],
    }  # fmt: skip
    stub = _StubModel(lambda c, s: [0.9, 0.05, 0.05] if "review" in c else [0.1, 0.8, 0.1])
    v = Verifier(VerifierSettings(use_model=True))
    v._model = stub
    a, b, c = v.verify(claims, e, date(2025, 6, 1))
    assert len(stub.calls) == 1 and len(stub.calls[0]) == 2  # one batch, only the open pairs
    assert a.label == "contradicted" and a.tier == "rules"
    assert b.label == "supported" and b.tier == "model" and b.confidence == 0.9
    assert c.label == "contradicted" and c.tier == "model" and c.evidence_value is None


def test_missing_model_degrades_to_rules_only(tmp_path):
    v = Verifier(VerifierSettings(model_path=str(tmp_path / "no-such-model")))
    (out,) = v.verify([_claim("a", "It requires Python 3.6.2+ to run.")],
                      {"a": [_ev("a", "gs.md", NEW, NEW_PAGE, "It requires Python 3.9+ to run.", 1)]},
                      date(2025, 6, 1))  # fmt: skip
    assert out.label == "contradicted"
    assert v.model_error is None  # the rules were sure: the model was not needed, so not loaded
    top = "Black makes code review faster by producing the smallest diffs possible."
    (other,) = v.verify([_claim("b", "Black produces small diffs to speed up reviews.")],
                        {"b": [_ev("b", "index.md", NEW, top, top, 1)]}, date(2025, 6, 1))  # fmt: skip
    assert v.model_error == f"FileNotFoundError: no model folder at {tmp_path / 'no-such-model'}"
    assert other.label == "uncertain"


def test_threads_share_one_verifier_and_one_model_load(tmp_path, caplog):
    # batches verified in threads at once (a dask worker with several threads) build one
    # verifier and try the model once
    start = threading.Barrier(8)

    def first_use(_):
        start.wait()
        verifier = verifier_for(str(tmp_path / "no-such-model"), True)
        return verifier, verifier.model

    with caplog.at_level(logging.WARNING, logger="kb.verify"), ThreadPoolExecutor(8) as pool:
        used = list(pool.map(first_use, range(8)))
    assert len({id(v) for v, _ in used}) == 1 and all(m is None for _, m in used)
    assert sum("verifier model unavailable" in r.getMessage() for r in caplog.records) == 1


def test_relevance_gate_spares_the_model_passages_not_about_the_claim():
    claim = _claim("b", "Black produces small diffs to speed up reviews.")
    top = "Black makes code review faster by producing the smallest diffs possible."
    unrelated = "Traefik routes requests to services by host name."
    same_source_older = "Traefik is a reverse proxy."  # low overlap, but a version of the top source
    e = {"b": [_ev("b", "index.md", NEW, top, top, 1),
               _ev("b", "routing.md", NEW, unrelated, unrelated, 2),
               _ev("b", "index.md", OLD, same_source_older, same_source_older, 3)]}  # fmt: skip
    stub = _StubModel(lambda c, s: [0.9, 0.05, 0.05] if s == top else [0.2, 0.1, 0.7])
    v = Verifier(VerifierSettings(use_model=True))
    v._model = stub
    (out,) = v.verify([claim], e, date(2025, 6, 1))
    sent = [p[1] for p in stub.calls[0]]
    assert top in sent and same_source_older in sent and unrelated not in sent
    assert out.label == "supported"
    judged = v.judge_pairs([claim], e)["b"]
    assert judged[1].relation == "nei" and "not about the claim" in judged[1].rationale

    off = Verifier(VerifierSettings(use_model=True, thresholds={"relevance_gate": 0.0}))
    off._model = stub = _StubModel(lambda c, s: [0.2, 0.1, 0.7])
    off.verify([claim], e, date(2025, 6, 1))
    assert unrelated in [p[1] for p in stub.calls[0]]


def test_a_numbers_only_hint_outweighs_an_unsure_model_and_strengthens_an_agreeing_one():
    from kb.records import Judgement
    from kb.verify import combine
    from kb.verify.rules import NUMBERS_ONLY_CONFIDENCE

    hint = Judgement("refutes", NUMBERS_ONLY_CONFIDENCE["refutes"], "rules", "numbers only: claim more than 45 vs evidence 45")
    unsure = combine(hint, [0.55, 0.3, 0.15], independent=True)  # the model leans "supports", less surely than the hint
    assert unsure.relation == "refutes" and unsure.tier == "rules"
    sure = combine(hint, [0.9, 0.05, 0.05], independent=True)
    assert sure.relation == "supports" and sure.tier == "model"
    agree = combine(hint, [0.2, 0.6, 0.2], independent=True)
    # two independent readings that agree: surer than either alone
    assert agree.relation == "refutes" and agree.confidence > max(0.6, NUMBERS_ONLY_CONFIDENCE["refutes"])
    # a full rules judgement that agrees reads the same words as the model: the surer figure only
    rule = Judgement("refutes", 0.79, "rules", "number: claim 45 vs evidence 46")
    assert combine(rule, [0.2, 0.6, 0.2]).confidence == 0.79


REFERENCE_PAGE = """# EntryPoints

### respondingTimeouts

`transport.respondingTimeouts.readTimeout`:

_Optional, Default=0s_

`transport.respondingTimeouts.writeTimeout`:

_Optional, Default=0s_

### ServersTransport

#### `peerCertURI`

_Optional, Default=false_

#### `disableHTTP2`

_Optional, Default=false_

#### Archiving

Archived projects are read-only.
"""


def _reference_claims():
    from kb.claims.split import split_claims
    from kb.ingest.parse import parse_document

    doc = parse_document(REFERENCE_PAGE.encode(), "entrypoints.md", "/kb/entrypoints.md")
    return {c.text: c for c in split_claims(doc) if c.checkworthy}


def test_setting_lines_are_read_with_the_option_they_belong_to():
    claims = _reference_claims()
    assert {"transport.respondingTimeouts.readTimeout: Optional, Default=0s",
            "transport.respondingTimeouts.writeTimeout: Optional, Default=0s",
            "peerCertURI: Optional, Default=false", "disableHTTP2: Optional, Default=false",
            "Archived projects are read-only."} <= set(claims)  # fmt: skip
    assert claims["peerCertURI: Optional, Default=false"].source_text == "Optional, Default=false"


def test_a_setting_line_is_judged_only_against_its_own_option():
    claims = _reference_claims()
    read = replace(claims["transport.respondingTimeouts.readTimeout: Optional, Default=0s"], claim_id="r")
    peer = replace(claims["peerCertURI: Optional, Default=false"], claim_id="p")
    write_line = "transport.respondingTimeouts.writeTimeout: Optional, Default=0s"
    evidence = {
        "r": [_ev("r", "entrypoints.md", OLD, "transport.respondingTimeouts.readTimeout: Optional, Default=0s",
                  "Optional, Default=0s", 1),
              _ev("r", "entrypoints.md", NEW, "transport.respondingTimeouts.readTimeout: Optional, Default=60s",
                  "Optional, Default=60s", 2),
              _ev("r", "entrypoints.md", NEW, write_line, "Optional, Default=0s", 3)],
        "p": [_ev("p", "services.md", OLD, "Optional, Default=false", "Optional, Default=false", 1),
              _ev("p", "services.md", NEW, 'Optional, Default=""', 'Optional, Default=""', 2),
              _ev("p", "services.md", NEW, "Optional, Default=false", "Optional, Default=false", 3)],
    }  # fmt: skip
    sections = {("p", 1): "ServersTransport > peerCertURI", ("p", 2): "ServersTransport > peerCertURI",
                ("p", 3): "ServersTransport > disableHTTP2"}  # fmt: skip
    for cid, items in evidence.items():
        evidence[cid] = [replace(e, section=sections.get((cid, e.rank), "")) for e in items]
    v = Verifier(VerifierSettings(use_model=False))
    judged = v.judge_pairs([read, peer], evidence)
    # another option's identical line says nothing of this one
    assert judged["r"][2].relation == "nei" and "does not name this option" in judged["r"][2].rationale
    assert judged["p"][2].relation == "nei"
    out = {x.claim_id: x for x in v.verify([read, peer], evidence, date(2025, 6, 1))}
    assert out["r"].label == "stale" and "60s" in out["r"].evidence_value
    assert out["p"].label == "stale" and out["p"].evidence_sentence == 'Optional, Default=""'


def test_option_fields_in_other_formats_are_judged_against_their_own_option():
    # VitePress-style field bullets under the option's heading, as an old and a newer page
    old_page = '# Settings\n\n### `buildDir` \\[string]\n\n- **Type:** `string`\n- **Default:** `"out"`\n\n### `minify`\n\n- **Default:** `false`\n'
    from kb.claims.split import split_claims
    from kb.ingest.parse import parse_document

    doc = parse_document(old_page.encode(), "settings.md", "/kb/settings.md")
    claims = {c.text: c for c in split_claims(doc) if c.checkworthy}
    assert set(claims) >= {"buildDir [string]: Type: string", 'buildDir [string]: Default: "out"', "minify: Default: false"}
    default = replace(claims['buildDir [string]: Default: "out"'], claim_id="d")
    section = "Settings > buildDir [string]"
    evidence = {"d": [
        replace(_ev("d", "settings.md", OLD, 'Default: "out"', 'Default: "out"', 1), section=section),
        replace(_ev("d", "settings.md", NEW, 'Default: "dist"', 'Default: "dist"', 2), section=section),
        # the other option's field line on the newer page says nothing of this one
        replace(_ev("d", "settings.md", NEW, "Default: false", "Default: false", 3), section="Settings > minify"),
    ]}  # fmt: skip
    v = Verifier(VerifierSettings(use_model=False))
    judged = v.judge_pairs([default], evidence)["d"]
    assert judged[0].relation == "supports" and judged[1].relation == "refutes" and judged[2].relation == "nei"
    out = v.verify([default], evidence, date(2025, 6, 1))[0]
    assert out.label == "stale" and '"dist"' in out.evidence_sentence


def test_a_list_lead_in_states_none_of_its_items():
    # the claim is an item read with its lead-in; the retriever handed the lead-in alone
    item = replace(_claim("a", "Exports can be written in two formats: Parquet."), source_text="Parquet.")
    page = "The exporter runs nightly. Exports can be written in two formats: CSV."
    lead = "Exports can be written in two formats:"
    e = _ev("a", "export.md", NEW, page, lead, 1)
    model = _StubModel(lambda c, s: [0.03, 0.94, 0.03])  # a model that reads the missing item as a denial
    v = Verifier(VerifierSettings(use_model=True))
    v._model = model
    (j,) = v.judge_pairs([item], {"a": [e]})["a"]
    assert j.relation == "nei" and "lead-in" in j.rationale, j
    (out,) = v.verify([item], {"a": [e]}, date(2025, 6, 1))
    assert out.label == "uncertain", out
    assert model.calls == []  # sure enough that the model never reads the pair
    # a lead-in that changed is no prefix of the claim: judged as any sentence
    changed = _ev("a", "export.md", NEW, "Exports can be written in three formats: CSV.", "Exports can be written in three formats:", 1)
    (out,) = Verifier(VerifierSettings(use_model=False)).verify([item], {"a": [changed]}, date(2025, 6, 1))
    assert out.label == "contradicted" and "number" in out.rationale, out


def test_a_passage_unchanged_across_releases_is_ruled_once_per_claim():
    claim = _claim("a", "It requires Python 3.6.2+ to run.")
    sentence = NEW_PAGE.split(". ")[1]
    mid = date(2023, 6, 1)
    evidence = {"a": [_ev("a", "getting_started.md", NEW, NEW_PAGE, sentence, 1),
                      _ev("a", "getting_started.md", mid, NEW_PAGE, sentence, 2),  # the page as it was a release before
                      _ev("a", "getting_started.md", OLD, OLD_PAGE, OLD_PAGE.split(". ")[1], 3)]}  # fmt: skip
    ruled = []

    class Counting(Verifier):
        def rules_judgement(self, claim, ev):
            ruled.append(ev.source_version)
            return super().rules_judgement(claim, ev)

    judged = Counting(VerifierSettings(use_model=False)).judge_pairs([claim], evidence)["a"]
    assert ruled == [f"getting_started.md@{NEW}", f"getting_started.md@{OLD}"]
    assert judged[0] == judged[1] and judged[0].relation == "refutes" and judged[2].relation == "supports"
    plain = Verifier(VerifierSettings(use_model=False))
    assert [plain.rules_judgement(claim, ev)[0] for ev in evidence["a"]] == judged
    (verdict,) = Counting(VerifierSettings(use_model=False)).verify([claim], evidence, date(2025, 6, 1))
    assert verdict.label == "stale"
