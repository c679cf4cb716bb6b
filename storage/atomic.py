"""Atomic file writes (temp file, fsync, rename) with private permissions."""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path

# is_kept_file is named here beside is_temp_file, for the sweeps and the doctor
from memstrata.storage.replace_guard import (TEMP_SUFFIX, is_kept_file, replace_checked,  # noqa: F401
                                             settle, sibling_name)
from memstrata.storage import libc
from memstrata.storage.safe_io import check_write_target

FILE_MODE = 0o600
DIR_MODE = 0o700


class ChangedMeanwhile(Exception):
    """The file changed between the caller's read and the replace: nothing was written to it.
    `paths`: the files left as they were (several when a one_sync block ends)."""

    def __init__(self, *paths: str):
        super().__init__(", ".join(paths))
        self.paths = list(paths)


class NotReplaced(OSError):
    """Files of a one_sync block the system refused to replace (an immutable file, a read-only
    folder): each is left as it was, the block's others are written. `refused`: path -> reason;
    `changed`: files left because they changed meanwhile (as ChangedMeanwhile's)."""

    def __init__(self, refused: dict[str, str], changed: list[str]):
        path, reason = next(iter(refused.items()))
        super().__init__(f"{reason}: {path}" + (f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""))
        self.refused, self.changed = dict(refused), list(changed)


def temp_name(name: str) -> str:
    """`.{name}.{pid}.{random}.tmp`, with `name` cut short when the whole would pass the file
    system's 255-byte limit on a name (a note named with 253 bytes still gets written)."""
    return sibling_name(name, TEMP_SUFFIX)


def is_temp_file(name: str) -> bool:
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def ensure_dir(path: Path) -> None:
    """Create a directory (and parents) private to the user.

    mkdir(parents=True) gives the parents the umask's mode (often 0755), so each missing
    level is made on its own with 0700.
    """
    path = Path(path)
    if path.is_dir():
        return
    missing = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for level in reversed(missing):
        try:
            level.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)  # raises the right error


_batch = threading.local()  # .pending: [(temp, target, unchanged)] of this thread's open one_sync block


@contextmanager
def one_sync():
    """Atomic writes made inside the block (by this thread) are flushed to disk together and then
    renamed into place together at its end: each file is still replaced whole and only once its
    data is on disk (a crash leaves the old file or the new one, plus a temp file the doctor
    removes), but n writes cost one flush of the file system and one fsync per folder instead of
    2n fsyncs. Until the block ends the targets keep their old content. An exception inside the
    block discards every write of it; nested blocks commit with the outermost."""
    if getattr(_batch, "pending", None) is not None:
        yield
        return
    _batch.pending = []
    try:
        yield
    except BaseException:
        pending, _batch.pending = _batch.pending, None
        _discard(pending)
        raise
    pending, _batch.pending = _batch.pending, None
    _commit(pending)


def _discard(pending) -> None:
    for temp, _, _ in pending:
        try:
            temp.unlink()
        except OSError:
            pass


SYNCFS_FROM = 8  # fewer files are fsynced one by one: syncfs also flushes other programs' writes


def _flush(temps: list[Path]) -> None:
    """Make the temp files' data durable: one syncfs per file system where Linux offers it and
    the batch is large enough to gain, else an fsync each."""
    syncfs = _syncfs() if len(temps) >= SYNCFS_FROM else None
    devices: dict[int, Path] = {}
    for temp in temps:
        devices.setdefault(os.stat(temp).st_dev, temp)
    if syncfs is not None:
        for temp in devices.values():
            fd = os.open(temp, os.O_RDONLY)
            try:
                if syncfs(fd) == 0:
                    continue
            finally:
                os.close(fd)
            break  # syncfs failed: fsync each below
        else:
            return
    for temp in temps:
        fd = os.open(temp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _syncfs():
    import ctypes

    return libc.function("syncfs", [ctypes.c_int])


def _commit(pending) -> None:
    if not pending:
        return
    try:
        _flush([temp for temp, _, _ in pending])
    except BaseException:
        _discard(pending)
        raise
    changed, refused = [], {}
    for start in range(0, len(pending), SETTLE_EVERY):  # each replace holds its old file open until settled
        try:
            with uninterrupted():
                _replace_part(pending, start, changed, refused)
        except BaseException:  # (a Ctrl-C delivered as a part ended): the parts not begun are not written
            _discard(pending[start + SETTLE_EVERY:])
            raise
    if refused:
        raise NotReplaced(refused, changed)
    if changed:
        raise ChangedMeanwhile(*changed)


SETTLE_EVERY = 64  # replaces between two settles: a batch of thousands would run out of file descriptors


@contextmanager
def uninterrupted():
    """Ctrl-C, SIGTERM and SIGHUP wait until the block ends (in the main thread; other threads get no
    KeyboardInterrupt): a replace stopped between its exchange and its settle left a `.kept` file
    beside the note, up to a whole batch of them. Each signal caught is delivered when the block ends.
    Left alone: an ignored signal (`nohup`), one set outside Python, and every signal of a thread whose
    event loop reads them from a wakeup fd (asyncio: the loop would see them twice)."""
    import signal

    if threading.current_thread() is not threading.main_thread() or _loop_reads_signals(signal):
        yield
        return
    caught: list[int] = []
    saved = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        handler = signal.getsignal(sig) if sig is not None else None
        if handler is not None and handler is not signal.SIG_IGN:
            saved[sig] = signal.signal(sig, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        raised = None
        for sig, handler in saved.items():
            while True:  # signal.signal runs a pending handler first, which may raise: the restore is redone
                try:
                    signal.signal(sig, handler)
                    break
                except BaseException as exc:  # noqa: BLE001 - kept, raised once every handler is back
                    raised = raised or exc
        for sig in dict.fromkeys(caught):
            signal.raise_signal(sig)
        if raised is not None:
            raise raised


def _loop_reads_signals(signal) -> bool:
    """Whether an event loop reads this thread's signals from a wakeup fd (asked by setting it: Python has
    no getter; put back without the full-buffer warning, as asyncio sets it)."""
    fd = signal.set_wakeup_fd(-1)
    if fd != -1:
        signal.set_wakeup_fd(fd, warn_on_full_buffer=False)
    return fd != -1


def _replace_part(pending, start: int, changed: list, refused: dict) -> None:
    """Replace pending[start:start + SETTLE_EVERY], sync their folders, then settle each."""
    folders, replaced = {}, []
    try:
        for n in range(start, min(start + SETTLE_EVERY, len(pending))):
            temp, target, unchanged = pending[n]
            try:
                done = replace_checked(temp, target, unchanged)
            except OSError as exc:  # this file stays as it was; the others are still written
                _discard([(temp, target, unchanged)])
                refused[str(target)] = exc.strerror or str(exc)
                continue
            except BaseException:
                _discard(pending[n:])
                raise
            if done is False:
                changed.append(str(target))
                continue
            replaced.append((target, done))
            folders[str(target.parent)] = target.parent
        for folder in folders.values():
            fsync_dir(folder)
    finally:
        for target, done in replaced:  # an editor's save caught between check and rename goes back
            if not settle(done):
                changed.append(str(target))


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, *, root: Path | None = None, unchanged=None,
                       mode: int | None = None, times_ns: tuple[int, int] | None = None) -> None:
    """Replace `path` with `data` so that readers see the old or the new file, never half.

    With `root`, refuse (InvalidInput) a target outside it (safe_io.check_write_target).
    `unchanged`: called right before the replace; False leaves `path` as it is (ChangedMeanwhile).
    `mode`: the new file's permissions (default FILE_MODE).
    `times_ns`: the new file's (access, modification) times (default now): an edit that only adds
    the engine's id keeps the note's own time, which aging reads.
    """
    atomic_write_chunks(path, (data,), root=root, unchanged=unchanged, mode=mode, times_ns=times_ns)


def atomic_write_chunks(path: Path, chunks, *, root: Path | None = None, unchanged=None,
                        mode: int | None = None, times_ns: tuple[int, int] | None = None) -> None:
    """`atomic_write_bytes` for data given piece by piece (a file too large to hold in memory)."""
    path = Path(path) if root is None else check_write_target(root, path)
    ensure_dir(path.parent)
    temp = path.parent / temp_name(path.name)
    pending = getattr(_batch, "pending", None)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            for data in chunks:
                handle.write(data)
            handle.flush()
            if times_ns is not None:  # after the last write (a write sets the time), before the rename
                os.utime(handle.fileno(), ns=times_ns)
            if pending is not None:  # inside one_sync: flushed and renamed with the block's others
                pending.append((temp, path, unchanged))
                return
            os.fsync(handle.fileno())
        with uninterrupted():
            done = replace_checked(temp, path, unchanged)
            if done is False:
                raise ChangedMeanwhile(str(path))
            try:
                fsync_dir(path.parent)
            finally:
                settled = settle(done)  # an editor's save caught between check and rename went back
    except BaseException:
        try:
            temp.unlink()
        except OSError:
            pass
        raise
    if not settled:
        raise ChangedMeanwhile(str(path))


def atomic_write_text(path: Path, text: str, *, root: Path | None = None, unchanged=None,
                      mode: int | None = None, times_ns: tuple[int, int] | None = None) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), root=root, unchanged=unchanged, mode=mode, times_ns=times_ns)


def atomic_move(source: Path, target: Path, *, root: Path | None = None) -> None:
    """Move a file within the root atomically (rename), creating the target folder.

    With `root`, both ends must be inside it (safe_io.check_write_target).
    """
    if root is not None:
        check_write_target(root, source)
        check_write_target(root, target)
    ensure_dir(Path(target).parent)
    os.replace(source, target)
    fsync_dir(Path(target).parent)
    fsync_dir(Path(source).parent)


class ReplacingFile:
    """A new text file written whole or not at all (an export): the text goes to a temp file beside
    `path` that takes its place on close(); close(keep=False) or a failure leaves no file (ENOSPC
    half-way left a partial one). Anything already at `path` (a file, a symlink, /dev/stdout, a FIFO,
    /dev/full) is written straight through, as `open(path, "w")` does: a rename would put a new file
    in place of the link (an export to /dev/stdout redirected to a file replaced /dev/stdout itself)
    or break a file's hard links and mode."""

    def __init__(self, path):
        self.path = Path(path)
        straight = os.path.lexists(self.path)
        self._temp = None if straight else self.path.parent / temp_name(self.path.name)
        self._handle = open(self.path if straight else self._temp, "w" if straight else "x", encoding="utf-8")

    def write(self, text: str) -> int:
        return self._handle.write(text)

    def flush(self) -> None:
        self._handle.flush()

    def close(self, keep: bool = True) -> None:
        if not keep:
            try:
                self._handle.close()
            except OSError:
                pass  # its buffer could not be written: the temp file goes anyway
            if self._temp is not None:
                self._temp.unlink(missing_ok=True)
            return
        try:
            self._handle.flush()
            if self._temp is not None:
                os.fsync(self._handle.fileno())
            self._handle.close()
        except BaseException:
            self.close(keep=False)
            raise
        if self._temp is not None:
            os.replace(self._temp, self.path)
            fsync_dir(self.path.parent)
