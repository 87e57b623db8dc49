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

from collections.abc import Callable
from dataclasses import replace
from datetime import date
from pathlib import Path

import numpy as np
from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

# Sentences: the claim splitter's rules (abbreviations, decimals, versions), so claims and
# passages are cut the same way.
from kb.evidence.bm25 import _BM25
from kb.evidence.passages import _passage, _sentences_of, _Span, passage_ranges
from kb.evidence.passages import build_passages as build_passages
from kb.evidence.passages import tokenize as tokenize
from kb.evidence.passages import windows as windows
from kb.evidence.snapshot import snapshot_path, write_snapshot
from kb.evidence.versions import SourceVersions
from kb.records import Claim, Evidence, Passage, SourceDoc

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


class Retriever(SourceVersions):
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
        settle: bool = False,
        settles_cell: Callable[[Claim], bool] | None = None,
    ):
        self.embedder = embedder
        # Claims the newest corpus states as written, with no source dated after that statement,
        # take that sentence as their evidence without a search (see settle).
        self.settle_as_written = settle
        # ... and table cells whose row the newest corpus keeps, where the verifier's policy reads
        # such a row alone (``settles_cell``; None: no cell is settled so)
        self.settles_cell = settles_cell
        self.settled_claims = 0  # claims settled without a search, summed over searches
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
        self._by_length: tuple[list[str], list[int], list[int]] | None = None  # the same keys by length, lazily
        self._corpus_newest: date | None = None  # the newest source date of the index, lazily
        self._renamed: dict[str, str] | None = None  # terms the newest release renamed, lazily
        self._cells: dict[str, list[tuple[int, int, str]]] | None = None  # the newest corpus's table cells, lazily
        self._rows: dict[str, list[int]] | None = None  # the newest corpus's table rows by heading path, lazily
        self._paths: dict[str, int] | None = None  # the newest corpus's heading paths, lazily

    # ------------------------------------------------------------ index

    @staticmethod
    def index_text(p: Passage, sents: list[_Span]) -> str:
        section = " > ".join(sents[0].section) if sents and sents[0].section else ""
        return "\n".join(x for x in (p.title, section, p.text) if x)

    def index(self, sources: list[SourceDoc]) -> None:
        """(Re)build the index over every passage of every source version."""
        self._current = self._by_length = self._corpus_newest = self._renamed = self._cells = self._rows = self._paths = None
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
            spans = passage_ranges(sents, self.window, self.stride)
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
        first = getattr(self.first_stage, "model_id", None) if self.first_stage is not None else None
        return snapshot_path(self.index_cache, (self.k1, self.b, self.window, self.stride, first), texts, [t.text for t in sentences])

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
        write_snapshot(path, arrays)

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

    def score_batch(self, queries: list[str], spans: list[str] | None = None, rows: list[int] | None = None):
        """Score matrices (queries x passages) for one batch: a dict with ``bm25`` (passage
        BM25), ``sent`` (best sentence BM25), ``dense`` (cosine), ``fused`` (RRF) and
        ``sent_raw`` (queries x sentences BM25). ``spans``: the KB text each query was cut
        from, if any (the anchor tests it too). ``rows``: for a query cut from a table cell,
        the newest corpus's row that holds that cell in its place (``stated_in_row``; -1 for
        none): such a query is anchored to its row."""
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
            anchored, repeats = self._anchored(queries, sent_raw, bm25, spans)
            if rows is not None:
                # A cell's own row, kept in its place under the same headings, is the sentence
                # the cell repeats, however few words the cell has (":x:", "json"): the fusion
                # finds where it went without the MiniLM, as for any sentence the KB copied.
                own = np.asarray(rows, dtype=np.int64)
                repeats = np.where((own >= 0) & (repeats < 0), own, repeats)
                anchored = anchored | (own >= 0)
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
            out["repeats"] = repeats
        out["dense"] = dense
        out["fused"] = self._rrf(((bm25, self.w_bm25, True), (sent, self.w_sent, True), (dense, self.w_dense, False)))
        if self.first_stage is not None and out["anchored"].any():
            # An anchored claim's ranking is the first stage's: its dense ranking is the static
            # one, which the first-stage fusion weighs as it was tuned to.
            out["fused"][out["anchored"]] = first[out["anchored"]]
        return out

    def _anchored(self, queries: list[str], sent_raw: np.ndarray, bm25: np.ndarray,
                  spans: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
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
        paraphrased claims are almost never anchored, so their recall is the two-stage path's.

        Returns whether each claim is anchored and, where the first test anchored it, the
        sentence it repeats (else -1): ``search`` keeps that sentence as evidence however its
        passage ranks."""
        out = np.zeros(len(queries), dtype=bool)
        # the source sentence each claim repeats, where one of the top sentences does (-1: none)
        repeated_at = np.full(len(queries), -1, dtype=np.int64)
        if self.anchor is None or not len(queries):
            return out, repeated_at
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
            repeated = next((i for i, text in zip(ranked, texts) if repeats(claim, text)), None)
            if repeated is not None:
                out[n] = True
                repeated_at[n] = repeated
                continue
            out[n] = (
                # The KB's own words anchor only to the claim's best sentence: a claim that adds
                # to them (a list's lead-in before its item) ranks by its whole text, and the item's
                # sentence, found by the item's words alone, is not what that ranking puts first.
                (span is not None and clause_of(span, texts[0]))
                # A fragment too short for the clause test: the sentence it was copied from is
                # what the first stage put first when it alone holds the fragment word for word.
                or copied_from_best(claim, ranked, texts)
                or (span is not None and copied_from_best(span, ranked, texts))
            )
        return out, repeated_at

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

    # ------------------------------------------------------------ search

    def settle(self, claims: list[Claim]) -> dict[str, list[Evidence]]:
        """Evidence found without a search: for each claim that is not time-sensitive and that a
        sentence of the newest corpus states as written (``stated_verbatim``; for a table cell, a
        row that holds it in its place, ``stated_in_row``; for a clause, its whole sentence under
        its heading path, ``stated_in_sentence``; for a list item, the item under the same lead-in,
        ``stated_under_lead_in``, whose evidence sentence is then the lead-in and the item; for a
        heading, the first sentence under it where the newest corpus keeps it under the same
        headings, ``kept_as_heading``), when no source version is dated after that
        sentence's, the passage holding it. Nothing newer can refute such a claim, so the
        verifier settles it supported without judging a passage with a model
        (kb.verify.policy.settled_as_written): most of an unchanged docs page costs no model.
        Only BM25 scores such a passage; its dense and fused scores are 0."""
        out: dict[str, list[Evidence]] = {}
        newest = self._newest_source_date()
        found = []
        for claim in claims:
            if claim.time_sensitive or not claim.checkworthy:
                continue
            verbatim = self.stated_verbatim(claim)
            if verbatim is None and self.settles_cell is not None and self.settles_cell(claim):
                verbatim = self.stated_in_row(claim)
            if verbatim is None:
                verbatim = self.stated_in_sentence(claim)
            stated = ""  # the evidence's text where it is more than the sentence: a list's lead-in and item
            if verbatim is None and (listed := self.stated_under_lead_in(claim)) is not None:
                verbatim, stated = listed
            if verbatim is None:
                verbatim = self.kept_as_heading(claim)
            if verbatim is None:
                continue
            j = self._passage_holding(verbatim)
            if j is None or (self.passages[j].source_date or date.min) < newest:
                continue
            found.append((claim, verbatim, j, stated))
        if not found:
            return out
        assert self._bm25 is not None  # index() ran on passages
        bm25 = self._bm25.scores([tokenize(claim.text) for claim, _, _, _ in found])
        for n, (claim, verbatim, j, stated) in enumerate(found):
            e = self._evidence(claim.claim_id, 1, j, verbatim, float(bm25[n, j]), 0.0, 0.0)
            out[claim.claim_id] = [replace(e, sentence=stated) if stated else e]
        self.settled_claims += len(out)
        return out

    def _evidence(self, claim_id: str, rank: int, j: int, sentence: int, bm25: float, dense: float, fused: float,
                  counterpart_of: str = "", removed_in: str = "", renamed: str = "") -> Evidence:  # fmt: skip
        """Passage ``j`` as evidence for a claim, read as its sentence ``sentence``."""
        p, s = self.passages[j], self.sentences[sentence]
        return Evidence(
            claim_id=claim_id, rank=rank, passage_id=p.passage_id, source_id=p.source_id, source_version=p.source_version,
            source_date=p.source_date, authority=p.authority, passage=p.text, sentence=s.text, score_bm25=bm25,
            score_dense=dense, score_fused=fused, counterpart_of=counterpart_of, section=" > ".join(s.section),
            source_rev=p.source_rev, source_kind=p.source_kind, removed_in=removed_in, renamed=renamed,
        )  # fmt: skip

    def _newest_source_date(self) -> date:
        if self._corpus_newest is None:
            self._corpus_newest = max((p.source_date or date.min for p in self.passages), default=date.min)
        return self._corpus_newest

    def search(self, claims: list[Claim], k: int = 5, on_batch=None, on_skip=None) -> dict[str, list[Evidence]]:
        """Top-k evidence per claim (plus other versions of the sources found), every score kept.
        ``on_batch(n)`` is called after each scoring batch of ``n`` claims, ``on_skip(n)`` with
        the claims settled without a search (progress)."""
        # One loop on purpose: a claim's passages and their sentences are extended together (counterparts, the newest corpus) and must stay in step.
        results: dict[str, list[Evidence]] = {c.claim_id: [] for c in claims}
        todo = [c for c in claims if c.text and c.text.strip()]
        if not todo or not self.passages:
            return results
        if self.settle_as_written:
            settled = self.settle(todo)
            results.update(settled)
            todo = [c for c in todo if c.claim_id not in settled]
            if on_skip is not None and settled:
                on_skip(len(settled))
        step = self._batch()
        for s in range(0, len(todo), step):
            batch = todo[s : s + step]
            rows = [-1 if (row := self.stated_in_row(c)) is None else row for c in batch] if self.first_stage else None
            sc = self.score_batch([c.text for c in batch], [c.source_text for c in batch], rows)
            bm25, dense, fused = sc["bm25"], sc["dense"], sc["fused"]
            for i, claim in enumerate(batch):
                toks = tokenize(claim.text)
                chosen = self._select(fused[i], dense[i], k, None)
                sentence = {j: self._best_sentence_index(toks, claim.text, j) for j in chosen}
                # the source sentence the claim repeats is its evidence, wherever its passage
                # ranked: a short release note that shares the words can outrank a long page
                repeated = int(sc["repeats"][i]) if "repeats" in sc else -1
                t = self._passage_holding(repeated, sentence) if repeated >= 0 else None
                if t is not None and repeated not in sentence.values():
                    chosen.append(t)
                    sentence[t] = repeated
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
                # the newest corpus states the claim as written (or with the terms it renamed
                # renamed too): that sentence is evidence, whatever ranked first
                verbatim, renames = self.stated_verbatim(claim), ""
                if verbatim is None and (found := self.stated_renamed(claim)) is not None:
                    verbatim, renames = found
                if verbatim is None:
                    verbatim = self.default_in_field(claim)
                t = None if verbatim is None else self._passage_holding(verbatim)
                if verbatim is not None and t is not None and verbatim not in sentence.values():
                    if t not in sentence:
                        chosen.insert(0, t)
                    sentence[t] = verbatim  # a chosen passage holding it reads as that sentence
                renamed_at = {j: renames for j in chosen if renames and sentence[j] == verbatim}
                if not renames and (taken := self.renames_taken(claim)):
                    # no newest sentence states it renamed word for word, but one may reword it:
                    # its passages are read with the claim's terms renamed too (for what still states it)
                    renamed_at = dict.fromkeys(chosen, taken)
                # or a table cell states it: the row is evidence (a chosen passage holding the
                # whole cell reads as the row)
                cell = self.stated_in_cell(claim) if verbatim is None else None
                if cell is not None:
                    t, row = cell
                    if t not in sentence:
                        chosen.insert(0, t)
                    sentence[t] = row
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
                results[claim.claim_id] = [
                    self._evidence(claim.claim_id, rank, j, sentence[j], float(bm25[i, j]), _cosine(float(dense[i, j])),
                                   float(fused[i, j]), counterpart_of.get(j, ""), gone_in.get(j, ""), renamed_at.get(j, ""))
                    for rank, j in enumerate(chosen, start=1)
                ]  # fmt: skip
            if on_batch is not None:
                on_batch(len(batch))
        return results
