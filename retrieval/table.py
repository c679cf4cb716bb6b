"""The LanceDB chunk table under {root}/.vectors/: schema, model meta, upserts, deletes, compaction, row reads.

All writes happen under the caller's tree lock (two processes merging the same ids would
duplicate rows). One row per chunk; chunk 0 rows carry the full-text columns, so full-text
search ranks whole entries while vector search ranks chunks. The entry frame kept in memory
per table version (VectorIndex.frame/texts/term_stats) is in frame.py.
"""
from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

from memstrata.retrieval import chunking, lexical, names, stats_cache
from memstrata.retrieval.embed_batch import embed_distinct, pooled_vector
from memstrata.retrieval.frame import META_COLUMNS, Frame, FrameCache  # META_COLUMNS: what the frame holds of an entry
from memstrata.storage import layout
from memstrata.storage.entry import Entry
from memstrata.storage.sidecars import with_full_body
from memstrata.storage.versions import with_kept_versions

VECTORS_DIR = ".vectors"
TABLE_NAME = "chunks"
META_FILE = "meta.json"
SCHEMA_VERSION = 1


def row_id(entry: Entry) -> str:
    """The row key of an entry: its id (a file without one is keyed by its path)."""
    return entry.id or f"path:{entry.path}"


def indexed_form(root: Path, entry: Entry) -> Entry:
    """The entry as the index (and grep) sees it: a compressed entry carries its full original
    text, and an entry with kept versions carries their text after its own (storage.versions).

    The one place of the rules "a compressed entry is found by what it said before compression"
    and "an old version stays findable"; `VectorIndex.upsert` applies it to whatever it is given,
    so no writer has to remember it. Applying it twice changes nothing (the result is marked).
    """
    if entry.extra.get(_INDEXED):
        return entry
    # a note's frontmatter aliases are other titles: a line under the title (retrieval.names)
    indexed = names.with_aliases(with_kept_versions(root, with_full_body(root, entry)))
    indexed = indexed.copy(extra={**indexed.extra, _INDEXED: True}) if indexed is not entry else \
        entry.copy(extra={**entry.extra, _INDEXED: True})
    indexed.read_stamp = entry.read_stamp  # the same file as read: its row records that stamp
    return indexed


_INDEXED = "__indexed__"  # marks an entry already in its indexed form (never written anywhere)


def _short(text: str) -> bool:
    """Short enough to be a conversation's turn (the bound fusion.time_structure puts on files)."""
    from memstrata.retrieval.fusion import CONVERSATION_MAX_BYTES

    return len(text.encode("utf-8")) <= CONVERSATION_MAX_BYTES


def sql_str(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _ts(dt) -> float | None:
    return dt.timestamp() if dt is not None else None


def schema(dim: int):
    import pyarrow as pa

    return pa.schema([
        ("id", pa.string()), ("chunk", pa.int32()), ("kind", pa.string()), ("text", pa.string()),
        (lexical.EN_COLUMN, pa.string()), (lexical.CJK_COLUMN, pa.string()),
        ("vector", pa.list_(pa.float32(), dim)),
        ("title", pa.string()), ("category", pa.string()), ("tier", pa.string()), ("status", pa.string()),
        ("tags", pa.list_(pa.string())), ("importance", pa.float64()), ("weight", pa.float64()),
        ("created", pa.float64()), ("updated", pa.float64()), ("last_access", pa.float64()),
        ("path", pa.string()), ("hash", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64()),
    ])


class VectorIndex(FrameCache):
    """The derived vector + full-text table of one memory tree."""

    def __init__(self, root: Path, settings):
        self.root = Path(root)
        self.settings = settings
        self.dir = layout.path(self.root, VECTORS_DIR)
        self._db = None
        self._table = None
        self._frame: Frame | None = None
        # The last frame whose texts were loaded: a new table version reuses its texts and term
        # statistics for the entries whose text did not change (a write touches few entries).
        self._carry: Frame | None = None
        self.hold_versions = False  # a rebuild under way (retrieval/rebuild.py) keeps old versions restorable

    # -- opening ------------------------------------------------------------------------
    def exists(self) -> bool:
        return (self.dir / META_FILE).is_file() and (self.dir / f"{TABLE_NAME}.lance").is_dir()

    def meta(self) -> dict:
        try:
            return json.loads((self.dir / META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def _write_meta(self, data: dict) -> None:
        from memstrata.storage.atomic import atomic_write_text

        atomic_write_text(self.dir / META_FILE, json.dumps(data, indent=1))

    def _connect(self):
        if self._db is None:
            from memstrata.retrieval.lance_import import import_lancedb

            lancedb = import_lancedb()
            self.dir.mkdir(parents=True, exist_ok=True)
            self._db = lancedb.connect(str(self.dir))
        return self._db

    def table(self):
        """The open table (cached), or None when there is no index yet."""
        if self._table is None:
            if not self.exists():
                return None
            try:
                self._table = self._connect().open_table(TABLE_NAME)
            except (FileNotFoundError, ValueError):
                return None
        return self._table

    def refresh(self) -> None:
        """See writes made by other processes (cheap: reads the latest manifest)."""
        if self._table is not None:
            if not self.exists():
                self.forget()
                return
            try:
                self._table.checkout_latest()
            except Exception:  # noqa: BLE001 - a dropped/recreated table: reopen on next use
                self.forget()

    def forget(self) -> None:
        self._table = None
        self._db = None
        self._frame = None
        self._carry = None


    def model_matches(self, embedder) -> bool:
        meta = self.meta()
        return meta.get("model") == embedder.name and meta.get("dim") == embedder.dim

    def create(self, embedder) -> None:
        """(Re)create an empty table for `embedder`'s vectors. Caller holds the tree lock."""
        db = self._connect()
        self._frame = None
        self._carry = None  # another model may chunk differently
        try:
            (self.dir / stats_cache.CACHE_FILE).unlink()  # derived from the old table: counted again
        except OSError:
            pass
        exists = (self.dir / f"{TABLE_NAME}.lance").is_dir()
        self._table = db.create_table(TABLE_NAME, schema=schema(embedder.dim),
                                      mode="overwrite" if exists else "create")
        self._write_meta({"schema": SCHEMA_VERSION, "model": embedder.name, "dim": embedder.dim,
                          "optimized_version": int(self._table.version), "fts": False})

    def adopt(self, data, embedder) -> None:
        """Replace the table with rows made elsewhere for `embedder`'s model (an index snapshot). Caller holds the tree lock."""
        self.create(embedder)
        if data.num_rows:
            self._table.add(data)
        self._ensure_fts()
        self._stale_frame()

    def _ensure_fts(self) -> None:
        meta = self.meta()
        if meta.get("fts"):
            return
        table = self._table
        if table.count_rows() == 0:
            return
        for column, config in lexical.fts_configs():
            table.create_index(column, config=config, replace=True)
        meta["fts"] = True
        self._write_meta(meta)

    # -- writing (caller holds the tree lock) --------------------------------------------
    def rows_for(self, entries: list[Entry], embedder, progress=None) -> list[dict]:
        """Chunk and embed entries (one batched call) into table rows."""
        s = self.settings
        per_entry = []
        texts = []
        before = self.previous_texts(entries) if s.chunk_context else {}
        for e in entries:
            chunks = chunking.chunk_entry(e.title, e.body, embedder.count_tokens, embedder.max_tokens,
                                          s.chunk_overlap_tokens, s.chunk_max_sentences,
                                          s.chunk_sentence_min_words)
            prev = before.get(row_id(e))
            if prev:
                chunks.append(chunking.Chunk(len(chunks), "context", chunking.context_text(prev, chunks[0].text)))
            per_entry.append(chunks)
            texts.extend(c.embedded for c in chunks if not c.pooled)
        vectors = embed_distinct(embedder, texts, progress)
        rows = []
        n = 0
        for e, chunks in zip(entries, per_entry):
            base = self._meta_values(e)
            full = chunks[0].text
            own = vectors[n:n + sum(1 for c in chunks if not c.pooled)]
            n += len(own)
            embedded = iter(own)
            for c in chunks:
                first = c.number == 0
                vector = pooled_vector(own, chunks) if c.pooled else next(embedded)
                rows.append({**base, "chunk": c.number, "kind": c.kind, "text": c.text,
                             lexical.EN_COLUMN: lexical.en_text(full, e.created, e.tags) if first else None,
                             lexical.CJK_COLUMN: lexical.cjk_text(full) if first else None,
                             "vector": vector})
        return rows

    def _arrow(self, rows: list[dict]):
        """The rows as one Arrow table of the table's schema; the vectors go in as one float32
        block (a list of Python floats per row was most of the cost of a write)."""
        import numpy as np
        import pyarrow as pa

        full = self._table.schema
        dim = full.field("vector").type.list_size
        vectors = np.asarray([r["vector"] for r in rows], dtype=np.float32).reshape(len(rows), dim)
        others = pa.schema([f for f in full if f.name != "vector"])
        data = pa.Table.from_pylist([{k: v for k, v in r.items() if k != "vector"} for r in rows], schema=others)
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), type=pa.float32()), dim)
        return data.append_column(full.field("vector"), column).select(full.names)

    def previous_texts(self, entries: list[Entry]) -> dict[str, str]:
        """For each entry, the text of the entry written just before it in its category, if that
        was within the sitting gap (from this batch or the table): its context chunk."""
        import bisect

        gap = 60.0 * self.settings.recall_session_gap_minutes
        timeline: dict[str, list[tuple[float, str]]] = {}
        texts: dict[str, str] = {}
        for e in entries:
            if e.created is not None:
                timeline.setdefault(e.category, []).append((e.created.timestamp(), row_id(e)))
                texts[row_id(e)] = chunking.entry_text(e.title, e.body)
        frame = self.frame()
        if frame is not None:
            wanted = set(timeline)
            for n, cat in enumerate(frame.cols["category"]):
                ts = frame.cols["created"][n]
                if cat in wanted and ts is not None and frame.ids[n] not in texts:
                    timeline[cat].append((ts, frame.ids[n]))
        for items in timeline.values():
            items.sort()
        out: dict[str, str] = {}
        missing: dict[str, str] = {}
        for e in entries:
            if e.created is None:
                continue
            items = timeline[e.category]
            ts = e.created.timestamp()
            i = bisect.bisect_left(items, (ts, "")) - 1
            # a conversation's turn (fusion.time_structure): written after the one before, both short
            if (i >= 0 and 0 < ts - items[i][0] <= gap and items[i][1] != row_id(e)
                    and _short(chunking.entry_text(e.title, e.body))):
                prev = items[i][1]
                if prev in texts:
                    if _short(texts[prev]):
                        out[row_id(e)] = texts[prev]
                else:
                    missing[row_id(e)] = prev
        if missing:
            rows = self.fetch_rows(sorted(set(missing.values())))
            for rid, prev in missing.items():
                if rows.get(prev) and _short(rows[prev][0]["text"]):
                    out[rid] = rows[prev][0]["text"]
        return out

    def _meta_values(self, e: Entry) -> dict:
        try:  # the file as its text was read; an entry the engine just wrote: as it is now
            size, mtime = e.read_stamp or (lambda st: (st.st_size, st.st_mtime_ns))(os.stat(self.root / e.path))
        except (OSError, TypeError):
            size, mtime = -1, -1
        return {"id": row_id(e), "title": e.title, "category": e.category, "tier": e.tier, "status": e.status,
                "tags": list(e.tags), "importance": float(e.importance),
                "weight": float(e.weight) if e.weight is not None else None,
                "created": _ts(e.created), "updated": _ts(e.updated), "last_access": _ts(e.last_access),
                "path": e.path, "hash": chunking.content_hash(e.title, e.body), "size": size, "mtime_ns": mtime}

    def upsert(self, entries: list[Entry], embedder_fn, progress=None) -> dict:
        """Replace the rows of `entries`; vectors are reused when the text did not change.

        `embedder_fn()` gives the embedder and is called only when something must be
        embedded (or the table created), so metadata-only updates never load the model.
        Entries that need embedding are skipped when the table holds another model's
        vectors (the next sync rebuilds it).
        """
        if not entries:
            return {"embedded": 0, "updated": 0, "skipped": 0}
        entries = [indexed_form(self.root, e) for e in entries]
        table = self.table()
        if table is None:
            return self._create_with(entries, embedder_fn(), progress)
        ids = [row_id(e) for e in entries]
        current = self._frame if self._frame is not None and self._frame.version == int(table.version) else None
        reuse: dict[str, list[dict]] = {}
        existing = self.fetch_rows(ids)
        for e in entries:
            rows = existing.get(row_id(e))
            if rows and rows[0]["hash"] == chunking.content_hash(e.title, e.body):
                reuse[row_id(e)] = rows
        fresh = [e for e in entries if row_id(e) not in reuse]
        rows: list[dict] = []
        skipped = 0
        if fresh:
            embedder = embedder_fn()
            if self.model_matches(embedder):
                rows = self.rows_for(fresh, embedder, progress)
            else:
                skipped = len(fresh)
                ids = [row_id(e) for e in entries if row_id(e) in reuse]
        for e in entries:
            old = reuse.get(row_id(e))
            if old:
                meta = self._meta_values(e)
                for r in old:
                    r.update(meta)
                    if r["chunk"] == 0:
                        r[lexical.EN_COLUMN] = lexical.en_text(r["text"], e.created, e.tags)
                rows.extend(old)
        # only rows that exist are deleted: a batch of new entries is one write (one table version)
        self.delete([i for i in ids if i in existing], _optimize=False)
        if rows:
            table.add(self._arrow(rows))
        self._ensure_fts()
        self._stale_frame()
        if current is not None and not fresh and self._patch_frame(current, entries):
            self._frame = current  # only metadata changed: no need to reload every entry's
        self.maybe_optimize()
        return {"embedded": len(fresh) - skipped, "updated": len(reuse), "skipped": skipped}

    def _create_with(self, entries: list[Entry], embedder, progress=None) -> dict:
        """`upsert` into a tree without a table (an adopt, a first sync): the rows are embedded
        before the table is created, so LanceDB's import (~2 s of Python, begun in the background by
        `lance_import.preload`) runs while onnxruntime embeds (it releases the GIL), not before. A kill before
        the table exists leaves no table; one after leaves a table the next sync fills."""
        rows = self.rows_for(entries, embedder, progress)
        self.create(embedder)
        if rows:
            self._table.add(self._arrow(rows))
        self._ensure_fts()
        self._stale_frame()
        self.maybe_optimize()
        return {"embedded": len(entries), "updated": 0, "skipped": 0}

    def _patch_frame(self, frame: Frame, entries: list[Entry]) -> bool:
        """Bring `frame` to the table's new version after a metadata-only upsert of `entries`
        (same text, date, tags and category: texts, statistics and time structure stay valid).
        False, and `frame` untouched, when that does not hold."""
        changes = []
        for e in entries:
            n = frame.pos.get(row_id(e))
            if n is None:
                return False
            meta = self._meta_values(e)
            c = frame.cols
            if (meta["hash"], meta["created"], meta["tags"], meta["category"]) != (
                    c["hash"][n], c["created"][n], list(c["tags"][n] or []), c["category"][n]):
                return False
            changes.append((n, meta))
        for n, meta in changes:
            old_path = frame.cols["path"][n]
            for column in META_COLUMNS:
                frame.cols[column][n] = meta[column]
            if old_path != meta["path"]:
                frame.by_path.pop(old_path, None)
                frame.by_path[meta["path"]] = n
        frame.version = int(self.table().version)
        frame._inactive = None  # statuses may have changed (retrieval/search.py keeps it)
        return True

    def fetch_rows(self, ids: list[str]) -> dict[str, list[dict]]:
        table = self.table()
        if table is None or not ids:
            return {}
        out: dict[str, list[dict]] = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            where = "id IN (" + ",".join(sql_str(i) for i in part) + ")"
            for r in table.search().where(where).limit(None).to_arrow().to_pylist():
                out.setdefault(r["id"], []).append(r)
        for rows in out.values():
            rows.sort(key=lambda r: r["chunk"])
        return out

    def delete(self, ids: list[str], _optimize: bool = True) -> None:
        table = self.table()
        if table is None or not ids:
            return
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            table.delete("id IN (" + ",".join(sql_str(i) for i in part) + ")")
        self._stale_frame()
        if _optimize:
            self.maybe_optimize()

    def maybe_optimize(self, force: bool = False) -> bool:
        """Compact fragments, update the full-text indexes, drop old versions every N versions."""
        table = self.table()
        if table is None or (self.hold_versions and not force):
            return False
        meta = self.meta()
        last = int(meta.get("optimized_version", 0))
        if not force and table.version - last < self.settings.index_optimize_every:
            return False
        current = self._frame if self._frame is not None and self._frame.version == int(table.version) else None
        table.optimize(cleanup_older_than=timedelta(minutes=self.settings.index_cleanup_minutes),
                       delete_unverified=False)
        meta["optimized_version"] = int(table.version)
        self._write_meta(meta)
        if current is not None:
            current.version = int(table.version)  # compaction changes no row
        else:
            self._stale_frame()
        return True

    # -- reading ------------------------------------------------------------------------
    def _en_texts(self, ids: list[str] | None) -> dict[str, str]:
        """English full-text column by id: of `ids`, or of every entry (None)."""
        table = self.table()
        if ids is not None and not ids:
            return {}
        out: dict[str, str] = {}
        batches = [None] if ids is None else [ids[s:s + 500] for s in range(0, len(ids), 500)]
        for part in batches:
            where = "chunk = 0" + ("" if part is None else " AND id IN (" + ",".join(map(sql_str, part)) + ")")
            data = table.search().where(where).select(["id", lexical.EN_COLUMN]).limit(None).to_arrow().to_pydict()
            out.update(zip(data["id"], data[lexical.EN_COLUMN]))
        return out
