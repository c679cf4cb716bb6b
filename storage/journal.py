"""The access journal: a read appends a line to a local, git-ignored file instead of rewriting the entry.

One line per access: `<ISO time>\t<id>\t<context correlation or ->`. Reads append to this
machine's pending file, `.cache/access/<host>.log` (git-ignored: reading never changes what
`git status` shows). Team sync moves the pending lines into the tracked `.access/<machine>.log`
(`publish`) right before it commits, so machines syncing through git count each other's
accesses and never conflict (one file per machine). Every reader sees both: the pending
files and every machine's tracked files (old trees and pulled peers have them too).

Appends are one `write` of whole lines with O_APPEND under a shared flock; `mem maintain`
takes every file (exclusive flock, then a rename), folds them into the frontmatter and
removes them. A torn last line (a crash mid-append) is skipped. A publish takes the pending
file the same way (renamed to `*.<token>.moving`), appends its lines with a `# moved <token>`
line to the tracked file in one write, then removes it: after a crash between the two, the
marker says the lines are already in the tracked file, so none is lost or counted twice.
"""
from __future__ import annotations

import fcntl
import os
import re
import secrets
import socket
import stat
from datetime import date, datetime
from pathlib import Path

from memstrata.clock import format_datetime, parse_datetime
from memstrata.errors import MemstrataError
from memstrata.scoring.access import Access
from memstrata.storage.atomic import fsync_dir
from memstrata.storage.entry import valid_id
from memstrata.storage.safe_io import check_write_target, is_regular_file, read_regular_bytes

JOURNAL_DIR = ".access"  # tracked: the lines team sync published, every machine's file
PENDING_DIR = ".cache/access"  # git-ignored: this copy's accesses not yet published or folded
_SUFFIX = ".log"
_TAKEN = ".taken"  # taken by a fold
_MOVING = ".moving"  # taken by a publish
_MACHINE = re.compile(r"[^A-Za-z0-9_.-]+")
_MARK = re.compile(r"^# moved ([A-Za-z0-9_-]+)$", re.MULTILINE)

MAX_JOURNAL_BYTES = 64 * 1024 * 1024  # a journal file larger than this is not read (a planted one)


def machine_name(name: str | None = None) -> str:
    """`name` (default: the host name) made safe as a file name."""
    return _MACHINE.sub("-", name or socket.gethostname() or "machine").strip("-.") or "machine"


def _real_folder(root: Path, rel: str, create: bool) -> Path | None:
    """`root/rel` when each of its parts is a real folder (never a symlink), made if `create`."""
    folder = Path(root)
    for part in Path(rel).parts:
        folder = folder / part
        if create and not os.path.lexists(folder):
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                pass  # made meanwhile: looked at below
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return None  # a symlink (e.g. one a pulled commit planted) leads elsewhere: never followed
        except OSError:
            return None
    return folder


def _line(entry_id: str, when: datetime, corr: float | None) -> str:
    return f"{format_datetime(when)}\t{entry_id}\t{'-' if corr is None else f'{corr:.4f}'}\n"


def append(root: Path, accesses: list[tuple[str, datetime, float | None]]) -> bool:
    """Record accesses (id, when, correlation or None) in this machine's pending file.

    Best effort: a read must answer even on a full or read-only disk, so a failure to record
    returns False instead of raising (the access is simply not counted)."""
    lines = "".join(_line(entry_id, when, corr) for entry_id, when, corr in accesses if valid_id(entry_id))
    if not lines:
        return True
    return _append_to(root, PENDING_DIR, f"{machine_name()}{_SUFFIX}", lines.encode("utf-8"))


def _append_to(root: Path, rel: str, name: str, data: bytes, sync: bool = False) -> bool:
    """One O_APPEND write of `data` to `root/rel/name` under a shared flock; False on any failure."""
    try:
        path = check_write_target(root, Path(root) / rel / name)
        if _real_folder(root, rel, create=True) is None:
            return False
        for _ in range(100):  # a fold took the file between open and lock: append to the new one
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return False
                fcntl.flock(fd, fcntl.LOCK_SH)
                if _same_file(fd, path):  # not taken by a fold meanwhile
                    if os.write(fd, data) != len(data):
                        return False
                    if sync:
                        os.fsync(fd)
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
    """What changes when the journal does (paths, sizes, mtimes): for caching `read`."""
    out = []
    for path in _files(root):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        out.append((f"{path.parent.name}/{path.name}", st.st_size, st.st_mtime_ns))
    return tuple(out)


def read(root: Path) -> dict[str, Access]:
    """Every access not yet folded, per entry id (pending and tracked files, every machine's)."""
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


def _names(folder: Path | None, suffixes: tuple[str, ...]) -> list[Path]:
    if folder is None:
        return []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / n for n in names if n.endswith(suffixes) and is_regular_file(folder / n)]


def _files(root: Path) -> list[Path]:
    """The journal's regular files: the pending ones, then the tracked ones (real folders only)."""
    pending = _names(_real_folder(root, PENDING_DIR, create=False), (_SUFFIX, _TAKEN, _MOVING))
    return pending + _names(_real_folder(root, JOURNAL_DIR, create=False), (_SUFFIX, _TAKEN))


def _text(path: Path) -> str | None:
    try:
        return read_regular_bytes(path, MAX_JOURNAL_BYTES).decode("utf-8", "replace")
    except OSError:
        return None


def _token(path: Path) -> str:
    """The publish token in a `*.<token>.moving` name."""
    return path.name[:-len(_MOVING)].rsplit(".", 1)[-1]


def _lines(files: list[Path]):
    """(timestamp, entry id, correlation text) of every well-formed journal line of `files`;
    torn or foreign lines and unreadable files are skipped, and so is a file a publish had
    already appended to a tracked file (its marker is there) when it stopped."""
    published: set[str] = set()
    moving = [p for p in files if p.name.endswith(_MOVING)]
    for path in [p for p in files if not p.name.endswith(_MOVING)] + moving:
        if path.name.endswith(_MOVING) and _token(path) in published:
            continue
        text = _text(path)
        if text is None:
            continue
        if moving:  # only a stopped publish leaves one: look for the markers then
            published.update(_MARK.findall(text))
        yield from _well_formed(text)


def _well_formed(text: str):
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


def _take_file(path: Path, target: Path) -> Path | None:
    """Move a journal file aside (exclusive flock, then a rename): appenders waiting on it
    write to a new one. The new path, or None when it is not a regular file or cannot move."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.replace(path, target)
        return target
    except OSError:
        return None
    finally:
        os.close(fd)


def take(root: Path, machine: str | None = None) -> tuple[dict[str, Access], list[Path]]:
    """For a fold (caller holds the tree lock): move this copy's journal files aside and read them.

    This copy's files are the pending ones and the tracked `.access/<machine>.log` its syncs
    published; other machines' tracked files are theirs to fold (folding them here too would
    count their reads twice once both folds merge), and are counted by readers until then.
    Taken files go to the git-ignored pending folder, so a fold that stops never leaves one for
    a sync to commit. Returns the accesses and the taken files, which the caller removes once
    the entries are written (`release`). Appenders waiting on a file being taken write to a new one."""
    pending = _real_folder(root, PENDING_DIR, create=True)
    if pending is None:
        return {}, []
    taken = []
    for path in _own_files(root, pending, machine):
        if path.name.endswith((_TAKEN, _MOVING)):
            taken.append(path)  # left by a fold or a publish that did not finish: fold it now
            continue
        into = pending / f"{'' if path.parent == pending else 'shared-'}{path.name}.{os.getpid()}{_TAKEN}"
        target = _take_file(path, into)
        if target is not None:
            taken.append(target)
    return _parse_files(taken), taken


def _own_files(root: Path, pending: Path | None, machine: str | None) -> list[Path]:
    """The journal files a fold on this copy takes: the pending ones and this machine's tracked log."""
    own = f"{machine_name(machine)}{_SUFFIX}"
    tracked = [p for p in _names(_real_folder(root, JOURNAL_DIR, create=False), (_SUFFIX, _TAKEN))
               if p.name == own or (p.name.startswith(own + ".") and p.name.endswith(_TAKEN))]
    return _names(pending, (_SUFFIX, _TAKEN, _MOVING)) + tracked


def to_fold(root: Path, machine: str | None = None) -> dict[str, Access]:
    """What a fold on this copy would take (`take`'s accesses), read without moving anything."""
    return _parse_files(_own_files(root, _real_folder(root, PENDING_DIR, create=False), machine))


def release(taken: list[Path]) -> None:
    """Remove the journal files a fold has written into the entries (each one; none stops the rest)."""
    for path in taken:
        try:
            os.unlink(path)
        except OSError:
            pass


def publish(root: Path, machine: str) -> int:
    """Move the pending lines into the tracked `.access/<machine>.log` (team sync, before it
    commits; the caller holds the tree lock). Returns how many lines moved.

    Each pending file is taken by a rename, its well-formed lines and a `# moved <token>`
    line are appended to the tracked file in one synced write, then it is removed. A file a
    stopped publish left is finished first: removed if its marker is in a tracked file,
    appended otherwise. Best effort: what cannot be moved stays pending and is still counted."""
    pending = _real_folder(root, PENDING_DIR, create=False)
    if pending is None:
        return 0
    moving = _names(pending, (_MOVING,))  # left by a publish that stopped: are its lines in already?
    tracked = _names(_real_folder(root, JOURNAL_DIR, create=False), (_SUFFIX,)) if moving else []
    published = {token for path in tracked for token in _MARK.findall(_text(path) or "")}
    for path in _names(pending, (_SUFFIX,)):
        target = _take_file(path, path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(6)}{_MOVING}"))
        if target is not None:
            moving.append(target)
    if moving:
        fsync_dir(pending)  # the renames reach the disk before the lines are appended elsewhere
    moved = 0
    for path in moving:
        token, text = _token(path), _text(path)
        if text is None:
            continue  # unreadable now: stays pending
        lines = [] if token in published else ["\t".join(parts) + "\n" for parts in _well_formed(text)]
        if lines:
            block = "".join(lines) + f"# moved {token}\n"
            if not _append_to(root, JOURNAL_DIR, f"{machine_name(machine)}{_SUFFIX}", block.encode("utf-8"),
                              sync=True):
                continue  # stays pending: counted by readers, moved by the next publish
            moved += len(lines)
        release([path])
    return moved
