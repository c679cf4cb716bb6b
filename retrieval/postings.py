"""In-memory inverted index of the English full-text column: BM25 top candidates with no table query.

Built from the term statistics (lexical.TermStats.tf) as a term-major sparse matrix, so a
query reads only the postings of its own terms: at 100k entries this takes about a
millisecond where LanceDB's full-text query took about eight, and the candidates are the
top entries of the very BM25 (k1, b) that ranks them, not of LanceDB's own fixed one. A new
table version carries the rows of unchanged entries over (no recount of 100k entries after
one write).
"""
from __future__ import annotations

import numpy as np


class Postings:
    """Entries x terms counts (CSC: each term's entries are one contiguous run)."""

    def __init__(self, vocab: dict[str, int], matrix):
        self.vocab = vocab
        self.matrix = matrix

    @classmethod
    def build(cls, tf: list) -> "Postings":
        """From per-entry {stem: count} (frame order)."""
        vocab: dict[str, int] = {}
        return cls(vocab, _matrix(tf, range(len(tf)), vocab, len(tf)))

    @classmethod
    def carried(cls, old: "Postings", reuse: list, tf: list) -> "Postings":
        """The index of a new collection: reuse[n] is the old position of an unchanged entry
        (its row is copied), None for a new or changed one (counted from tf[n])."""
        from scipy import sparse

        n = len(reuse)
        vocab = dict(old.vocab)
        kept_new = np.array([i for i, j in enumerate(reuse) if j is not None], dtype=np.int64)
        kept_old = np.array([j for j in reuse if j is not None], dtype=np.int64)
        fresh = [i for i, j in enumerate(reuse) if j is None]
        parts = []
        if len(kept_old):
            rows = old.matrix[kept_old, :].tocoo()
            parts.append((kept_new[rows.row], rows.col, rows.data))
        added = _matrix([tf[i] for i in fresh], fresh, vocab, n).tocoo()
        parts.append((added.row, added.col, added.data))
        row = np.concatenate([p[0] for p in parts]).astype(np.int64)
        col = np.concatenate([p[1] for p in parts]).astype(np.int64)
        data = np.concatenate([p[2] for p in parts]).astype(np.float32)
        return cls(vocab, sparse.csc_matrix((data, (row, col)), shape=(n, len(vocab))))

    def bm25_top(self, query: dict[str, float], idf, length: np.ndarray, avg_length: float, k1: float,
                 b: float, limit: int, mask: np.ndarray | None = None) -> dict[int, float]:
        """The `limit` best entries by BM25 of the weighted stems `query` ({stem: weight}), with
        their scores (the same sum lexical.TermStats.bm25 computes); ties go to the lower
        position; entries outside `mask` and zero scores left out."""
        n = self.matrix.shape[0]
        score = np.zeros(n, dtype=np.float64)
        norm = None
        indptr, indices, data = self.matrix.indptr, self.matrix.indices, self.matrix.data
        for s, wt in query.items():
            c = self.vocab.get(s)
            if c is None or c >= self.matrix.shape[1]:
                continue
            rows = indices[indptr[c]:indptr[c + 1]]
            if not len(rows):
                continue
            if norm is None:
                norm = k1 * (1.0 - b + b * length / max(avg_length, 1e-9))
            f = data[indptr[c]:indptr[c + 1]].astype(np.float64)
            score[rows] += wt * idf(s) * f * (k1 + 1.0) / (f + norm[rows])
        if mask is not None:
            score[~mask] = 0.0
        found = np.flatnonzero(score > 0)
        if len(found) > limit:
            part = found[np.argpartition(-score[found], limit - 1)[:limit]]
            kth = score[part].min()
            # every entry tying the cut-off score competes by position, as a stable sort would
            tied = found[score[found] == kth]
            found = np.sort(np.concatenate([part[score[part] > kth], tied]))
            found = found[np.argsort(-score[found], kind="stable")][:limit]
        return {int(p): float(score[p]) for p in found}


def _matrix(tf: list, positions, vocab: dict[str, int], n: int):
    """CSC matrix (n x len(vocab)) of the counters `tf` placed at `positions`; new stems are
    added to `vocab`."""
    from scipy import sparse

    rows: list[int] = []
    cols: list[int] = []
    data: list[float] = []
    for p, counts in zip(positions, tf):
        for s, f in counts.items():
            c = vocab.get(s)
            if c is None:
                c = vocab[s] = len(vocab)
            rows.append(p)
            cols.append(c)
            data.append(f)
    return sparse.csc_matrix((np.asarray(data, dtype=np.float32),
                              (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
                             shape=(n, len(vocab)))
