"""One writer lock per tree (flock: released by the kernel when a holder dies)."""
from __future__ import annotations

import errno
import fcntl
import os
import stat
import threading
from pathlib import Path

from memstrata.storage.errors import Locked
from memstrata.storage import layout

LOCK_FILE = ".lock"


DEFAULT_TIMEOUT_SECONDS = 120.0


def default_timeout() -> float:
    """How long a writer waits for the lock: $MEMSTRATA_LOCK_TIMEOUT seconds, else 120."""
    try:
        return max(0.0, float(os.environ.get("MEMSTRATA_LOCK_TIMEOUT", DEFAULT_TIMEOUT_SECONDS)))
    except ValueError:
        return DEFAULT_TIMEOUT_SECONDS


def acquire_within(fd: int, timeout: float) -> bool:
    """Take the flock on `fd` within `timeout` seconds; False (fd then owned by a helper) if not.

    A waiter blocks in the kernel (flock without LOCK_NB, in a helper thread so the wait can
    time out) instead of polling with sleeps: a polling waiter kept losing the lock to a busy
    writer that released and re-took it between two polls, and gave up after the timeout.
    On timeout the helper keeps waiting; when it gets the lock later it lets it go at once
    and closes the fd.
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        pass
    if timeout <= 0:
        os.close(fd)
        return False
    got = threading.Event()
    guard = threading.Lock()
    state = {"abandoned": False}

    def wait() -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            return
        with guard:
            if state["abandoned"]:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                return
            got.set()

    threading.Thread(target=wait, name="memstrata-lock-wait", daemon=True).start()
    if got.wait(timeout):
        return True
    with guard:
        if got.is_set():
            return True
        state["abandoned"] = True
    return False


def _open_lock_file(path: str) -> int:
    """Open (creating) the lock file: never through a symlink, never a FIFO or device (OSError)."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):  # a symlink (a pulled one), a socket, a folder
            raise Locked(f"{LOCK_FILE} in the tree is not a lock file (a symlink or a special file): "
                         "`mem doctor --fix` removes it (a link's target is never touched)") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Locked(f"{LOCK_FILE} in the tree is not a regular file: `mem doctor --fix` removes it")
    return fd


class TreeLock:
    """Exclusive, re-entrant (per thread) lock on a memory root.

    flock locks vanish with their process, so a writer killed with SIGKILL never leaves a
    stale lock behind; the lock file itself may stay and is harmless.
    """

    _held: dict[str, tuple[int, int]] = {}
    _guard = threading.Lock()

    def __init__(self, root: Path, timeout: float | None = None):
        self.path = str(layout.path(root, LOCK_FILE))
        self.timeout = default_timeout() if timeout is None else timeout
        self._key = f"{self.path}:{threading.get_ident()}"

    def __enter__(self) -> "TreeLock":
        with self._guard:
            held = self._held.get(self._key)
            if held:
                self._held[self._key] = (held[0], held[1] + 1)
                return self
        fd = _open_lock_file(self.path)
        if not acquire_within(fd, self.timeout):
            raise Locked(f"the memory tree is locked by another writer (waited {self.timeout:.0f}s)")
        with self._guard:
            self._held[self._key] = (fd, 1)
        return self

    def __exit__(self, *exc) -> None:
        with self._guard:
            fd, depth = self._held[self._key]
            if depth > 1:
                self._held[self._key] = (fd, depth - 1)
                return
            del self._held[self._key]
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
