"""BM25 as a sparse matrix, for scoring a whole batch of claims at once."""

from __future__ import annotations

import logging

import numpy as np
from scipy import sparse

# Sentences: the claim splitter's rules (abbreviations, decimals, versions), so claims and
# passages are cut the same way.


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
