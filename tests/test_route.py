"""Routing by depth, thresholds, exclusions, budget, lessons and the CoVe parser (no network)."""

from __future__ import annotations

import datetime as dt
from datetime import date

import pytest

from kb.config import ConfigError, CoveSettings, Settings
from kb.escalate.cove_grounding import find_quote, ground
from kb.escalate.cove_reply import items, parse_reply, parse_status, split_blocks
from kb.escalate.lessons import lesson_row, load_lessons, matches
from kb.escalate.llm import ChatReply, Cost
from kb.escalate.route import NO_ENDPOINT_ACTION, DeepVerdict, RouteSettings, escalate
from kb.records import Claim, Evidence, Verdict
from kb.store import Store

TODAY = date(2026, 6, 1)
PASSAGE = "The API allows 600 requests per minute per token. Tokens expire after 90 days."


def _claim(cid, text="The API allows 600 requests per minute.", **kw):
    return Claim(claim_id=cid, doc_id=kw.pop("doc_id", "kb/api.md"), version_id="v", start=0, end=len(text),
                 source_text=text, text=text, **kw)  # fmt: skip


def _ev(cid):
    return Evidence(claim_id=cid, rank=1, passage_id=f"p{cid}", source_id="api-limits", source_version="a@1",
                    source_date=date(2026, 1, 1), authority=1.0, passage=PASSAGE,
                    sentence=PASSAGE.split(". ")[0] + ".", score_bm25=1.0, score_dense=0.5, score_fused=0.5)  # fmt: skip


def _v(cid, label="supported", conf=0.6):
    return Verdict(claim_id=cid, label=label, confidence=conf, tier="model", rationale="model says so")


class StubClient:
    """Stands in for LLMClient: scripted replies, no HTTP."""

    def __init__(self, text):
        self.text, self.cost, self.prompts = text, Cost(), []

    def chat(self, messages, max_tokens=None):
        self.prompts.append(messages)
        self.cost.calls += 1
        return ChatReply(self.text, 100, 20, "stop", 0.0)


CLEAN = (
    'STATUS: verified-clean\nQUESTIONS:\n1. What is the limit?\nANSWERS:\n1. "allows 600 requests per minute" [P1]\n'
    "DISCREPANCIES: none\nFINAL: The API allows 600 requests per minute."
)
CORRECTED = (
    'STATUS: verified-with-corrections\nQUESTIONS:\n1. What is the limit?\nANSWERS:\n1. "allows 600 requests per minute" [P1]\n'
    "DISCREPANCIES:\n- the draft says 100, the source 600\nFINAL: Each token allows 600 API requests per minute."
)


def _run(claims, verdicts, depth="D3", client=None, route=None, lessons=None, settings=None):
    settings = settings or Settings(depth=depth)
    evidence = {c.claim_id: [_ev(c.claim_id)] for c in claims}
    return escalate(claims, evidence, verdicts, settings, TODAY, lessons, route=route or RouteSettings(), client=client)


# ---- routing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", ["D0", "D1", "D2"])
def test_shallow_depths_change_nothing(depth):
    claims, verdicts = [_claim("a")], [_v("a", "uncertain", 0.3)]
    r = _run(claims, verdicts, depth, client=StubClient(CLEAN))
    assert r.verdicts == verdicts and r.escalated == 0 and r.summary_notes == []


def test_d3_offline_marks_a_systemic_gap_and_says_so():
    claims = [_claim("weak"), _claim("sure"), _claim("unc"), _claim("opinion", type="speculative"),
              _claim("notcw", checkworthy=False)]  # fmt: skip
    verdicts = [_v("weak", "supported", 0.6), _v("sure", "supported", 0.99), _v("unc", "uncertain", 0.9),
                _v("opinion", "uncertain", 0.2), _v("notcw", "uncertain", 1.0)]  # fmt: skip
    r = _run(claims, verdicts, "D3")
    by_id = {v.claim_id: v for v in r.verdicts}
    for cid in ("weak", "unc"):
        v = by_id[cid]
        assert isinstance(v, DeepVerdict) and v.gap_type == "systemic" and v.action == NO_ENDPOINT_ACTION
        assert v.label == verdicts[[x.claim_id for x in verdicts].index(cid)].label  # label kept
        assert "none is configured" in v.rationale
    assert by_id["sure"] == verdicts[1] and by_id["notcw"] == verdicts[4]
    assert by_id["opinion"] == verdicts[3] and r.excluded == 1  # excluded types never count as "no endpoint"
    assert r.would_escalate == 2 and r.escalated == 0 and r.cost.calls == 0
    assert any(n.startswith("no deep verifier configured: 2 claims that would have escalated got a systemic gap") for n in r.summary_notes)


def test_thresholds_per_type_and_risk():
    rs = RouteSettings(threshold=0.7, by_type={"numeric": 0.9}, by_risk={"high": 0.97})
    assert rs.threshold_for(_claim("a")) == 0.7
    assert rs.threshold_for(_claim("a", type="numeric")) == 0.9
    assert rs.threshold_for(_claim("a", risk="high")) == 0.97
    assert rs.threshold_for(_claim("a"), lesson=True) == rs.lesson_threshold
    claims = [_claim("plain"), _claim("num", type="numeric"), _claim("risky", risk="high")]
    verdicts = [_v(c.claim_id, "supported", 0.8) for c in claims]
    client = StubClient(CLEAN)
    r = _run(claims, verdicts, client=client, route=rs)
    assert r.escalated == 2 and {d["claim_id"] for d in r.details if d["route"] == "escalated"} == {"num", "risky"}


def test_excluded_types_and_documents_never_reach_the_endpoint():
    claims = [_claim("a", doc_id="kb/legal/terms.md"), _claim("b", type="normative"), _claim("c")]
    verdicts = [_v(c.claim_id, "uncertain", 0.4) for c in claims]
    client = StubClient(CLEAN)
    r = _run(claims, verdicts, client=client, route=RouteSettings(exclude_docs=("kb/legal/*",)))
    assert r.excluded == 2 and r.escalated == 1 and len(client.prompts) == 3  # factored (plan, 1 question, final): c only
    assert all("terms" not in m["content"] for msgs in client.prompts for m in msgs)
    assert [d["route"] for d in r.details if d["claim_id"] in ("a", "b")] == ["excluded", "excluded"]


def test_budget_in_priority_order_and_seconds():
    claims = [_claim(f"c{i}") for i in range(4)]
    verdicts = [_v(c.claim_id, "uncertain", 0.5) for c in claims]
    rs = RouteSettings(max_calls=5, concurrency=1)  # factored, 3 questions: 5 calls a claim
    r = _run(claims, verdicts, client=StubClient(CLEAN), route=rs)
    assert (r.escalated, r.skipped_by_budget) == (1, 3)
    assert sum(1 for v in r.verdicts if getattr(v, "skipped_by_budget", False)) == 3
    r2 = _run(claims, verdicts, client=StubClient(CLEAN), route=RouteSettings(max_seconds=0))
    assert r2.skipped_by_budget == 4 and any("seconds 4" in n for n in r2.summary_notes)


def test_d5_flags_every_non_supported_claim_offline():
    claims = [_claim("a"), _claim("b"), _claim("c")]
    verdicts = [_v("a", "supported", 0.99), _v("b", "contradicted", 0.99), _v("c", "stale", 0.95)]
    r = _run(claims, verdicts, "D5")
    a, b, c = r.verdicts
    assert not getattr(a, "human_review", False)
    assert b.human_review and c.human_review and b.action == "human review" and r.human_review == 2
    assert b.label == "contradicted" and "queued for human review" in b.rationale


def test_route_settings_from_env():
    rs = RouteSettings.from_env({
        "KBAUDIT_LLM_MAX_CALLS": "7", "KBAUDIT_LLM_MODE": "joint", "KBAUDIT_LLM_QUESTIONS": "5",
        "KBAUDIT_LLM_REWRITE": "off", "KBAUDIT_LLM_EXCLUDE_TYPES": "causal, speculative",
        "KBAUDIT_LLM_EXCLUDE_DOCS": "kb/legal/*", "KBAUDIT_ESCALATE_THRESHOLDS": "type:numeric=0.9,risk:low=0.75",
    })  # fmt: skip
    assert (rs.max_calls, rs.cove.mode, rs.cove.questions, rs.cove.rewrite) == (7, "joint", 5, False)
    assert rs.exclude_types == ("causal", "speculative") and rs.exclude_docs == ("kb/legal/*",)
    assert rs.by_type["numeric"] == 0.9 and rs.by_risk["low"] == 0.75
    with pytest.raises(ConfigError):
        RouteSettings.from_env({"KBAUDIT_LLM_MODE": "chatty"})
    with pytest.raises(ConfigError):
        RouteSettings.from_env({"KBAUDIT_LLM_MAX_CALLS": "many"})


# ---- lessons ----------------------------------------------------------------------------------


def test_lessons_raise_priority_of_similar_claims(tmp_path):
    wrong = _claim("old", "The API allows 100 requests per minute per token.", type="numeric", doc_id="kb/a.md")
    row = lesson_row(wrong, ["the source says 600"], "The API allows 600 requests per minute per token.", TODAY, "model")
    similar = _claim("new", "Each token allows 100 API requests per minute.", type="numeric", doc_id="kb/b.md")
    other = _claim("x", "Tokens can be revoked from the console.", type="numeric", doc_id="kb/b.md")
    assert matches(similar, row) and not matches(other, row)
    assert not matches(_claim("t", similar.text, type="temporal", doc_id="kb/b.md"), row)

    # a confident verdict escalates only because of the lesson; it goes first in the budget
    # (the scripted reply corrects 100 to 600: a clean one would be held back as a disagreement)
    claims = [other, similar]
    verdicts = [_v("x", "uncertain", 0.3), _v("new", "supported", 0.9)]
    r = _run(claims, verdicts, client=StubClient(CORRECTED), route=RouteSettings(max_calls=5, concurrency=1), lessons=[row])
    assert r.verdicts[1].tier == "llm" and r.verdicts[0].skipped_by_budget
    assert [d["lesson_match"] for d in r.details if d["route"] == "escalated"] == [True]

    # stored with a run, read back by the next one
    store = Store(tmp_path / "store")
    store.write_table("20260601T000000-aaaaaa", "lessons", [row])
    store.commit_run("20260601T000000-aaaaaa", {"status": "completed", "started_at": dt.datetime.now(dt.UTC)})
    (back,) = load_lessons(store)
    assert back["trigger"] == row["trigger"] and back["correction"] == row["correction"]
    assert load_lessons(Store(tmp_path / "empty")) == []


# ---- the reply parser and grounding ------------------------------------------------------------


def test_parser_tolerates_order_bullets_and_headers():
    text = """### Final text
The API allows 600 requests per minute.
**Discrepancies:** None.
Answers:
* "allows 600 requests" [P1]
  (continued on a second line)
- Q2 answer: not stated
Questions:
1) What is the limit?
Q2: Who sets it?
STATUS: **Verified with corrections**"""
    blocks = split_blocks(text)
    assert set(blocks) == {"final", "discrepancies", "answers", "questions", "status"}
    reply = parse_reply(text)
    assert reply.status == "verified-with-corrections" and reply.discrepancies == []
    assert reply.answers == ['"allows 600 requests" [P1] (continued on a second line)', "Q2 answer: not stated"]
    assert reply.questions == ["What is the limit?", "Who sets it?"]
    assert reply.final == "The API allows 600 requests per minute."
    assert items("- a\n* b\n• c\n2. d") == ["a", "b", "c", "d"]
    assert parse_status("verified_clean") == "verified-clean" and parse_status("UNVERIFIABLE") == "unverifiable"
    assert parse_status("looks good") is None
    assert parse_reply("STATUS: verified-clean", finish_reason="length").truncated


def test_quotes_must_match_the_passages_with_the_same_numbers():
    passages = ["the api allows 600 requests per minute per token. tokens expire after 90 days."]
    assert find_quote("allows 600 requests per minute", passages, 90) == 0
    assert find_quote("allows  600 requests  per minute,", passages, 90) == 0  # spacing, punctuation
    assert find_quote("allows 6000 requests per minute", passages, 90) is None
    assert find_quote("allows 100 requests per minute", passages, 90) is None
    assert find_quote("tokens do not expire after 90 days", passages, 90) is None
    cs = CoveSettings()
    ev = [_ev("a")]
    g = ground(['"The API allows 600 requests per minute" [P1]', "not stated"], ev, cs)
    assert g.ok and g.cited == [1]
    assert not ground(["not stated"], ev, cs).ok  # nothing grounded at all
    assert not ground(['"allows 600 requests" [P2]'], ev, cs).ok  # only one passage was shown


def test_deep_rewrite_reaches_the_correction_step():
    """kb.correct.draft drafts from DeepVerdict.corrected_text when there is no slot to swap."""
    from kb.correct.draft import draft_edits
    from kb.ingest.parse import parse_document
    from kb.verify import Verifier, VerifierSettings

    text = "# Backups\n\nTeam plan backups are retained for a fortnight.\n"
    doc = parse_document(text.encode(), "kb/b.md", "/tmp/b.md")
    start = text.index("Team")
    end = text.index("fortnight.") + len("fortnight.")
    claim = Claim("c1", "kb/b.md", doc.version_id, start, end, text[start:end], text[start:end])
    passage = "Backups are kept for 30 days on the Team plan."
    ev = Evidence("c1", 1, "p1", "bp", "v", date(2026, 1, 1), 1.0, passage, passage, 1.0, 1.0, 1.0)
    v = DeepVerdict(claim_id="c1", label="contradicted", confidence=0.85, tier="llm", rationale="deep verifier",
                    corrected_text="Team plan backups are kept for 30 days.", verified_with_discrepancy=True)  # fmt: skip
    (edit,) = draft_edits([doc], [claim], [v], {"c1": [ev]}, verifier=Verifier(VerifierSettings(use_model=False)), today=TODAY)
    assert edit.status in ("auto", "queued") and edit.new_text == "Team plan backups are kept for 30 days."
