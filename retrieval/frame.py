"""The chunk table's in-memory frame per table version: entry metadata, English texts, term statistics."""
from __future__ import annotations

from dataclasses import dataclass

from memstrata.retrieval import lexical, stats_cache
from memstrata.retrieval.text_column import TextColumn
from memstrata.retrieval.units import AFTER_SEP, SEP, entry_of, is_unit, number_of

# What recall and sync read of every entry (kept in memory per table version; the table also
# holds importance, weight, updated and last_access, which no in-memory step reads).
META_COLUMNS = ["id", "title", "category", "tier", "status", "tags", "created", "path", "hash", "size", "mtime_ns"]
MARKS_KEPT = 50_000  # candidates whose text marks a frame keeps (Frame.text_marks)


@dataclass
class Frame:
    """Chunk-0 metadata of every indexed entry, as parallel lists (cached per table version)."""

    version: int
    ids: list
    cols: dict

    def __post_init__(self):
        self.pos = {i: n for n, i in enumerate(self.ids)}
        self.by_path = {p: n for n, p in enumerate(self.cols["path"])}
        self._texts = None
        self._df = None
        self._stats = None
        self._reuse = None  # (previous frame, old position per entry or None): see VectorIndex.texts
        self._keys = None
        self._mentions: dict[str, list[int]] = {}  # name -> positions whose text mentions it (search.py)
        self._marks: dict[int, tuple] = {}  # position -> what the ranker reads of its whole text (text_marks)

    def rows_of(self, entry_id: str) -> list[str]:
        """The row keys of an entry: its id, or its session's turns (retrieval.units; ids are sorted)."""
        import bisect

        lo = bisect.bisect_left(self.ids, entry_id + SEP)
        hi = bisect.bisect_left(self.ids, entry_id + AFTER_SEP, lo)
        return ([entry_id] if entry_id in self.pos else []) + self.ids[lo:hi]

    def first_of(self, entry_id: str) -> int | None:
        """The position of an entry's row, or of its session's first unit (None: not indexed)."""
        rows = self.rows_of(entry_id)
        return self.pos[rows[0]] if rows else None

    def threads(self) -> list:
        """Per slot, the session whose turn it is and its turn number ((entry id, n)); None for an
        entry of its own (retrieval.fusion.time_structure links a session's turns in turn order)."""
        return [(entry_of(i), number_of(i)) if is_unit(i) else None for i in self.ids]

    def stamps(self):
        """Each entry's creation time as a float array (NaN: unknown), made once per frame: a query
        naming a date read 330,000 of them into an array each time (20 ms at 300,000 turns)."""
        if "_stamps" not in self.__dict__:
            import numpy as np

            self._stamps = np.fromiter((np.nan if c is None else c for c in self.cols["created"]),
                                       dtype=np.float64, count=len(self.ids))
        return self._stamps

    def text_marks(self, positions: list[int], marks_of) -> list[tuple]:
        """`marks_of(position)` for each position, each computed once per frame: the ranker reads its
        100 candidates' whole texts every query (a 30 KB note's regular expressions cost milliseconds)."""
        kept = self._marks
        if len(kept) + len(positions) > MARKS_KEPT:
            kept.clear()  # bounded: a long-lived service ranks many candidates of a large tree
        for p in positions:
            if p not in kept:
                kept[p] = marks_of(p)
        return [kept[p] for p in positions]

    def text_keys(self) -> list[tuple]:
        """Per entry, what its full-text column is made of besides the chunking: content hash,
        created, tags (equal keys: equal indexed text). Computed once per frame."""
        if self._keys is None:
            c = self.cols
            self._keys = [(h, cr, tuple(t or ())) for h, cr, t in zip(c["hash"], c["created"], c["tags"])]
        return self._keys


class FrameCache:
    """The frame of VectorIndex (a mixin): loaded once per table version, its texts and statistics
    carried over from the previous version for the entries whose text did not change.

    The host provides table(), meta(), dir, settings, _en_texts(ids) and the attributes
    _frame (the current frame) and _carry (the frame to carry texts and statistics from).
    """

    def _stale_frame(self) -> None:
        """The table changed: the next frame() reloads, carrying over what is still valid."""
        if self._frame is not None and self._frame._texts is not None:
            self._carry = self._frame
        self._frame = None

    def frame(self) -> Frame | None:
        """Chunk-0 metadata of all indexed entries (cached until the table version changes)."""
        table = self.table()
        if table is None:
            return None
        self._let_go_of_changed_maps()
        version = int(table.version)
        if self._frame is not None and self._frame.version == version:
            return self._frame
        self._stale_frame()  # changed by another process
        data = _python_columns(table.search().where("chunk = 0").select(META_COLUMNS).limit(None).to_arrow())
        ids = data["id"]
        order = sorted(range(len(ids)), key=ids.__getitem__)
        if order != list(range(len(ids))):
            # Entries in id order, not the table's physical order (an update moves its rows to
            # the end): positions, and so ties in ranking, do not depend on the write history,
            # and a version that changed only metadata keeps every position.
            data = {c: [v[i] for i in order] for c, v in data.items()}
        self._frame = Frame(version, data["id"], data)
        give_back_freed_memory()
        old = self._carry
        if old is not None and old.ids == self._frame.ids:  # e.g. only access times changed
            if all(old.cols[c] == data[c] for c in ("hash", "created", "tags")):  # the text keys
                self._frame._texts, self._frame._stats, self._frame._df = old._texts, old._stats, old._df
                if "_text_codes" in old.__dict__:  # retrieval/rerank.py distinct_entries
                    self._frame._text_codes = old._text_codes
            if old.cols["category"] == data["category"]:
                structure = getattr(old, "_structure", None)  # retrieval/search.py's time structure
                if structure is not None and old.cols["created"] == data["created"]:
                    self._frame._structure = structure
                for kept in ("_turns_by_category", "_category_codes"):  # retrieval/query_names.py
                    if kept in old.__dict__:
                        setattr(self._frame, kept, old.__dict__[kept])
        return self._frame

    def _let_go_of_changed_maps(self) -> None:
        """Forget the frames whose texts and statistics read a cache file changed or deleted since it
        was mapped (stats_cache.intact): the next frame carries from the file now in its place."""
        for name in ("_frame", "_carry"):
            kept = getattr(self, name)
            if kept is not None and kept._texts is not None and not stats_cache.intact(kept._texts.data):
                setattr(self, name, None)

    def texts(self, frame: Frame | None = None) -> TextColumn:
        """The English full-text column of every entry, frame order (loaded once per version;
        entries unchanged since the previous version keep their text, only the others are read)."""
        frame = frame or self.frame()
        if frame is None:
            return []
        if frame._texts is None:
            reuse = self._reusable(frame)
            if reuse is None:
                by_id = self._en_texts(None)
                frame._texts = TextColumn.of(by_id.get(i) or "" for i in frame.ids)
            else:
                old = self._carry
                by_id = self._en_texts([i for i, j in zip(frame.ids, reuse) if j is None])
                frame._texts = old._texts.carried(reuse, {n: by_id.get(i) or "" for n, (i, j)
                                                          in enumerate(zip(frame.ids, reuse)) if j is None})
                if old._mentions:  # the names asked about: only the new and changed texts are read for them
                    frame._mentions = _carried_mentions(old._mentions, len(old.ids), reuse, frame._texts)
                old._reuse = None  # no chains of old frames
                frame._reuse = (old, reuse)
                self._carry = None  # `frame` is the next one to carry from
        return frame._texts

    def _reusable(self, frame: Frame) -> list | None:
        """Old position per entry of `frame` whose indexed text is unchanged in the carried
        frame (None where changed or new); None when reloading everything is as cheap."""
        if self._carry is None:
            self._carry = stats_cache.load(self.dir, self.meta().get("model"), Frame)  # a new process
        old = self._carry
        if old is None or old._texts is None or old is frame:
            return None
        try:
            old_keys = old.text_keys()
            reuse = []
            for rid, key in zip(frame.ids, frame.text_keys()):
                j = old.pos.get(rid)
                reuse.append(j if j is not None and old_keys[j] == key else None)
        except (IndexError, TypeError, ValueError):  # a cache that loaded but is not what it claims
            self._carry = None
            return None
        changed = sum(1 for j in reuse if j is None)
        return reuse if changed <= max(500, len(reuse) // 4) else None


    def doc_freq(self, frame: Frame | None = None):
        frame = frame or self.frame()
        if frame._df is None:
            texts = self.texts(frame)
            old, reuse = frame._reuse or (None, None)
            if old is not None and old._df is not None:
                frame._df = lexical.doc_freqs_carried(old._df, old._texts, reuse, texts)
            else:
                frame._df = lexical.doc_freqs(texts)
            self._release_previous(frame)
        return frame._df

    def _release_previous(self, frame: Frame) -> None:
        """Let the previous frame go once the statistics it was kept for are carried over."""
        old = frame._reuse[0] if frame._reuse else None
        if frame._stats is not None and (frame._df is not None or old is None or old._df is None):
            frame._reuse = None

    def term_stats(self, frame: Frame | None = None) -> "lexical.TermStats":
        """In-memory BM25 statistics of the English column (built once per table version,
        carried over from the previous version for unchanged entries)."""
        frame = frame or self.frame()
        if frame._stats is None:
            texts = self.texts(frame)
            old, reuse = frame._reuse or (None, None)
            if old is not None and old._stats is not None:
                frame._stats = lexical.TermStats.carried(old._stats, reuse, texts)
                if old._df is not None:
                    # carried now, from the changed entries only: query_names reads them whatever the
                    # feedback weight, and once the previous frame was let go they were counted again
                    # from every text (seconds at 300,000 entries, after each write)
                    self.doc_freq(frame)
                if _overlaid(frame) > max(REBASE_MIN, len(frame.ids) // REBASE_SHARE):
                    self._map_statistics(frame)
            else:
                frame._stats = lexical.TermStats(texts)
                self.doc_freq(frame)
                self._map_statistics(frame)  # the next process starts from it, this one reads it mapped
            self._release_previous(frame)
            give_back_freed_memory()
        return frame._stats

    def _map_statistics(self, frame: Frame) -> None:
        """Write the frame's texts and statistics to the disk cache and use them from there, mapped
        (retrieval/stats_cache.py): at 330,000 entries they held some 300 MB of the service's memory.
        Kept as they are when the table moved on, the cache cannot be written or another process
        wrote it meanwhile."""
        from memstrata.retrieval.postings import Postings

        if _latest_version(self.table()) != frame.version:
            return  # written meanwhile (an entry purged, say): this frame's texts are not to be saved
        stats = frame._stats
        if stats._postings is None or len(stats._postings.segments) != 1 or stats._postings.segments[0][1] is not None:
            stats._postings, stats._postings_from = Postings.build(stats.tf), None  # one segment: the cache holds it
        model = self.meta().get("model")
        stats_cache.save(self.dir, frame, model)
        mapped = stats_cache.load(self.dir, model, Frame)
        if mapped is None or mapped.ids != frame.ids or mapped.text_keys() != frame.text_keys():
            return
        frame._texts, frame._stats = mapped._texts, mapped._stats  # same positions: names found stay found


# Texts and statistics outside the mapped cache (a new table version's new and changed entries) past
# this share of the entries (and at least REBASE_MIN) are written to the cache again and mapped.
REBASE_SHARE = 10
REBASE_MIN = 1000


def _latest_version(table) -> int | None:
    """The table's newest version, without moving the handle the running query reads."""
    try:
        versions = table.list_versions()
        return max(int(v["version"] if isinstance(v, dict) else v.version) for v in versions)
    except Exception:  # noqa: BLE001 - unknown: the cache is not written
        return None


def _overlaid(frame: Frame) -> int:
    return max(frame._texts.overlaid(), frame._stats.tf.overlaid())


def give_back_freed_memory() -> None:
    """Return to the system what loading a frame or its statistics allocated and freed: the C
    allocator and Arrow's pool keep freed memory for reuse, and after a load at 330,000 entries that
    was 140 MB of a service's resident size that nothing used (glibc's malloc_trim; elsewhere nothing)."""
    import ctypes

    try:
        import pyarrow

        pyarrow.default_memory_pool().release_unused()
    except (ImportError, AttributeError):
        pass
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


# columns with few distinct values (a session's turns share its title and path): one object per value
_SHARED_COLUMNS = ("title", "category", "tier", "status", "path")


def _python_columns(table) -> dict[str, list]:
    """An arrow table as {column: values}, equal titles, categories, tiers, statuses, paths and tag
    lists one object each (113 MB less at 330,000 entries, and faster than a str per row)."""
    out = {}
    for name in table.column_names:
        column = table.column(name)
        if name in _SHARED_COLUMNS:
            out[name] = _shared_values(column.combine_chunks().dictionary_encode())
        elif name == "tags":
            out[name] = _shared_lists(column.combine_chunks())
        else:
            out[name] = column.to_pylist()
    return out


def _shared_values(encoded) -> list:
    """A dictionary-encoded column as a list, one object per distinct value (None for null)."""
    import numpy as np

    values = np.array(encoded.dictionary.to_pylist() + [None], dtype=object)
    codes = encoded.indices.fill_null(len(values) - 1).to_numpy(zero_copy_only=False)
    return values[codes].tolist()


def _shared_lists(column) -> list:
    """A list<string> column as a list of lists, equal lists one object (None for a null list): each
    row's items as their codes among the distinct items (to_pylist and a tuple per row: 1.9 s at
    330,000 entries)."""
    import numpy as np

    if len(column) == 0:
        return []
    items = column.values.dictionary_encode()
    names = items.dictionary.to_pylist() + [None]
    codes = items.indices.fill_null(len(names) - 1).to_numpy(zero_copy_only=False).astype(np.int32)
    raw = codes.tobytes()
    offsets = column.offsets.to_numpy(zero_copy_only=False).tolist()
    valid = column.is_valid().to_numpy(zero_copy_only=False).tolist()
    seen: dict = {}
    out = []
    for n, ok in enumerate(valid):
        if not ok:
            out.append(None)
            continue
        lo, hi = offsets[n], offsets[n + 1]
        key = raw[4 * lo:4 * hi]
        kept = seen.get(key)
        if kept is None:
            kept = seen[key] = [names[c] for c in codes[lo:hi].tolist()]
        out.append(kept)
    return out


def _carried_mentions(mentions: dict, old_n: int, reuse: list, texts: list) -> dict:
    """A previous frame's {name: positions mentioning it} for a new frame (`reuse[n]`: the old position of
    unchanged entry n, None for a new or changed one): unchanged entries keep their answer, the others are
    read (retrieval/query_names.py scanned every text per name: 150 ms a name at 330,000 entries)."""
    import numpy as np

    old_pos = np.fromiter((-1 if j is None else j for j in reuse), dtype=np.int64, count=len(reuse))
    moved = np.full(old_n + 1, -1, dtype=np.int64)  # old position -> new position; slot -1 stays -1
    kept = old_pos >= 0
    moved[old_pos[kept]] = np.flatnonzero(kept)
    fresh = np.flatnonzero(~kept).tolist()
    out = {}
    for name, found in mentions.items():
        carried = moved[np.asarray(found, dtype=np.int64)] if found else np.zeros(0, dtype=np.int64)
        new = [n for n in fresh if name in texts[n] and lexical.mentions(texts[n], name)]
        out[name] = sorted(carried[carried >= 0].tolist() + new)
    return out
