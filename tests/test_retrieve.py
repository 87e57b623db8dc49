"""Hybrid retrieval on a tiny real corpus with the real bundled embedding model."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest

from kb.evidence.embed import Embedder
from kb.evidence.retrieve import Retriever, build_passages, windows
from kb.evidence.sources import load_sources
from kb.records import Claim

TODAY = date(2025, 1, 15)

DOCS = {
    "pricing-2023.md": (
        "pricing",
        "2023-01-10",
        "Pricing",
        "The Pro plan costs $20 per month. It includes 10 seats. Support is by email only.",
    ),
    "pricing-2024.md": (
        "pricing",
        "2024-06-01",
        "Pricing",
        "The Pro plan costs $25 per month. It includes 10 seats. Support is by email and chat.",
    ),
    "sso.md": (
        "sso",
        "2024-02-01",
        "Single sign-on",
        "Enterprise customers can log in with SAML single sign-on. Okta and Azure AD are supported identity providers.",
    ),
    "backup.md": ("backups", "2024-03-01", "Backups", "Databases are backed up every night at 02:00 UTC. Backups are kept for 30 days."),
    "limits.md": (
        "limits",
        "2024-04-01",
        "API limits",
        "The public API accepts 100 requests per minute per token. Bursts above the limit get HTTP 429.",
    ),
    "geo.md": ("geo", "2024-01-01", "Geography", "Paris is the capital of France. About 2.1 million people live in the city proper."),
}


def claim(cid: str, text: str) -> Claim:
    return Claim(claim_id=cid, doc_id="kb.md", version_id="v", start=0, end=len(text), source_text=text, text=text)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("sources")
    for name, (sid, day, title, body) in DOCS.items():
        (root / name).write_text(f"---\nid: {sid}\ntitle: {title}\npublished_at: {day}\n---\n{body}\n", encoding="utf-8")
    sources, errors = load_sources(root, today=TODAY)
    assert errors == []
    return sources


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def retriever(corpus, cache_dir):
    r = Retriever(Embedder(cache_dir=cache_dir))
    r.index(corpus)
    return r


def test_windows_and_passage_offsets(corpus):
    assert windows(7, 3, 2) == [(0, 3), (2, 5), (4, 7)]
    assert windows(6, 3, 2) == [(0, 3), (2, 5), (3, 6)]
    assert windows(2, 3, 2) == [(0, 2)]
    for src in corpus:
        for p, sents in build_passages(src, window=2, stride=1):
            assert p.source_version == src.source_version and p.source_date == src.source_date
            for s in sents:
                assert src.text[s.start : s.end] == s.text  # plain prose: visible == raw
            assert src.text[p.start : p.end].startswith(sents[0].text)


def test_paraphrased_claim_retrieves_its_passage(retriever):
    res = retriever.search(
        [
            claim("c1", "Every night the databases get a backup, retained for a month."),
            claim("c2", "You can sign in through SAML SSO with Okta."),
            claim("c3", "How many requests per minute does the API allow?"),
        ],
        k=3,
    )
    assert res["c1"][0].source_id == "backups"
    assert res["c2"][0].source_id == "sso"
    assert res["c3"][0].source_id == "limits"
    top = res["c1"][0]
    assert top.rank == 1 and top.sentence in top.passage
    assert top.score_dense > 0 and top.score_fused > 0
    assert "30 days" in res["c1"][0].passage


def test_all_versions_of_a_matching_source_are_returned(retriever):
    ev = retriever.search([claim("p", "The Pro plan costs $20 a month.")], k=1)["p"]
    pricing = [e for e in ev if e.source_id == "pricing"]
    assert {e.source_date for e in pricing} == {date(2023, 1, 10), date(2024, 6, 1)}
    assert {e.sentence for e in pricing} == {"The Pro plan costs $20 per month.", "The Pro plan costs $25 per month."}
    assert [e.rank for e in ev] == list(range(1, len(ev) + 1))


def test_rrf_fusion_scores(retriever):
    sc = retriever.score_batch(["Backups are kept for 30 days."])
    k = retriever.rrf_k
    n = len(retriever.passages)
    expected = np.zeros(n)
    for name, w, positive in (("bm25", retriever.w_bm25, True), ("sent", retriever.w_sent, True), ("dense", retriever.w_dense, False)):
        row = sc[name][0]
        order = [int(j) for j in np.argsort(-row, kind="stable") if row[j] > 0 or not positive]
        for r, j in enumerate(order[: retriever.candidates], start=1):
            expected[j] += w / (k + r)
    assert np.allclose(sc["fused"][0], expected, rtol=1e-5)
    best = int(np.argmax(sc["fused"][0]))
    assert retriever.passages[best].source_id == "backups"
    top = retriever.w_bm25 + retriever.w_sent + retriever.w_dense
    assert sc["fused"][0, best] == pytest.approx(top / (k + 1), rel=1e-5)  # first in every ranking


def test_second_run_uses_cache_without_loading_model(retriever, corpus, cache_dir):
    claims = [claim("c1", "Every night the databases get a backup, retained for a month.")]
    first = retriever.search(claims, k=3)
    emb = Embedder(cache_dir=cache_dir)
    again = Retriever(emb)
    again.index(corpus)
    second = again.search(claims, k=3)
    assert emb._model is None and emb.model_calls == 0 and emb.cache_hits > 0
    assert [e.passage_id for e in second["c1"]] == [e.passage_id for e in first["c1"]]
    emb._model = retriever.embedder.model  # share the loaded model: tests stay fast
    vecs = emb.encode(["Backups are kept for 30 days.", "a text never seen before"])
    assert emb.model_calls == 1 and emb.texts_embedded == 1
    assert vecs.dtype == np.float32 and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_empty_index_and_empty_claim():
    r = Retriever(Embedder())
    r.index([])
    assert r.search([claim("c", "anything")], k=3) == {"c": []}


TRACING_OLD = [
    "Tracing helps you follow a request through your services.",
    "By default, Traefik uses Jaeger as tracing backend.",
    "Each span carries the name of the router.",
    "Traefik Pilot is a SaaS platform that monitors your instances.",
    "Traefik Pilot sends an alert when an instance is down.",
    "Pilot tokens are issued from the Pilot dashboard.",
    "The metrics page lists every exporter.",
]
TRACING_NEW = [
    TRACING_OLD[0],
    "Traefik uses OpenTelemetry, an open standard designed for distributed tracing.",
    TRACING_OLD[2],
    "The Plugin Catalog lists community plugins.",
    "Plugins are loaded at startup from the static configuration.",
    "Each plugin declares its own configuration options.",
    "A plugin can be pinned to a version.",
    TRACING_OLD[6],
]


@pytest.fixture(scope="module")
def versions(tmp_path_factory, cache_dir):
    root = tmp_path_factory.mktemp("versions")
    for name, day, sentences in (("old.md", "2021-08-17", TRACING_OLD), ("new.md", "2024-07-15", TRACING_NEW)):
        body = " ".join(sentences)
        (root / name).write_text(f"---\nid: tracing\ntitle: Tracing\nupdated: {day}\n---\n{body}\n", encoding="utf-8")
    sources, errors = load_sources(root, today=TODAY)
    assert errors == []
    r = Retriever(Embedder(cache_dir=cache_dir))
    r.index(sources)
    return r


def test_rewritten_sentence_comes_with_its_counterpart_in_the_newest_version(versions):
    ev = versions.search([claim("j", "By default, Traefik uses Jaeger as tracing backend.")], k=1)["j"]
    old = [e for e in ev if e.source_date == date(2021, 8, 17) and e.sentence == TRACING_OLD[1]]
    assert old, [e.sentence for e in ev]
    rewritten = [e for e in ev if e.counterpart_of]
    assert [(e.source_date, e.sentence, e.counterpart_of) for e in rewritten] == [(date(2024, 7, 15), TRACING_NEW[1], old[0].passage_id)]
    assert rewritten[0].passage_id != old[0].passage_id


def test_a_rewritten_section_gives_no_counterpart(versions):
    # three sentences replaced by four: a section rewritten, where facts are dropped more often
    # than changed, so nothing of it is passed off as the claim's newer statement
    ev = versions.search([claim("p", "Traefik Pilot sends an alert when an instance is down.")], k=1)["p"]
    assert any(e.sentence == TRACING_OLD[4] for e in ev)
    assert not any(e.counterpart_of for e in ev)


def test_an_unchanged_sentence_brings_the_newest_passage_that_still_states_it(versions):
    ev = versions.search([claim("m", "The metrics page lists every exporter.")], k=1)["m"]
    assert {e.source_date for e in ev if e.sentence == TRACING_OLD[6]} == {date(2021, 8, 17), date(2024, 7, 15)}
    assert not any(e.counterpart_of for e in ev)


OPTIONS_OLD = """#### `insecure`

_Optional, Default=false_

`insecure` turns off the verification of the server's certificate.

#### `peerCertURI`

_Optional, Default=false_

`peerCertURI` defines the URI used to match against SAN URI during the peer certificate verification.

```toml
[http.serversTransports.mytransport]
  peerCertURI = "foobar"
```

#### `disableHTTP2`

_Optional, Default=false_

`disableHTTP2` disables HTTP/2 for connections with servers.
"""
OPTIONS_NEW = """#### `insecure`

_Optional, Default=false_

`insecure` turns off the verification of the server's certificate.

#### `disableHTTP2`

_Optional, Default=false_

`disableHTTP2` disables HTTP/2 for connections with servers.

#### `peerCertURI`

_Optional, Default=""_

`peerCertURI` defines the URI used to match against SAN URIs during the server's certificate verification.
It is checked after the root certificates.

```yaml
http:
  serversTransports:
    mytransport:
      peerCertURI: foobar
```
"""


@pytest.fixture(scope="module", params=["minilm", "static+minilm"])
def option_pages(request, tmp_path_factory, cache_dir):
    from kb.evidence.embed import StaticEmbedder

    root = tmp_path_factory.mktemp("options")
    for name, day, body in (("old.md", "2021-08-17", OPTIONS_OLD), ("new.md", "2024-07-15", OPTIONS_NEW)):
        (root / name).write_text(f"---\nid: services\ntitle: Services\nupdated: {day}\n---\n{body}", encoding="utf-8")
    sources, errors = load_sources(root, today=TODAY)
    assert errors == []
    r = Retriever(Embedder(cache_dir=cache_dir), first_stage=StaticEmbedder() if request.param == "static+minilm" else None)
    r.index(sources)
    return r


def test_a_line_repeated_under_many_headings_is_not_paired_across_them(option_pages):
    # "Optional, Default=false" also stands under two other options in the newest version: the
    # old peerCertURI line did not move there, its option's default changed
    r = option_pages
    old = [i for i, s in enumerate(r.sentences) if s.section[-1:] == ("peerCertURI",) and "Default=false" in s.text]
    assert len(old) == 1
    found = r.counterpart(old[0])
    assert found is None or r.sentences[found[1]].section[-1:] == ("peerCertURI",)
    # a line that stands once in each version and keeps its heading is still the same line
    unchanged = [i for i, s in enumerate(r.sentences) if "disables HTTP/2" in s.text]
    paired = [r.counterpart(i) for i in unchanged]
    assert [(tag, r.sentences[n].section[-1]) for tag, n in filter(None, paired)] == [("equal", "disableHTTP2")]


def test_a_rewritten_option_section_brings_the_newest_text_under_its_heading(option_pages):
    r = option_pages
    text = "peerCertURI: Optional, Default=false"
    old = next(i for i, s in enumerate(r.sentences) if s.section[-1:] == ("peerCertURI",) and "Default=false" in s.text)
    found = r.same_heading(old, {})
    assert found is not None
    passage, sentence = found
    assert (r.sentences[sentence].text, r.passages[passage].source_date) == ('Optional, Default=""', date(2024, 7, 15))
    # a passage the claim already holds is not offered twice
    again = r.same_heading(old, {passage: sentence})
    assert again is None or again[0] != passage
    # a sentence of the newest version is what the lookup finds, never what it starts from
    assert r.same_heading(sentence, {}) is None
    ev = r.search([claim("o", text)], k=2)["o"]
    newest = [(e.section, e.sentence) for e in ev if e.source_date == date(2024, 7, 15)]
    assert ("peerCertURI", 'Optional, Default=""') in [(s.rsplit(" > ", 1)[-1], t) for s, t in newest], newest


def test_the_line_that_stands_in_for_a_rewritten_one_is_the_one_most_like_it(cache_dir):
    # the demo's support policy rewrote all three response targets at once (no local edit): the
    # old Severity 1 target is read beside the new Severity 1 target, not the Severity 2 one
    from pathlib import Path

    import kb

    sources, errors = load_sources(Path(kb.__file__).parent / "demo" / "sources")
    assert errors == []
    r = Retriever(Embedder(cache_dir=cache_dir))
    r.index([s for s in sources if s.source_id == "support-policy"])
    old = next(i for i, s in enumerate(r.sentences) if s.text == "The first response target for Severity 1 issues is 1 hour.")
    assert r.counterpart(old) is None
    found = r.same_heading(old, {})
    assert found is not None
    assert r.sentences[found[1]].text == "The first response target for Severity 1 issues is 30 minutes."


def test_stated_as_written_is_word_for_word_with_identifiers_kept():
    from kb.evidence.passages import sentence_key
    from kb.evidence.versions import states_as_written, written_key
    from kb.verify.tokens import canonical

    # notation is no change: case, punctuation between words, a call's empty parentheses
    assert written_key("We are using model_dump() to convert it.") == written_key("We are using model_dump to convert it")
    assert written_key("Before validators run first.") == written_key("Before validators: run first.")
    # an identifier keeps its separators: another package name is another fact
    sentence = "To use EmailStr, first install email_validator."
    assert not states_as_written(sentence, "Models", "To use EmailStr, first install email-validator.", "Models")
    assert states_as_written(sentence, "Models", "To use EmailStr, first install email_validator.", "Other page")
    # so does a leading underscore, in the keys that compare sentences across versions too
    moved = "Create shortcode templates within the layouts/_shortcodes directory."
    assert written_key(moved) != written_key(moved.replace("_shortcodes", "shortcodes"))
    assert sentence_key(moved) != sentence_key(moved.replace("_shortcodes", "shortcodes"))
    assert canonical(moved) != canonical(moved.replace("_shortcodes", "shortcodes"))
    assert canonical("An _emphasised_ word.") == canonical("An emphasised word.")
    # before any other word an underscore is an emphasis marker nothing closed: a typo
    stray = "_Optional, Default: false"
    assert written_key(stray) == written_key(stray[1:]) and canonical(stray) == canonical(stray[1:])
    assert sentence_key("with index.md or _index.md files") != sentence_key("with index.md or index.md files")
    # a short line counts only under its own heading, and never when it states a value
    assert states_as_written("DecodingError", "Errors > Hierarchy", "DecodingError", "Errors > Hierarchy")
    assert not states_as_written("DecodingError", "Errors > Hierarchy", "DecodingError", "Errors > Classes")
    assert not states_as_written("Optional, Default=0s", "Options > timeout", "Optional, Default=0s", "Options > timeout")
