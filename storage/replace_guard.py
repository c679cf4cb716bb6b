"""Replacing a file only while it is the one the caller checked, without losing a save that lands meanwhile."""
from __future__ import annotations

import os
import secrets as _random
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from memstrata.storage import libc

RENAME_EXCHANGE = 2  # linux/fs.h
AT_FDCWD = -100
F_SETLEASE, F_RDLCK, F_UNLCK, F_SETSIG = 1024, 0, 2, 10  # linux/fcntl.h
HOLDER_WAIT = 0.1  # a file open for writing but unchanged: how long its writer is given to write
KEPT_SUFFIX = ".kept"
TEMP_SUFFIX = ".tmp"  # storage.atomic's temp files (the sweeps remove those of dead writers)
_NAME_MAX = 255  # bytes in one file name (ext4, btrfs, xfs, APFS)
_COMPARED_BYTES = 1 << 20  # a larger file is compared by its size and time only
QUIET_SECONDS = 0.05  # without an exchange: a file written in the window is copied back once this quiet
QUIET_WAIT_MAX = 2.0


def sibling_name(name: str, suffix: str) -> str:
    """`.{name}.{pid}.{random}{suffix}`, with `name` cut short when the whole would pass the file
    system's 255-byte limit on a name (a note named with 253 bytes still gets one)."""
    tail = f".{os.getpid()}.{_random.token_hex(4)}{suffix}"
    encoded = name.encode("utf-8", "surrogateescape")
    if len(encoded) + len(tail) + 1 > _NAME_MAX:
        name = encoded[:_NAME_MAX - len(tail) - 1 - 64].decode("utf-8", "ignore")  # room to spare
    return f".{name}{tail}"


def is_kept_file(name: str) -> bool:
    """A file the engine took out of a note's place and kept: an editor's save caught while the engine
    wrote the note, or the note's previous file when the engine was killed before it could check it."""
    return name.startswith(".") and name.endswith(KEPT_SUFFIX)


@dataclass
class Replaced:
    """A replace still to be settled: the file it took the place of, held open (and, where the
    rename was an exchange, still in the folder under a `.kept` name)."""

    target: Path
    taken_out: Path | None  # where the exchange left the old file; None after a plain rename
    fd: int
    checked: os.stat_result
    checked_bytes: bytes | None
    ours: os.stat_result


def replace_checked(temp: Path, target: Path, unchanged) -> Replaced | bool:
    """Put `temp` in place of `target` if `unchanged()` still holds; False (temp removed) if not.

    A check and then a rename leave a window: an editor's save landing between the two (a rename over
    the note, or a write into the file the rename then unlinks: a truncating editor) was lost (1 of
    349 saves under load). So the file checked is held open and, where Linux offers it, the rename
    is an exchange that leaves the file it took out beside the note under a `.kept` name; `settle`
    (called once the folder is synced) drops that file when it is the one checked and unwritten (a
    process holding it open for writing is given HOLDER_WAIT to write), and else puts it back in place
    of ours. A kill before `settle` leaves the `.kept` file: no write or sync removes one; `mem doctor
    --fix` does only when the tree holds its text (doctor/kept_files.py).
    """
    if unchanged is None:
        os.replace(temp, target)
        return True
    fd = _open_regular(target)
    try:
        checked = os.fstat(fd) if fd is not None else None
        checked_bytes = _contents(fd, checked) if fd is not None else None
        if not unchanged():
            _close(fd)
            fd = None
            temp.unlink()
            return False
        if fd is None:  # nothing there to lose
            os.replace(temp, target)
            return True
        ours = os.stat(temp)
        held = temp.parent / sibling_name(target.name, KEPT_SUFFIX)
        exchanged = False
        if _renameat2() is not None:
            os.rename(temp, held)  # the name the old file will have: a kill from here on leaves no `.tmp` of it
            exchanged = _exchange(held, target)
            if not exchanged:
                os.rename(held, temp)
        if not exchanged:
            os.replace(temp, target)
        replaced = Replaced(Path(target), held if exchanged else None, fd, checked, checked_bytes, ours)
        fd = None
        return replaced
    finally:
        _close(fd)


def settle(replaced: Replaced | bool) -> bool:
    """Whether our file stays: True, or False when an editor's save was caught in the window and put
    back in place of ours (or, when that could not be done safely, kept beside the note as `.kept`)."""
    if not isinstance(replaced, Replaced):
        return replaced
    r = replaced
    try:
        written = _written(r)
        if r.taken_out is None:
            return _settle_renamed(r, written)
        out = _lstat(r.taken_out)
        if out is None:  # removed by someone else meanwhile: nothing left to put back
            return True
        if _same(out, r.checked) and not written:
            os.unlink(r.taken_out)
            return True
        if _untouched(_lstat(r.target), r.ours) and _exchange(r.taken_out, r.target):
            if _untouched(_lstat(r.taken_out), r.ours) and not _held_for_writing(r.taken_out):
                os.unlink(r.taken_out)  # ours, exchanged back out
            # else an editor saved into it, or opened it to: that file stays beside the note, `.kept`
        # else saved again after ours: that save stays; the one caught before it is left `.kept`
        return False
    except OSError:  # the folder cannot be changed now: what was taken out is still there, `.kept`
        return r.taken_out is None or _lstat(r.taken_out) is None
    finally:
        _close(r.fd)


def _written(r: Replaced) -> bool:
    """Whether the file checked was written since. One open for writing by anyone (an editor that opened
    it before the rename and writes in a moment, into a file no name would lead to) is given HOLDER_WAIT
    to write; a writer that holds it open longer without writing (an idle appender) does not hold the
    engine up: its later writes go where they would after any editor's rename."""
    def changed() -> bool:
        now = os.fstat(r.fd)
        return (now.st_size, now.st_mtime_ns) != (r.checked.st_size, r.checked.st_mtime_ns) or \
            _contents(r.fd, now) != r.checked_bytes

    if changed():
        return True
    deadline = time.monotonic() + HOLDER_WAIT
    while _open_for_writing(r.fd) and time.monotonic() < deadline:
        time.sleep(0.005)
        if changed():
            return True
    return changed()


def _settle_renamed(r: Replaced, written: bool) -> bool:
    """Without an exchange: the old file, written into after the check, is copied back once it has been
    quiet a moment (an editor that truncates, then writes, is not copied half-way), if the path still
    holds ours untouched; else its bytes are kept beside the note."""
    if not written:
        return True
    data = _quiet_contents(r.fd)
    _write_beside(r.target, data, stat.S_IMODE(r.checked.st_mode), replace=_untouched(_lstat(r.target), r.ours))
    return False


def _quiet_contents(fd: int) -> bytes:
    start = time.monotonic()
    last, since = None, start
    while time.monotonic() - start < QUIET_WAIT_MAX:
        st = os.fstat(fd)
        stamp = (st.st_size, st.st_mtime_ns)
        if stamp != last:
            last, since = stamp, time.monotonic()
        elif time.monotonic() - since >= QUIET_SECONDS and not _open_for_writing(fd):
            break  # (a file written in the window whose writer still holds it is waited for, to QUIET_WAIT_MAX)
        time.sleep(0.005)
    return _contents(fd, os.fstat(fd), limit=None)


def _write_beside(target: Path, data: bytes, mode: int, replace: bool) -> None:
    """`data` in place of `target` (replace) or beside it as a `.kept` file, written whole."""
    temp = target.parent / sibling_name(target.name, TEMP_SUFFIX)  # a kill leaves a temp file the sweep removes
    with open(temp, "xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(temp, mode)
    os.replace(temp, target if replace else target.parent / sibling_name(target.name, KEPT_SUFFIX))


def _held_for_writing(path: Path) -> bool:
    fd = _open_regular(path)
    if fd is None:
        return False
    try:
        return _open_for_writing(fd)
    finally:
        _close(fd)


def _open_for_writing(fd: int) -> bool:
    """Whether any process has the file open for writing (Linux: a read lease is refused then); False
    where leases are not offered, or for a file this user does not own (a lease needs the owner).

    While the lease is held (a moment) an open for writing breaks it, and the kernel tells the holder
    by a signal, SIGIO by default, which ends a process: SIGURG is asked for instead, ignored unless
    handled."""
    try:
        import fcntl
        import signal

        fcntl.fcntl(fd, F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, F_SETLEASE, F_RDLCK)
    except BlockingIOError:
        return True
    except (OSError, ImportError, AttributeError):
        return False
    try:
        import fcntl

        fcntl.fcntl(fd, F_SETLEASE, F_UNLCK)
    except OSError:
        pass
    return False


def _open_regular(path: Path) -> int | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device is never the checked file
        os.close(fd)
        return None
    return fd


def _contents(fd: int, st: os.stat_result, limit: int | None = _COMPARED_BYTES) -> bytes | None:
    if limit is not None and st.st_size > limit:
        return None
    parts, offset = [], 0
    while True:
        chunk = os.pread(fd, 1 << 16, offset)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        offset += len(chunk)


def _same(a: os.stat_result | None, b: os.stat_result) -> bool:
    return a is not None and (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _untouched(a: os.stat_result | None, ours: os.stat_result) -> bool:
    """Whether `a` is our file as we wrote it (an editor may have saved into it in place since)."""
    return _same(a, ours) and (a.st_size, a.st_mtime_ns) == (ours.st_size, ours.st_mtime_ns)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _close(fd: int | None) -> None:
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


def _exchange(a: Path, b: Path) -> bool:
    """Swap two names in one step (renameat2 RENAME_EXCHANGE); False where the system or file system has none."""
    call = _renameat2()
    if call is None:
        return False
    return call(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0


def _renameat2():
    import ctypes

    return libc.function("renameat2", [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint])
