"""The English full-text column of every entry as one UTF-8 buffer with offsets (a str per entry held half as much again)."""
from __future__ import annotations

import numpy as np

from memstrata.retrieval.term_rows import carried_runs


_CHECKED_AT_ONCE = 4096  # texts


class TextColumn:
    """A read-only sequence of texts: texts[p] decodes entry p's slice of one UTF-8 buffer.

    At 330,000 entries the texts took 227 MB as Python strings (an object each, and two or four
    bytes a character for any text with one character past Latin-1), 157 MB here."""

    def __init__(self, data: bytes, offsets):
        self.data = data
        self.offsets = np.asarray(offsets, dtype=np.int64)

    @classmethod
    def of(cls, texts) -> "TextColumn":
        encoded = [(t or "").encode("utf-8", "replace") for t in texts]  # no lone surrogate gets in
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        return cls(b"".join(encoded), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, p: int) -> str:
        if p < 0:
            p += len(self)
        if not 0 <= p < len(self):
            raise IndexError(p)
        return self.data[self.offsets[p]:self.offsets[p + 1]].decode("utf-8")

    def __iter__(self):
        data, offsets = self.data, self.offsets.tolist()
        for lo, hi in zip(offsets, offsets[1:]):
            yield data[lo:hi].decode("utf-8")

    def __eq__(self, other) -> bool:
        if isinstance(other, TextColumn):
            return self.data == other.data and np.array_equal(self.offsets, other.offsets)
        if isinstance(other, list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def carried(self, reuse: list, fresh: dict[int, str]) -> "TextColumn":
        """The column of a new collection: reuse[n] is this column's position of an unchanged
        entry, None for a new or changed one, whose text is fresh[n]. Kept texts are copied run by run."""
        new = TextColumn.of(fresh[n] for n, j in enumerate(reuse) if j is None)
        sizes, pieces = [], []
        buffers = {True: memoryview(self.data), False: memoryview(new.data)}  # slices without copies
        for kept, lo, hi in carried_runs(reuse):
            source = self if kept else new
            sizes.append(np.diff(source.offsets[lo:hi + 1]))
            pieces.append(buffers[kept][source.offsets[lo]:source.offsets[hi]])
        offsets = np.zeros(len(reuse) + 1, dtype=np.int64)
        if sizes:
            np.cumsum(np.concatenate(sizes), out=offsets[1:])
        return TextColumn(b"".join(pieces), offsets)

    def well_formed(self) -> bool:
        """Whether the offsets cut the buffer into texts that each decode (a cache read from disk)."""
        offsets, size = self.offsets, len(self.data)
        if len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != size or np.any(np.diff(offsets) < 0):
            return False
        for lo, hi in zip(offsets[::_CHECKED_AT_ONCE], [*offsets[_CHECKED_AT_ONCE::_CHECKED_AT_ONCE], size]):
            try:  # a block of texts at a time: the whole buffer at once was a str of 600 MB at 330,000 entries
                self.data[lo:hi].decode("utf-8")
            except UnicodeDecodeError:
                return False
        starts = offsets[:-1][offsets[:-1] < size]
        return not np.any(np.frombuffer(self.data, dtype=np.uint8)[starts] & 0xC0 == 0x80)
