"""The tree's folders as the catalog's last complete walk saw them: unchanged folders, no entry file added, removed or renamed."""
# A file created, deleted or renamed in a folder changes the folder's mtime and ctime; a file written
# in place does not (that is what refresh_if_moved already leaves to the next refresh). So when every
# folder a walk listed still has the stamp it had before that listing, the names are the ones the walk
# saw, and a cold session start need not list 40,000 files again (300 ms at 300,000 captured turns).
# The ctime is in the stamp because no tool can set it: `touch -d`, `rsync -a` or `tar x` can put a
# folder's mtime back where it was after adding a file; setting it moves the ctime to now.
#
# A folder changed within RACY_NS of the walk is not trusted (nothing is recorded): a second change in
# the same clock tick would leave its mtime as it was (git's "racy" index entries, the same answer).
from __future__ import annotations

import os
import sqlite3
import stat as stat_mod
import time

TABLE = "CREATE TABLE IF NOT EXISTS folders (path TEXT PRIMARY KEY, mtime_ns INTEGER, ctime_ns INTEGER, ino INTEGER)"
RACY_NS = 3_000_000_000  # 3 s: coarser than any file system's mtime tick we know of (FAT's is 2 s)


def stamp(path: str, follow: bool = False) -> tuple[int, int, int] | None:
    """(mtime_ns, ctime_ns, inode) of a folder, None when it is not one (gone, a file, unreadable)."""
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_ino) if stat_mod.S_ISDIR(st.st_mode) else None


def record(conn: sqlite3.Connection, folders: list[tuple[str, tuple[int, int, int]]], now_ns: int | None = None) -> None:
    """Keep `folders` ((relative path, stamp) of every folder a complete walk listed, each stamped
    before its listing) as the tree's; none when one of them changed within RACY_NS. A disk that
    takes no writes keeps none (the next cold start walks)."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    racy = not folders or any(max(mtime, ctime) >= now_ns - RACY_NS for _, (mtime, ctime, _ino) in folders)
    wanted = set() if racy else {(rel, *found) for rel, found in folders}
    try:
        if set(conn.execute("SELECT path, mtime_ns, ctime_ns, ino FROM folders")) == wanted:
            return  # as recorded: the catalog's file is not written (a hook fired again changes nothing)
        with conn:
            conn.execute("BEGIN")
            conn.execute("DELETE FROM folders")
            conn.executemany("INSERT OR REPLACE INTO folders VALUES (?,?,?,?)", sorted(wanted))
    except sqlite3.OperationalError:
        pass


def forget(conn: sqlite3.Connection) -> None:
    """No folder trusted: the next cold start walks."""
    try:
        if conn.execute("SELECT 1 FROM folders LIMIT 1").fetchone() is not None:
            conn.execute("DELETE FROM folders")
    except sqlite3.OperationalError:
        pass


def unchanged(conn: sqlite3.Connection, root) -> bool:
    """Whether every folder recorded still has its stamp (one stat each): no entry file was added,
    removed or renamed since the walk that recorded them. False when nothing is recorded."""
    try:
        rows = conn.execute("SELECT path, mtime_ns, ctime_ns, ino FROM folders").fetchall()
    except sqlite3.OperationalError:
        return False
    if not rows:
        return False
    base = str(root)
    for rel, *recorded in rows:
        if stamp(base if rel == "." else os.path.join(base, rel), follow=rel == ".") != tuple(recorded):
            return False
    return True
