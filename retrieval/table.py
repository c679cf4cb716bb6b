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
from memstrata.retrieval.table_rows import (arrow_rows, index_units, indexed_form, meta_values, row_id, rows_for,
                                            schema, session_context)
from memstrata.retrieval.units import AFTER_SEP, SEP, entry_of, is_unit, number_of, units
from memstrata.storage import layout
from memstrata.storage.codec import READ_RULES
from memstrata.storage.entry import Entry, valid_id

VECTORS_DIR = ".vectors"
TABLE_NAME = "chunks"
META_FILE = "meta.json"
SCHEMA_VERSION = 1
READ_META = "read_rules"  # meta.json: storage.codec.READ_RULES the rows were read by (absent: 1; retrieval/sync.py)


def sql_str(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


class VectorIndex(FrameCache):
    """The derived vector + full-text table of one memory tree."""

    def __init__(self, root: Path, settings, own_caches: bool = False):
        self.root = Path(root)
        self.settings = settings
        # True: LanceDB caches of this instance alone, not the process's (the doctor reads the files
        # as they are now: the shared caches may hold what a damaged file no longer says)
        self.own_caches = own_caches
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
            session = (lancedb.Session(index_cache_size_bytes=8 << 20, metadata_cache_size_bytes=8 << 20)
                       if self.own_caches else _session(lancedb, self.settings.index_cache_mb))
            self._db = lancedb.connect(str(self.dir), session=session)
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

    def rebuild_fts(self) -> None:
        """Build the full-text indexes again (after a damaged one was dropped). Caller holds the tree lock."""
        meta = self.meta()
        meta["fts"] = False
        self._write_meta(meta)
        if self.table() is not None:
            self._ensure_fts()

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
        parts = {row_id(e): units(e) for e in entries}  # a captured session: one unit per turn (retrieval/units.py)
        flat = [u for e in entries for u in parts[row_id(e)]]
        context = {k: v for us in parts.values() for k, v in session_context(us).items()}
        table = self.table()
        if table is None:
            return self._create_with(flat, embedder_fn(), progress, context)
        current = self._frame if self._frame is not None and self._frame.version == int(table.version) else None
        sessions = {key for key, us in parts.items() if is_unit(row_id(us[0]))}
        existing = self.fetch_rows(list(parts), units=sessions)  # a session's turns: a range filter each
        gone = [key for key in parts if key not in sessions and key not in existing]
        if gone:  # no row of its own: it may have been a session (its turns' rows are to go)
            existing.update(self.fetch_rows(gone, units=True))
        reuse = _reusable(parts, existing)
        fresh = [u for u in flat if row_id(u) not in reuse]
        ids = list(existing)  # every row of these entries is written again (a turn gone: its rows go)
        rows: list[dict] = []
        skipped = 0
        if fresh:
            embedder = embedder_fn()
            if self.model_matches(embedder):
                # the vectors of chunks the entries' rows still hold (a turn that grew, the turn after an
                # edited one) are reused; never chunk 0: it holds the whole text, and it may be a pooled mean
                known = {(r["kind"], r["text"]): r["vector"] for rows in existing.values() for r in rows
                         if r.get("vector") is not None and r["chunk"] != 0}
                rows = rows_for(self, fresh, embedder, progress, context, known=known)
            else:
                skipped = len(fresh)
                ids = [r["id"] for old in reuse.values() for r in old[:1]]
        for u in flat:
            old = reuse.get(row_id(u))
            if old:
                meta = meta_values(self.root, u)
                for r in old:
                    r.update(meta)
                    if r["chunk"] == 0:
                        r[lexical.EN_COLUMN] = lexical.en_text(r["text"], u.created, u.tags)
                rows.extend(old)
        # only rows that exist are deleted: a batch of new entries is one write (one table version)
        self.delete(ids, units=False, _optimize=False)
        if rows:
            table.add(arrow_rows(table, rows))
        self._ensure_fts()
        self._stale_frame()
        if current is not None and not fresh and self._patch_frame(current, flat):
            self._frame = current  # only metadata changed: no need to reload every entry's
        self.maybe_optimize()
        return {"embedded": len(fresh) - skipped, "updated": len(reuse), "skipped": skipped}

    def _create_with(self, entries: list[Entry], embedder, progress=None, context=None) -> dict:
        """`upsert` into a tree without a table (an adopt, a first sync): the rows are embedded
        before the table is created, so LanceDB's import (~2 s of Python, begun in the background by
        `lance_import.preload`) runs while onnxruntime embeds (it releases the GIL), not before. A kill before
        the table exists leaves no table; one after leaves a table the next sync fills."""
        rows = rows_for(self, entries, embedder, progress, context)
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

    def fetch_rows(self, ids: list[str], units=False) -> dict[str, list[dict]]:
        """Every row of these row keys, by key, in chunk order; `units` (True, or the ids it holds):
        an entry id also brings the rows of its session's turns (retrieval/units.py), each by its key."""
        table = self.table()
        if table is None or not ids:
            return {}
        out: dict[str, list[dict]] = {}
        for start in range(0, len(ids), 500):
            for r in table.search().where(_where(ids[start:start + 500], units)).limit(None).to_arrow().to_pylist():
                out.setdefault(r["id"], []).append(r)
        for rows in out.values():
            rows.sort(key=lambda r: r["chunk"])
        return out

    def delete(self, ids: list[str], units=True, _optimize: bool = True) -> None:
        """Drop the rows of these entries and row keys; `units` (True, or the ids it holds): an entry
        id takes its session's turns with it (False: `ids` are every row key to drop, as sync's plan)."""
        table = self.table()
        if table is None or not ids:
            return
        for start in range(0, len(ids), 500):
            table.delete(_where(ids[start:start + 500], units))
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
        from memstrata.retrieval import ann

        ann.optimize(table, cleanup_older_than=timedelta(minutes=self.settings.index_cleanup_minutes))
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


_SESSIONS: dict = {}  # index cache size in MB -> the LanceDB session every connection of this process shares
_METADATA_CACHE_BYTES = 64 << 20


def _session(lancedb, megabytes: int):
    """One LanceDB session (its caches) per cache size, shared by every tree and instance of the
    process. Each connection used to get its own, whose index cache (up to 6 GB) kept every index
    page a search ever read: at 300,000 turns the service grew by tens of MB a query."""
    session = _SESSIONS.get(megabytes)
    if session is None:
        session = lancedb.Session(index_cache_size_bytes=megabytes << 20, metadata_cache_size_bytes=_METADATA_CACHE_BYTES)
        # a changed setting lets the other values' sessions go with the connections still using them
        _SESSIONS.clear()
        _SESSIONS[megabytes] = session
    return session


def _where(ids: list[str], units) -> str:
    """A filter for the rows of `ids`; `units` (True, or the ids it holds): also of the turns of each
    entry id (a range of keys `<id>#...`, retrieval/units.py)."""
    where = "id IN (" + ",".join(sql_str(i) for i in ids) + ")"
    ranges = [f"(id >= {sql_str(i + SEP)} AND id < {sql_str(i + AFTER_SEP)})" for i in ids
              if (units is True or (units and i in units)) and valid_id(i)]
    return " OR ".join([where] + ranges)


def _reusable(parts: dict[str, list[Entry]], existing: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """The old rows each unit keeps (its vectors are not embedded again), by unit key: an entry's rows
    when its text is the same; a session turn's when a turn of the session had its text and the
    same text before it (its context chunk is then right too), wherever that turn was numbered."""
    old: dict[str, list] = {}
    for rid, rows in existing.items():
        old.setdefault(entry_of(rid), []).append((number_of(rid), rows))
    out: dict[str, list[dict]] = {}
    for key, us in parts.items():
        pool: dict[tuple, list] = {}
        before = None
        for _, rows in sorted(old.get(key, []), key=lambda item: item[0]):
            pool.setdefault((rows[0]["hash"], before), []).append(rows)
            before = rows[0]["hash"]
        before = None
        for u in us:
            digest = chunking.content_hash(u.title, u.body)
            found = pool.get((digest, before))
            if found:
                out[row_id(u)] = found.pop(0)
            before = digest
    return out
