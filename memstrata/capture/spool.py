"""What a hook leaves for the capture (`.cache/capture/pending/`) and the lock one capture at a time holds.

Stdlib only (and storage.layout): a hook writes its notice and returns within milliseconds. A notice
names a transcript (path, session, cwd, agent); a notice for the same transcript replaces the one
before (one file per transcript), and carries the moment it was made, so a capture removes only the
notice it read: one that a later hook wrote meanwhile stays for the next round. A capture killed
half-way leaves its notices: the next capture (the next hook, `mem capture`) does them again, and
the turns the entries hold keep any turn from being written twice.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import time

from memstrata.storage import layout

FOLDER = ".cache/capture"
PENDING = "pending"
LOCK = "lock"
NOTICE_MAX_BYTES = 64 * 1024


def folder(root) -> str:
    return str(layout.path(root, FOLDER))


def _private_dir(path: str) -> None:
    os.makedirs(path, mode=0o700, exist_ok=True)


def put(root, notice: dict) -> str:
    """Leave `notice` (a dict with `path` or `codex_thread`) for the next capture; its file's path."""
    pending = os.path.join(folder(root), PENDING)
    _private_dir(pending)
    key = str(notice.get("path") or notice.get("codex_thread") or "")
    name = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:20] + ".json"
    data = dict(notice, queued_ns=time.time_ns(), pid=os.getpid())
    target = os.path.join(pending, name)
    temp = os.path.join(pending, f".{name}.{os.getpid()}.{time.time_ns() % 10**9}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, json.dumps(data, ensure_ascii=False).encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(temp, target)
    return target


def pending(root) -> list[tuple[str, bytes, dict]]:
    """The notices waiting: (file, its bytes as read, the notice), oldest first; unreadable ones are
    removed (a notice is only a hint: the transcript is the source)."""
    where = os.path.join(folder(root), PENDING)
    try:
        names = [n for n in os.listdir(where) if n.endswith(".json") and not n.startswith(".")]
    except OSError:
        return []
    found = []
    for name in names:
        path = os.path.join(where, name)
        try:
            data = _read(path)
            notice = json.loads(data)
            if not isinstance(notice, dict) or len(data) > NOTICE_MAX_BYTES:
                raise ValueError
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            _remove(path)
            continue
        found.append((path, data, notice))
    found.sort(key=lambda item: item[2].get("queued_ns") or 0)
    return found


def done(path: str, data: bytes) -> None:
    """Remove a notice once its transcript was captured, unless a later hook replaced it meanwhile."""
    try:
        now = _read(path)
    except OSError:
        return
    if now == data:
        _remove(path)


def _read(path: str) -> bytes:
    """A notice's bytes (never through a symlink; at most one byte past the limit)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        return os.read(fd, NOTICE_MAX_BYTES + 1)
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class CaptureLock:
    """One capture of a tree at a time (flock: it goes with its process, a SIGKILL included)."""

    def __init__(self, root, wait: float = 0.0):
        self.path = os.path.join(folder(root), LOCK)
        self.wait = wait
        self.fd: int | None = None

    def acquire(self, release: bool = False) -> bool:
        """Take the lock (waiting up to `wait` seconds); False when another capture holds it.
        `release`: only ask whether it is free (taken and let go at once)."""
        import fcntl

        _private_dir(os.path.dirname(self.path))
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.fd = fd
                if release:
                    self.release()
                return True
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= deadline:
                    os.close(fd)
                    return False
                time.sleep(0.05)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = None
