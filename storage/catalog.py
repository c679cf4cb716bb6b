"""A derived SQLite catalog of entry metadata keyed by path (size/mtime), rebuildable from the tree."""
from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from memstrata.errors import CorruptEntry, InvalidInput
from memstrata.storage import codec
from memstrata.storage.atomic import ensure_dir, is_temp_file
from memstrata.storage.entry import Entry
from memstrata.storage.paths import category_of

CACHE_DIR = ".cache"
CATALOG_FILE = "catalog.db"
SCHEMA_VERSION = 2  # a catalog of another version is dropped and rebuilt from the tree
SKIPPED_FILES = {"index.md", "memory.md", "claude.md", "agents.md", "readme.md"}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    path TEXT PRIMARY KEY,
    id TEXT,
    size INTEGER,
    mtime_ns INTEGER,
    category TEXT,
    meta TEXT,
    error TEXT,
    updated TEXT
);
CREATE INDEX IF NOT EXISTS entries_id ON entries(id);
CREATE INDEX IF NOT EXISTS entries_category ON entries(category);
"""


@dataclass
class RefreshReport:
    """What a refresh found changed on disk since the catalog last looked."""

    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


def iter_entry_files(root: Path):
    """Yield (relative path, os.stat_result) of every entry file in the tree.

    Hidden folders (.trash, .vectors, .full, ...), INDEX.md files, config.md, an agent's own
    MEMORY.md/CLAUDE.md, temporary files, symlinks and files at the root are not entries.
    Plain string paths and one scandir per folder: recall walks the tree before every answer.
    """
    base = str(root)
    cut = len(base) + 1
    stack = [base]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as items:
                for item in items:
                    name = item.name
                    if name.startswith("."):
                        continue
                    if item.is_dir(follow_symlinks=False):
                        stack.append(item.path)
                    elif (folder != base and name.endswith(".md") and not item.is_symlink()
                          and not is_temp_file(name) and name.lower() not in SKIPPED_FILES):
                        yield item.path[cut:].replace(os.sep, "/"), item.stat(follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            continue


def read_entry_file(root: Path, rel: str) -> Entry:
    """Parse one entry file (CorruptEntry if it cannot be decoded or parsed)."""
    raw = (Path(root) / rel).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptEntry(f"{rel} is not UTF-8 text") from None
    stem = Path(rel).stem
    try:
        return codec.parse(text, category=category_of(rel), path=rel, fallback_title=stem)
    except InvalidInput as exc:  # a value the codec refuses (e.g. importance: urgent): this file only
        raise CorruptEntry(exc.message) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:  # e.g. created: -62135596801
        raise CorruptEntry(f"frontmatter value cannot be read ({type(exc).__name__}: {exc})") from None


class Catalog:
    """Entry metadata for fast list/filter/lookup; the tree stays the source of truth."""

    def __init__(self, root: Path):
        self.root = Path(root)
        ensure_dir(self.root / CACHE_DIR)
        self.db_path = self.root / CACHE_DIR / CATALOG_FILE
        self._conn = sqlite3.connect(self.db_path, timeout=30, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        if self._conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            self._conn.executescript("DROP TABLE IF EXISTS entries;")
            self._conn.executescript(_SCHEMA)
            self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        try:
            os.chmod(self.db_path, 0o600)
        except OSError:
            pass

    def close(self) -> None:
        self._conn.close()

    # -- keeping it in line with the tree ---------------------------------------------
    def refresh(self) -> RefreshReport:
        """Re-read files whose size or mtime changed; drop rows of files that are gone."""
        report = RefreshReport()
        known = {row[0]: (row[1], row[2]) for row in self._conn.execute("SELECT path, size, mtime_ns FROM entries")}
        seen = set()
        updates = []
        for rel, st in iter_entry_files(self.root):
            seen.add(rel)
            if known.get(rel) == (st.st_size, st.st_mtime_ns):
                continue
            report.changed.append(rel)
            try:
                entry = read_entry_file(self.root, rel)
                updates.append((rel, entry.id, st.st_size, st.st_mtime_ns, entry.category, _meta_json(entry), None,
                                _updated(entry)))
            except (CorruptEntry, OSError) as exc:
                message = exc.message if isinstance(exc, CorruptEntry) else str(exc)
                report.errors[rel] = message
                updates.append((rel, None, st.st_size, st.st_mtime_ns, category_of(rel), None, message, None))
        report.removed = [p for p in known if p not in seen]
        if updates or report.removed:
            with self._conn:
                self._conn.execute("BEGIN")
                self._conn.executemany("INSERT OR REPLACE INTO entries VALUES (?,?,?,?,?,?,?,?)", updates)
                self._conn.executemany("DELETE FROM entries WHERE path = ?", [(p,) for p in report.removed])
        return report

    def record(self, entry: Entry) -> None:
        """Note an entry just written by the engine (its file exists at entry.path)."""
        st = (self.root / entry.path).stat()
        self._conn.execute(
            "INSERT OR REPLACE INTO entries VALUES (?,?,?,?,?,?,?,?)",
            (entry.path, entry.id, st.st_size, st.st_mtime_ns, entry.category, _meta_json(entry), None,
             _updated(entry)),
        )

    def forget(self, rel: str) -> None:
        self._conn.execute("DELETE FROM entries WHERE path = ?", (rel,))

    def rebuild(self) -> RefreshReport:
        self._conn.execute("DELETE FROM entries")
        return self.refresh()

    # -- questions --------------------------------------------------------------------
    def paths_of(self, entry_id: str) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT path FROM entries WHERE id = ? ORDER BY path", (entry_id,))]

    def get(self, rel: str) -> Entry | None:
        row = self._conn.execute("SELECT path, category, meta FROM entries WHERE path = ? AND meta IS NOT NULL",
                                 (rel,)).fetchone()
        return _entry_from_row(row) if row else None

    def entries(self, category: str | None = None) -> list[Entry]:
        """Metadata of every parseable entry (bodies not loaded), optionally within a category subtree."""
        if category:
            rows = self._conn.execute(
                "SELECT path, category, meta FROM entries WHERE meta IS NOT NULL AND (category = ? OR category LIKE ?)"
                " ORDER BY path", (category, category.replace("%", r"\%").replace("_", r"\_") + "/%"))
        else:
            rows = self._conn.execute("SELECT path, category, meta FROM entries WHERE meta IS NOT NULL ORDER BY path")
        return [_entry_from_row(r) for r in rows]

    def errors(self) -> dict[str, str]:
        return {r[0]: r[1] for r in self._conn.execute("SELECT path, error FROM entries WHERE error IS NOT NULL")}

    def duplicate_ids(self) -> dict[str, list[str]]:
        rows = self._conn.execute(
            "SELECT id, group_concat(path, '\n') FROM entries WHERE id IS NOT NULL AND id != '' "
            "GROUP BY id HAVING count(*) > 1")
        return {r[0]: sorted(r[1].split("\n")) for r in rows}

    def entries_exact(self, category: str) -> list[Entry]:
        """Metadata of the entries directly in `category` (its archived/ included, not subcategories)."""
        rows = self._conn.execute(
            "SELECT path, category, meta FROM entries WHERE meta IS NOT NULL AND category = ? ORDER BY path",
            (category,))
        return [_entry_from_row(r) for r in rows]

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


def _updated(entry: Entry) -> str | None:
    return codec.format_datetime(entry.updated) if entry.updated else None


def _meta_json(entry: Entry) -> str:
    return json.dumps(codec.entry_to_frontmatter(entry), ensure_ascii=False, default=str)


def _entry_from_row(row) -> Entry:
    path, category, meta = row
    return codec.entry_from_frontmatter(json.loads(meta), "", category=category, path=path)
