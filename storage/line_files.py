"""Reading a file line by line, safely: a regular file only (no symlink, no FIFO), any size, lines of bounded length."""
from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_LINE_BYTES = 4096  # a longer line is no journal line (a planted file is skipped line by line)
CHUNK = 1 << 20


def open_file(path: Path) -> int | None:
    """A read descriptor of a regular file (never through a symlink, never a FIFO), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def stream_lines(fd: int):
    """The lines (without their newline) of an open file, read a chunk at a time; a line longer
    than MAX_LINE_BYTES is skipped whole, so a file of any size costs little memory."""
    rest, skipping = b"", False
    try:
        while True:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            parts = (rest + chunk).split(b"\n")
            rest = parts.pop()
            for part in parts:
                if not skipping and len(part) <= MAX_LINE_BYTES:
                    yield part.decode("utf-8", "replace")
                skipping = False
            if len(rest) > MAX_LINE_BYTES:
                rest, skipping = b"", True
    finally:
        os.close(fd)
    if rest and not skipping:
        yield rest.decode("utf-8", "replace")  # a torn last line: the caller judges it
