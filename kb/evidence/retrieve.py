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
   A selected passage of an older version also brings its *counterpart* in the newest version:
   the two versions' sentences are aligned as a diff (:meth:`Retriever.counterpart`), and the
   newest passage holding the sentence that stands where the passage's best sentence stood is
   added with that sentence (or, already selected, takes that sentence) and
   ``Evidence.counterpart_of`` naming the older passage. A rewrite
   rarely resembles the claim as much as an unrelated sentence that shares its words, so without
   the diff the newer statement of a fact is often not retrieved at all (docs/labelling.md
   "Rewritten statements").
5. In each passage, the sentence best aligned with the claim (rapidfuzz token-set ratio mixed
   with IDF-weighted term recall) becomes ``Evidence.sentence``.

Every score is kept in ``Evidence``: ``score_bm25`` (raw BM25), ``score_dense`` (cosine),
``score_fused`` (RRF).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import uuid
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from importlib.metadata import version
from pathlib import Path

import numpy as np
from rapidfuzz import fuzz, process
from rapidfuzz.utils import default_process
from scipy import sparse

# Sentences: the claim splitter's rules (abbreviations, decimals, versions), so claims and
# passages are cut the same way.
from kb.claims import text as claim_text
from kb.claims.text import INDEX_STOPWORDS, sentence_spans, stem_index
from kb.log import logger
from kb.records import Claim, Evidence, Passage, SourceDoc, content_hash

# ---------------------------------------------------------------- tokens (BM25, alignment)

SNAPSHOT_FORMAT = 1  # bump when the snapshot's arrays change meaning
SNAPSHOTS_KEPT = 3


@functools.cache
def _code_hash() -> str:
    """This module and the tokeniser's: a snapshot built by other code is not read back."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(Path(claim_text.__file__).read_bytes())
    return h.hexdigest()[:16]


_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# (older, newer) sentences of a replaced run that still counts as one local edit. On docsdrift
# (docs/labelling.md "Rewritten statements") 26 of the 35 gold stale sentences inside a replaced
# run sit in one of at most 2 older sentences, against 4 of the 116 sentences the newer release
# dropped ("uncertain"), and those 4 runs grew to 4 or more newer sentences.
LOCAL_EDIT = (2, 3)
# an older sentence with no sentence at least this like it (fuzz.ratio) in the newest version of
# its source was removed there, not reworded
REMOVED_BELOW = 70
# a claim as written that the newest corpus states word for word counts as stated there when it is
# a sentence of at least this many words, or stands under the same heading path (a list item, an
# option line: short text that recurs on many pages means something only in its place)
VERBATIM_ANYWHERE_WORDS = 6
# a sentence of the newest corpus at least this like an older sentence (fuzz.ratio on the
# sentence keys) still states it: its page moved, was split or renamed, the fact did not go
STILL_STATED = 90


def sentence_key(text: str) -> str:
    """A sentence as compared across versions (and a claim as written with them): case,
    punctuation and spacing ignored."""
    return " ".join(_TOKEN.findall(text.lower()))


def tokenize(text: str) -> list[str]:
    return [stem_index(t) for t in _TOKEN.findall(text.lower()) if t not in INDEX_STOPWORDS]


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
            for a, b in sentence_spans(block.text):
                if block.offsets and len(block.offsets) == len(block.text):
                    s, e = block.offsets[a], block.offsets[b - 1] + 1
                else:
                    s, e = block.start + a, block.start + b
                out.append(_Span(s, e, block.text[a:b], tuple(block.section)))
    else:
        out = [_Span(a, b, source.text[a:b]) for a, b in sentence_spans(source.text)]
    return out


def windows(n: int, window: int, stride: int) -> list[tuple[int, int]]:
    """``[start, end)`` sentence ranges of the windows over ``n`` sentences (the last one flush)."""
    if n <= 0:
        return []
    starts = list(range(0, max(1, n - window + 1), stride))
    if starts[-1] + window < n:
        starts.append(n - window)
    return [(i, min(n, i + window)) for i in starts]


def _passage(source: SourceDoc, group: list[_Span]) -> Passage:
    start, end = group[0].start, group[-1].end
    return Passage(
        passage_id=content_hash(f"{source.source_version}:{start}:{end}"),
        source_id=source.source_id,
        source_version=source.source_version,
        source_date=source.source_date,
        authority=source.authority,
        start=start,
        end=end,
        text=" ".join(s.text for s in group),
        title=source.title,
        source_rev=source.source_rev,
        source_kind=source.source_kind,
        deleted_in=source.deleted_in,
    )


def build_passages(source: SourceDoc, window: int = 3, stride: int = 2) -> list[tuple[Passage, list[_Span]]]:
    """Sentence windows of one source version, each with the sentences it is made of."""
    sents = _sentences_of(source)
    return [(_passage(source, sents[i:j]), sents[i:j]) for i, j in windows(len(sents), window, stride)]


# ---------------------------------------------------------------- retriever


# A clause the claim splitter cut from a source sentence anchors the claim to that sentence
# when it is this long and found in it this closely (see Retriever._anchored).
ANCHOR_MIN_WORDS = 4
# BM25 favours short sentences: the best one for a clause cut from a long sentence is often a
# shorter one sharing its words, so the anchor reads the top few (bench speed's KB: 11,625
# claims anchored on the best sentence alone, 11,668 on the top 5)
ANCHOR_TOP = 5
ANCHOR_PART = 95
# A fragment too short for the clause test (a list item "stem cell exhaustion") still anchors
# when its words stand, whole and in order, in the best BM25 sentence and in no other of the top
# ANCHOR_TOP outside that sentence's source and heading, and it has at least this many words
# (one word is found verbatim in too many sentences to say where it was copied from).
ANCHOR_VERBATIM_WORDS = 2

# In the two-stage dense ranking, passages the MiniLM did not score keep their static cosine
# minus this, so they rank below every scored one and the cosine can still be recovered.
_OUTSIDE = 4.0


def _cosine(value: float) -> float:
    """The cosine behind a dense ranking value (MiniLM for scored passages, else static)."""
    return value + _OUTSIDE if value < -1.5 else value


class _BM25:
    """A bm25s index exposed as a terms x items sparse matrix, for batch scoring."""

    def __init__(self, token_lists: list[list[str]], k1: float, b: float):
        import bm25s

        # bm25s forces its logger to DEBUG on import; one line per index build is noise.
        logging.getLogger("bm25s").setLevel(logging.WARNING)

        model = bm25s.BM25(k1=k1, b=b, method="lucene")
        model.index([t or [""] for t in token_lists], show_progress=False)
        sc = model.scores
        n_terms = len(sc["indptr"]) - 1
        self.matrix = sparse.csc_matrix((sc["data"], sc["indices"], sc["indptr"]), shape=(sc["num_docs"], n_terms)).T.tocsr()
        self.vocab: dict[str, int] = model.vocab_dict
        df = np.zeros(max(n_terms, len(self.vocab)), dtype=np.float64)
        counts = np.diff(sc["indptr"])
        df[: len(counts)] = counts
        n = len(token_lists)
        self.idf = np.log(1 + (n - df + 0.5) / (df + 0.5))

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The index as plain arrays (for a snapshot; no pickle)."""
        m = self.matrix
        terms = list(self.vocab)
        return {f"{prefix}data": m.data, f"{prefix}indices": m.indices, f"{prefix}indptr": m.indptr,
                f"{prefix}shape": np.array(m.shape), f"{prefix}terms": np.array(terms, dtype=str),
                f"{prefix}term_ids": np.array([self.vocab[t] for t in terms], dtype=np.int64), f"{prefix}idf": self.idf}  # fmt: skip

    @classmethod
    def from_arrays(cls, z, prefix: str) -> _BM25:
        index = cls.__new__(cls)
        shape = tuple(int(x) for x in z[f"{prefix}shape"])
        index.matrix = sparse.csr_matrix((z[f"{prefix}data"], z[f"{prefix}indices"], z[f"{prefix}indptr"]), shape=shape)
        index.vocab = dict(zip(z[f"{prefix}terms"].tolist(), z[f"{prefix}term_ids"].tolist()))
        index.idf = z[f"{prefix}idf"]
        return index

    def scores(self, query_tokens: list[list[str]]) -> np.ndarray:
        """Dense (queries x items) BM25 scores: one sparse product for the whole batch."""
        rows, cols = [], []
        for i, toks in enumerate(query_tokens):
            ids = {self.vocab[t] for t in toks if t in self.vocab}
            rows.extend([i] * len(ids))
            cols.extend(ids)
        q = sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(len(query_tokens), self.matrix.shape[0]))
        return (q @ self.matrix).toarray().astype(np.float32)


class Retriever:
    """Hybrid retriever over source passages; see the module docstring.

    Fusion defaults (rrf_k=5, weights bm25 1 / sentence 1 / dense 2; dense 3 with a first
    stage) were tuned on SciFact *train* claims, keeping every demo correction retrievable
    (docs/retrieval.md).
    """

    def __init__(
        self,
        embedder,
        *,
        first_stage=None,
        rerank: int = 50,
        rerank_per_version: int | None = 2,
        anchor: float | None = 0.9,
        window: int = 3,
        stride: int = 2,
        rrf_k: float = 5.0,
        w_bm25: float = 1.0,
        w_dense: float | None = None,
        w_sent: float = 1.0,
        candidates: int = 100,
        max_per_source: int = 2,
        max_versions: int = 4,
        k1: float = 1.2,
        b: float = 0.75,
        batch_size: int = 256,
        index_cache: Path | None = None,
    ):
        self.embedder = embedder
        # Where index() keeps snapshots of what it builds (the BM25 indexes, the static vectors),
        # keyed by the indexed texts, so a rerun against the same corpus reads them back.
        self.index_cache = Path(index_cache) if index_cache is not None else None
        self.index_reused = False  # whether the last index() read a snapshot
        # With a first stage (a static embedder), the dense ranking over every passage is the
        # static one and the MiniLM (``embedder``) scores only each claim's top ``rerank``
        # passages of the first-stage fusion (50: set on SciFact train claims), except for a
        # claim the first stage has anchored to a source sentence (``anchor``, see _anchored;
        # None turns it off); without a first stage, the MiniLM embeds every passage.
        self.first_stage = first_stage
        # At most this many of a claim's candidates from one source version (None: no cap): the
        # first stage ranks a source's overlapping windows together, and capping them gives the
        # same MiniLM budget to more sources (SciFact train recall@10 0.950 -> 0.956 at 50
        # candidates, docs/retrieval.md "Candidates: speed against recall").
        self.rerank_per_version = rerank_per_version
        self.rerank = rerank
        self.anchor = anchor
        self.anchored_claims = 0  # claims the anchor spared a MiniLM pass, summed over searches
        self._texts: list[str] = []  # indexed text per passage (embedded on demand)
        self._static = np.zeros((0, 0), dtype=np.float32)
        self._dense_row = np.zeros(0, dtype=np.int64)  # passage -> row of _dense_vecs, -1: none yet
        self._dense_vecs = np.zeros((0, 0), dtype=np.float32)
        self.window, self.stride = window, stride
        if w_dense is None:
            # Tuned on SciFact train claims (docs/retrieval.md "Fusion"): the two-stage dense
            # ranking already holds BM25 through its candidates, and weighs more in the fusion.
            w_dense = 2.0 if first_stage is None else 3.0
        self.rrf_k, self.w_bm25, self.w_dense, self.w_sent = rrf_k, w_bm25, w_dense, w_sent
        self.first_weights = (1.0, 1.0, 2.0)  # bm25, sentence, static: the first-stage fusion
        self.candidates = candidates
        self.max_per_source = max_per_source
        self.max_versions = max_versions
        self.k1, self.b = k1, b
        self.batch_size = batch_size
        self.passages: list[Passage] = []
        self.sentences: list[_Span] = []  # every sentence of every version, in order
        self._p_sent = np.zeros((0, 2), dtype=np.int64)  # passage -> its sentences [start, end)
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._bm25: _BM25 | None = None  # over passages (title + section + text)
        self._bm25_sent: _BM25 | None = None  # over single sentences
        self._sent_terms: dict[int, frozenset[str]] = {}  # a sentence's BM25 terms, for alignment, as met
        self._version_of = np.zeros(0, dtype=np.int64)  # passage -> version number
        self._versions_by_source: dict[str, list[int]] = {}
        self._version_range: list[tuple[int, int]] = []  # version -> passage [start, end)
        self._version_sentences: list[tuple[int, int]] = []  # version -> sentence [start, end)
        self._newest_version: dict[str, int] = {}  # source -> its newest dated version
        self._aligned: dict[int, dict[int, tuple[str, int]]] = {}  # older version -> diff, lazily
        self._headings: dict[int, dict[tuple[str, ...], list[int]]] = {}  # version -> section -> its sentences, lazily
        self._sentence_starts = np.zeros(0, dtype=np.int64)
        self._current: tuple[dict[str, list[int]], list[str], list[int]] | None = None  # the newest corpus's sentence keys, lazily

    # ------------------------------------------------------------ index

    @staticmethod
    def index_text(p: Passage, sents: list[_Span]) -> str:
        section = " > ".join(sents[0].section) if sents and sents[0].section else ""
        return "\n".join(x for x in (p.title, section, p.text) if x)

    def index(self, sources: list[SourceDoc]) -> None:
        """(Re)build the index over every passage of every source version."""
        self._current = None
        passages, sentences, p_sent, version_of, ranges, sent_ranges = [], [], [], [], [], []
        by_source: dict[str, list[int]] = {}
        texts = []
        seen_versions: set[tuple[str, str]] = set()
        for src in sources:
            key = (src.source_id, src.source_version)
            if key in seen_versions:
                continue
            seen_versions.add(key)
            sents = _sentences_of(src)
            spans = windows(len(sents), self.window, self.stride)
            if not spans:
                continue
            v = len(ranges)
            by_source.setdefault(src.source_id, []).append(v)
            ranges.append((len(passages), len(passages) + len(spans)))
            base = len(sentences)
            sent_ranges.append((base, base + len(sents)))
            sentences.extend(sents)
            for i, j in spans:
                p = _passage(src, sents[i:j])
                passages.append(p)
                texts.append(self.index_text(p, sents[i:j]))
                p_sent.append((base + i, base + j))
                version_of.append(v)
        self.passages, self.sentences = passages, sentences
        self._p_sent = np.asarray(p_sent, dtype=np.int64).reshape(-1, 2)
        self._version_of = np.asarray(version_of, dtype=np.int64)
        self._version_range, self._versions_by_source = ranges, by_source
        self._version_sentences, self._aligned, self._headings = sent_ranges, {}, {}
        self._sentence_starts = np.asarray([a for a, _ in sent_ranges], dtype=np.int64)
        self._newest_version = {}
        for sid, vs in by_source.items():
            dated = [v for v in vs if passages[ranges[v][0]].source_date is not None]
            if len(dated) > 1:
                self._newest_version[sid] = max(dated, key=lambda v: passages[ranges[v][0]].source_date)
        self._sent_terms = {}
        self.index_reused = False
        if not passages:
            self._vectors = np.zeros((0, 0), dtype=np.float32)
            self._bm25 = self._bm25_sent = None
            return
        snapshot = self._snapshot_path(texts, sentences)
        if snapshot is None or not self._read_snapshot(snapshot, len(passages), len(sentences)):
            self._bm25 = _BM25([tokenize(t) for t in texts], self.k1, self.b)
            self._bm25_sent = _BM25([tokenize(s.text) for s in sentences], self.k1, self.b)
            if self.first_stage is not None:
                self._static = self.first_stage.encode(texts)
            if snapshot is not None:
                self._write_snapshot(snapshot)
        if self.first_stage is None:
            self._vectors = self.embedder.encode(texts)
        else:
            self._texts = texts
            self._dense_row = np.full(len(passages), -1, dtype=np.int64)
            self._dense_vecs = np.zeros((0, 0), dtype=np.float32)

    def _snapshot_path(self, texts: list[str], sentences: list[_Span]) -> Path | None:
        """The snapshot file for this index: named by a hash of everything index() builds from
        (the indexed texts, the sentences, the BM25 parameters, the static model, this code)."""
        if self.index_cache is None:
            return None
        h = hashlib.sha256()
        first = getattr(self.first_stage, "model_id", None) if self.first_stage is not None else None
        h.update(repr((SNAPSHOT_FORMAT, self.k1, self.b, self.window, self.stride, first, _code_hash(), version("bm25s"))).encode())
        for t in texts:
            h.update(t.encode("utf-8"))
            h.update(b"\0")
        for sent in sentences:
            h.update(sent.text.encode("utf-8"))
            h.update(b"\1")
        return self.index_cache / "index" / f"{h.hexdigest()[:32]}.npz"

    def _read_snapshot(self, path: Path, n_passages: int, n_sentences: int) -> bool:
        try:
            with np.load(path, allow_pickle=False) as z:
                bm25, sent = _BM25.from_arrays(z, "p_"), _BM25.from_arrays(z, "s_")
                static = z["static"] if self.first_stage is not None else None
        except Exception:  # noqa: BLE001 - missing, torn or foreign: build the index instead
            return False
        if bm25.matrix.shape[1] != n_passages or sent.matrix.shape[1] != n_sentences:
            return False
        if static is not None and static.shape[0] != n_passages:
            return False
        self._bm25, self._bm25_sent = bm25, sent
        if static is not None:
            self._static = static
        self.index_reused = True
        return True

    def _write_snapshot(self, path: Path) -> None:
        assert self._bm25 is not None and self._bm25_sent is not None
        arrays = {**self._bm25.arrays("p_"), **self._bm25_sent.arrays("s_")}
        if self.first_stage is not None:
            arrays["static"] = self._static
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".tmp-{uuid.uuid4().hex[:8]}-{path.name}")
            with open(tmp, "wb") as fh:
                np.savez(fh, **arrays)  # pyright: ignore[reportArgumentType]  # the keys are ours (p_*, s_*, static), never savez's own allow_pickle
            os.replace(tmp, path)
            # Older corpora's snapshots: only the newest few are worth their disk.
            for old in sorted(path.parent.glob("*.npz"), key=lambda f: f.stat().st_mtime)[:-SNAPSHOTS_KEPT]:
                old.unlink(missing_ok=True)
        except OSError as exc:  # a read-only or full cache costs the next run a rebuild, nothing more
            logger.warning("index snapshot not written to %s: %s", path.parent, exc)

    @property
    def dense_scored(self) -> int:
        """Passages the MiniLM has embedded for this index (all of them without a first stage)."""
        if self.first_stage is None:
            return len(self.passages)
        return int((self._dense_row >= 0).sum())

    def _ensure_dense(self, idx: np.ndarray) -> None:
        """MiniLM vectors for passages ``idx`` (the embedder's cache serves those seen before)."""
        missing = np.unique(idx[self._dense_row[idx] < 0])
        if not len(missing):
            return
        vecs = self.embedder.encode([self._texts[j] for j in missing.tolist()])
        base = self._dense_vecs.shape[0]
        self._dense_vecs = vecs if base == 0 else np.concatenate([self._dense_vecs, vecs])
        self._dense_row[missing] = np.arange(base, base + len(missing))

    # ------------------------------------------------------------ scoring

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

    def _passage_max(self, sent_scores: np.ndarray) -> np.ndarray:
        """Per passage, the best score of its sentences (queries x passages)."""
        a, b = self._p_sent[:, 0], self._p_sent[:, 1]
        out = sent_scores[:, a]
        for o in range(1, self.window):
            out = np.maximum(out, sent_scores[:, np.minimum(a + o, b - 1)])
        return out

    def score_batch(self, queries: list[str], spans: list[str] | None = None):
        """Score matrices (queries x passages) for one batch: a dict with ``bm25`` (passage
        BM25), ``sent`` (best sentence BM25), ``dense`` (cosine), ``fused`` (RRF) and
        ``sent_raw`` (queries x sentences BM25). ``spans``: the KB text each query was cut
        from, if any (the anchor tests it too)."""
        toks = [tokenize(q) for q in queries]
        assert self._bm25 is not None and self._bm25_sent is not None  # index() ran on passages
        bm25 = self._bm25.scores(toks)
        sent_raw = self._bm25_sent.scores(toks)
        sent = self._passage_max(sent_raw)
        out = {"bm25": bm25, "sent": sent, "sent_raw": sent_raw}
        if self.first_stage is None:
            dense = self.embedder.encode(queries) @ self._vectors.T
        else:
            static = self.first_stage.encode(queries) @ self._static.T
            wb, ws, wd = self.first_weights
            first = self._rrf(((bm25, wb, True), (sent, ws, True), (static, wd, False)))
            # The dense ranking: the candidates by MiniLM cosine, then every other passage by its
            # static cosine (shifted below -1, so below any candidate; see _cosine).
            dense = static - _OUTSIDE
            anchored = self._anchored(queries, sent_raw, bm25, spans)
            rest = np.flatnonzero(~anchored)
            if len(rest):
                cand = self._candidates(first[rest])
                self._ensure_dense(cand.ravel())
                vecs = self.embedder.encode([queries[i] for i in rest.tolist()])
                minilm = np.einsum("qd,qmd->qm", vecs, self._dense_vecs[self._dense_row[cand]])
                scored = dense[rest]
                np.put_along_axis(scored, cand, minilm, axis=1)
                dense[rest] = scored
            self.anchored_claims += int(anchored.sum())
            out["static"] = static
            out["first"] = first
            out["anchored"] = anchored
        out["dense"] = dense
        out["fused"] = self._rrf(((bm25, self.w_bm25, True), (sent, self.w_sent, True), (dense, self.w_dense, False)))
        if self.first_stage is not None and out["anchored"].any():
            # An anchored claim's ranking is the first stage's: its dense ranking is the static
            # one, which the first-stage fusion weighs as it was tuned to.
            out["fused"][out["anchored"]] = first[out["anchored"]]
        return out

    def _anchored(self, queries: list[str], sent_raw: np.ndarray, bm25: np.ndarray, spans: list[str] | None = None) -> np.ndarray:
        """Claims that (nearly) repeat a source sentence, a part of one or a source's title,
        all tested after lower-casing and dropping punctuation:

        - one of the ``ANCHOR_TOP`` best sentences by BM25 has a rapidfuzz ``ratio`` of at least
          ``anchor`` to the claim, or holds a claim of ``ANCHOR_MIN_WORDS`` words or more (a
          clause the splitter cut from it) with a ``partial_ratio`` of at least ``ANCHOR_PART``;
        - the claim, however short, stands word for word in the best sentence and in no other of
          the top sentences under another source or heading (``ANCHOR_VERBATIM_WORDS``);
        - the title of the best passage by BM25 passes the first test (a KB heading copied from
          its source).

        The clause and word-for-word tests also take the KB text the claim was cut from
        (``spans``): the splitter gives a clause its sentence's subject ("X is conserved in
        vertebrates" from "Given that X is part of a family and is conserved in vertebrates"),
        and the words the KB copied are the clause's. For such a claim the first stage has
        already found its statement, so the MiniLM is not run for it: a KB that copies its
        sources (the usual case for docs) costs no transformer pass per claim. SciFact's
        paraphrased claims are almost never anchored, so their recall is the two-stage path's."""
        out = np.zeros(len(queries), dtype=bool)
        if self.anchor is None or not len(queries):
            return out
        rows = np.arange(len(queries))
        best_passage = bm25.argmax(axis=1)
        has_passage = bm25[rows, best_passage] > 0
        top = self._top(sent_raw, ANCHOR_TOP, positive=True)
        floor = 100 * self.anchor

        def clause_of(claim: str, text: str) -> bool:
            # The claim must be the part: partial_ratio also matches a short sentence inside a
            # longer claim (a list's lead-in inside "lead-in: item"), which says nothing of the rest.
            return len(claim) <= len(text) and len(claim.split()) >= ANCHOR_MIN_WORDS and fuzz.partial_ratio(claim, text) >= ANCHOR_PART

        def repeats(claim: str, text: str) -> bool:
            return fuzz.ratio(claim, text) >= floor or clause_of(claim, text)

        def verbatim_in(words: str, text: str) -> bool:
            # whole words: "is 30" is in "timeout is 30 s", not in "timeout is 300 s"
            split = words.split()
            return len(split) >= ANCHOR_VERBATIM_WORDS and f" {' '.join(split)} " in f" {' '.join(text.split())} "

        def copied_from_best(fragment: str, ranked: list[int], texts: list[str]) -> bool:
            # The best sentence holds the fragment, and no sentence elsewhere among the top does:
            # a reference page repeats "Optional, Default=false" under a dozen options, and which
            # of them the KB copied is what the MiniLM, reading each passage's heading, decides.
            held = [i for i, text in zip(ranked, texts) if verbatim_in(fragment, text)]
            if not held or held[0] != ranked[0]:
                return False
            home = self._sentence_home(held[0])
            return all(self._sentence_home(i) == home for i in held[1:])

        for n, q in enumerate(queries):
            claim = default_process(q)
            title = default_process(self.passages[int(best_passage[n])].title) if has_passage[n] else ""
            if title and repeats(claim, title):
                out[n] = True
                continue
            ranked = [int(i) for i in top[n] if i >= 0]  # -1 only pads the end of a row
            texts = [default_process(self.sentences[i].text) for i in ranked]
            if not ranked:
                continue
            span = default_process(spans[n]) if spans is not None and spans[n] != q else None
            out[n] = (
                any(repeats(claim, text) for text in texts)
                # The KB's own words anchor only to the claim's best sentence: a claim that adds
                # to them (a list's lead-in before its item) ranks by its whole text, and the item's
                # sentence, found by the item's words alone, is not what that ranking puts first.
                or (span is not None and clause_of(span, texts[0]))
                # A fragment too short for the clause test: the sentence it was copied from is
                # what the first stage put first when it alone holds the fragment word for word.
                or copied_from_best(claim, ranked, texts)
                or (span is not None and copied_from_best(span, ranked, texts))
            )
        return out

    def _candidates(self, first: np.ndarray) -> np.ndarray:
        """Each row's top ``rerank`` passages by the first-stage fusion, at most
        ``rerank_per_version`` from one source version while others remain in the wider top."""
        cap = self.rerank_per_version
        if cap is None:
            return self._top(first, self.rerank)
        wide = self._top(first, self.rerank * 8)  # best first
        groups = self._version_of[wide]
        # each entry's place among its version's entries, in score order (a stable sort by
        # version keeps score order within a version)
        by_group = np.argsort(groups, axis=1, kind="stable")
        sorted_groups = np.take_along_axis(groups, by_group, axis=1)
        pos = np.broadcast_to(np.arange(wide.shape[1]), wide.shape)
        new_group = np.ones(wide.shape, dtype=bool)
        new_group[:, 1:] = sorted_groups[:, 1:] != sorted_groups[:, :-1]
        place_sorted = pos - np.maximum.accumulate(np.where(new_group, pos, 0), axis=1)
        place = np.empty_like(place_sorted)
        np.put_along_axis(place, by_group, place_sorted, axis=1)
        # the kept entries first, in score order, then the others (a row short of kept ones)
        chosen = np.argsort(place >= cap, axis=1, kind="stable")[:, : self.rerank]
        return np.take_along_axis(wide, chosen, axis=1)

    def _rrf(self, rankings) -> np.ndarray:
        """Reciprocal rank fusion of the top ``candidates`` of each (scores, weight, positive)."""
        fused = np.zeros_like(rankings[0][0])
        rows = np.arange(fused.shape[0])[:, None]
        ranks = np.arange(1, self.candidates + 1, dtype=np.float32)[None, :]
        for scores, w, positive in rankings:
            if w == 0:
                continue
            idx = self._top(scores, self.candidates, positive)
            contrib = np.where(idx >= 0, w / (self.rrf_k + ranks[:, : idx.shape[1]]), 0).astype(np.float32)
            np.add.at(fused, (np.broadcast_to(rows, idx.shape), np.maximum(idx, 0)), contrib)
        return fused

    def _batch(self) -> int:
        """Claims per scoring batch: bounded so a batch's score matrices stay near 100 MB."""
        width = max(1, len(self.sentences), len(self.passages))
        return max(8, min(self.batch_size, int(5e6 // width)))

    def rank(self, queries: list[str], k: int = 10, modes=("hybrid",), max_per_source: int | None = None):
        """Ranked passage indices per query for each mode in hybrid | bm25 | dense | sent, and
        with a first stage also static (static cosine alone) | first (the first-stage fusion)."""
        out: dict[str, list[list[int]]] = {m: [] for m in modes}
        if not self.passages:
            return {m: [[] for _ in queries] for m in modes}
        step = self._batch()
        for s in range(0, len(queries), step):
            sc = self.score_batch(queries[s : s + step])
            for m in modes:
                key = "fused" if m == "hybrid" else m
                out[m].extend(self._select(row, None, k, max_per_source) for row in sc[key])
        return out

    def _select(self, score: np.ndarray, dense: np.ndarray | None, k: int, max_per_source: int | None) -> list[int]:
        """Top k by ``score``, at most ``max_per_source`` per source version; with ``dense``, then
        the best passage of each other version of the sources selected."""
        limit = self.max_per_source if max_per_source is None else max_per_source
        pool = min(len(score), max(4 * k * max(1, limit), k + 32))
        cand = np.argpartition(-score, pool - 1)[:pool] if pool < len(score) else np.arange(len(score))
        cand = cand[np.argsort(-score[cand], kind="stable")]
        chosen: list[int] = []
        per_version: dict[int, int] = {}
        for j in cand.tolist():
            if len(chosen) >= k:
                break
            v = int(self._version_of[j])
            if per_version.get(v, 0) >= limit:
                continue
            per_version[v] = per_version.get(v, 0) + 1
            chosen.append(j)
        if dense is not None:
            extra = 0
            for j in list(chosen):
                for v in self._versions_by_source.get(self.passages[j].source_id, ()):
                    if v in per_version or extra >= self.max_versions:
                        continue
                    a, b = self._version_range[v]
                    best = a + int(np.argmax(dense[a:b]))
                    per_version[v] = 1
                    chosen.append(best)
                    extra += 1
        return chosen

    # ------------------------------------------------------------ alignment

    def _best_sentence_index(self, claim_tokens: list[str], claim_text: str, j: int) -> int:
        """The sentence of passage ``j`` best aligned with the claim: rapidfuzz token-set ratio
        and IDF-weighted share of the claim's terms it contains (numbers count double: a
        subject's number, "Severity 1", "v2", identifies what the claim is about)."""
        a, b = self._p_sent[j]
        return self._best_sentence_of(claim_tokens, claim_text, range(int(a), int(b)))

    def _best_sentence_of(self, claim_tokens: list[str], claim_text: str, indices) -> int:
        """Of the sentences ``indices``, the one best aligned with the claim (as above)."""
        indices = list(indices)
        if len(indices) == 1:
            return int(indices[0])
        bm = self._bm25_sent
        assert bm is not None  # index() ran on passages
        weights = {}
        for t in claim_tokens:
            tid = bm.vocab.get(t)
            if tid is not None:
                weights[t] = float(bm.idf[tid]) * (2.0 if t[:1].isdigit() else 1.0)
        total = sum(weights.values())
        q = default_process(claim_text)
        best, best_score = int(indices[0]), -1.0
        for i in indices:
            text = self.sentences[i].text
            fz = fuzz.token_set_ratio(q, default_process(text)) / 100.0
            terms = self._sent_terms.get(i)
            if terms is None:
                terms = self._sent_terms[i] = frozenset(tokenize(text))
            rec = sum(w for t, w in weights.items() if t in terms) / total if total else 0.0
            score = 0.5 * fz + 0.5 * rec
            if score > best_score:
                best, best_score = int(i), score
        return best

    # ------------------------------------------------------------ versions

    def counterpart(self, sentence: int) -> tuple[str, int] | None:
        """Where sentence ``sentence`` (a global index) of an older source version stands in
        the source's newest version: ``("equal", i)`` when the newest version still has it
        (in place or moved), ``("replaced", i)`` when a diff of the two versions puts sentence
        ``i`` in its place, None when the newest version dropped it (or it is the newest)."""
        v = self._version_of_sentence(sentence)
        new = self._newest_version.get(self.passages[self._version_range[v][0]].source_id)
        if new is None or new == v or not self._older(v, new):
            return None
        if v not in self._aligned:
            self._aligned[v] = self._align_versions(v, new)
        return self._aligned[v].get(sentence)

    def same_heading(self, sentence: int, taken) -> tuple[int, int] | None:
        """For a sentence of an older source version that has no counterpart in the newest
        version (its section was rewritten, so the diff pairs nothing): the newest version's
        sentence under the same heading path most like it, and the passage holding it (nearest
        the middle, among those not in ``taken``); None when the newest version has no such
        heading or every passage holding that sentence is taken. A heading outlives a rewrite
        of its text (an option's section, "#### `peerCertURI`", keeps its name while its
        default and its wording change), so what the newest version says under it is what a
        verifier must read beside the old; of the lines there, the one most like the old line
        is the one that can stand in its place."""
        section = self.sentences[sentence].section
        v = self._version_of_sentence(sentence)
        new = self._newest_version.get(self.passages[self._version_range[v][0]].source_id)
        if not section or new is None or new == v or not self._older(v, new):
            return None
        if new not in self._headings:
            by_section: dict[tuple[str, ...], list[int]] = {}
            na, nb = self._version_sentences[new]
            for i in range(na, nb):
                by_section.setdefault(self.sentences[i].section, []).append(i)
            self._headings[new] = by_section
        under = self._headings[new].get(section)
        if not under:
            return None
        # most like the old line as every evidence sentence is chosen (term recall with numbers
        # counting double: a subject's number says what a line is about, so "Severity 1 ... 1
        # hour" goes with "Severity 1 ... 30 minutes", not the closer-spelled "Severity 2 ... 2 hours")
        old_text = self.sentences[sentence].text
        best = self._best_sentence_of(tokenize(old_text), old_text, under)
        j = self._passage_holding(best, taken)
        return None if j is None else (j, best)

    def removed_in(self, sentence: int) -> str:
        """For a sentence of an older source version that the newest version has no counterpart
        of (not kept, not moved, not replaced in a local edit, and no sentence of the newest
        version like it): that version's rev, else its date. "" otherwise."""
        v = self._version_of_sentence(sentence)
        new = self._newest_version.get(self.passages[self._version_range[v][0]].source_id)
        if new is None or new == v or not self._older(v, new):
            return ""
        if v not in self._aligned:
            self._aligned[v] = self._align_versions(v, new)
        if sentence in self._aligned[v]:
            return ""
        p = self.passages[self._version_range[new][0]]
        na, nb = self._version_sentences[new]
        text = self.sentences[sentence].text
        if p.source_kind == "spec":
            # a spec fact is "<subject>: <values>": gone when no fact of the newest spec has its subject
            subject = text.split(": ", 1)[0] + ": "
            if any(self.sentences[i].text.startswith(subject) for i in range(na, nb)):
                return ""
        else:
            key = sentence_key(text)
            if any(fuzz.ratio(key, sentence_key(self.sentences[i].text)) >= REMOVED_BELOW for i in range(na, nb)):
                return ""  # reworded in place or elsewhere on the page: a revision, not a removal
        return p.source_rev or (p.source_date.isoformat() if p.source_date else "")

    def still_stated(self, sentence: int) -> int | None:
        """A sentence of the newest corpus (the newest version of every source that was not
        deleted) that states ``sentence`` word for word or nearly (``STILL_STATED``); None when
        none does. A removal needs the fact's absence everywhere: a page that moved, was split or
        renamed takes its sentences with it, and what its old place lost still stands there."""
        exact, keys, where = self._newest_corpus()
        key = sentence_key(self.sentences[sentence].text)
        if key in exact:
            return exact[key][0]
        found = process.extractOne(key, keys, scorer=fuzz.ratio, processor=None, score_cutoff=STILL_STATED)
        return None if found is None else where[found[2]]

    def _newest_corpus(self) -> tuple[dict[str, list[int]], list[str], list[int]]:
        """The sentence keys of the newest version of every source that was not deleted: key ->
        its sentences, and the keys and sentences in order (for fuzzy lookups)."""
        if self._current is None:
            exact: dict[str, list[int]] = {}
            keys, where = [], []
            for sid, versions in self._versions_by_source.items():
                # a source read once is current as it is; of several dated versions, the newest
                v = self._newest_version.get(sid, versions[-1])
                a, _ = self._version_range[v]
                if self.passages[a].deleted_in:
                    continue
                for i in range(*self._version_sentences[v]):
                    key = sentence_key(self.sentences[i].text)
                    exact.setdefault(key, []).append(i)
                    keys.append(key)
                    where.append(i)
            self._current = (exact, keys, where)
        return self._current

    def stated_verbatim(self, claim: Claim) -> int | None:
        """A sentence of the newest corpus that states the claim as written, word for word: under
        the claim's heading path, or anywhere for a sentence of ``VERBATIM_ANYWHERE_WORDS`` words
        or more. None when there is none."""
        key = sentence_key(claim.source_text)
        found = self._newest_corpus()[0].get(key) if key else None
        if not found:
            return None
        section = tuple(claim.section.split(" > ")) if claim.section else ()
        here = [i for i in found if self.sentences[i].section == section]
        if here:
            return here[0]
        return found[0] if len(key.split()) >= VERBATIM_ANYWHERE_WORDS else None

    def _sentence_home(self, sentence: int) -> tuple[str, tuple[str, ...]]:
        """The source and heading path a sentence stands under (the same in every version)."""
        v = self._version_of_sentence(sentence)
        return self.passages[self._version_range[v][0]].source_id, self.sentences[sentence].section

    def _version_of_sentence(self, sentence: int) -> int:
        return int(np.searchsorted(self._sentence_starts, sentence, side="right") - 1)

    def _older(self, v: int, w: int) -> bool:
        dv = self.passages[self._version_range[v][0]].source_date
        dw = self.passages[self._version_range[w][0]].source_date
        return dv is not None and dw is not None and dv < dw

    def _align_versions(self, old: int, new: int) -> dict[int, tuple[str, int]]:
        """A sentence diff of two versions of one source: each older sentence's place in the
        newer one. A *local edit* (a run of at most ``LOCAL_EDIT`` older sentences replaced by
        at most ``LOCAL_EDIT[1]`` newer ones, in otherwise unchanged surroundings) pairs each
        older sentence with the most similar newer sentence of the run: that is what took its
        place. A longer replaced run is a rewritten section, where a fact was more often
        dropped than changed: none of it is taken as a counterpart."""
        (oa, ob), (na, nb) = self._version_sentences[old], self._version_sentences[new]
        old_keys = [sentence_key(self.sentences[i].text) for i in range(oa, ob)]
        new_keys = [sentence_key(self.sentences[i].text) for i in range(na, nb)]
        where_now: dict[str, list[int]] = {}
        for i, k in enumerate(new_keys):
            where_now.setdefault(k, []).append(na + i)
        repeats_old = Counter(old_keys)

        def moved_to(i: int) -> int | None:
            """Where the older sentence ``i`` went, if it moved elsewhere on the page: a
            newer sentence of the same words, under the same heading; or, for a sentence
            that occurs once in each version, wherever it is. A line that repeats under many
            headings ("Optional, Default=false") says nothing of where its fact went: taken
            from another heading, it paired an option's old default with another option's."""
            found = where_now.get(old_keys[i], [])
            section = self.sentences[oa + i].section
            same = [j for j in found if self.sentences[j].section == section]
            if same:
                return same[0]
            if len(found) == 1 and repeats_old[old_keys[i]] == 1:
                return found[0]
            return None

        out: dict[int, tuple[str, int]] = {}
        for tag, i1, i2, j1, j2 in SequenceMatcher(None, old_keys, new_keys, autojunk=False).get_opcodes():
            for i in range(i1, i2):
                kept = na + j1 + i - i1 if tag == "equal" else -1
                # Such a repeated line the diff itself lines up with one under another heading
                # (sections reordered) is no more kept; a line that stands once keeps the diff's
                # pairing, whatever its heading is now called.
                if kept >= 0 and (repeats_old[old_keys[i]] == 1 or self.sentences[kept].section == self.sentences[oa + i].section):
                    out[oa + i] = ("equal", kept)
                elif (moved := moved_to(i)) is not None:
                    out[oa + i] = ("equal", moved)
                elif tag == "replace" and i2 - i1 <= LOCAL_EDIT[0] and j2 - j1 <= LOCAL_EDIT[1]:
                    j = max(range(j1, j2), key=lambda j: fuzz.ratio(old_keys[i], new_keys[j]))
                    out[oa + i] = ("replaced", na + j)
        return out

    def _passage_holding(self, sentence: int, taken=()) -> int | None:
        """The passage of the sentence's version in which it sits nearest the middle, of those
        not in ``taken``; None when every passage holding it is taken."""
        a, b = self._version_range[self._version_of_sentence(sentence)]
        starts, ends = self._p_sent[a:b, 0], self._p_sent[a:b, 1]
        inside = np.nonzero((starts <= sentence) & (sentence < ends))[0]
        off_centre = np.abs((starts[inside] + ends[inside] - 1) / 2 - sentence)
        free = [int(a + j) for j in inside[np.argsort(off_centre, kind="stable")] if int(a + j) not in taken]
        return free[0] if free else None

    # ------------------------------------------------------------ search

    def search(self, claims: list[Claim], k: int = 5, on_batch=None) -> dict[str, list[Evidence]]:
        """Top-k evidence per claim (plus other versions of the sources found), every score kept.
        ``on_batch(n)`` is called after each scoring batch of ``n`` claims (progress)."""
        results: dict[str, list[Evidence]] = {c.claim_id: [] for c in claims}
        todo = [c for c in claims if c.text and c.text.strip()]
        if not todo or not self.passages:
            return results
        step = self._batch()
        for s in range(0, len(todo), step):
            batch = todo[s : s + step]
            sc = self.score_batch([c.text for c in batch], [c.source_text for c in batch])
            bm25, dense, fused = sc["bm25"], sc["dense"], sc["fused"]
            for i, claim in enumerate(batch):
                toks = tokenize(claim.text)
                chosen = self._select(fused[i], dense[i], k, None)
                sentence = {j: self._best_sentence_index(toks, claim.text, j) for j in chosen}
                counterpart_of: dict[int, str] = {}
                for j in list(chosen):
                    found = self.counterpart(sentence[j])
                    if found is None:
                        held = self.same_heading(sentence[j], sentence)
                        if held is not None:
                            chosen.append(held[0])
                            sentence[held[0]] = held[1]
                        continue
                    tag, n = found
                    t = self._passage_holding(n)
                    assert t is not None  # nothing is excluded: every sentence sits in a passage
                    if t in sentence and (tag == "equal" or t in counterpart_of):
                        continue
                    if t not in sentence:
                        chosen.append(t)
                    sentence[t] = n
                    if tag == "replaced":
                        counterpart_of[t] = self.passages[j].passage_id
                # the newest corpus states the claim as written: that sentence is evidence, whatever ranked first
                verbatim = self.stated_verbatim(claim)
                t = None if verbatim is None else self._passage_holding(verbatim)
                if verbatim is not None and t is not None and verbatim not in sentence.values():
                    if t not in sentence:
                        chosen.insert(0, t)
                    sentence[t] = verbatim  # a chosen passage holding it reads as that sentence
                gone_in: dict[int, str] = {}
                for j in list(chosen):
                    gone = self.removed_in(sentence[j]) or self.passages[j].deleted_in
                    stands = self.still_stated(sentence[j]) if gone else None
                    t = None if stands is None else self._passage_holding(stands, sentence)
                    if stands is None or t is None:
                        gone_in[j] = gone
                        continue
                    # the fact stands in the newest corpus: its passage there is evidence too
                    chosen.append(t)
                    sentence[t] = stands
                ev = []
                for rank, j in enumerate(chosen, start=1):
                    p = self.passages[j]
                    gone = gone_in.get(j, "")
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
                            sentence=self.sentences[sentence[j]].text,
                            score_bm25=float(bm25[i, j]),
                            score_dense=_cosine(float(dense[i, j])),
                            score_fused=float(fused[i, j]),
                            counterpart_of=counterpart_of.get(j, ""),
                            section=" > ".join(self.sentences[sentence[j]].section),
                            source_rev=p.source_rev,
                            source_kind=p.source_kind,
                            removed_in=gone,
                        )
                    )
                results[claim.claim_id] = ev
            if on_batch is not None:
                on_batch(len(batch))
        return results
