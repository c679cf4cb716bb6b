"""The full-text column's texts and term statistics kept on disk, so a new process need not recount them.

A cache under {root}/.vectors/ (derived like the table: deleting it only costs time). A
process that had to count everything writes it; a new process loads it as the "previous
frame" and carries over what is unchanged (VectorIndex.texts/term_stats), reading only
the entries written since. marshal, not pickle: loading it never runs code.
"""
from __future__ import annotations

import marshal
from collections import Counter
from pathlib import Path

CACHE_FILE = "termstats.bin"
FORMAT = 3  # 2: words split at hyphens (lexical.words); 3: curly apostrophes read as straight ones
_COLUMNS = ("hash", "created", "tags", "path", "category")


def save(directory: Path, frame, model: str | None) -> None:
    """Write the frame's texts and statistics (both must be computed)."""
    from memstrata.storage.atomic import atomic_write_bytes

    stats = frame._stats
    data = {"format": FORMAT, "model": model, "ids": list(frame.ids),
            "cols": {c: [list(v) if isinstance(v, list) else v for v in frame.cols[c]] for c in _COLUMNS},
            "texts": list(frame._texts), "tf": [dict(c) for c in stats.tf], "length": list(stats.length),
            "df": dict(stats.df), "fdf": dict(frame._df)}
    postings = _postings_data(stats)
    if postings is not None:
        data["postings"] = postings
    try:
        atomic_write_bytes(Path(directory) / CACHE_FILE, marshal.dumps(data))
    except (OSError, ValueError):
        pass  # a cache: the next process counts again


def load(directory: Path, model: str | None, make_frame):
    """A frame holding the cached texts and statistics (version -1), or None.

    make_frame(version, ids, cols) builds it: the frame is retrieval/frame.py's, which loads
    this module, so the class comes in as an argument rather than as an import back.
    """
    from memstrata.retrieval import lexical

    try:
        data = marshal.loads((Path(directory) / CACHE_FILE).read_bytes())
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("model") != model:
            return None
        if not _consistent(data):
            return None
        frame = make_frame(-1, data["ids"], data["cols"])
        frame._texts = data["texts"]
        stats = lexical.TermStats.__new__(lexical.TermStats)
        stats.tf, stats.df = data["tf"], Counter(data["df"])
        stats._finish(data["length"])
        frame._stats, frame._df = stats, Counter(data["fdf"])
        if not (len(frame.ids) == len(frame._texts) == len(stats.tf)):
            return None
        stats._postings = _postings_from(data.get("postings"), len(stats.tf))
        return frame
    except (OSError, ValueError, EOFError, TypeError, KeyError):
        return None


def _consistent(data: dict) -> bool:
    """Every part of a loaded cache has the shape and types a full count makes (a damaged or
    forged file is thrown away and counted again, never half used)."""
    ids, texts, tf, length, cols = data["ids"], data["texts"], data["tf"], data["length"], data["cols"]
    if not all(isinstance(x, list) for x in (ids, texts, tf, length)) or not isinstance(cols, dict):
        return False
    n = len(ids)
    if not (len(texts) == len(tf) == len(length) == n) or len(set(ids)) != n:
        return False
    if any(not isinstance(cols.get(c), list) or len(cols[c]) != n for c in _COLUMNS):
        return False
    if not all(type(i) is str for i in ids) or not all(type(t) is str for t in texts):
        return False
    if not all(type(x) is int and x >= 0 for x in length) or not all(type(c) is dict for c in tf):
        return False
    if not all(type(k) is str and type(v) is int and v > 0 for c in tf for k, v in c.items()):
        return False
    if any(sum(c.values()) != x for c, x in zip(tf, length)):
        return False
    return all(isinstance(d, dict) and all(type(k) is str and type(v) is int and v >= 0 for k, v in d.items())
               for d in (data["df"], data["fdf"]))


def _postings_data(stats) -> dict | None:
    """The inverted index as plain bytes (one built segment only: what a full count makes)."""
    postings = getattr(stats, "_postings", None)
    if postings is None or len(postings.segments) != 1 or postings.segments[0][1] is not None:
        return None
    matrix = postings.segments[0][0]
    return {"vocab": sorted(postings.vocab, key=postings.vocab.__getitem__), "rows": int(matrix.shape[0]),
            "indptr": matrix.indptr.astype("<i8").tobytes(), "indices": matrix.indices.astype("<i4").tobytes(),
            "data": matrix.data.astype("<f4").tobytes()}


def _postings_from(data, n: int):
    """The cached inverted index, or None (then it is built on first use) when absent or inconsistent."""
    if not isinstance(data, dict):
        return None
    try:
        import numpy as np
        from scipy import sparse

        from memstrata.retrieval.postings import Postings

        vocab = {term: c for c, term in enumerate(data["vocab"])}
        indptr = np.frombuffer(data["indptr"], dtype="<i8")
        indices = np.frombuffer(data["indices"], dtype="<i4")
        values = np.frombuffer(data["data"], dtype="<f4")
        if (data["rows"] != n or len(vocab) != len(data["vocab"]) or len(indptr) != len(vocab) + 1
                or not np.all(np.isfinite(values)) or np.any(values <= 0)
                or indptr[0] != 0 or indptr[-1] != len(indices) or len(indices) != len(values)
                or np.any(np.diff(indptr) < 0) or (len(indices) and (indices.min() < 0 or indices.max() >= n))):
            return None
        matrix = sparse.csc_matrix((values, indices, indptr), shape=(n, len(vocab)))
        return Postings(vocab, [(matrix, None)], n)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
