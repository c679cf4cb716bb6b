"""The access journal: a read appends a line under `.access/` instead of rewriting the entry file.

One file per machine (`.access/<host>.log`, kept in git, so machines never conflict), one
line per access: `<ISO time>\t<id>\t<context correlation or ->`. Appends are one `write` of
whole lines with O_APPEND under a shared flock; `mem maintain` takes the files (exclusive
flock, then a rename), folds them into the frontmatter and removes them. A torn last line
(a crash mid-append) is skipped.
"""
from __future__ import annotations

import fcntl
import os
import re
import socket
import stat
from datetime import date, datetime
from pathlib import Path

from memstrata.clock import format_datetime, parse_datetime
from memstrata.errors import MemstrataError
from memstrata.scoring.access import Access
from memstrata.storage.entry import valid_id
from memstrata.storage.safe_io import check_write_target, is_regular_file, read_regular_bytes

JOURNAL_DIR = ".access"
_SUFFIX = ".log"
_TAKEN = ".taken"
_MACHINE = re.compile(r"[^A-Za-z0-9_.-]+")


def machine_name() -> str:
    return _MACHINE.sub("-", socket.gethostname() or "machine").strip("-.") or "machine"


def _folder(root: Path) -> Path:
    return Path(root) / JOURNAL_DIR


def append(root: Path, accesses: list[tuple[str, datetime, float | None]]) -> bool:
    """Record accesses (id, when, correlation or None) in this machine's journal file.

    Best effort: a read must answer even on a full or read-only disk, so a failure to record
    returns False instead of raising (the access is simply not counted)."""
    lines = "".join(f"{format_datetime(when)}\t{entry_id}\t{'-' if corr is None else f'{corr:.4f}'}\n"
                    for entry_id, when, corr in accesses if valid_id(entry_id))
    if not lines:
        return True
    try:
        folder = _folder(root)
        path = check_write_target(root, folder / f"{machine_name()}{_SUFFIX}")
        folder.mkdir(mode=0o700, exist_ok=True)
        for _ in range(100):  # a fold took the file between open and lock: append to the new one
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return False
                fcntl.flock(fd, fcntl.LOCK_SH)
                if _same_file(fd, path):  # not taken by a fold meanwhile
                    os.write(fd, lines.encode("utf-8"))
                    return True
            finally:
                os.close(fd)
    except (OSError, MemstrataError):
        return False
    return False


def _same_file(fd: int, path: Path) -> bool:
    try:
        st, now = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino)


def signature(root: Path) -> tuple:
    """What changes when the journal does (names, sizes, mtimes): for caching `read`."""
    out = []
    for path in _files(root):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        out.append((path.name, st.st_size, st.st_mtime_ns))
    return tuple(out)


def read(root: Path) -> dict[str, Access]:
    """Every access not yet folded, per entry id (all machines' files, and taken ones)."""
    return _parse_files(_files(root))


def days(root: Path) -> set[date]:
    """The UTC days of every access not yet folded (for the record of days in use)."""
    out: set[date] = set()
    for stamp, _, _ in _lines(_files(root)):
        if not stamp.endswith("Z"):
            continue
        try:
            out.add(date.fromisoformat(stamp[:10]))
        except ValueError:
            continue
    return out


MAX_JOURNAL_BYTES = 64 * 1024 * 1024  # a journal file larger than this is not read (a planted one)


def _files(root: Path) -> list[Path]:
    """The journal's regular files; nothing when `.access` is not a real folder of the root."""
    folder = _folder(root)
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return []  # a symlink (e.g. one a pulled commit planted) leads elsewhere: never followed
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / n for n in names if (n.endswith(_SUFFIX) or n.endswith(_TAKEN)) and is_regular_file(folder / n)]


def _lines(files: list[Path]):
    """(timestamp, entry id, correlation text) of every well-formed journal line of `files`;
    torn or foreign lines and unreadable files are skipped."""
    for path in files:
        try:
            text = read_regular_bytes(path, MAX_JOURNAL_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        for line in text.split("\n"):
            parts = line.split("\t")
            if len(parts) == 3 and valid_id(parts[1]):
                yield parts[0], parts[1], parts[2]


def _parse_files(files: list[Path]) -> dict[str, Access]:
    out: dict[str, Access] = {}
    for stamp, entry_id, corr_text in _lines(files):
        try:
            when = parse_datetime(stamp)
            corr = None if corr_text == "-" else float(corr_text)
        except (ValueError, TypeError, Exception):  # noqa: BLE001 - one bad line, not the journal
            continue
        seen = out.get(entry_id)
        if seen is None:
            out[entry_id] = Access(when, 1, corr)
        else:
            seen.count += 1
            if when >= seen.last:
                seen.last = when
                seen.correlation = corr if corr is not None else seen.correlation
    return out


def take(root: Path) -> tuple[dict[str, Access], list[Path]]:
    """For a fold (caller holds the tree lock): move every journal file aside and read them all.

    Returns the accesses and the taken files, which the caller removes once the entries are
    written (`release`). Appenders waiting on a file being taken write to a new one."""
    taken = []
    for path in _files(root):  # regular files in a real `.access` folder only
        if path.name.endswith(_TAKEN):
            taken.append(path)  # left by a fold that did not finish: fold it now
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            fcntl.flock(fd, fcntl.LOCK_EX)
            target = path.with_name(f"{path.name}.{os.getpid()}{_TAKEN}")
            os.replace(path, target)
            taken.append(target)
        finally:
            os.close(fd)
    return _parse_files(taken), taken


def release(taken: list[Path]) -> None:
    """Remove the journal files a fold has written into the entries (each one; none stops the rest)."""
    for path in taken:
        try:
            os.unlink(path)
        except OSError:
            pass
