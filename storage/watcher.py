"""Which files of a tree changed since a moment, without walking it (Linux inotify)."""
from __future__ import annotations

import errno
import os
import struct
import threading
from pathlib import Path


class TreeWatcher:
    """Knows, without walking the tree, whether and which files changed (Linux inotify).

    Every non-hidden directory of the root is watched (entries never live in hidden ones).
    `generation()` drains the kernel's queue without blocking and returns a counter that
    grows with every change; the kernel queues an event before the writing syscall returns,
    so a change made before a call started is always counted when the call asks.
    `changes_since(g)` also names the files (paths relative to the root) changed after
    generation g, or None when only a walk can tell (a folder was created, moved or
    deleted, or the log of names overflowed). Queue overflow, a watch limit or any error
    turns the watcher off (`ok` False): callers then walk the tree as they would without it.
    """

    LOG_MAX = 20000  # file names remembered; older changes need a walk

    _MASK = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800  # modify attrib close_write moved create delete self
    _IN_ISDIR = 0x40000000
    _IN_Q_OVERFLOW = 0x4000
    _IN_IGNORED = 0x8000
    _IN_NONBLOCK = 0o4000
    _IN_CLOEXEC = 0o2000000

    def __init__(self, root: Path, max_watches: int = 20000):
        import ctypes

        self.root = Path(root)
        self.ok = False
        self.out_of_instances = False
        self._gen = 0
        self._log: list[tuple[int, str]] = []  # (generation, relative path) of each file event
        self._walk_needed_at = 0  # latest generation whose change only a walk can describe
        self._log_complete_after = 0  # the log names every file change after this generation
        # Re-entrant: close() may run from a finalizer on a thread that is inside generation().
        self._lock = threading.RLock()
        self._fd = -1
        self._dirs: dict[int, str] = {}
        self._max = max_watches
        try:
            self._libc = ctypes.CDLL(None, use_errno=True)
            self._fd = self._libc.inotify_init1(self._IN_NONBLOCK | self._IN_CLOEXEC)
            if self._fd < 0:
                self.out_of_instances = ctypes.get_errno() == errno.EMFILE  # fs.inotify.max_user_instances
                return
            self._add_tree(str(self.root))
            self.ok = True
        except (OSError, AttributeError):
            self.ok = False

    def _add(self, path: str) -> None:
        if len(self._dirs) >= self._max:
            raise OSError("too many directories to watch")
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), self._MASK)
        if wd < 0:
            raise OSError("inotify_add_watch failed")
        self._dirs[wd] = path

    def _add_tree(self, top: str) -> None:
        stack = [top]
        while stack:
            folder = stack.pop()
            self._add(folder)
            try:
                with os.scandir(folder) as items:
                    for item in items:
                        if not item.name.startswith(".") and item.is_dir(follow_symlinks=False):
                            stack.append(item.path)
            except FileNotFoundError:
                continue

    def generation(self) -> int | None:
        """The change counter after draining pending events; None when the watcher is off."""
        if not self.ok:
            return None
        with self._lock:
            if self._fd < 0:
                return None  # closed meanwhile: its number may belong to another file now
            try:
                while True:
                    try:
                        data = os.read(self._fd, 65536)
                    except BlockingIOError:
                        break
                    if not data:
                        break
                    self._consume(data)
            except OSError:
                self.ok = False
                return None
            return self._gen if self.ok else None

    def changes_since(self, generation: int | None) -> tuple[int | None, set[str] | None]:
        """(current generation, relative paths of the files changed after `generation`), the
        paths None when a walk is needed (or `generation` is None); (None, None) when off."""
        current = self.generation()
        if current is None:
            return None, None
        with self._lock:
            if generation is None or generation < self._walk_needed_at:
                return current, None
            if generation < self._log_complete_after:
                return current, None  # the names of some changes were dropped from the log
            return current, {rel for gen, rel in self._log if gen > generation}

    def _consume(self, data: bytes) -> None:
        offset = 0
        while offset + 16 <= len(data):
            wd, mask, _cookie, length = struct.unpack_from("iIII", data, offset)
            name = data[offset + 16: offset + 16 + length].rstrip(b"\0").decode("utf-8", "surrogateescape")
            offset += 16 + length
            if mask & self._IN_Q_OVERFLOW:
                self.ok = False
                return
            if mask & self._IN_IGNORED:
                self._dirs.pop(wd, None)
                continue
            if name.startswith(".") and not name.endswith(".md"):
                continue  # hidden folders (.vectors, .cache ...) and lock/temp files hold no entries
            self._gen += 1
            parent = self._dirs.get(wd)
            if mask & self._IN_ISDIR or mask & (0x400 | 0x800) or parent is None or not name:
                self._walk_needed_at = self._gen  # a folder changed (or the event names no file)
            else:
                rel = os.path.relpath(os.path.join(parent, name), self.root)
                self._log.append((self._gen, rel.replace(os.sep, "/")))
                if len(self._log) > self.LOG_MAX:
                    cut = len(self._log) // 2
                    self._log_complete_after = self._log[cut - 1][0]
                    del self._log[:cut]
            if mask & self._IN_ISDIR and mask & (0x100 | 0x80):  # a new or moved-in folder: watch it too
                parent = self._dirs.get(wd)
                if parent is not None and not name.startswith("."):
                    try:
                        self._add_tree(os.path.join(parent, name))
                    except OSError:
                        self.ok = False
                        return

    def close(self) -> None:
        """Release the inotify fd, once: the owner's close() and its finalizer both call this, and
        a second os.close of the same number would close whatever file another thread opened under
        it since (a warm service's call then lost its stdout or socket: 'Bad file descriptor')."""
        self.ok = False
        with self._lock:
            fd, self._fd = self._fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass
