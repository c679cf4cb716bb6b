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

from memstrata.retrieval.overlay import carried_layout


class TermRows:
    """Per-entry {stem: count}, row-major (CSR without the matrix): base row j's columns are
    indices[indptr[j]:indptr[j + 1]], their counts counts[...]; terms[column] is the stem.

    The arrays may be views of the statistics cache mapped from disk (retrieval/stats_cache.py).
    A new table version keeps them (`base`) and puts its new and changed rows in a small
    TermRows (`extra`): `at[p]` is entry p's row in the base (>= 0) or in the extra part (-1 - k);
    None when entry p is base row p (retrieval/overlay.py)."""

    def __init__(self, terms: list[str], vocab: dict[str, int], indptr, indices, counts,
                 extra: "TermRows | None" = None, at=None):
        self.terms, self.vocab = terms, vocab
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.indices = np.asarray(indices, dtype=np.int32)
        self.counts = np.asarray(counts, dtype=np.int32)
        self.extra, self.at = extra, at

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
        return len(self.indptr) - 1 if self.at is None else len(self.at)

    def __getitem__(self, p: int) -> dict[str, int]:
        part, j = self, p
        if self.at is not None:
            j = int(self.at[p])
            if j < 0:
                part, j = self.extra, -1 - j
        lo, hi = part.indptr[j], part.indptr[j + 1]
        terms = self.terms
        return {terms[c]: n for c, n in zip(part.indices[lo:hi].tolist(), part.counts[lo:hi].tolist())}

    def __iter__(self):
        for p in range(len(self)):
            yield self[p]

    def __eq__(self, other) -> bool:
        if isinstance(other, (TermRows, list)):
            return len(self) == len(other) and all(a == dict(b) for a, b in zip(self, other))
        return NotImplemented

    def overlaid(self) -> int:
        """How many rows are not in the base (the new and changed ones since it was made)."""
        return 0 if self.at is None else int(np.count_nonzero(self.at < 0))

    def gathered(self, rows=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, indices, counts) of `rows` (all by default), in that order, as one CSR layout."""
        rows = np.arange(len(self), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
        where = rows if self.at is None else self.at[rows]
        in_base = where >= 0
        parts = [(in_base, self, where[in_base])]
        if self.extra is not None:
            parts.append((~in_base, self.extra, -1 - where[~in_base]))
        sizes = np.empty(len(rows), dtype=np.int64)
        for mask, part, local in parts:
            sizes[mask] = part.indptr[local + 1] - part.indptr[local]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(sizes, out=indptr[1:])
        indices = np.empty(int(indptr[-1]), dtype=np.int32)
        counts = np.empty(int(indptr[-1]), dtype=np.int32)
        for mask, part, local in parts:
            if len(local):
                source, target = row_slots(part.indptr, local), row_slots(indptr, np.flatnonzero(mask))
                indices[target], counts[target] = part.indices[source], part.counts[source]
        return indptr, indices, counts

    def lengths(self) -> list[int]:
        """Each row's total count (the entry's length in stems)."""
        indptr, _, counts = (self.indptr, None, self.counts) if self.at is None else self.gathered()
        running = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
        return (running[indptr[1:]] - running[indptr[:-1]]).tolist()

    def column_counts(self, rows=None) -> Counter:
        """{stem: number of `rows` (all by default) holding it}: document frequencies."""
        if rows is None and self.at is None:
            cols = self.indices
        else:
            cols = self.gathered(rows)[1]
        found = np.bincount(cols, minlength=len(self.terms)) if len(cols) else np.zeros(0, dtype=np.int64)
        return Counter({self.terms[c]: int(found[c]) for c in np.flatnonzero(found)})

    def carried(self, reuse: list, fresh: dict[int, dict]) -> "TermRows":
        """The rows of a new collection: reuse[n] is this collection's row of an unchanged entry,
        None for a new or changed one, whose counts are fresh[n]. The base rows stay where they
        are; the others (kept rows of the extra part, then the fresh ones) make a new extra part."""
        at, from_extra, fresh_at = carried_layout(self.at, len(self), reuse)
        new = TermRows.build((fresh[n] for n in fresh_at), self.terms, self.vocab)
        pieces = [new.gathered()]
        if len(from_extra):
            pieces.insert(0, self.extra.gathered(from_extra))
        indptr = np.zeros(sum(len(p[0]) - 1 for p in pieces) + 1, dtype=np.int64)
        np.cumsum(np.concatenate([np.diff(p[0]) for p in pieces]), out=indptr[1:])
        extra = TermRows(self.terms, self.vocab, indptr, np.concatenate([p[1] for p in pieces]),
                         np.concatenate([p[2] for p in pieces]))
        return TermRows(self.terms, self.vocab, self.indptr, self.indices, self.counts, extra, at)

    def compacted(self) -> "TermRows":
        """The same rows, in one part, over a vocabulary of the stems they hold (new list and dict):
        the shared vocabulary only grows, and a service rewriting entries kept every word it ever saw."""
        indptr, indices, counts = self.gathered() if self.at is not None else (self.indptr, self.indices, self.counts)
        used = np.unique(indices)
        renumber = np.full(len(self.terms), -1, dtype=np.int32)
        renumber[used] = np.arange(len(used), dtype=np.int32)
        terms = [self.terms[c] for c in used.tolist()]
        return TermRows(terms, {t: c for c, t in enumerate(terms)}, indptr, renumber[indices], counts)

    def matrix(self, rows=None):
        """CSC matrix (rows x terms) of `rows` (all by default), its counts as float32."""
        from scipy import sparse

        indptr, indices, counts = self.gathered(rows)
        csr = sparse.csr_matrix((counts.astype(np.float32), indices, indptr), shape=(len(indptr) - 1, len(self.terms)))
        return csr.tocsc()


def row_slots(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The positions in a layout's indices/counts (`indptr`) of `rows`, row after row."""
    starts = indptr[rows]
    sizes = indptr[rows + 1] - starts
    total = int(sizes.sum()) if len(rows) else 0
    if not total:
        return np.zeros(0, dtype=np.int64)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
