"""The catalog's SQLite file: its schema and migration, its indexes, a row of an entry, and what a damaged file looks like."""
from __future__ import annotations

import functools
import json
import math
import os
import sqlite3

from memstrata.storage import codec, folder_stamps, holders
from memstrata.storage.entry import Entry

SCHEMA_VERSION = 7  # another version is dropped and rebuilt (5: YAML tags as written, `true`; 6: ids too;
# 7: a note without `title:` is titled by its first H1, codec.READ_RULES)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    path TEXT PRIMARY KEY,
    id TEXT,
    size INTEGER,
    mtime_ns INTEGER,
    category TEXT,
    meta TEXT,
    error TEXT,
    updated TEXT,
    touched REAL,
    important INTEGER
);
CREATE INDEX IF NOT EXISTS entries_id ON entries(id);
CREATE INDEX IF NOT EXISTS entries_category ON entries(category);
""" + holders.TABLE + ";\n" + folder_stamps.TABLE + ";"
# A vault note's own `id:` (the user's key beside `mem-id:`) as text, what a reference is compared with.
OWN_ID = "CAST(json_extract(meta, '$.id') AS TEXT)"
# Made on open when missing (a catalog of this schema version made before it is kept: its holders stay).
_OWN_ID_INDEX = f"CREATE INDEX IF NOT EXISTS entries_own_id ON entries({OWN_ID})"
# The session start's order reads entries latest touched first and needs the highest use count
# (scoring/start_order.py): both are index lookups, not a parse of every row.
USES = "json_extract(meta, '$.access_count')"
IMPORTANCE = "json_extract(meta, '$.importance')"
CORRELATION = "json_extract(meta, '$.context_correlation')"
# The session start reads entries by the second they were last touched (what their metadata holds: dates
# are kept to the second), then by path: `TOUCHED_ORDER`, an index lookup (scoring/start_order.py).
TOUCHED_ORDER = "CAST(touched AS INTEGER) DESC, path"
_START_INDEXES = {"entries_touched_second": f"CREATE INDEX IF NOT EXISTS entries_touched_second ON entries({TOUCHED_ORDER})",
                  "entries_uses": f"CREATE INDEX IF NOT EXISTS entries_uses ON entries({USES})",
                  "entries_important": "CREATE INDEX IF NOT EXISTS entries_important ON entries(important)",
                  "entries_importance": f"CREATE INDEX IF NOT EXISTS entries_importance ON entries({IMPORTANCE})",
                  "entries_correlation": f"CREATE INDEX IF NOT EXISTS entries_correlation ON entries({CORRELATION})",
                  # the categories' counts (a session start's project, scoring/project_scope.py) without reading `meta`
                  "entries_category_parsed": "CREATE INDEX IF NOT EXISTS entries_category_parsed ON entries(category) "
                                             "WHERE meta IS NOT NULL"}


def damaged(exc: BaseException) -> bool:
    """Whether a sqlite error says the catalog file is damaged (a garbled page, not a database at all),
    not that the disk refused a write (OperationalError: full, read-only, locked)."""
    if not isinstance(exc, sqlite3.DatabaseError) or isinstance(exc, sqlite3.OperationalError):
        return False
    return getattr(exc, "sqlite_errorname", None) in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or \
        "malformed" in str(exc) or "not a database" in str(exc)


def rebuilt_when_damaged(method):
    """A Catalog method that, when the file turns out damaged half-way (one garbled page: every query
    touching it fails), rebuilds the catalog from the tree and runs again (the catalog is derived)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if not damaged(exc) or self._replacing:
                raise
            self._replace_damaged(exc)
            return method(self, *args, **kwargs)
    return run


INSERT_ROW = "INSERT OR REPLACE INTO entries VALUES (?,?,?,?,?,?,?,?,?,?)"


def open_db(path) -> sqlite3.Connection:
    """A catalog connection with the current schema (an older one is dropped); raises when the
    file is not a database, is a folder, or the disk takes no writes."""
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    try:
        if path != ":memory:":
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            _migrate(conn)
        conn.execute("SELECT count(*) FROM entries").fetchone()
        _add_missing_parts(conn)
    except BaseException:
        conn.close()
        raise
    if path != ":memory:":
        try:
            os.chmod(path, 0o600)
        except OSError:
            pass
    return conn


def _migrate(conn: sqlite3.Connection) -> None:
    """Make the current schema in one write transaction: two processes opening a new catalog at
    once must not drop the table the other just made ("no such table: entries")."""
    conn.execute("BEGIN IMMEDIATE")  # the second waits here, then sees the schema made
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            conn.execute("DROP TABLE IF EXISTS entries")
            conn.execute("DROP TABLE IF EXISTS holders")
            conn.execute("DROP TABLE IF EXISTS folders")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _add_missing_parts(conn: sqlite3.Connection) -> None:
    """What a catalog of this schema version made by an older release lacks: the index of the notes'
    own ids, the session start's indexes, the folders table. A disk that takes no writes leaves a
    lookup without its index (a scan of the rows) and the cold start without folder stamps (a walk)."""
    wanted = {"entries_own_id": _OWN_ID_INDEX, **_START_INDEXES}
    have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    for name, statement in wanted.items():
        if name in have:
            continue
        try:
            conn.execute(statement)
        except sqlite3.OperationalError:
            pass
    try:  # a catalog made before the folders were kept (storage/folder_stamps.py)
        conn.execute(folder_stamps.TABLE)
    except sqlite3.OperationalError:
        pass
    if "entries_touched_second" not in have:  # the touch orders before ties came by the second, then by path
        for old in ("entries_touched", "entries_touched_path"):
            try:
                conn.execute(f"DROP INDEX IF EXISTS {old}")
            except sqlite3.OperationalError:
                pass


def row_of(rel: str, entry: Entry, st) -> tuple:
    touched = entry.last_touched
    return (rel, entry.id, st.st_size, st.st_mtime_ns, entry.category, _meta_json(entry), None, _updated(entry),
            touched.timestamp() if touched is not None else None, 1 if entry.important else 0)


def _updated(entry: Entry) -> str | None:
    return codec.format_datetime(entry.updated) if entry.updated else None


def _meta_json(entry: Entry) -> str:
    return json.dumps(_finite(codec.entry_to_frontmatter(entry)), ensure_ascii=False, default=str, allow_nan=False)


def _finite(value):
    """`value` with YAML's .inf/.nan as text: SQLite's JSON (the own-id index reads `meta`) refuses
    Infinity and NaN, and one note's `rating: .inf` made every sync, list and doctor of the tree fail."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def entry_from_row(row, id_key: str = "id") -> Entry:
    path, category, meta = row
    return codec.entry_from_frontmatter(json.loads(meta), "", category=category, path=path, id_key=id_key)
