"""A derived SQLite catalog of entry metadata keyed by path (size/mtime), rebuildable from the tree."""
from __future__ import annotations

import json
import os
import sqlite3
import stat as stat_mod
from dataclasses import dataclass, field
from pathlib import Path

from memstrata.storage.errors import CorruptEntry, InvalidInput, NotFound
from memstrata.storage import codec, holders, layout
from memstrata.storage.atomic import ensure_dir, is_temp_file
from memstrata.storage.entry import Entry
from memstrata.storage.paths import RESERVED_FILE_NAMES, VAULT_RESERVED_FILE_NAMES, category_of
from memstrata.storage.safe_io import FileTooLarge, check_write_target, read_regular_bytes

CACHE_DIR = ".cache"
CATALOG_FILE = "catalog.db"
SCHEMA_VERSION = 4  # a catalog of another version is dropped and rebuilt from the tree
PARSED_MAX = 20000  # parsed entries a Catalog keeps for the next listing
SKIPPED_FILES = RESERVED_FILE_NAMES  # compared lower-cased: INDEX.md, Config.md ... are never entries
VAULT_SKIPPED_FILES = VAULT_RESERVED_FILE_NAMES  # ... in an adopted vault (its README.md, config.md are notes)
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
""" + holders.TABLE + ";"


@dataclass
class RefreshReport:
    """What a refresh found changed on disk since the catalog last looked."""

    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


def _unencodable(name: str) -> bool:
    """A name that is not valid UTF-8 on disk (os gives it with surrogates): never an entry."""
    try:
        name.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def printable_name(rel: str) -> str:
    """A relative path as one line a report can show (undecodable bytes as \\xNN, newlines escaped)."""
    text = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") if _unencodable(rel) else rel
    return text.replace("\n", "\\n").replace("\r", "\\r")


def iter_entry_files(root: Path, skipped: list | None = None, bad_names: list | None = None):
    """Yield (relative path, os.stat_result) of every entry file in the tree.

    Hidden folders (.trash, .vectors, .full, ...), INDEX.md files, config.md, an agent's own
    MEMORY.md/CLAUDE.md, temporary files, files at the root, symlinks and anything that is not a
    regular file (a FIFO, socket or device named x.md: opening it could block) are not entries; in an
    adopted vault, files at the root, README.md and config.md are (is_entry_path).
    Plain string paths and one scandir per folder: a walk happens whenever no watcher can name the changes.
    A folder that cannot be opened (no permission) is skipped, and its relative path added to `skipped`.
    """
    base = str(root)
    cut = len(base) + 1
    stack = [base]
    vault = layout.is_adopted(root)
    names_out = VAULT_SKIPPED_FILES if vault else SKIPPED_FILES
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as items:
                for item in items:
                    name = item.name
                    if name.startswith("."):
                        continue
                    if _unencodable(name) or "\n" in name or "\r" in name:
                        # one file a teammate named badly never stops the tree: reported, skipped
                        if bad_names is not None and (name.endswith(".md") or item.is_dir(follow_symlinks=False)):
                            bad_names.append(printable_name(item.path[cut:].replace(os.sep, "/")))
                        continue
                    if item.is_dir(follow_symlinks=False):
                        stack.append(item.path)
                    elif ((vault or folder != base) and name.endswith(".md") and item.is_file(follow_symlinks=False)
                          and not is_temp_file(name) and name.lower() not in names_out):
                        st = _regular_stat(item)
                        if st is not None:
                            yield item.path[cut:].replace(os.sep, "/"), st
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError:
            if skipped is not None:
                skipped.append(folder[cut:].replace(os.sep, "/") or ".")
            continue


def _regular_stat(item: os.DirEntry):
    """The lstat of a scandir item when it is (still) a regular file, else None."""
    try:
        st = item.stat(follow_symlinks=False)
    except OSError:
        return None
    return st if stat_mod.S_ISREG(st.st_mode) else None


def is_entry_path(rel: str, vault: bool = False) -> bool:
    """Whether a path relative to the root is where an entry file can be (as iter_entry_files sees it).

    `vault` (an adopted tree, layout.is_adopted): notes at the top level are entries too, and so
    are README.md and config.md (the engine's own files are in `.memstrata/`)."""
    parts = rel.split("/")
    name = parts[-1]
    return ((vault or len(parts) > 1) and name.endswith(".md")
            and not any(p.startswith(".") or p in ("", "..") for p in parts)
            and name.lower() not in (VAULT_SKIPPED_FILES if vault else SKIPPED_FILES)
            and "\n" not in rel and "\r" not in rel and not _unencodable(rel))


def is_entry_path_in(root, rel: str) -> bool:
    """is_entry_path for the tree at `root` (a vault's rule when it is adopted)."""
    return is_entry_path(rel, layout.is_adopted(root))


def entry_file_stat(root: Path, rel: str):
    """os.stat_result of the entry file at `rel`, None if there is none (gone, a symlink, a folder, a FIFO ...)."""
    try:
        st = os.lstat(os.path.join(str(root), rel))
    except OSError:
        return None
    return st if stat_mod.S_ISREG(st.st_mode) else None


# An entry file past this is never parsed or indexed (a hand-made or pulled dump: it would take
# the service's memory to gigabytes and overflow LanceDB's offsets); max_entry_bytes stays below.
ENTRY_FILE_MAX_BYTES = 16 * 1024 * 1024


def read_entry_file(root: Path, rel: str) -> Entry:
    """Parse one entry file (CorruptEntry if it cannot be decoded or parsed).

    NotFound when `rel` is not where an entry can be (is_entry_path: a reserved name such as
    INDEX.md or config.md, a hidden folder, the root itself); safe_io.NotRegularFile (an
    OSError) when it is a symlink, FIFO, socket or device: those are never opened.
    """
    if not is_entry_path_in(root, str(rel)):
        raise NotFound(f"{rel} is not an entry file (a reserved name, a hidden folder or outside a category)")
    try:
        raw = read_regular_bytes(os.path.join(str(root), rel), ENTRY_FILE_MAX_BYTES)
    except FileTooLarge:
        raise CorruptEntry(f"{rel} is larger than {ENTRY_FILE_MAX_BYTES // (1024 * 1024)} MB: not read "
                           f"(an entry that size is a pasted dump, not a memory)") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptEntry(f"{rel} is not UTF-8 text") from None
    stem = Path(rel).stem
    try:
        return codec.parse(text, category=category_of(rel), path=rel, fallback_title=stem, id_key=layout.id_key(root))
    except InvalidInput as exc:  # a value the codec refuses (e.g. importance: urgent): this file only
        raise CorruptEntry(exc.message) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:  # e.g. created: -62135596801
        raise CorruptEntry(f"frontmatter value cannot be read ({type(exc).__name__}: {exc})") from None


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
        try:
            ensure_dir(self.db_path.parent)
            self._conn = _open(self.db_path)
        except (sqlite3.DatabaseError, OSError) as exc:
            self._conn = self._recover(exc)

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
            return _open(path)
        except (sqlite3.DatabaseError, OSError) as again:
            return self._in_memory(again)

    def _in_memory(self, exc: BaseException) -> sqlite3.Connection:
        self.note = f"the catalog cannot be written ({exc}); kept in memory for this run"
        self._walked_at = None
        self._parsed.clear()
        return _open(":memory:")

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
            for rel, st in iter_entry_files(self.root, skipped, bad):
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
                    self._conn.executemany(_INSERT, updates)
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
        self._walked_at = generation
        return report

    def _read_row(self, rel: str, st, report: RefreshReport) -> tuple:
        report.changed.append(rel)
        try:
            return _row(rel, read_entry_file(self.root, rel), st)
        except (CorruptEntry, OSError) as exc:
            message = exc.message if isinstance(exc, CorruptEntry) else str(exc)
            report.errors[rel] = message
            return (rel, None, st.st_size, st.st_mtime_ns, category_of(rel), None, message, None, None, None)

    def record(self, entry: Entry) -> None:
        """Note an entry just written by the engine (its file exists at entry.path)."""
        row = _row(entry.path, entry, (self.root / entry.path).stat())

        def store():
            with self._conn:
                self._conn.execute("BEGIN")
                self._conn.execute(_INSERT, row)
                holders.note(self._conn, [row], [])
        self._write(store)

    def forget(self, rel: str) -> None:
        self._write(lambda: self._conn.execute("DELETE FROM entries WHERE path = ?", (rel,)))
        self._parsed.pop(rel, None)

    def rebuild(self) -> RefreshReport:
        self._conn.execute("DELETE FROM entries")
        self._walked_at = None
        self._parsed.clear()
        return self.refresh()

    # -- questions --------------------------------------------------------------------
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

    def _entry(self, row) -> Entry:
        """The entry of a catalog row, parsed once per metadata text (callers get their own copy)."""
        path, _category, meta = row
        cached = self._parsed.get(path)
        if cached is None or cached[0] != meta:
            if len(self._parsed) >= PARSED_MAX:
                self._parsed.clear()  # bounded: a long-lived service must not hold a huge tree twice
            cached = (meta, _entry_from_row(row, self.id_key))
            self._parsed[path] = cached
        return cached[1].copy()

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

    def entries_exact(self, category: str) -> list[Entry]:
        """Metadata of the entries directly in `category` (its archived/ included, not subcategories)."""
        rows = self._conn.execute(
            "SELECT path, category, meta FROM entries WHERE meta IS NOT NULL AND category = ? ORDER BY path",
            (category,))
        return [self._entry(r) for r in rows]

    def category_summary(self) -> dict[str, tuple[int, str | None]]:
        """category -> (entries directly in it, latest `updated` as ISO text)."""
        rows = self._conn.execute(
            "SELECT category, count(*), max(updated) FROM entries WHERE meta IS NOT NULL GROUP BY category")
        return {r[0]: (r[1], r[2]) for r in rows}

    def category_counts(self) -> dict[str, int]:
        rows = self._conn.execute("SELECT category, count(*) FROM entries WHERE meta IS NOT NULL GROUP BY category")
        return {r[0]: r[1] for r in rows}

    def count(self) -> int:
        return self._conn.execute("SELECT count(*) FROM entries WHERE meta IS NOT NULL").fetchone()[0]


_INSERT = "INSERT OR REPLACE INTO entries VALUES (?,?,?,?,?,?,?,?,?,?)"


def _open(path) -> sqlite3.Connection:
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
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _row(rel: str, entry: Entry, st) -> tuple:
    touched = entry.last_touched
    return (rel, entry.id, st.st_size, st.st_mtime_ns, entry.category, _meta_json(entry), None, _updated(entry),
            touched.timestamp() if touched is not None else None, 1 if entry.important else 0)


def _updated(entry: Entry) -> str | None:
    return codec.format_datetime(entry.updated) if entry.updated else None


def _meta_json(entry: Entry) -> str:
    return json.dumps(codec.entry_to_frontmatter(entry), ensure_ascii=False, default=str)


def _entry_from_row(row, id_key: str = "id") -> Entry:
    path, category, meta = row
    return codec.entry_from_frontmatter(json.loads(meta), "", category=category, path=path, id_key=id_key)
