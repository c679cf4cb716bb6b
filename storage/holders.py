"""Which of several files holding one entry id keeps it (a note copied from a template carries the
template's id): the file git added first, else the one the catalog saw hold the id first, else the
engine's rule (storage.entry.holder_rank). `mem read ID`, the doctor and adoption all ask here.

Why this order: the id names the original (its kept versions, `related:` links, the index row), and
a copy is always made after it. Git's history and the catalog's record say which file came first and
neither moves when a file is rewritten; file times do (an edit of the original would hand its id to
the copy), so they never count.
"""
from __future__ import annotations

import math
import subprocess

from memstrata.storage.entry import Entry, holder_rank

# The catalog's record: per id, the path that held it when no other file did (kept across refreshes).
TABLE = "CREATE TABLE IF NOT EXISTS holders (id TEXT PRIMARY KEY, path TEXT)"
GIT_TIMEOUT = 10  # seconds for one `git log` of one path (a local read)


def note(conn, rows, removed) -> None:
    """After the catalog stored `rows` (path, id, ...) and deleted the `removed` paths: remember, per
    id, the first file that held it. A file that holds an id alone is its first holder (and a rename
    of the first holder, seen in one refresh, moves the record along); a second file with the id is a
    copy and changes nothing; when two files appear with one id at once, nobody is recorded."""
    gone = set(removed)
    for row in rows:
        rel, entry_id = row[0], row[1]
        if not entry_id:
            continue
        found = conn.execute("SELECT path FROM holders WHERE id = ?", (entry_id,)).fetchone()
        first = found[0] if found else None
        if first == rel:
            continue
        holding = [r[0] for r in conn.execute("SELECT path FROM entries WHERE id = ?", (entry_id,))]
        if first in holding:
            continue  # the first holder still holds it: `rel` is a copy
        if holding == [rel] or (first is not None and first in gone):
            conn.execute("INSERT OR REPLACE INTO holders (id, path) VALUES (?, ?)", (entry_id, rel))


def first_seen(conn, entry_id: str) -> str | None:
    """The path the catalog saw hold `entry_id` first (None when it never saw one alone)."""
    found = conn.execute("SELECT path FROM holders WHERE id = ?", (entry_id,)).fetchone()
    return found[0] if found else None


def git_added(root, rel: str) -> tuple[float, float]:
    """When git's history first added the file at `rel`: (epoch seconds, commits before it), the
    second telling apart two adds within one second (a copy committed right after its original);
    infinities when the tree is not in git, git is missing or the file was never committed."""
    never = (math.inf, math.inf)
    try:
        done = subprocess.run(["git", "log", "--diff-filter=A", "--format=%ct %H", "--", rel], cwd=str(root),
                              capture_output=True, text=True, timeout=GIT_TIMEOUT)
        adds = [line.split() for line in done.stdout.splitlines()] if done.returncode == 0 else []
        adds = [(int(stamp), commit) for stamp, commit in (a for a in adds if len(a) == 2) if stamp.isdigit()]
        if not adds:
            return never
        stamp, commit = min(adds)
        depth = subprocess.run(["git", "rev-list", "--count", commit], cwd=str(root), capture_output=True,
                               text=True, timeout=GIT_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return never
    count = depth.stdout.strip()
    return float(stamp), float(count) if depth.returncode == 0 and count.isdigit() else math.inf


def keeper_first(root, holders: list[Entry], first: str | None = None) -> list[Entry]:
    """The files holding one id, the one that keeps it first (`first`: the catalog's first_seen)."""
    if len(holders) < 2:
        return list(holders)
    added = {e.path: git_added(root, e.path) for e in holders}
    return sorted(holders, key=lambda e: (added[e.path], e.path != first, *holder_rank(e)))
