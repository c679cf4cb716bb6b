"""Reads that open only regular files, and the check that keeps every write inside the root."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from memstrata.storage.errors import InvalidInput

# The engine's own folders under the root; one of them being a symlink would lead writes elsewhere.
ENGINE_DIRS = (".trash", ".versions", ".full", ".cache", ".vectors", ".quarantine", ".access", ".memstrata")
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


class NotRegularFile(OSError):
    """A FIFO, socket, device, folder or (unless followed) symlink: never opened for reading."""


class FileTooLarge(OSError):
    """A file larger than the limit its reader allows."""


def is_regular_file(path, *, follow_symlinks: bool = False) -> bool:
    """Whether `path` is a regular file (a symlink counts only when followed), without opening it."""
    try:
        st = os.stat(path, follow_symlinks=follow_symlinks)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode)


def read_regular_bytes(path, limit: int | None = None, *, follow_symlinks: bool = False) -> bytes:
    """The bytes of a regular file; NotRegularFile for anything else, FileTooLarge past `limit`
    (read_regular_stamped without the stamp)."""
    return read_regular_stamped(path, limit, follow_symlinks=follow_symlinks)[0]


def read_regular_stamped(path, limit: int | None = None, *, follow_symlinks: bool = False) -> tuple[bytes, os.stat_result]:
    """(bytes, fstat of the descriptor taken before they were read) of a regular file: the stamp
    (size, mtime) belongs to the text read or to an older one, never to a later save, so a file
    edited after the read is seen as changed by the next sync.

    stat first (a FIFO or device is never opened), then open non-blocking and fstat the
    descriptor (the file may have been swapped between the two), then read.
    FileNotFoundError and other OSErrors pass through.
    """
    before = os.stat(path, follow_symlinks=follow_symlinks)
    if not stat.S_ISREG(before.st_mode):
        raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
    flags = _OPEN_FLAGS if follow_symlinks else _OPEN_FLAGS | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
        if limit is not None and st.st_size > limit:
            raise FileTooLarge(errno.EFBIG, f"larger than {limit} bytes", str(path))
        return _read_all(fd, limit), st
    finally:
        os.close(fd)


def _read_all(fd: int, limit: int | None) -> bytes:
    chunks, total = [], 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if limit is not None and total > limit:  # grew while being read
            raise FileTooLarge(errno.EFBIG, f"larger than {limit} bytes", None)
        chunks.append(chunk)


def read_regular_text(path, limit: int | None = None, *, follow_symlinks: bool = False) -> str:
    """read_regular_bytes decoded as UTF-8 (UnicodeDecodeError passes through)."""
    return read_regular_bytes(path, limit, follow_symlinks=follow_symlinks).decode("utf-8")


def check_write_target(root, path) -> Path:
    """Refuse (InvalidInput) a write, move or delete at `path` that would not land inside `root`.

    The target's folder, symlinks resolved, must be inside the real root, and a target
    inside an engine folder (.trash, .versions, ...) needs that folder not to be a symlink.
    Returns `path` as a Path.
    """
    path = Path(path)
    try:
        parts = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root))).parts
        first = parts[0]
    except (ValueError, IndexError):  # another drive (Windows) or the root itself
        raise InvalidInput(f"refusing to write {path}: it is not inside the memory root") from None
    if first == ".memstrata" and len(parts) > 2 and os.path.islink(os.path.join(root, first, parts[1])):
        first = f"{first}/{parts[1]}"  # an adopted tree's engine folders are one level down
        raise InvalidInput(f"refusing to write {path}: {first}/ in the memory root is a symlink"
                           " (run `mem doctor --fix` to set it aside)")
    if first == os.pardir:
        raise InvalidInput(f"refusing to write {path}: it is not inside the memory root")
    if first in ENGINE_DIRS and os.path.islink(os.path.join(root, first)):
        raise InvalidInput(f"refusing to write {path}: {first}/ in the memory root is a symlink"
                           " (run `mem doctor --fix` to set it aside)")
    real_root = os.path.realpath(root)
    real_parent = os.path.realpath(path.parent)
    if real_parent != real_root and not real_parent.startswith(real_root.rstrip(os.sep) + os.sep):
        raise InvalidInput(f"refusing to write {path}: it leads outside the memory root")
    return path
