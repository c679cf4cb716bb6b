"""The English full-text column of every entry as one UTF-8 buffer with offsets (a str per entry held half as much again)."""
from __future__ import annotations

import numpy as np

from memstrata.retrieval.overlay import carried_layout

_CHECKED_AT_ONCE = 4096  # texts


class TextColumn:
    """A read-only sequence of texts: texts[p] decodes entry p's slice of a UTF-8 buffer.

    At 330,000 entries the texts took 227 MB as Python strings (an object each, and two or four
    bytes a character for any text with one character past Latin-1), 157 MB as one buffer. The
    buffer may be a view of the statistics cache mapped from disk (retrieval/stats_cache.py): then
    the texts cost the process nothing until read. A new table version keeps that buffer (`base`)
    and puts its new and changed texts in a small one (`extra`): `at[p]` is entry p's text in the
    base (>= 0) or in the extra buffer (-1 - k); None when every entry is base row p."""

    def __init__(self, data, offsets, extra: "TextColumn | None" = None, at=None):
        self.data = data
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.extra, self.at = extra, at

    @classmethod
    def of(cls, texts) -> "TextColumn":
        encoded = [(t or "").encode("utf-8", "replace") for t in texts]  # no lone surrogate gets in
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        return cls(b"".join(encoded), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1 if self.at is None else len(self.at)

    def _base_text(self, j: int) -> str:
        return str(self.data[self.offsets[j]:self.offsets[j + 1]], "utf-8")

    def __getitem__(self, p: int) -> str:
        if p < 0:
            p += len(self)
        if not 0 <= p < len(self):
            raise IndexError(p)
        if self.at is None:
            return self._base_text(p)
        j = int(self.at[p])
        return self._base_text(j) if j >= 0 else self.extra._base_text(-1 - j)

    def __iter__(self):
        if self.at is not None:
            for p in range(len(self)):
                yield self[p]
            return
        data, offsets = self.data, self.offsets.tolist()
        for lo, hi in zip(offsets, offsets[1:]):
            yield str(data[lo:hi], "utf-8")

    def __eq__(self, other) -> bool:
        if isinstance(other, (TextColumn, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def overlaid(self) -> int:
        """How many texts are not in the base buffer (the new and changed ones since it was made)."""
        return 0 if self.at is None else int(np.count_nonzero(self.at < 0))

    def flat(self) -> tuple[bytes, np.ndarray]:
        """(buffer, offsets) of every text in order, as one buffer (a copy when overlaid)."""
        if self.at is None:
            return bytes(self.data), self.offsets
        column = TextColumn.of(self)
        return column.data, column.offsets

    def carried(self, reuse: list, fresh: dict[int, str]) -> "TextColumn":
        """The column of a new collection: reuse[n] is this column's position of an unchanged
        entry, None for a new or changed one, whose text is fresh[n]. The base buffer is kept as it
        is; the texts outside it (kept ones from the extra buffer, then the fresh ones) are copied
        into a new extra buffer."""
        at, from_extra, fresh_at = carried_layout(self.at, len(self), reuse)
        kept = [self.extra._base_text(k) for k in from_extra] if len(from_extra) else []
        extra = TextColumn.of(kept + [fresh[n] for n in fresh_at])
        return TextColumn(self.data, self.offsets, extra, at)

    def well_formed(self) -> bool:
        """Whether the offsets cut the buffer into texts that each decode (a cache read from disk)."""
        offsets, size = self.offsets, len(self.data)
        if self.at is not None or len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != size \
                or np.any(np.diff(offsets) < 0):
            return False
        for lo, hi in zip(offsets[::_CHECKED_AT_ONCE], [*offsets[_CHECKED_AT_ONCE::_CHECKED_AT_ONCE], size]):
            try:  # a block of texts at a time: the whole buffer at once was a str of 600 MB at 330,000 entries
                str(self.data[lo:hi], "utf-8")
            except UnicodeDecodeError:
                return False
        starts = offsets[:-1][offsets[:-1] < size]
        return not np.any(np.frombuffer(self.data, dtype=np.uint8)[starts] & 0xC0 == 0x80)
