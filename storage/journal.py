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

A fold records what it is about to save first (storage/fold_plan.py), so a fold killed
half-way never counts a read twice. Files are read line by line (no size limit: a large file
is counted, never dropped); a line dated after now counts as now.
"""
from __future__ import annotations

import fcntl
import os
import re
import secrets
import socket
import stat
from datetime import date, datetime, timezone
from pathlib import Path

from memstrata.storage.clock import format_datetime
from memstrata.storage.errors import MemstrataError
from memstrata.scoring.access import MAX_MACHINES_PER_DAY, Access, Tally  # noqa: F401 - the cap is read from here
from memstrata.storage import layout
from memstrata.storage.atomic import fsync_dir
from memstrata.storage.entry import valid_id
# re-exported: the journal's files are read with these (storage/fold_plan.py reads them from here)
from memstrata.storage.line_files import CHUNK, MAX_LINE_BYTES, open_file, stream_lines  # noqa: F401
from memstrata.storage.safe_io import check_write_target, is_regular_file

JOURNAL_DIR = ".access"  # tracked: the lines team sync published, every machine's file
PENDING_DIR = ".cache/access"  # git-ignored: this copy's accesses not yet published or folded
LOG_SUFFIX = ".log"
TAKEN = ".taken"  # taken by a fold
MOVING = ".moving"  # taken by a publish
_MACHINE = re.compile(r"[^A-Za-z0-9_.-]+")
MOVED_MARK = re.compile(r"^# moved ([A-Za-z0-9_-]+)$", re.MULTILINE)
_TEMP_PID = re.compile(r"^\..+\.(\d+)\.[0-9a-f]+\.tmp$")

MAX_SETTLED = 10**9  # reads one compacted line may carry (a larger number is no journal line)


def machine_name(name: str | None = None) -> str:
    """`name` (default: the host name) made safe as a file name."""
    return _MACHINE.sub("-", name or socket.gethostname() or "machine").strip("-.") or "machine"


def real_folder(root: Path, rel: str, create: bool) -> Path | None:
    """`root/rel` when each of its parts is a real folder (never a symlink), made if `create`."""
    folder, rel = Path(root), layout.at(root, rel)
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
    return _append_to(root, PENDING_DIR, f"{machine_name()}{LOG_SUFFIX}", lines.encode("utf-8"))


def _append_to(root: Path, rel: str, name: str, data: bytes, sync: bool = False) -> bool:
    """One O_APPEND write of `data` to `root/rel/name` under a shared flock; False on any failure."""
    try:
        rel = layout.at(root, rel)
        path = check_write_target(root, Path(root) / rel / name)
        if real_folder(root, rel, create=True) is None:
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
    for path in files(root):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        out.append((f"{path.parent.name}/{path.name}", st.st_size, st.st_mtime_ns))
    return tuple(out)


def read(root: Path, now: datetime | None = None) -> dict[str, Access]:
    """Every access not yet folded, per entry id (pending and tracked files, every machine's);
    times after `now` count as `now`."""
    return tally(root, now).accesses


def tally(root: Path, now: datetime | None = None) -> Tally:
    """Every line not yet folded, counted: `read`'s accesses, and the days of `days` (every one)."""
    counted = Tally(now)
    counted.add(_lines(files(root)))
    return counted


def days(root: Path, today: date | None = None) -> set[date]:
    """The UTC days of every access not yet folded (for the record of days in use); none after `today`."""
    out: set[date] = set()
    for stamp, *_ in _lines(files(root)):
        if not stamp.endswith("Z"):
            continue
        try:
            day = date.fromisoformat(stamp[:10])
        except ValueError:
            continue
        if today is None or day <= today:
            out.add(day)
    return out


def files_in(folder: Path | None, suffixes: tuple[str, ...]) -> list[Path]:
    """The regular files of `folder` whose names end in one of `suffixes`, sorted by name."""
    if folder is None:
        return []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / n for n in names if n.endswith(suffixes) and is_regular_file(folder / n)]


def files(root: Path) -> list[Path]:
    """The journal's regular files: the pending ones, then the tracked ones (real folders only)."""
    pending = files_in(real_folder(root, PENDING_DIR, create=False), (LOG_SUFFIX, TAKEN, MOVING))
    return pending + files_in(real_folder(root, JOURNAL_DIR, create=False), (LOG_SUFFIX, TAKEN))


def _file_lines(path: Path):
    """The lines of a journal file (nothing when it is not a readable regular file)."""
    fd = open_file(path)
    return stream_lines(fd) if fd is not None else iter(())


def moving_token(path: Path) -> str:
    """The publish token in a `*.<token>.moving` name."""
    return path.name[:-len(MOVING)].rsplit(".", 1)[-1]


def _lines(files: list[Path]):
    """(time, id, correlation text, reads of a compacted line or None, machine) of every journal line of `files`;
    torn or foreign lines and unreadable files are skipped, and so is a file a publish had
    already appended to a tracked file (its marker is there) when it stopped."""
    published: set[str] = set()
    moving = [p for p in files if p.name.endswith(MOVING)]
    for path in [p for p in files if not p.name.endswith(MOVING)] + moving:
        if path.name.endswith(MOVING) and moving_token(path) in published:
            continue
        yield from file_items(path, published=published if moving else None)  # only a stopped publish leaves markers


def file_items(path: Path, start: int = 0, ends: list | None = None, published: set | None = None,
               fd: int | None = None):
    """The items (as `_lines` gives them) of one journal file from byte `start`, nothing when it is
    not a readable regular file; `ends` as line_files.stream_lines gives it; with `published`, the
    tokens of `# moved` markers go there. `fd`: the file already open (closed once read)."""
    fd = open_file(path) if fd is None else fd
    if fd is None:
        return
    machine = _machine_of(path)
    for line in stream_lines(fd, start, ends):
        if published is not None and line.startswith("# moved "):
            published.update(MOVED_MARK.findall(line))
            continue
        parts = well_formed_line(line)
        if parts is not None:
            yield (*parts[:3], int(parts[3]) if len(parts) == 4 else None, machine)


def _machine_of(path: Path) -> str:
    """The machine whose reads a journal file holds (`<machine>.log`, also once taken or moving)."""
    name = path.name.removeprefix("shared-")
    return name[:-len(LOG_SUFFIX)] if name.endswith(LOG_SUFFIX) else name.rsplit(LOG_SUFFIX + ".", 1)[0]


def well_formed_line(line: str) -> tuple[str, ...] | None:
    """(time, id, correlation[, reads]) of a journal line, or None when it is no journal line. The
    fourth field is a compacted line's (storage/journal_compact.py): that many reads, the last at `time`."""
    parts = tuple(line.split("\t"))
    if len(parts) == 3 and valid_id(parts[1]):
        return parts
    if len(parts) == 4 and valid_id(parts[1]) and parts[3].isdigit() and 0 < int(parts[3]) <= MAX_SETTLED:
        return parts
    return None


def _well_formed(lines):
    for line in lines:
        parts = well_formed_line(line)
        if parts is not None:
            yield parts


def parse_files(files: list[Path], now: datetime | None = None) -> dict[str, Access]:
    """Accesses per id; with `now`, a line dated later (a wrong clock, a planted line) counts as `now`."""
    return parse_lines(_lines(files), now)


def parse_lines(items, now: datetime | None = None) -> dict[str, Access]:
    """`parse_files` of (time, id, correlation, reads or None, machine) items, as `_lines` gives them."""
    tally = Tally(now)
    tally.add(items)
    return tally.accesses


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


def take(root: Path, machine: str | None = None, now: datetime | None = None) -> tuple[dict[str, Access], list[Path]]:
    """For a fold (caller holds the tree lock): move this copy's journal files aside and read them.

    This copy's files are the pending ones and the tracked `.access/<machine>.log` its syncs
    published; other machines' tracked files are theirs to fold (folding them here too would
    count their reads twice once both folds merge), and are counted by readers until then.
    Taken files go to the git-ignored pending folder, so a fold that stops never leaves one for
    a sync to commit. Returns the accesses and the taken files, which the caller removes once
    the entries are written (`release`). Appenders waiting on a file being taken write to a new one."""
    pending = real_folder(root, PENDING_DIR, create=True)
    if pending is None:
        return {}, []
    _drop_dead_temps(pending)
    taken = []
    for path in _own_files(root, pending, machine):
        if path.name.endswith((TAKEN, MOVING)):
            taken.append(path)  # left by a fold or a publish that did not finish: fold it now
            continue
        into = pending / f"{'' if path.parent == pending else 'shared-'}{path.name}.{os.getpid()}{TAKEN}"
        target = _take_file(path, into)
        if target is not None:
            taken.append(target)
    taken = [p for p in taken if _readable(p)]  # one that cannot be read now stays, for the next fold
    return parse_files(taken, now), taken


def _drop_dead_temps(pending: Path) -> None:
    """Remove the temp files of a fold killed while it rewrote a taken file (`settle`): the file
    itself is still whole, so the temp holds nothing that is not counted elsewhere."""
    for path in files_in(pending, (".tmp",)):
        match = _TEMP_PID.match(path.name)  # storage.atomic's `.{name}.{pid}.{random}.tmp`
        if match is None or int(match.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(match.group(1)), 0)
            continue  # its writer lives
        except ProcessLookupError:
            pass
        except OSError:
            continue
        try:
            path.unlink()
        except OSError:
            pass


def _readable(path: Path) -> bool:
    fd = open_file(path)
    if fd is None:
        return False
    os.close(fd)
    return True


def _own_files(root: Path, pending: Path | None, machine: str | None) -> list[Path]:
    """The journal files a fold on this copy takes: the pending ones and this machine's tracked log."""
    own = f"{machine_name(machine)}{LOG_SUFFIX}"
    tracked = [p for p in files_in(real_folder(root, JOURNAL_DIR, create=False), (LOG_SUFFIX, TAKEN))
               if p.name == own or (p.name.startswith(own + ".") and p.name.endswith(TAKEN))]
    return files_in(pending, (LOG_SUFFIX, TAKEN, MOVING)) + tracked


def to_fold(root: Path, machine: str | None = None) -> dict[str, Access]:
    """What a fold on this copy would take (`take`'s accesses), read without moving anything."""
    return parse_files(_own_files(root, real_folder(root, PENDING_DIR, create=False), machine))


def release(taken: list[Path]) -> None:
    """Remove the journal files a fold has written into the entries (each one; none stops the rest)."""
    for path in taken:
        try:
            os.unlink(path)
        except OSError:
            pass


def sharing_problem(root: Path) -> str | None:
    """Why this machine's reads cannot be shared with the team (a one-line reason), or None:
    `.access` (the tracked journal folder) is something other than a real folder, e.g. a
    symlink a pulled commit planted, which is never followed."""
    folder = layout.path(root, JOURNAL_DIR)
    try:
        mode = os.lstat(folder).st_mode
    except OSError:
        return None  # not made yet: the next publish makes it
    if stat.S_ISDIR(mode):
        return None
    what = "a symlink" if stat.S_ISLNK(mode) else "not a folder"
    return (f"reads are not shared: {JOURNAL_DIR} is {what} (never followed); they stay counted on this "
            f"machine only until it is a real folder (git rm {JOURNAL_DIR}, then sync)")


def publish(root: Path, machine: str) -> int:
    """Move the pending lines into the tracked `.access/<machine>.log` (team sync, before it
    commits; the caller holds the tree lock). Returns how many lines moved.

    Each pending file is taken by a rename, its well-formed lines and a `# moved <token>`
    line are appended to the tracked file in one synced write, then it is removed. A file a
    stopped publish left is finished first: removed if its marker is in a tracked file,
    appended otherwise. Best effort: what cannot be moved stays pending and is still counted."""
    pending = real_folder(root, PENDING_DIR, create=False)
    if pending is None:
        return 0
    moving = files_in(pending, (MOVING,))  # left by a publish that stopped: are its lines in already?
    tracked = files_in(real_folder(root, JOURNAL_DIR, create=False), (LOG_SUFFIX,)) if moving else []
    published = {token for path in tracked for line in _file_lines(path) if line.startswith("# moved ")
                 for token in MOVED_MARK.findall(line)}
    for path in files_in(pending, (LOG_SUFFIX,)):
        target = _take_file(path, path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(6)}{MOVING}"))
        if target is not None:
            moving.append(target)
    if moving:
        fsync_dir(pending)  # the renames reach the disk before the lines are appended elsewhere
    moved = 0
    for path in moving:
        token, fd = moving_token(path), open_file(path)
        if fd is None:
            continue  # unreadable now: stays pending
        lines = ["\t".join(parts) + "\n" for parts in _well_formed(stream_lines(fd))]
        if token in published:
            lines = []
        if lines:
            block = "".join(lines) + f"# moved {token}\n"
            if not _append_to(root, JOURNAL_DIR, f"{machine_name(machine)}{LOG_SUFFIX}", block.encode("utf-8"),
                              sync=True):
                continue  # stays pending: counted by readers, moved by the next publish
            moved += len(lines)
        release([path])
    return moved
