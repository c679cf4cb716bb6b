"""Where each entry of a carried collection is: a row of the base (kept as it is, often mapped from disk) or of a small extra part."""
from __future__ import annotations

import numpy as np


def carried_layout(at, n_old: int, reuse: list) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The layout of a new collection made from an old one (retrieval/text_column.py, term_rows.py).

    `at` is the old layout: per old position its base row (>= 0) or its row k of the extra part
    (-1 - k); None when old position p is base row p. reuse[n] is the old position of new entry n
    when it is unchanged, None when it is new or changed. Returns (new layout, the old extra rows
    kept, in the order they take in the new extra part, the new positions whose data is fresh, in
    the order they take after those)."""
    old = np.arange(n_old, dtype=np.int64) if at is None else np.asarray(at, dtype=np.int64)
    source = np.fromiter((-1 if j is None else j for j in reuse), dtype=np.int64, count=len(reuse))
    kept = source >= 0
    new = np.empty(len(reuse), dtype=np.int64)
    new[kept] = old[source[kept]]
    in_extra = kept & (new < 0)
    from_extra = -1 - new[in_extra]
    new[in_extra] = -1 - np.arange(len(from_extra), dtype=np.int64)
    fresh_at = np.flatnonzero(~kept)
    new[fresh_at] = -1 - (len(from_extra) + np.arange(len(fresh_at), dtype=np.int64))
    return new, from_extra, fresh_at.tolist()
