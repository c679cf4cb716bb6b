"""Replacing a file only while it is the one the caller checked, without losing a save that lands meanwhile."""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

RENAME_EXCHANGE = 2  # linux/fs.h
AT_FDCWD = -100
_COMPARED_BYTES = 1 << 20  # a larger file is compared by its size and time only


@dataclass
class Replaced:
    """A replace still to be settled: the file it took the place of, held open (and, where the
    rename was an exchange, still in the folder under the temp name)."""

    target: Path
    taken_out: Path | None  # the temp name the exchange left the old file under; None after a plain rename
    fd: int
    checked: os.stat_result
    checked_bytes: bytes | None
    ours: os.stat_result


def replace_checked(temp: Path, target: Path, unchanged) -> Replaced | bool:
    """Put `temp` in place of `target` if `unchanged()` still holds; False (temp removed) if not.

    A check and then a rename leave a window: an editor's save landing between the two (a rename over
    the note, or a write into the file the rename then unlinks: a truncating editor) was lost (1 of
    349 saves under load). So the file checked is held open and, where Linux offers it, the rename
    is an exchange that leaves the file it took out under the temp name; `settle` (called once the
    folder is synced) puts that file back, and drops ours, when it is not the file checked or was
    written since. What is left open: an editor that opened the file before the exchange and writes
    only after `settle`.
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
        exchanged = _exchange(temp, target)
        if not exchanged:
            os.replace(temp, target)
        replaced = Replaced(Path(target), Path(temp) if exchanged else None, fd, checked, checked_bytes, ours)
        fd = None
        return replaced
    finally:
        _close(fd)


def settle(replaced: Replaced | bool) -> bool:
    """Whether our file stays: True, or False when an editor's save was caught in the window and put
    back in place of ours (ours is then gone; a save made after ours is left as it is)."""
    if not isinstance(replaced, Replaced):
        return replaced
    r = replaced
    try:
        now = os.fstat(r.fd)
        written = (now.st_size, now.st_mtime_ns) != (r.checked.st_size, r.checked.st_mtime_ns) or \
            _contents(r.fd, now) != r.checked_bytes
        if r.taken_out is None:  # a plain rename: a write into the old file is copied back
            if written:
                _copy_back(r, now)
            return not written
        out = _lstat(r.taken_out)
        if out is None:  # removed by someone else meanwhile: nothing left to put back
            return True
        if _same(out, r.checked) and not written:
            os.unlink(r.taken_out)
            return True
        if _same(_lstat(r.target), r.ours) and _exchange(r.taken_out, r.target):
            os.unlink(r.taken_out)  # ours, exchanged back out
        else:  # saved again after ours: that save stays; the one caught in between is kept beside it
            os.replace(r.taken_out, r.target.parent / f".{r.target.name}.{os.getpid()}.{r.fd}.caught")
        return False
    except OSError:  # the folder cannot be changed now: ours stays, as a plain rename would have left it
        return True
    finally:
        _close(r.fd)


def _copy_back(r: Replaced, now: os.stat_result) -> None:
    """Without an exchange: the old file's bytes (written into after the check) go back to the path,
    if it still holds ours."""
    if not _same(_lstat(r.target), r.ours):
        return
    data = _contents(r.fd, now, limit=None)
    temp = r.target.parent / f".{r.target.name}.{os.getpid()}.back"
    with open(temp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(temp, stat.S_IMODE(r.checked.st_mode))
    os.replace(temp, r.target)


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
    fn = getattr(_renameat2, "fn", False)
    if fn is False:
        fn = None
        try:
            import ctypes

            fn = ctypes.CDLL(None, use_errno=True).renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            fn.restype = ctypes.c_int
        except (OSError, AttributeError):
            fn = None
        _renameat2.fn = fn
    return fn
