"""The access journal read as it grows: a file that was only appended to is read from where the last reading stopped.

Every counted recall appends a line, and every recall reads the journal's accesses (and, for a hit old
enough for the archive tier, its days of use); read whole each time, the journal of a vault (whose
reads are never folded) cost a recall more with every recall.
A reading remembers each file's identity (device, inode), where its last whole line ended and the
bytes around that point. The next reading goes on from there when every file is the one it was and
only grew; anything else (a file added, taken, rewritten, truncated or replaced; a torn last line; a
stopped publish; a line the machine cap held back) reads the journal whole again. A line dated after
the time it is read at (a clock that ran ahead) is kept aside and counted at each reading's time. So
the accesses and days are always those of `journal.read` and `journal.days`.
"""
from __future__ import annotations

import os
import threading
from datetime import date, datetime
from pathlib import Path

from memstrata.scoring.access import Access, Tally
from memstrata.storage import journal

PROBE = 64  # bytes of a file's start and of the end of its last whole line that must still be there


class JournalTail:
    """The accesses and days of use of one tree's journal (`journal.read`, `journal.days`), read
    again only as far as its files grew."""

    def __init__(self, root: Path):
        self.root = root
        self._lock = threading.Lock()
        self._tally: Tally | None = None
        self._marks: tuple = ()  # per file: (path, device, inode, end of the last whole line, probe bytes)

    def accesses(self, now: datetime | None) -> dict[str, Access]:
        """Every access not yet folded, per entry id, as `journal.read(root, now)` gives them."""
        tally = self._current(now)
        counted = tally.at(now) if tally is not None else None
        if counted is None or (counted.capped and counted is not tally):
            return journal.read(self.root, now)  # a line dated later held back by the cap: the files' order decides
        return counted.accesses

    def days(self, now: datetime) -> frozenset[date]:
        """The UTC days of the reads not yet folded, none after `now`'s, as `journal.days` gives them."""
        today = now.date()
        tally = self._current(now)
        if tally is None:
            return frozenset(journal.days(self.root, today))
        return frozenset(day for day in tally.days if day <= today)

    def _current(self, now: datetime | None) -> Tally | None:
        """The tally of the journal as it is now, or None when only `journal.read` can read it."""
        with self._lock:
            paths = journal.files(self.root)
            grown = self._grown(paths)
            if grown is None:
                return self._read_whole(paths, now)
            if not grown:
                return self._tally
            tally, marks = self._tally.fork(now), list(self._marks)
            for index, start in grown:
                mark = _read_into(tally, paths[index], start)
                if mark is None:
                    return self._read_whole(paths, now)
                marks[index] = mark
            if tally.capped:  # a line held back: which one depends on the order the files are read in
                return self._read_whole(paths, now)
            self._tally, self._marks = tally, tuple(marks)
            return tally

    def _grown(self, paths: list[Path]) -> list[tuple[int, int]] | None:
        """(index, where to go on from) of each file that grew since the last reading, or None when
        the journal must be read whole."""
        if self._tally is None or len(paths) != len(self._marks):
            return None
        grown = []
        for index, (path, (known, device, inode, end, probe)) in enumerate(zip(paths, self._marks)):
            if path != known or path.name.endswith(journal.MOVING):
                return None
            try:
                st = os.lstat(path)
            except OSError:
                return None
            if (st.st_dev, st.st_ino) != (device, inode) or st.st_size < end or _probe(path, end) != probe:
                return None
            if st.st_size > end:
                grown.append((index, end))
        return grown

    def _read_whole(self, paths: list[Path], now: datetime | None) -> Tally | None:
        """The journal read whole into a new tally, remembering where each file ended; None (nothing
        kept) when one cannot be gone on from: a stopped publish, a torn last line, an unreadable file."""
        tally, marks = Tally(now, hold_future=True), []
        if not any(p.name.endswith(journal.MOVING) for p in paths):
            for path in paths:
                mark = _read_into(tally, path, 0)
                if mark is None:
                    break
                marks.append(mark)
            else:
                self._tally, self._marks = tally, tuple(marks)
                return tally
        self._tally, self._marks = None, ()
        return None


def _read_into(tally: Tally, path: Path, start: int) -> tuple | None:
    """Count the lines of `path` from byte `start` into `tally`; the file's mark, or None when it
    cannot be read or ends in a torn line (read whole, which counts it as `journal.read` does)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    ends: list = []
    tally.add(journal.file_items(path, start, ends))
    if not ends or ends[0][0] != ends[0][1]:
        return None
    end = ends[0][0]
    probe = _probe(path, end)
    try:
        after = os.lstat(path)
    except OSError:
        return None
    if (after.st_dev, after.st_ino) != (st.st_dev, st.st_ino) or probe is None:
        return None  # replaced while it was read: what was read and what is marked may differ
    return (path, st.st_dev, st.st_ino, end, probe)


def _probe(path: Path, end: int) -> bytes | None:
    """The first PROBE bytes of `path` and the PROBE bytes before `end`: a file replaced by another
    with the same inode number (a fold removed it, an append made it again) does not have them."""
    fd = journal.open_file(path)
    if fd is None:
        return None
    try:
        return os.pread(fd, PROBE, 0) + os.pread(fd, PROBE, max(0, end - PROBE))
    except OSError:
        return None
    finally:
        os.close(fd)
