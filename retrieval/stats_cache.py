"""The full-text column's texts and term statistics kept on disk, so a new process need not recount them.

A cache under {root}/.vectors/ (derived like the table: deleting it only costs time). A
process that had to count everything writes it; a new process maps it as the "previous
frame" and carries over what is unchanged (VectorIndex.texts/term_stats), reading only
the entries written since. The large arrays (the texts, the stem counts, the inverted index)
are used where they lie in the mapped file: they cost a process's memory only while read, and
the system drops those pages first when memory is short. The rest is marshal, not pickle:
loading it never runs code.
"""
from __future__ import annotations

import marshal
import mmap
import os
import stat
import weakref
import zlib
from collections import Counter
from pathlib import Path

CACHE_FILE = "termstats.bin"
# 2: words split at hyphens (lexical.words); 3: curly apostrophes read as straight ones; 4: counts as arrays;
# 5: arrays mapped; 6: a crc32 per raw part
FORMAT = 6
_MAGIC = b"memstrata termstats %d\n" % FORMAT
_ALIGN = 64
_MAX_HEADER = 1 << 30  # ids, columns and vocabulary of some 3 million entries
_COLUMNS = ("hash", "created", "tags", "path", "category")
_MAPPED: "weakref.WeakSet[mmap.mmap]" = weakref.WeakSet()  # every cache file this process reads mapped
_STAMPS: dict = {}  # id of a mapped cache -> (its fd, what its fstat said when it was read)
# the parts stored as raw arrays after the marshal header: (part, key)
_RAW = (("texts", "data"), ("texts", "offsets"), ("tf", "indptr"), ("tf", "indices"), ("tf", "counts"),
        ("postings", "indptr"), ("postings", "indices"), ("postings", "data"))


def save(directory: Path, frame, model: str | None) -> None:
    """Write the frame's texts and statistics (both must be computed; the feedback statistics
    `frame._df` are kept when computed)."""
    from memstrata.storage.atomic import atomic_write_chunks

    stats = frame._stats
    data_, offsets = frame._texts.flat()
    data = {"format": FORMAT, "model": model, "ids": list(frame.ids),
            "cols": {c: [list(v) if isinstance(v, list) else v for v in frame.cols[c]] for c in _COLUMNS},
            "texts": {"data": data_, "offsets": offsets.astype("<i8").tobytes()},
            "tf": _rows_data(stats.tf), "length": list(stats.length),
            "df": dict(stats.df), "fdf": None if frame._df is None else dict(frame._df)}
    postings = _postings_data(stats)
    if postings is not None:
        data["postings"] = postings
    try:
        atomic_write_chunks(Path(directory) / CACHE_FILE, _encoded(data))
    except (OSError, ValueError):
        pass  # a cache: the next process counts again


def _encoded(data: dict):
    """The file's pieces: magic, header length, marshal header (the raw parts replaced by their
    place in the file), then each raw part at an aligned offset."""
    raw, places, at = [], {}, 0
    for part, key in _RAW:
        value = data[part].get(key) if isinstance(data.get(part), dict) else None
        if not isinstance(value, (bytes, memoryview)):
            continue  # absent, or (a forged cache, in tests) no array: left in the header
        at = -(-at // _ALIGN) * _ALIGN
        places[f"{part}.{key}"] = (at, len(value), zlib.crc32(value))
        raw.append((at, value))
        at += len(value)
    header = {k: ({kk: vv for kk, vv in v.items() if f"{k}.{kk}" not in places} if isinstance(v, dict) else v)
              for k, v in data.items()}
    header["raw"] = places
    head = marshal.dumps(header)
    start = -(-(len(_MAGIC) + 8 + len(head)) // _ALIGN) * _ALIGN
    yield _MAGIC + len(head).to_bytes(8, "little") + head + bytes(start - len(_MAGIC) - 8 - len(head))
    written = 0
    for at, value in raw:
        yield bytes(at - written)
        yield value
        written = at + len(value)


def read(path: Path):
    """(the cache's parts as `save` gave them, the raw parts as views of the mapped file; the map
    or None) or None when the file is no cache. A fifo or a device is never opened."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        return None  # a fifo would block the read for ever, a device never end
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    kept = False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):  # an empty file, a file system that cannot map
            mapped = None
        if mapped is None:
            with os.fdopen(os.dup(fd), "rb") as f:
                buffer = memoryview(f.read())
        else:
            mapped.madvise(mmap.MADV_RANDOM)  # read a few rows at a time: no read-ahead
            _MAPPED.add(mapped)
            _STAMPS[id(mapped)] = (fd, _stamp(os.fstat(fd)))
            weakref.finalize(mapped, _forget, id(mapped), fd)
            kept = True
            buffer = memoryview(mapped)
    finally:
        if not kept:
            os.close(fd)
    if bytes(buffer[:len(_MAGIC)]) != _MAGIC:
        return None
    size = int.from_bytes(buffer[len(_MAGIC):len(_MAGIC) + 8], "little")
    start = len(_MAGIC) + 8
    if size > min(len(buffer) - start, _MAX_HEADER):
        return None
    data = marshal.loads(buffer[start:start + size])
    places = data.pop("raw", None) if isinstance(data, dict) else None
    if not isinstance(places, dict):
        return None
    body = -(-(start + size) // _ALIGN) * _ALIGN
    for part, key in _RAW:
        place = places.get(f"{part}.{key}")
        if place is None:
            continue
        if not (isinstance(place, tuple) and len(place) == 3 and all(type(v) is int and v >= 0 for v in place)
                and body + place[0] + place[1] <= len(buffer) and isinstance(data.get(part), dict)):
            return None
        value = buffer[body + place[0]:body + place[0] + place[1]]
        if zlib.crc32(value) != place[2]:
            return None  # damaged, or a part moved: a self-consistent forgery is still read (it is derived data)
        data[part][key] = value
    return data, mapped


def _stamp(st) -> tuple:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev


def _forget(key: int, fd: int) -> None:
    _STAMPS.pop(key, None)
    try:
        os.close(fd)
    except OSError:
        pass


def intact(buffer) -> bool:
    """Whether the mapped file a view (`buffer`) reads is as it was when it was mapped: every writer
    replaces the cache by a rename, but a tool may cut or rewrite it in place (a restore with `cp`,
    `rsync --inplace`, a truncate), and reading a page past its new end would stop the process
    (SIGBUS). A rename over it, or a delete (a privacy purge), changes its ctime too: a process then
    lets it go for the file in its place. True for anything not mapped."""
    mapped = getattr(buffer, "obj", None)
    kept = _STAMPS.get(id(mapped)) if isinstance(mapped, mmap.mmap) else None
    if kept is None:
        return True
    try:
        return _stamp(os.fstat(kept[0])) == kept[1]
    except OSError:
        return False


def release_pages() -> None:
    """Let go of the mapped caches' pages this process read (a query reads a few rows of each
    array, and the system maps the pages around each one): they stay in the system's page cache,
    and the next read maps them again. The service calls it after each call, so its resident size
    does not keep what one query read."""
    for mapped in list(_MAPPED):
        try:
            mapped.madvise(mmap.MADV_DONTNEED)
        except (ValueError, OSError):  # closed meanwhile
            pass


def write(path: Path, data: dict) -> None:
    """Write parts as `read` gives them (tests forge a cache with it)."""
    from memstrata.storage.atomic import atomic_write_chunks

    atomic_write_chunks(Path(path), _encoded(data))


def load(directory: Path, model: str | None, make_frame):
    """A frame holding the cached texts and statistics (version -1), or None.

    make_frame(version, ids, cols) builds it: the frame is retrieval/frame.py's, which loads
    this module, so the class comes in as an argument rather than as an import back.
    """
    from memstrata.retrieval import lexical

    try:
        found = read(Path(directory) / CACHE_FILE)
        if found is None:
            return None
        data, mapped = found
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("model") != model:
            return None
        if not _consistent(data) or not _sized(data):
            return None
        frame = make_frame(-1, data["ids"], data["cols"])
        frame._texts = _texts_from(data["texts"])
        if frame._texts is None:
            return None
        stats = lexical.TermStats.__new__(lexical.TermStats)
        stats.tf, stats.df = _rows_from(data["tf"]), Counter(data["df"])
        if stats.tf is None or stats.tf.lengths() != data["length"] or +stats.df != stats.tf.column_counts():
            return None
        stats._finish(data["length"])
        frame._stats, frame._df = stats, None if data["fdf"] is None else Counter(data["fdf"])
        if not (len(frame.ids) == len(frame._texts) == len(stats.tf)):
            return None
        stats._postings = _postings_from(data.get("postings"), stats.tf)
        release_pages()  # the checks read every page: let them go until a query needs them
        return frame
    except (OSError, ValueError, EOFError, TypeError, KeyError, OverflowError, MemoryError):
        return None


def _sized(data: dict) -> bool:
    """The arrays as long as the entries say, before anything reads them whole (a sparse file can
    claim gigabytes of offsets)."""
    n = len(data["ids"])
    texts, tf = data["texts"], data["tf"]
    try:
        return len(texts["offsets"]) == 8 * (n + 1) and len(tf["indptr"]) == 8 * (n + 1) \
            and len(tf["indices"]) == len(tf["counts"])
    except (KeyError, TypeError):
        return False


def _consistent(data: dict) -> bool:
    """Every part of a loaded cache has the shape and types a full count makes (a damaged or
    forged file is thrown away and counted again, never half used)."""
    ids, texts, tf, length, cols = data["ids"], data["texts"], data["tf"], data["length"], data["cols"]
    if not all(isinstance(x, list) for x in (ids, length)) or not isinstance(cols, dict) \
            or not isinstance(tf, dict) or not isinstance(texts, dict):
        return False
    n = len(ids)
    if not len(length) == n or len(set(ids)) != n:
        return False
    if any(not isinstance(cols.get(c), list) or len(cols[c]) != n for c in _COLUMNS):
        return False
    if not all(type(i) is str for i in ids):
        return False
    if not all(type(x) is int and x >= 0 for x in length):
        return False
    counted = [data["df"]] + ([] if data["fdf"] is None else [data["fdf"]])  # fdf: only when it was computed
    return all(isinstance(d, dict) and all(type(k) is str and type(v) is int and v >= 0 for k, v in d.items())
               for d in counted)


def _texts_from(data):
    """The cached texts (retrieval.text_column), or None when the buffer and offsets do not make them."""
    import numpy as np

    from memstrata.retrieval.text_column import TextColumn

    try:
        if not isinstance(data["data"], (bytes, memoryview)):
            return None
        texts = TextColumn(data["data"], np.frombuffer(data["offsets"], dtype="<i8"))
    except (KeyError, TypeError, ValueError):
        return None
    return texts if texts.well_formed() else None


def _rows_data(rows) -> dict:
    """The per-entry stem counts (retrieval.term_rows) as plain bytes, each row's columns sorted."""
    from scipy import sparse

    indptr, indices, counts = rows.gathered()  # copies: a mapped cache's arrays are read-only
    csr = sparse.csr_matrix((counts, indices, indptr), shape=(len(rows), len(rows.terms)))
    csr.sort_indices()
    return {"terms": list(rows.terms), "indptr": csr.indptr.astype("<i8").tobytes(),
            "indices": csr.indices.astype("<i4").tobytes(), "counts": csr.data.astype("<i4").tobytes()}


def _rows_from(data):
    """The cached stem counts, or None when they are not what a count makes: terms distinct
    strings, rows in order, each row's columns in range, increasing (no stem twice) and counted
    at least once."""
    import numpy as np

    from memstrata.retrieval.term_rows import TermRows

    try:
        terms = data["terms"]
        indptr = np.frombuffer(data["indptr"], dtype="<i8")
        indices = np.frombuffer(data["indices"], dtype="<i4")
        counts = np.frombuffer(data["counts"], dtype="<i4")
    except (KeyError, TypeError, ValueError):
        return None
    if not isinstance(terms, list) or not all(type(t) is str for t in terms) or len(set(terms)) != len(terms):
        return None
    if len(indptr) == 0 or indptr[0] != 0 or indptr[-1] != len(indices) or len(indices) != len(counts) \
            or np.any(np.diff(indptr) < 0) or np.any(counts <= 0):
        return None
    if len(indices) and (indices.min() < 0 or indices.max() >= len(terms)):
        return None
    step = np.diff(indices.astype(np.int64))
    starts = np.zeros(len(indices), dtype=bool)
    starts[indptr[:-1][indptr[:-1] < len(indices)]] = True
    if np.any((step <= 0) & ~starts[1:]):
        return None
    return TermRows(terms, {t: c for c, t in enumerate(terms)}, indptr, indices, counts)


def _postings_data(stats) -> dict | None:
    """The inverted index as plain bytes (one built segment only: what a full count makes); its
    columns are the stem counts' terms (`_rows_data`)."""
    postings = getattr(stats, "_postings", None)
    if postings is None or len(postings.segments) != 1 or postings.segments[0][1] is not None \
            or postings.vocab is not stats.tf.vocab:
        return None
    matrix = postings.segments[0][0]
    return {"columns": int(matrix.shape[1]), "rows": int(matrix.shape[0]),
            "indptr": matrix.indptr.astype("<i8").tobytes(), "indices": matrix.indices.astype("<i4").tobytes(),
            "data": matrix.data.astype("<f4").tobytes()}


def _postings_from(data, rows):
    """The cached inverted index over the stem counts `rows` (retrieval.term_rows), or None (then
    it is built on first use) when absent or inconsistent."""
    if not isinstance(data, dict):
        return None
    try:
        import numpy as np
        from scipy import sparse

        from memstrata.retrieval.postings import Postings

        n, columns = len(rows), data["columns"]
        indptr = np.frombuffer(data["indptr"], dtype="<i8")
        indices = np.frombuffer(data["indices"], dtype="<i4")
        values = np.frombuffer(data["data"], dtype="<f4")
        if (data["rows"] != n or type(columns) is not int or columns != len(rows.terms)
                or len(indptr) != columns + 1 or not np.all(np.isfinite(values)) or np.any(values <= 0)
                or indptr[0] != 0 or indptr[-1] != len(indices) or len(indices) != len(values)
                or np.any(np.diff(indptr) < 0) or (len(indices) and (indices.min() < 0 or indices.max() >= n))):
            return None
        matrix = sparse.csc_matrix((values, indices, indptr), shape=(n, columns))
        # the same counts as the rows, per term and per entry (a full count writes both from one source)
        if not (np.array_equal(np.diff(indptr), np.bincount(rows.indices, minlength=columns))
                and np.allclose(np.bincount(rows.indices, weights=rows.counts, minlength=columns),
                                np.asarray(matrix.sum(axis=0)).ravel())
                and np.allclose(np.bincount(indices, weights=values, minlength=n), rows.lengths())):
            return None
        return Postings(rows.vocab, [(matrix, None)], n)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
