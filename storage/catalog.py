"""A derived SQLite catalog of entry metadata keyed by path (size/mtime), rebuildable from the tree."""
from __future__ import annotations

import itertools
import os
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path

from memstrata.storage.errors import CorruptEntry
from memstrata.storage import folder_stamps, holders, layout
from memstrata.storage.atomic import ensure_dir
from memstrata.storage.entry import Entry
from memstrata.storage.entry_files import (  # noqa: F401  (where entry files are; imported from here too)
    ENTRY_FILE_MAX_BYTES, SKIPPED_FILES, VAULT_SKIPPED_FILES, entry_file_stat, is_entry_path, is_entry_path_in,
    iter_entry_files, printable_name, read_entry_file,
)
from memstrata.storage.paths import category_of
from memstrata.storage.safe_io import check_write_target
from memstrata.storage.catalog_db import (  # noqa: F401  (the schema's names, imported from here too)
    CORRELATION, IMPORTANCE, OWN_ID, SCHEMA_VERSION, TOUCHED_ORDER, USES, INSERT_ROW, damaged, entry_from_row, open_db, rebuilt_when_damaged, row_of,
)

CACHE_DIR = ".cache"
CATALOG_FILE = "catalog.db"
PARSED_MAX = 20000  # parsed entries a Catalog keeps for the next listing
@dataclass
class RefreshReport:
    """What a refresh found changed on disk since the catalog last looked."""

    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


_CONNECTION_SERIALS = itertools.count(1)  # Catalog.version: one per connection opened in this process


class Catalog:
    """Entry metadata for fast list/filter/lookup; the tree stays the source of truth."""

    def __init__(self, root: Path, watcher=None):
        self.root = Path(root)
        # With a TreeWatcher (storage/watcher.py) refresh() skips its walk while no file changed
        # since the last complete one; parsed entries are kept per path and given out as copies.
        self._watcher = watcher
        self._walked_at = None
        self._parsed: dict[str, tuple[str, Entry]] = {}
        self.skipped_folders: list[str] = []  # folders the last walk could not open (permissions)
        self.bad_names: list[str] = []  # names the last walk skipped: not UTF-8, or holding a newline
        self.id_key = layout.id_key(self.root)
        self.vault = layout.is_adopted(self.root)
        self.db_path = check_write_target(self.root, layout.path(self.root, f"{CACHE_DIR}/{CATALOG_FILE}"))
        # Why this catalog lives in memory for this process (None: on disk). It is derived data:
        # a damaged file is rebuilt, and a disk that takes no writes still lets reads work.
        self.note: str | None = None
        self._replacing = False
        self._verified = False  # _verify_once: the file was checked whole before this catalog's first write
        self._counted_conn, self._conn_serial = None, 0  # version()
        self._count: tuple = (None, 0)  # (version, entries) of the last count()
        try:
            ensure_dir(self.db_path.parent)
            self._conn = open_db(self.db_path)
        except (sqlite3.DatabaseError, OSError) as exc:
            self._conn = self._recover(exc)
            if damaged(exc):
                self._say_rebuilt(exc)

    def _recover(self, exc: BaseException) -> sqlite3.Connection:
        """Open a fresh catalog after `exc`: a folder at its path is moved aside, a damaged file is
        removed (derived); when the disk takes no writes, the catalog lives in memory."""
        path = self.db_path
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.replace(path, f"{path}.not-a-catalog-{os.getpid()}")  # not ours to delete
            elif isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)
            return open_db(path)
        except (sqlite3.DatabaseError, OSError) as again:
            return self._in_memory(again)

    def _replace_damaged(self, exc: BaseException) -> None:
        """A catalog found damaged while in use: removed, opened anew and filled from the tree."""
        self._replacing = True  # the refill runs the decorated methods: no second rebuild inside
        try:
            old, self._conn = self._conn, None
            old.close()
            self._walked_at = None
            self._parsed.clear()
            self._conn = self._recover(exc)
            self.refresh()
        finally:
            self._replacing = False
        self._say_rebuilt(exc)

    def _say_rebuilt(self, exc: BaseException) -> None:
        """One line on stderr: the user learns the file was damaged, and that nothing was lost."""
        rel = layout.at(self.root, f"{CACHE_DIR}/{CATALOG_FILE}")
        why = " ".join(str(exc).replace("*** in database main ***", "").split())[:200]  # quick_check's lines
        try:
            sys.stderr.write(f"mem: note: the catalog {rel} was damaged ({why}); rebuilt from the files "
                             "(derived data: nothing lost)\n")
        except (OSError, ValueError):  # a closed stderr: the rebuild stands all the same
            pass

    def _in_memory(self, exc: BaseException) -> sqlite3.Connection:
        self.note = f"the catalog cannot be written ({exc}); kept in memory for this run"
        self._walked_at = None
        self._parsed.clear()
        return open_db(":memory:")

    def _write(self, action):
        """Run a catalog write; if the disk refuses it (full, read-only, I/O error), move to memory,
        fill it from the tree and run it again."""
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if self.note is not None:
                raise
            old, self._conn = self._conn, self._in_memory(exc)
            old.close()
            self.refresh()
            return action()

    def close(self) -> None:
        self._conn.close()

    # -- keeping it in line with the tree ---------------------------------------------
    def refresh(self) -> RefreshReport:
        """Re-read files whose size or mtime changed; drop rows of files that are gone."""
        report = RefreshReport()
        generation, changed = (self._watcher.changes_since(self._walked_at) if self._watcher is not None
                               else (None, None))
        updates = []
        if changed is not None:  # the watcher names every file changed since the last refresh
            for rel in sorted(p for p in changed if is_entry_path(p, self.vault)):
                row = self._conn.execute("SELECT size, mtime_ns FROM entries WHERE path = ?", (rel,)).fetchone()
                st = entry_file_stat(self.root, rel)
                if st is None:
                    if row is not None:
                        report.removed.append(rel)
                elif row is None or (row[0], row[1]) != (st.st_size, st.st_mtime_ns):
                    updates.append(self._read_row(rel, st, report))
        else:
            known = {row[0]: (row[1], row[2]) for row in self._conn.execute("SELECT path, size, mtime_ns FROM entries")}
            seen = set()
            skipped: list[str] = []
            bad: list[str] = []
            folders: list = []
            for rel, st in iter_entry_files(self.root, skipped, bad, folders=folders):
                seen.add(rel)
                if known.get(rel) != (st.st_size, st.st_mtime_ns):
                    updates.append(self._read_row(rel, st, report))
            # files under a folder that cannot be opened are not gone: their rows stay until it opens again
            report.removed = [p for p in known if p not in seen
                              and not any(p.startswith(folder + "/") for folder in skipped)]
            self.skipped_folders = skipped
            self.bad_names = bad
        if updates or report.removed:
            def store():
                with self._conn:
                    self._conn.execute("BEGIN")
                    self._conn.executemany(INSERT_ROW, updates)
                    self._conn.executemany("DELETE FROM entries WHERE path = ?", [(p,) for p in report.removed])
                    holders.note(self._conn, updates, report.removed)
            try:
                store()
            except sqlite3.OperationalError as exc:  # the disk takes no writes: the same rows, in memory
                if self.note is not None:
                    raise
                old, self._conn = self._conn, self._in_memory(exc)
                old.close()
                return self.refresh()
            for rel in report.removed:
                self._parsed.pop(rel, None)
        if changed is None:
            self._keep_folders(folders, skipped)
        self._walked_at = generation
        return report

    def refresh_if_moved(self) -> bool:
        """A cheaper refresh for a process that has no watcher and must answer at once (a cold
        session start): the names of the tree's files are compared with the catalog's (no stat of each
        file), and only when a file was added or removed is the catalog refreshed. A file changed in
        place keeps its row until the next refresh. When no folder changed since the last complete
        walk, not even the names are read (storage/folder_stamps.py). Whether it refreshed."""
        if folder_stamps.unchanged(self._conn, self.root):
            return False  # no file added, removed or renamed since the last complete walk
        skipped: list[str] = []
        folders: list = []
        names = {rel for rel, _ in iter_entry_files(self.root, skipped, stats=False, folders=folders)}
        known = {row[0] for row in self._conn.execute("SELECT path FROM entries")}
        if names - known or any(p not in names and not any(p.startswith(f + "/") for f in skipped) for p in known):
            self.refresh()
            return True
        self._keep_folders(folders, skipped)
        return False

    def _keep_folders(self, folders: list, skipped: list[str]) -> None:
        """After a complete walk whose names the rows now match: its folders, for the next cold start
        (storage/folder_stamps.py). A walk that could not open a folder keeps none."""
        if self.note is not None:
            return  # in memory for this process: nobody after it reads them
        if skipped:
            folder_stamps.forget(self._conn)
        else:
            folder_stamps.record(self._conn, folders)

    def _read_row(self, rel: str, st, report: RefreshReport) -> tuple:
        report.changed.append(rel)
        try:
            return row_of(rel, read_entry_file(self.root, rel), st)
        except (CorruptEntry, OSError) as exc:
            message = exc.message if isinstance(exc, CorruptEntry) else str(exc)
            report.errors[rel] = message
            return (rel, None, st.st_size, st.st_mtime_ns, category_of(rel), None, message, None, None, None)

    def _verify_once(self) -> None:
        """Before this catalog's first write, `PRAGMA quick_check` (about 2 ms per 1,000 entries): a
        garbled index page can answer a lookup wrongly without an error; a damaged file is rebuilt."""
        if self._verified or self.note is not None:
            return
        self._verified = True
        found = self._conn.execute("PRAGMA quick_check").fetchone()
        if not found or found[0] != "ok":
            self._replace_damaged(sqlite3.DatabaseError(f"quick_check: {found[0] if found else 'no answer'}"))

    def record(self, entry: Entry) -> None:
        """Note an entry just written by the engine (its file exists at entry.path)."""
        self._verify_once()
        row = row_of(entry.path, entry, (self.root / entry.path).stat())

        def store():
            with self._conn:
                self._conn.execute("BEGIN")
                self._conn.execute(INSERT_ROW, row)
                holders.note(self._conn, [row], [])
        self._write(store)

    def forget(self, rel: str) -> None:
        self._verify_once()
        self._write(lambda: self._conn.execute("DELETE FROM entries WHERE path = ?", (rel,)))
        self._parsed.pop(rel, None)

    def rebuild(self) -> RefreshReport:
        self._conn.execute("DELETE FROM entries")
        self._walked_at = None
        self._parsed.clear()
        return self.refresh()

    # -- questions --------------------------------------------------------------------
    def version(self) -> tuple:
        """A key that changes whenever a row does: this connection's writes and other processes'
        commits (for caches derived from every row, such as the days in use). A connection gets a
        serial of its own, never given again in this process: a rebuilt catalog's new connection can
        have the old one's id and as many changes."""
        if self._conn is not self._counted_conn:
            self._counted_conn = self._conn
            self._conn_serial = next(_CONNECTION_SERIALS)
        return (self._conn_serial, self._conn.total_changes, self._conn.execute("PRAGMA data_version").fetchone()[0])

    def first_seen(self, entry_id: str) -> str | None:
        """The path that held `entry_id` first, as far as this catalog saw (storage/holders.py)."""
        return holders.first_seen(self._conn, entry_id)

    def paths_of(self, entry_id: str) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT path FROM entries WHERE id = ? ORDER BY path", (entry_id,))]

    def get(self, rel: str) -> Entry | None:
        row = self._conn.execute("SELECT path, category, meta FROM entries WHERE path = ? AND meta IS NOT NULL",
                                 (rel,)).fetchone()
        return self._entry(row) if row else None

    def entries(self, category: str | None = None, touched_since: float | None = None) -> list[Entry]:
        """Metadata of every parseable entry (bodies not loaded), optionally within a category subtree
        and, with `touched_since` (epoch seconds), only the important ones and those touched since."""
        where, args = ["meta IS NOT NULL"], []
        if category:
            where.append("(category = ? OR category LIKE ?)")
            args += [category, category.replace("%", r"\%").replace("_", r"\_") + "/%"]
        if touched_since is not None:
            where.append("(important = 1 OR touched IS NULL OR touched >= ?)")
            args.append(float(touched_since))
        rows = self._conn.execute(f"SELECT path, category, meta FROM entries WHERE {' AND '.join(where)} ORDER BY path",
                                  args)
        return [self._entry(r) for r in rows]

    def meta_rows(self) -> list[tuple]:
        """(path, meta text) of every parseable entry: for caches kept per row, which read only the
        rows whose metadata changed."""
        return self._conn.execute("SELECT path, meta FROM entries WHERE meta IS NOT NULL").fetchall()

    def _entry(self, row, copy: bool = True) -> Entry:
        """The entry of a catalog row, parsed once per metadata text (callers get their own copy)."""
        path, _category, meta = row
        cached = self._parsed.get(path)
        if cached is None or cached[0] != meta:
            if len(self._parsed) >= PARSED_MAX:
                self._parsed.clear()  # bounded: a long-lived service must not hold a huge tree twice
            cached = (meta, entry_from_row(row, self.id_key))
            self._parsed[path] = cached
        return cached[1].copy() if copy else cached[1]

    def latest_first(self, status: str | None = None, batch: int = 256):
        """Entries with a date (metadata, bodies not loaded), latest touched first (to the second, as
        their dates are kept) and, touched in the same second, by path, parsed as they are read: a
        caller that stops early never parses the rest (undated ones: `undated`); with `status`, only
        those of that status. The entries are the catalog's own, not copies: read them, never change them."""
        where = "meta IS NOT NULL AND touched IS NOT NULL" + (" AND json_extract(meta, '$.status') = ?" if status else "")
        rows = self._conn.execute(f"SELECT path, category, meta FROM entries WHERE {where} ORDER BY {TOUCHED_ORDER}",
                                  (status,) if status else ())
        while True:
            chunk = rows.fetchmany(batch)
            if not chunk:
                return
            for row in chunk:
                yield self._entry(row, copy=False)

    def undated(self) -> list[Entry]:
        """Entries with no date at all (no created, updated or last_access)."""
        rows = self._conn.execute("SELECT path, category, meta FROM entries WHERE meta IS NOT NULL AND touched IS NULL "
                                  "ORDER BY path")
        return [self._entry(r) for r in rows]

    def weighty(self, importance_at: float, correlation_above: float, limit: int) -> list[Entry]:
        """At most `limit` + 1 entries that are important, of importance `importance_at` or more, or
        whose correlation is above `correlation_above` (three index lookups)."""
        rows = self._conn.execute(
            f"SELECT path, category, meta FROM entries WHERE meta IS NOT NULL AND (important = 1 OR {IMPORTANCE} >= ? "
            f"OR {CORRELATION} > ?) LIMIT ?", (float(importance_at), float(correlation_above), int(limit) + 1))
        return [self._entry(r, copy=False) for r in rows]

    def max_uses(self) -> int:
        """The highest `access_count` an entry's file holds (0 for none)."""
        value = self._conn.execute(f"SELECT max({USES}) FROM entries").fetchone()[0]
        try:
            return max(0, int(value or 0))
        except (TypeError, ValueError):
            return 0

    def paths_of_own_id(self, own_id: str) -> list[str]:
        """Paths of the vault notes whose own `id:` (a key of the user's, beside the engine's `mem-id:`)
        reads `own_id`; none in a tree made by `mem init`, where `id:` is the engine's."""
        if not self.vault:
            return []
        return [r[0] for r in self._conn.execute(
            f"SELECT path FROM entries WHERE meta IS NOT NULL AND {OWN_ID} = ? ORDER BY path", (own_id,))]

    def ids(self) -> list[str]:
        """The ids of all parseable entries."""
        return [r[0] for r in self._conn.execute("SELECT id FROM entries WHERE meta IS NOT NULL AND id IS NOT NULL")]

    def ids_starting(self, prefix: str, limit: int = 2) -> list[str]:
        """Distinct ids that start with `prefix` (at most `limit`: enough to tell unique from ambiguous)."""
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return [r[0] for r in self._conn.execute(
            "SELECT DISTINCT id FROM entries WHERE meta IS NOT NULL AND id LIKE ? ESCAPE '\\' ORDER BY id LIMIT ?",
            (pattern, limit))]

    def unidentified(self) -> list[str]:
        """Paths of readable entries without a usable id (hand-made files): they get one (storage/adopt.py)."""
        return [r[0] for r in self._conn.execute(
            "SELECT path FROM entries WHERE meta IS NOT NULL AND (id IS NULL OR id = '') ORDER BY path")]

    def errors(self) -> dict[str, str]:
        return {r[0]: r[1] for r in self._conn.execute("SELECT path, error FROM entries WHERE error IS NOT NULL")}

    def entries_exact(self, category: str, read_only: bool = False) -> list[Entry]:
        """Metadata of the entries directly in `category` (its archived/ included, not subcategories).
        `read_only`: the cached entries themselves, not copies, for a caller that never changes them
        (the INDEX.md listings: copying 10k entries was most of a full rewrite's cost)."""
        rows = self._conn.execute(
            "SELECT path, category, meta FROM entries WHERE meta IS NOT NULL AND category = ? ORDER BY path",
            (category,))
        return [self._entry(r, copy=not read_only) for r in rows]

    def file_stats(self) -> list[tuple]:
        """(path, size, mtime_ns, parsed) of every row: the files as the catalog last read them."""
        return self._conn.execute(
            "SELECT path, size, mtime_ns, meta IS NOT NULL FROM entries ORDER BY path").fetchall()

    def category_summary(self) -> dict[str, tuple[int, str | None]]:
        """category -> (entries directly in it, latest `updated` as ISO text)."""
        rows = self._conn.execute(
            "SELECT category, count(*), max(updated) FROM entries WHERE meta IS NOT NULL GROUP BY category")
        return {r[0]: (r[1], r[2]) for r in rows}

    def category_counts(self) -> dict[str, int]:
        rows = self._conn.execute("SELECT category, count(*) FROM entries WHERE meta IS NOT NULL GROUP BY category")
        return {r[0]: r[1] for r in rows}

    def count(self) -> int:
        """The entries, counted again only when a row changed (`version`): the service asks after every call."""
        version = self.version()
        if self._count[0] != version:
            self._count = (version, self._conn.execute("SELECT count(*) FROM entries WHERE meta IS NOT NULL").fetchone()[0])
        return self._count[1]


# Every use of the file: a damaged one is rebuilt from the tree and the call runs again.
for _name in ("refresh", "refresh_if_moved", "record", "forget", "rebuild", "first_seen", "paths_of", "get", "entries", "paths_of_own_id",
              "ids", "ids_starting", "unidentified", "errors", "entries_exact", "file_stats", "category_summary",
              "category_counts", "count"):
    setattr(Catalog, _name, rebuilt_when_damaged(getattr(Catalog, _name)))

