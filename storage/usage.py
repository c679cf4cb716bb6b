"""The record of the days a tree was in use: `.access/<machine>.days`, one ISO date a line.

`mem maintain` keeps it: the days of the accesses it folds from the journal and the days its
entries were created, updated or read on (which later writes and reads would overwrite) are
added to this machine's file; every machine's file is read, so trees synced through git count
each other's days and never conflict on the file. Maintenance itself never adds a day.
"""
from __future__ import annotations

import os
import stat
from datetime import date
from pathlib import Path

from memstrata.storage.errors import MemstrataError
from memstrata.storage import layout
from memstrata.storage.atomic import atomic_write_text
from memstrata.storage.journal import JOURNAL_DIR, machine_name
from memstrata.storage.safe_io import check_write_target, is_regular_file, read_regular_bytes

SUFFIX = ".days"
MAX_BYTES = 4 * 1024 * 1024  # some 360,000 days; a larger file is not read (a planted one)


def _folder_files(root: Path) -> list[Path]:
    folder = layout.path(root, JOURNAL_DIR)
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return []  # a symlinked `.access` is never followed
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / n for n in names if n.endswith(SUFFIX) and is_regular_file(folder / n)]


def _parse(path: Path) -> set[date]:
    try:
        text = read_regular_bytes(path, MAX_BYTES).decode("utf-8", "replace")
    except OSError:
        return set()
    out = set()
    for line in text.split("\n"):
        try:
            out.add(date.fromisoformat(line.strip()))
        except ValueError:
            continue  # blank, torn or foreign line
    return out


def signature(root: Path) -> tuple:
    """What changes when the recorded days do (names, sizes, mtimes): for caching `read`."""
    out = []
    for path in _folder_files(root):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        out.append((path.name, st.st_size, st.st_mtime_ns))
    return tuple(out)


def read(root: Path) -> set[date]:
    """Every day any machine recorded the tree in use."""
    days: set[date] = set()
    for path in _folder_files(root):
        days |= _parse(path)
    return days


def record(root: Path, days: set[date], machine: str | None = None) -> bool:
    """Add `days` to this machine's file, `.access/<machine>.days` (`machine`: this clone's name as
    team sync gives it, features/gitrepo.py; default the host name), atomic rewrite; the caller
    holds the tree lock.

    Returns whether the file changed; a day another machine's file holds already is not
    copied. Best effort like the journal: a failure to record returns False."""
    new = set(days) - read(root)
    if not new:
        return False
    try:
        folder = layout.path(root, JOURNAL_DIR)
        path = check_write_target(root, folder / f"{machine_name(machine)}{SUFFIX}")
        folder.mkdir(mode=0o700, exist_ok=True)
        mine = _parse(path) if is_regular_file(path) else set()
        atomic_write_text(path, "".join(f"{d.isoformat()}\n" for d in sorted(mine | new)), root=root)
    except (OSError, MemstrataError):
        return False
    return True
