"""In-memory inverted index of the English full-text column: BM25 top candidates with no table query.

Built from the term statistics (lexical.TermStats.tf, retrieval/term_rows.py) as term-major sparse matrices, so a
query reads only the postings of its own terms: at 100k entries this takes about two
milliseconds where LanceDB's full-text query took about eight, and the candidates are the
top entries of the very BM25 (k1, b) that ranks them, not of LanceDB's own fixed one.

A new table version does not rebuild it (0.6 s at 100k): the matrices already built are kept
as segments with a map from their rows to the new positions (rows of removed or changed
entries map to -1), and only new or changed entries make a new small segment. When the
small segments grow past a tenth of the entries they are merged by one rebuild.
"""
from __future__ import annotations

import numpy as np

MAX_SEGMENTS = 8


class Postings:
    """Segments of entries x terms counts (CSC: each term's entries are one contiguous run),
    each with the entry position of every row (None: row n is position n)."""

    def __init__(self, vocab: dict[str, int], segments: list, n: int):
        self.vocab = vocab  # shared by the versions carried from one build: it only grows
        self.segments = segments
        self.n = n

    @classmethod
    def build(cls, tf) -> "Postings":
        """From the per-entry stem counts (retrieval.term_rows.TermRows, frame order); the
        columns are the rows' vocabulary."""
        return cls(tf.vocab, [(tf.matrix(), None)], len(tf))

    @classmethod
    def carried(cls, old: "Postings", reuse: list, tf) -> "Postings":
        """The index of a new collection: reuse[n] is the old position of an unchanged entry
        (its rows are kept), None for a new or changed one (counted from tf[n])."""
        n = len(reuse)
        fresh = [i for i, j in enumerate(reuse) if j is None]
        small = sum(len(pos) for _, pos in old.segments[1:]) + len(fresh)
        if len(old.segments) >= MAX_SEGMENTS or small > max(1000, n // 10) or old.vocab is not tf.vocab:
            return cls.build(tf)
        old_pos = np.array([-1 if j is None else j for j in reuse], dtype=np.int64)
        moved = np.full(old.n + 1, -1, dtype=np.int64)  # old position -> new position; slot -1 stays -1
        kept = old_pos >= 0
        moved[old_pos[kept]] = np.flatnonzero(kept)
        segments = [(m, moved[:-1] if pos is None else moved[pos]) for m, pos in old.segments]
        if fresh:
            segments.append((tf.matrix(fresh), np.asarray(fresh, dtype=np.int64)))
        return cls(old.vocab, segments, n)

    def bm25_top(self, query: dict[str, float], idf, length: np.ndarray, avg_length: float, k1: float,
                 b: float, limit: int, mask: np.ndarray | None = None) -> dict[int, float]:
        """The `limit` best entries by BM25 of the weighted stems `query` ({stem: weight}), with
        their scores (the same sum lexical.TermStats.bm25 computes); ties go to the lower
        position; entries outside `mask` and zero scores left out."""
        score = np.zeros(self.n, dtype=np.float64)
        norm = k1 * (1.0 - b + b * length / max(avg_length, 1e-9))
        for s, wt in query.items():
            c = self.vocab.get(s)
            if c is None:
                continue
            weight = wt * idf(s) * (k1 + 1.0)
            for matrix, positions in self.segments:
                if c >= matrix.shape[1]:
                    continue  # a term first seen after this segment was built
                lo, hi = matrix.indptr[c], matrix.indptr[c + 1]
                if lo == hi:
                    continue
                rows = matrix.indices[lo:hi]
                f = matrix.data[lo:hi].astype(np.float64)
                if positions is not None:
                    rows = positions[rows]
                    live = rows >= 0
                    rows, f = rows[live], f[live]
                score[rows] += weight * f / (f + norm[rows])
        if mask is not None:
            score[~mask] = 0.0
        found = np.flatnonzero(score > 0)
        if len(found) > limit:
            part = found[np.argpartition(-score[found], limit - 1)[:limit]]
            kth = score[part].min()
            # every entry tying the cut-off score competes by position, as a stable sort would
            found = np.union1d(part[score[part] > kth], found[score[found] == kth])
            found = found[np.argsort(-score[found], kind="stable")][:limit]
        return {int(p): float(score[p]) for p in found}

    def rows(self, terms) -> np.ndarray:
        """The sorted positions of the entries holding any of `terms` (stems of the vocabulary)."""
        found = []
        for term in terms:
            c = self.vocab.get(term)
            if c is None:
                continue
            for matrix, positions in self.segments:
                if c >= matrix.shape[1]:
                    continue
                rows = matrix.indices[matrix.indptr[c]:matrix.indptr[c + 1]]
                if positions is not None:
                    rows = positions[rows]
                    rows = rows[rows >= 0]
                found.append(rows)
        return np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
