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


def stream_lines(fd: int, start: int = 0, ends: list | None = None):
    """The lines (without their newline) of an open file from byte `start`, read a chunk at a time;
    a line longer than MAX_LINE_BYTES is skipped whole, so a file of any size costs little memory.
    Once read to the end, `ends` gets (the byte after the last newline, the bytes read to): where a
    reader of what is appended later goes on from."""
    rest, skipping, read, whole = b"", False, start, start
    try:
        if start:
            os.lseek(fd, start, os.SEEK_SET)
        while True:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            read += len(chunk)
            parts = (rest + chunk).split(b"\n")
            rest = parts.pop()
            if parts:
                whole = read - len(rest)
            for part in parts:
                if not skipping and len(part) <= MAX_LINE_BYTES:
                    yield part.decode("utf-8", "replace")
                skipping = False
            if len(rest) > MAX_LINE_BYTES:
                rest, skipping = b"", True
    finally:
        os.close(fd)
    if ends is not None:
        ends.append((whole, read))
    if rest and not skipping:
        yield rest.decode("utf-8", "replace")  # a torn last line: the caller judges it
