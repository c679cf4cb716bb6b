"""Each entry's stem counts (the English column's BM25 term frequencies) as flat arrays, one row per entry.

A dict per entry held 264 MB at 330,000 entries (9 million stem counts: a key, a value and a
hash slot each); the same counts here take 8 bytes each (a column number and a count), 72 MB.
A row is read as a dict (`rows[p]`) for the few hundred candidates a query scores.

The vocabulary (`terms`, `vocab`) only grows and is shared by every version carried from one
build, like the inverted index's (retrieval/postings.py), which is built from these rows and
numbers its columns the same way.
"""
from __future__ import annotations

from array import array
from collections import Counter

import numpy as np


class TermRows:
    """Per-entry {stem: count}, row-major (CSR without the matrix): row p's columns are
    indices[indptr[p]:indptr[p + 1]], their counts counts[...]; terms[column] is the stem."""

    def __init__(self, terms: list[str], vocab: dict[str, int], indptr, indices, counts):
        self.terms, self.vocab = terms, vocab
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.indices = np.asarray(indices, dtype=np.int32)
        self.counts = np.asarray(counts, dtype=np.int32)

    @classmethod
    def build(cls, counters, terms: list[str] | None = None, vocab: dict[str, int] | None = None) -> "TermRows":
        """From an iterable of {stem: count} (consumed one at a time: no dict per entry is kept)."""
        terms = [] if terms is None else terms
        vocab = {} if vocab is None else vocab
        indptr, indices, counts = array("q", [0]), array("i"), array("i")
        for row in counters:
            for stem, count in row.items():
                column = vocab.get(stem)
                if column is None:
                    column = vocab[stem] = len(terms)
                    terms.append(stem)
                indices.append(column)
                counts.append(count)
            indptr.append(len(indices))
        return cls(terms, vocab, np.frombuffer(indptr, dtype=np.int64), np.frombuffer(indices, dtype=np.int32),
                   np.frombuffer(counts, dtype=np.int32))

    def __len__(self) -> int:
        return len(self.indptr) - 1

    def __getitem__(self, p: int) -> dict[str, int]:
        lo, hi = self.indptr[p], self.indptr[p + 1]
        terms = self.terms
        return {terms[c]: n for c, n in zip(self.indices[lo:hi].tolist(), self.counts[lo:hi].tolist())}

    def __iter__(self):
        for p in range(len(self)):
            yield self[p]

    def __eq__(self, other) -> bool:
        if isinstance(other, (TermRows, list)):
            return len(self) == len(other) and all(a == dict(b) for a, b in zip(self, other))
        return NotImplemented

    def lengths(self) -> list[int]:
        """Each row's total count (the entry's length in stems)."""
        running = np.concatenate(([0], np.cumsum(self.counts, dtype=np.int64)))
        return (running[self.indptr[1:]] - running[self.indptr[:-1]]).tolist()

    def column_counts(self, rows=None) -> Counter:
        """{stem: number of `rows` (all by default) holding it}: document frequencies."""
        cols = self.indices if rows is None else self.indices[row_slots(self.indptr, np.asarray(rows, dtype=np.int64))]
        found = np.bincount(cols, minlength=len(self.terms)) if len(cols) else np.zeros(0, dtype=np.int64)
        return Counter({self.terms[c]: int(found[c]) for c in np.flatnonzero(found)})

    def carried(self, reuse: list, fresh: dict[int, dict]) -> "TermRows":
        """The rows of a new collection: reuse[n] is this collection's row of an unchanged entry,
        None for a new or changed one, whose counts are fresh[n]. Kept rows are copied run by run."""
        new = TermRows.build((fresh[n] for n, j in enumerate(reuse) if j is None), self.terms, self.vocab)
        sizes, indices, counts = [], [], []
        for kept, lo, hi in carried_runs(reuse):
            source = self if kept else new
            a, b = source.indptr[lo], source.indptr[hi]
            sizes.append(np.diff(source.indptr[lo:hi + 1]))
            indices.append(source.indices[a:b])
            counts.append(source.counts[a:b])
        indptr = np.zeros(len(reuse) + 1, dtype=np.int64)
        if sizes:
            np.cumsum(np.concatenate(sizes), out=indptr[1:])
        join = (lambda parts: np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32))
        return TermRows(self.terms, self.vocab, indptr, join(indices), join(counts))

    def compacted(self) -> "TermRows":
        """The same rows over a vocabulary of the stems they hold (new list and dict): the shared
        vocabulary only grows, and a service rewriting entries kept every word it ever saw."""
        used = np.unique(self.indices)
        renumber = np.full(len(self.terms), -1, dtype=np.int32)
        renumber[used] = np.arange(len(used), dtype=np.int32)
        terms = [self.terms[c] for c in used.tolist()]
        return TermRows(terms, {t: c for c, t in enumerate(terms)}, self.indptr, renumber[self.indices], self.counts)

    def matrix(self, rows=None):
        """CSC matrix (rows x terms) of `rows` (all by default), its counts as float32."""
        from scipy import sparse

        if rows is None:
            indptr, indices, counts, n = self.indptr, self.indices, self.counts, len(self)
        else:
            rows = np.asarray(rows, dtype=np.int64)
            sizes = self.indptr[rows + 1] - self.indptr[rows]
            slots = row_slots(self.indptr, rows)
            indptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
            indices, counts, n = self.indices[slots], self.counts[slots], len(rows)
        csr = sparse.csr_matrix((counts.astype(np.float32), indices, indptr), shape=(n, len(self.terms)))
        return csr.tocsc()


def row_slots(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The positions in a layout's indices/counts (`indptr`) of `rows`, row after row."""
    starts = indptr[rows]
    sizes = indptr[rows + 1] - starts
    total = int(sizes.sum()) if len(rows) else 0
    if not total:
        return np.zeros(0, dtype=np.int64)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)


def carried_runs(reuse: list) -> list[tuple[bool, int, int]]:
    """A new collection's entries as runs, in order, to copy whole: (True, lo, hi) for old rows
    lo..hi-1 kept in a row (reuse[n] their old row), (False, lo, hi) for the lo-th..(hi-1)-th new or
    changed entries (reuse[n] None). A write changes a few entries: a few runs, whatever the size."""
    old = np.array([-1 if j is None else j for j in reuse], dtype=np.int64)
    if not len(old):
        return []
    kept = old >= 0
    fresh_rank = np.cumsum(~kept) - 1
    breaks = np.flatnonzero((kept[1:] != kept[:-1]) | (kept[1:] & (old[1:] != old[:-1] + 1))) + 1
    starts = np.concatenate(([0], breaks)).tolist()
    ends = starts[1:] + [len(old)]
    return [(True, int(old[a]), int(old[a]) + b - a) if kept[a] else (False, int(fresh_rank[a]), int(fresh_rank[a]) + b - a)
            for a, b in zip(starts, ends)]
