"""Old versions of entries, kept in full: `.versions/{id}/v{N}.md`, plus split records.

Every time an entry's content changes on purpose (a conflicting write, `update`, a merge
of a near-duplicate, a revert) the whole file text of the version being replaced is
written here first, atomically, so any version can be read or restored later. The file
of the entry itself keeps a short version history (its `history:` frontmatter list, see
storage/history.py); this folder keeps the bodies.

A category split writes `{category}/.split.json` (what moved where) so that `merge` can
undo exactly that split.
"""
from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

from memstrata.storage.clock import format_datetime
from memstrata.storage.errors import CorruptEntry, InvalidInput, NotFound
from memstrata.storage import codec, layout
from memstrata.storage.atomic import atomic_write_text
from memstrata.storage.entry import Entry, require_id, valid_id
from memstrata.storage.paths import category_of
from memstrata.storage.safe_io import check_write_target, is_regular_file, read_regular_text

VERSIONS_DIR = ".versions"
SPLIT_RECORD = ".split.json"
SUMMARY_CHARS = 80
MAX_INDEXED_VERSIONS = 20  # kept versions whose text the index carries with the entry (newest first)
EARLIER_VERSION = "Earlier version v"  # heads each kept version in the indexed text
# ... as with_kept_versions writes it ("Earlier version v2 (2026-01-12):"); a note's own prose line
# "Earlier version v1.2 of the SDK crashed" is no such heading
EARLIER_HEADING = re.compile(rf"\n({re.escape(EARLIER_VERSION)}\d+ \((?:\d{{4}}-\d{{2}}-\d{{2}}|undated)\)):")
SPLIT_RECORD_MAX_BYTES = 16 * 1024 * 1024  # a larger .split.json is not one the engine wrote
_SNAPSHOT = re.compile(r"^v(\d+)\.md$")
_LINE = re.compile(r"^v(\d+)\.json$")  # a version's history line, where the note holds no `history:`
LINE_MAX_BYTES = 64 * 1024


def _folder(root: Path, entry_id: str) -> Path:
    return layout.path(root, VERSIONS_DIR) / require_id(entry_id)


def snapshot_path(root: Path, entry_id: str, version: int) -> Path:
    return _folder(root, entry_id) / f"v{int(version)}.md"


def _numbered(root: Path, entry_id: str, pattern) -> dict[int, Path]:
    """The regular files of an entry's versions folder whose name `pattern` matches: {vN's N: file}."""
    folder = _folder(root, entry_id)
    if not folder.is_dir() or folder.is_symlink():
        return {}
    out = {}
    for item in folder.iterdir():
        m = pattern.match(item.name)
        if m and is_regular_file(item):
            out[int(m.group(1))] = item
    return dict(sorted(out.items()))


def list_snapshots(root: Path, entry_id: str) -> dict[int, Path]:
    """The kept versions of an entry: {version number: file}."""
    return _numbered(root, entry_id, _SNAPSHOT)


def save_snapshot(root: Path, entry_id: str, version: int, text: str) -> bool:
    """Keep `text` as version `version` (atomic). Returns True when the file is new."""
    path = check_write_target(root, snapshot_path(root, entry_id, version))
    existed = path.exists()
    if existed and read_regular_text(path) == text:
        return False
    atomic_write_text(path, text, root=root)
    return not existed


def line_path(root: Path, entry_id: str, version: int) -> Path:
    return _folder(root, entry_id) / f"v{int(version)}.json"


def save_line(root: Path, entry_id: str, item: dict) -> Path:
    """Keep a version's history line ({version, date, summary}: when, by which machine, why) beside
    the kept texts (atomic), for an adopted vault's note, whose file holds no `history:` of the engine's."""
    path = check_write_target(root, line_path(root, entry_id, item["version"]))
    line = {"version": int(item["version"]), "date": str(item.get("date") or ""), "summary": str(item.get("summary") or "")}
    atomic_write_text(path, json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n", root=root)
    return path


def saved_lines(root: Path, entry_id: str) -> dict[int, dict]:
    """The history lines kept by save_line: {version: {version, date, summary}}; unreadable ones skipped."""
    out = {}
    for version, item in _numbered(root, entry_id, _LINE).items():
        try:
            if item.stat().st_size > LINE_MAX_BYTES:
                continue
            value = json.loads(read_regular_text(item))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if isinstance(value, dict) and value.get("version") == version:
            out[version] = {"version": version, "date": str(value.get("date") or "")[:10],
                            "summary": " ".join(str(value.get("summary") or "").split())}
    return out


def ids_with_snapshots(root: Path) -> set[str]:
    """The ids that have kept versions under .versions/ (an import must not take one over)."""
    folder = layout.path(root, VERSIONS_DIR)
    try:
        return {p.name for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and valid_id(p.name)}
    except OSError:
        return set()


def folder_stamps(root: Path) -> dict[str, int]:
    """Each id with kept versions and its folder's mtime (ns): it changes when a version is kept or
    removed, so a reader can tell which entries' versions to read again."""
    out = {}
    for entry_id in ids_with_snapshots(root):
        try:
            out[entry_id] = _folder(root, entry_id).stat().st_mtime_ns
        except OSError:
            continue
    return out


def remove_snapshot(root: Path, entry_id: str, version: int) -> None:
    path = check_write_target(root, snapshot_path(root, entry_id, version))
    path.unlink(missing_ok=True)
    try:
        path.parent.rmdir()
    except OSError:
        pass


def remove_all(root: Path, entry_id: str) -> int:
    """Delete every kept version of an entry and its folder (a purge); returns how many files went."""
    folder = _folder(root, entry_id)
    check_write_target(root, folder / "v1.md")  # never through a symlinked .versions/
    if not folder.is_dir() or folder.is_symlink():
        return 0
    removed = 0
    for item in folder.iterdir():
        if is_regular_file(item):
            item.unlink()
            removed += 1
    try:
        folder.rmdir()
    except OSError:
        pass  # something else in it (not a file the engine wrote): left for the doctor
    return removed


def with_kept_versions(root: Path, entry: Entry) -> Entry:
    """The entry with the bodies of its kept versions appended (newest first, at most
    MAX_INDEXED_VERSIONS), each after an "Earlier version vN (date):" line, so the index and grep
    find an entry by what it said before; the entry itself when it has none."""
    if not entry.id or not valid_id(entry.id):
        return entry
    kept = list_snapshots(root, entry.id)
    if not kept:
        return entry
    parts = []
    for number in sorted(kept, reverse=True)[:MAX_INDEXED_VERSIONS]:
        if number == entry.version:
            continue
        try:
            old = codec.parse(read_regular_text(kept[number]), id_key=layout.id_key(root))
        except (CorruptEntry, OSError, UnicodeDecodeError, ValueError):
            continue
        heading = f"{EARLIER_VERSION}{number} ({day(old.updated or old.created) or 'undated'})"
        title = f" {old.title}" if old.title and old.title != entry.title else ""
        parts.append(f"{heading}:{title}\n\n{old.body.strip()}")
    if not parts:
        return entry
    body = entry.body if entry.body.endswith("\n") or not entry.body else entry.body + "\n"
    return entry.copy(body=body + "\n" + "\n\n".join(parts) + "\n")


def own_text_end(text: str) -> int:
    """Where an indexed text's kept versions begin (with_kept_versions), or its length."""
    found = EARLIER_HEADING.search(text)
    return found.start() if found else len(text)


def read_snapshot(root: Path, entry_id: str, version: int) -> str:
    if version < 1:  # no entry has a version 0 or below: a wrong number, not a missing one
        raise InvalidInput(f"version {version} is not a version number (versions count from 1)")
    path = snapshot_path(root, entry_id, version)
    if not is_regular_file(path):
        raise NotFound(f"version {version} of {entry_id} is not kept")
    return read_regular_text(path)


def snapshot_entry(root: Path, entry_id: str, version: int, rel_path: str | None = None) -> Entry:
    """A kept version parsed as an Entry (its `version` field is the snapshot's number)."""
    text = read_snapshot(root, entry_id, version)
    try:
        entry = codec.parse(text, category=category_of(rel_path) if rel_path else "", path=rel_path,
                            id_key=layout.id_key(root))
    except CorruptEntry as exc:
        raise CorruptEntry(f"version {version} of {entry_id} cannot be read: {exc.message}") from None
    entry.version = int(version)
    return entry


def one_line(text: str, title: str = "", limit: int = SUMMARY_CHARS) -> str:
    """A one-line summary: the first non-empty line of the body (headings unmarked), else the title."""
    line = ""
    for raw in (text or "").splitlines():
        raw = raw.strip().lstrip("#>*-").strip()
        if raw:
            line = raw
            break
    line = " ".join((line or title or "(empty)").split())
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line


def day(dt: datetime | None) -> str:
    return format_datetime(dt)[:10] if dt else ""


def history_item(version: int, when: datetime | None, summary: str) -> dict:
    return {"version": int(version), "date": day(when), "summary": " ".join(summary.split())}


def with_current_line(entry: Entry) -> list[dict]:
    """The entry's history, with a line for its current version added when missing."""
    history = [dict(h) for h in entry.history]
    if not any(int(h.get("version", 0)) == entry.version for h in history):
        history.append(history_item(entry.version, entry.updated or entry.created, one_line(entry.body, entry.title)))
    return sorted(history, key=lambda h: int(h.get("version", 0)))


# -- split records ------------------------------------------------------------------------
def split_record_path(root: Path, category: str) -> Path:
    return Path(root) / category / SPLIT_RECORD


def read_split_record(root: Path, category: str) -> dict | None:
    path = split_record_path(root, category)
    if not is_regular_file(path):
        return None
    try:
        data = json.loads(read_regular_text(path, SPLIT_RECORD_MAX_BYTES))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_split_record(root: Path, category: str, record: dict) -> None:
    atomic_write_text(split_record_path(root, category), json.dumps(record, indent=1, ensure_ascii=False) + "\n",
                      root=root)


def remove_split_record(root: Path, category: str) -> None:
    check_write_target(root, split_record_path(root, category)).unlink(missing_ok=True)
