"""One writer lock per tree (flock: released by the kernel when a holder dies)."""
from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

from memstrata.errors import Locked

LOCK_FILE = ".lock"


DEFAULT_TIMEOUT_SECONDS = 120.0


def default_timeout() -> float:
    """How long a writer waits for the lock: $MEMSTRATA_LOCK_TIMEOUT seconds, else 120."""
    try:
        return max(0.0, float(os.environ.get("MEMSTRATA_LOCK_TIMEOUT", DEFAULT_TIMEOUT_SECONDS)))
    except ValueError:
        return DEFAULT_TIMEOUT_SECONDS


class TreeLock:
    """Exclusive, re-entrant (per thread) lock on a memory root.

    flock locks vanish with their process, so a writer killed with SIGKILL never leaves a
    stale lock behind; the lock file itself may stay and is harmless.
    """

    _held: dict[str, tuple[int, int]] = {}
    _guard = threading.Lock()

    def __init__(self, root: Path, timeout: float | None = None):
        self.path = str(Path(root) / LOCK_FILE)
        self.timeout = default_timeout() if timeout is None else timeout
        self._key = f"{self.path}:{threading.get_ident()}"

    def __enter__(self) -> "TreeLock":
        with self._guard:
            held = self._held.get(self._key)
            if held:
                self._held[self._key] = (held[0], held[1] + 1)
                return self
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + self.timeout
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise Locked(f"the memory tree is locked by another writer (waited {self.timeout:.0f}s)") from None
                time.sleep(delay)
                delay = min(0.05, delay * 1.5)
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
