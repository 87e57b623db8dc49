"""Hybrid evidence retrieval over dated source passages.

1. Passages: every source version is cut into sentence windows (``window`` sentences, moving
   by ``stride``, so consecutive windows overlap) with character offsets into
   ``SourceDoc.text``. ``Passage.text`` is the visible text of those sentences (markup removed);
   ``start``/``end`` span them in the source version.
2. Two rankings per claim, each over every passage, computed for a whole batch of claims at once:
   BM25 (``bm25s`` builds the term-score matrix; a claims x terms sparse matrix times it gives
   every score) and dense cosine similarity (normalised MiniLM embeddings, one matrix product).
   The indexed text of a passage is the source title + section path + the passage.
3. Reciprocal rank fusion of the top ``candidates`` of each ranking:
   ``w_bm25 / (rrf_k + rank_bm25) + w_dense / (rrf_k + rank_dense)``.
4. Selection: best fused first, at most ``max_per_source`` passages of one source version and
   no two overlapping windows of one version; then, for each selected source that has other
   versions, the best passage (dense score) of each other version is added after the top k, so a
   verifier sees the older and the newer statement of a fact (stale detection).
5. In each passage, the sentence best aligned with the claim (rapidfuzz token-set ratio mixed
   with IDF-weighted term recall) becomes ``Evidence.sentence``.

Every score is kept in ``Evidence``: ``score_bm25`` (raw BM25), ``score_dense`` (cosine),
``score_fused`` (RRF).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz
from rapidfuzz.utils import default_process
from scipy import sparse

from kb.records import Claim, Evidence, Passage, SourceDoc, content_hash

# ---------------------------------------------------------------- sentences

_ABBREV = {
    "e.g", "i.e", "etc", "vs", "fig", "figs", "al", "dr", "mr", "mrs", "ms", "no", "nos", "approx", "ca",
    "cf", "st", "inc", "ltd", "jr", "sr", "u.s", "u.k", "eq", "ref", "refs", "vol", "pp", "resp", "e.v",
}
_BOUNDARY = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s+[\"'“‘(\[]?[A-Z0-9])|\n\s*\n")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` in ``text``, whitespace trimmed, abbreviations respected."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        end = m.end()
        if m.group().startswith("."):
            w = _WORD_BEFORE.search(text, max(0, m.start() - 12), m.start() + 1)
            if w and (w.group(1).lower() in _ABBREV or len(w.group(1)) == 1):
                continue
        spans.append((start, end))
        start = end
    spans.append((start, len(text)))
    out = []
    for a, b in spans:
        seg = text[a:b]
        lead = len(seg) - len(seg.lstrip())
        a2, b2 = a + lead, a + len(seg.rstrip())
        if b2 > a2:
            out.append((a2, b2))
    return out


# ---------------------------------------------------------------- tokens (BM25, alignment)

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset(
    """a an and are as at be been being but by can could did do does doing for from had has have having
    he her here hers him his how i if in into is it its itself me more most my no nor not of off on
    once only or other our ours out over own same she should so some such than that the their theirs
    them then there these they this those through to too under until up very was we were what when
    where which while who whom why will with would you your yours also may might must shall""".split()
)


def _stem(tok: str) -> str:
    """A light English suffix stripper (plural / -ing / -ed / -ly), enough for BM25 matching."""
    if len(tok) <= 3 or tok.isdigit():
        return tok
    for suf, rep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("edly", ""), ("ed", ""), ("ly", ""), ("es", ""), ("s", "")):
        if tok.endswith(suf) and len(tok) - len(suf) >= 3:
            if suf == "s" and tok.endswith(("ss", "us", "is")):
                return tok
            return tok[: len(tok) - len(suf)] + rep
    return tok


def tokenize(text: str) -> list[str]:
    return [_stem(t) for t in _TOKEN.findall(text.lower()) if t not in _STOP]


# ---------------------------------------------------------------- passages


@dataclass
class _Span:
    start: int  # offsets into SourceDoc.text
    end: int
    text: str  # visible text
    section: tuple[str, ...] = ()


def _sentences_of(source: SourceDoc) -> list[_Span]:
    out: list[_Span] = []
    if source.blocks:
        for block in source.blocks:
            if block.kind == "heading" or not block.text.strip():
                continue
            for a, b in split_sentences(block.text):
                if block.offsets and len(block.offsets) == len(block.text):
                    s, e = block.offsets[a], block.offsets[b - 1] + 1
                else:
                    s, e = block.start + a, block.start + b
                out.append(_Span(s, e, block.text[a:b], tuple(block.section)))
    else:
        out = [_Span(a, b, source.text[a:b]) for a, b in split_sentences(source.text)]
    return out


def build_passages(source: SourceDoc, window: int = 3, stride: int = 2) -> list[tuple[Passage, list[_Span]]]:
    """Sentence windows of one source version, each with the sentences it is made of."""
    sents = _sentences_of(source)
    if not sents:
        return []
    out = []
    starts = list(range(0, max(1, len(sents) - window + 1), stride))
    if starts[-1] + window < len(sents):
        starts.append(len(sents) - window)
    for i in starts:
        group = sents[i : i + window]
        start, end = group[0].start, group[-1].end
        pid = content_hash(f"{source.source_version}:{start}:{end}")
        text = " ".join(s.text for s in group)
        out.append(
            (
                Passage(
                    passage_id=pid,
                    source_id=source.source_id,
                    source_version=source.source_version,
                    source_date=source.source_date,
                    authority=source.authority,
                    start=start,
                    end=end,
                    text=text,
                    title=source.title,
                ),
                group,
            )
        )
    return out


# ---------------------------------------------------------------- retriever


class Retriever:
    def __init__(
        self,
        embedder,
        *,
        window: int = 3,
        stride: int = 2,
        rrf_k: float = 60.0,
        w_bm25: float = 1.0,
        w_dense: float = 1.0,
        candidates: int = 100,
        max_per_source: int = 2,
        max_versions: int = 4,
        k1: float = 1.2,
        b: float = 0.75,
        batch_size: int = 256,
    ):
        self.embedder = embedder
        self.window, self.stride = window, stride
        self.rrf_k, self.w_bm25, self.w_dense = rrf_k, w_bm25, w_dense
        self.candidates = candidates
        self.max_per_source = max_per_source
        self.max_versions = max_versions
        self.k1, self.b = k1, b
        self.batch_size = batch_size
        self.passages: list[Passage] = []
        self._sentences: list[list[_Span]] = []
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._bm25 = None  # passages x terms, CSR
        self._vocab: dict[str, int] = {}
        self._idf: np.ndarray = np.zeros(0)
        self._version_of = np.zeros(0, dtype=np.int64)  # passage -> version number
        self._versions_by_source: dict[str, list[int]] = {}
        self._version_range: list[tuple[int, int]] = []  # version -> passage [start, end)
        self._version_date: list = []

    # ------------------------------------------------------------ index

    @staticmethod
    def index_text(p: Passage, sents: list[_Span]) -> str:
        section = " > ".join(sents[0].section) if sents and sents[0].section else ""
        return "\n".join(x for x in (p.title, section, p.text) if x)

    def index(self, sources: list[SourceDoc]) -> None:
        """(Re)build the index over every passage of every source version."""
        import bm25s

        passages, sentences, version_of, ranges, dates = [], [], [], [], []
        by_source: dict[str, list[int]] = {}
        seen_versions: set[tuple[str, str]] = set()
        for src in sources:
            key = (src.source_id, src.source_version)
            if key in seen_versions:
                continue
            seen_versions.add(key)
            built = build_passages(src, self.window, self.stride)
            if not built:
                continue
            v = len(ranges)
            by_source.setdefault(src.source_id, []).append(v)
            ranges.append((len(passages), len(passages) + len(built)))
            dates.append(src.source_date)
            for p, sents in built:
                passages.append(p)
                sentences.append(sents)
                version_of.append(v)
        self.passages, self._sentences = passages, sentences
        self._version_of = np.asarray(version_of, dtype=np.int64)
        self._version_range, self._version_date, self._versions_by_source = ranges, dates, by_source
        if not passages:
            self._vectors = np.zeros((0, 0), dtype=np.float32)
            self._bm25 = None
            return
        texts = [self.index_text(p, s) for p, s in zip(passages, sentences)]
        tokens = [tokenize(t) or [""] for t in texts]
        model = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
        model.index(tokens, show_progress=False)
        sc = model.scores
        n_terms = len(sc["indptr"]) - 1
        self._bm25 = sparse.csc_matrix(
            (sc["data"], sc["indices"], sc["indptr"]), shape=(sc["num_docs"], n_terms)
        ).T.tocsr()  # terms x passages
        self._vocab = model.vocab_dict
        df = np.zeros(max(n_terms, len(self._vocab)), dtype=np.float64)
        counts = np.diff(sc["indptr"])
        df[: len(counts)] = counts
        n = len(passages)
        self._idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        self._vectors = self.embedder.encode(texts)

    # ------------------------------------------------------------ scoring

    def _query_matrix(self, queries: list[str]) -> sparse.csr_matrix:
        rows, cols = [], []
        for i, q in enumerate(queries):
            ids = {self._vocab[t] for t in tokenize(q) if t in self._vocab}
            rows.extend([i] * len(ids))
            cols.extend(ids)
        data = np.ones(len(rows), dtype=np.float32)
        return sparse.csr_matrix((data, (rows, cols)), shape=(len(queries), self._bm25.shape[0]))

    @staticmethod
    def _top(scores: np.ndarray, c: int, positive: bool = False) -> np.ndarray:
        """Indices of the top ``c`` per row, best first (-1 where fewer / non-positive)."""
        n = scores.shape[1]
        c = min(c, n)
        part = np.argpartition(-scores, c - 1, axis=1)[:, :c] if c < n else np.tile(np.arange(n), (scores.shape[0], 1))
        vals = np.take_along_axis(scores, part, axis=1)
        order = np.argsort(-vals, axis=1, kind="stable")
        idx = np.take_along_axis(part, order, axis=1)
        if positive:
            idx = np.where(np.take_along_axis(vals, order, axis=1) > 0, idx, -1)
        return idx

    def score_batch(self, queries: list[str], query_vectors: np.ndarray):
        """BM25, dense and fused score matrices (queries x passages) for one batch."""
        bm25 = (self._query_matrix(queries) @ self._bm25).toarray().astype(np.float32)
        dense = query_vectors @ self._vectors.T
        fused = np.zeros_like(dense)
        rows = np.arange(len(queries))[:, None]
        ranks = np.arange(1, self.candidates + 1, dtype=np.float32)[None, :]
        for idx, w in ((self._top(bm25, self.candidates, positive=True), self.w_bm25), (self._top(dense, self.candidates), self.w_dense)):
            contrib = np.where(idx >= 0, w / (self.rrf_k + ranks[:, : idx.shape[1]]), 0).astype(np.float32)
            np.add.at(fused, (np.broadcast_to(rows, idx.shape), np.maximum(idx, 0)), contrib)
        return bm25, dense, fused

    def rank(self, queries: list[str], k: int = 10, modes=("hybrid",), max_per_source: int | None = None):
        """Ranked passage indices per query for each mode in hybrid | bm25 | dense (benchmarks)."""
        out: dict[str, list[list[int]]] = {m: [] for m in modes}
        if not queries or not self.passages:
            return {m: [[] for _ in queries] for m in modes}
        vecs = self.embedder.encode(queries)
        for s in range(0, len(queries), self.batch_size):
            qs = queries[s : s + self.batch_size]
            bm25, dense, fused = self.score_batch(qs, vecs[s : s + self.batch_size])
            scores = {"hybrid": fused, "bm25": bm25, "dense": dense}
            for m in modes:
                out[m].extend(self._select(scores[m][i], dense[i], k, max_per_source, False) for i in range(len(qs)))
        return out

    def _select(self, score: np.ndarray, dense: np.ndarray, k: int, max_per_source, add_versions: bool) -> list[int]:
        limit = self.max_per_source if max_per_source is None else max_per_source
        pool = min(len(score), max(4 * k * max(1, limit), k + 32))
        cand = np.argpartition(-score, pool - 1)[:pool] if pool < len(score) else np.arange(len(score))
        cand = cand[np.argsort(-score[cand], kind="stable")]
        chosen: list[int] = []
        per_version: dict[int, list[int]] = {}
        for j in cand.tolist():
            if len(chosen) >= k:
                break
            v = int(self._version_of[j])
            taken = per_version.setdefault(v, [])
            if len(taken) >= limit:
                continue
            p = self.passages[j]
            if any(p.start < self.passages[t].end and self.passages[t].start < p.end for t in taken):
                continue
            taken.append(j)
            chosen.append(j)
        if add_versions:
            extra = 0
            for j in list(chosen):
                sid = self.passages[j].source_id
                for v in self._versions_by_source.get(sid, ())[: self.max_versions + 1]:
                    if v in per_version or extra >= self.max_versions:
                        continue
                    a, b = self._version_range[v]
                    best = a + int(np.argmax(dense[a:b]))
                    per_version[v] = [best]
                    chosen.append(best)
                    extra += 1
        return chosen

    # ------------------------------------------------------------ alignment

    def best_sentence(self, claim_text: str, j: int) -> str:
        sents = self._sentences[j]
        if len(sents) == 1:
            return sents[0].text
        q_terms = {self._vocab.get(t) for t in tokenize(claim_text)} - {None}
        total = float(self._idf[list(q_terms)].sum()) if q_terms else 0.0
        q = default_process(claim_text)
        best, best_score = sents[0].text, -1.0
        for s in sents:
            fz = fuzz.token_set_ratio(q, default_process(s.text)) / 100.0
            if total > 0:
                s_terms = {self._vocab.get(t) for t in tokenize(s.text)} & q_terms
                rec = float(self._idf[list(s_terms)].sum()) / total if s_terms else 0.0
            else:
                rec = 0.0
            score = 0.5 * fz + 0.5 * rec
            if score > best_score:
                best, best_score = s.text, score
        return best

    # ------------------------------------------------------------ search

    def search(self, claims: list[Claim], k: int = 5) -> dict[str, list[Evidence]]:
        """Top-k evidence per claim (plus other versions of the sources found), every score kept."""
        results: dict[str, list[Evidence]] = {c.claim_id: [] for c in claims}
        todo = [c for c in claims if c.text and c.text.strip()]
        if not todo or not self.passages:
            return results
        texts = [c.text for c in todo]
        vecs = self.embedder.encode(texts)
        for s in range(0, len(todo), self.batch_size):
            batch = todo[s : s + self.batch_size]
            bm25, dense, fused = self.score_batch(texts[s : s + self.batch_size], vecs[s : s + self.batch_size])
            for i, claim in enumerate(batch):
                chosen = self._select(fused[i], dense[i], k, None, add_versions=True)
                ev = []
                for rank, j in enumerate(chosen, start=1):
                    p = self.passages[j]
                    ev.append(
                        Evidence(
                            claim_id=claim.claim_id,
                            rank=rank,
                            passage_id=p.passage_id,
                            source_id=p.source_id,
                            source_version=p.source_version,
                            source_date=p.source_date,
                            authority=p.authority,
                            passage=p.text,
                            sentence=self.best_sentence(claim.text, j),
                            score_bm25=float(bm25[i, j]),
                            score_dense=float(dense[i, j]),
                            score_fused=float(fused[i, j]),
                        )
                    )
                results[claim.claim_id] = ev
        return results
