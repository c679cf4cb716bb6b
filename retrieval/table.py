"""The LanceDB chunk table under {root}/.vectors/: model meta, upserts, deletes, compaction, row reads.

All writes happen under the caller's tree lock (two processes merging the same ids would
duplicate rows). One row per chunk; chunk 0 rows carry the full-text columns, so full-text
search ranks whole entries while vector search ranks chunks. The entry frame kept in memory
per table version (VectorIndex.frame/texts/term_stats) is in frame.py; what a row holds, in table_rows.py.
"""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from memstrata.retrieval import chunking, lexical, stats_cache
from memstrata.retrieval.frame import META_COLUMNS, Frame, FrameCache  # META_COLUMNS: what the frame holds of an entry
from memstrata.retrieval.table_rows import arrow_rows, indexed_form, meta_values, row_id, rows_for, schema
from memstrata.storage import layout
from memstrata.storage.codec import READ_RULES
from memstrata.storage.entry import Entry

VECTORS_DIR = ".vectors"
TABLE_NAME = "chunks"
META_FILE = "meta.json"
SCHEMA_VERSION = 1
READ_META = "read_rules"  # meta.json: storage.codec.READ_RULES the rows were read by (absent: 1; retrieval/sync.py)


def sql_str(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


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

    def set_meta(self, key: str, value) -> None:
        """Keep `value` under `key` in meta.json (caller holds the tree lock)."""
        self._write_meta({**self.meta(), key: value})

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
                          "optimized_version": int(self._table.version), "fts": False, READ_META: READ_RULES})

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
                rows = rows_for(self, fresh, embedder, progress)
            else:
                skipped = len(fresh)
                ids = [row_id(e) for e in entries if row_id(e) in reuse]
        for e in entries:
            old = reuse.get(row_id(e))
            if old:
                meta = meta_values(self.root, e)
                for r in old:
                    r.update(meta)
                    if r["chunk"] == 0:
                        r[lexical.EN_COLUMN] = lexical.en_text(r["text"], e.created, e.tags)
                rows.extend(old)
        # only rows that exist are deleted: a batch of new entries is one write (one table version)
        self.delete([i for i in ids if i in existing], _optimize=False)
        if rows:
            table.add(arrow_rows(table, rows))
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
        rows = rows_for(self, entries, embedder, progress)
        self.create(embedder)
        if rows:
            self._table.add(arrow_rows(self._table, rows))
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
            meta = meta_values(self.root, e)
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
