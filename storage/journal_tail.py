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
        # per file: (path, device, inode, end of the last whole line, mtime then, probe bytes)
        self._marks: tuple = ()
        # a journal only `journal.read` reads (a torn last line, a stopped publish): what it read, kept
        # until the files change (journal.signature) or the clock goes back past its latest line
        self._whole: tuple | None = None

    def accesses(self, now: datetime | None) -> dict[str, Access]:
        """Every access not yet folded, per entry id, as `journal.read(root, now)` gives them."""
        tally = self._current(now)
        counted = tally.at(now) if tally is not None else None
        if counted is None or counted.capped and counted is not tally:
            return self._read_whole_only(now)[0]  # a line dated later held back by the cap: the files' order decides
        return counted.accesses

    def days(self, now: datetime) -> frozenset[date]:
        """The UTC days of the reads not yet folded, none after `now`'s, as `journal.days` gives them."""
        tally = self._current(now)
        days = tally.days if tally is not None else self._read_whole_only(now)[1]
        return frozenset(day for day in days if day <= now.date())

    def _read_whole_only(self, now: datetime | None) -> tuple[dict[str, Access], set[date]]:
        """`journal.read`'s accesses and every day of `journal.days`, read again only when the files
        changed or the time they were read at would count a line otherwise."""
        with self._lock:
            signature = journal.signature(self.root)
            kept = self._whole
            if kept is None or kept[0] != signature or not _same_at(kept[1], now):
                kept = self._whole = (signature, journal.tally(self.root, now))
            return kept[1].accesses, kept[1].days

    def _current(self, now: datetime | None) -> Tally | None:
        """The tally of the journal as it is now, or None when only `journal.read` can read it."""
        with self._lock:
            if self._tally is not None and now is not None and self._tally.latest is not None \
                    and self._tally.latest > now:
                return None  # the clock went back past a line counted as it was dated: it counts as now then
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
        for index, (path, (known, device, inode, end, mtime, probe)) in enumerate(zip(paths, self._marks)):
            if path != known or path.name.endswith(journal.MOVING):
                return None
            now = _mark(path, end)
            if now is None or now[1:3] != (device, inode) or now[5] != probe:
                return None
            size = now[3]
            if size < end or size == end and now[4] != mtime:  # shorter, or rewritten in place
                return None
            if size > end:
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


def _same_at(tally: Tally, now: datetime | None) -> bool:
    """Whether `tally`, read at its time, counts as a reading at `now` would: no line after either time."""
    if tally.now == now or tally.latest is None:
        return True
    return all(t is not None and tally.latest <= t for t in (tally.now, now))


def _read_into(tally: Tally, path: Path, start: int) -> tuple | None:
    """Count the lines of `path` from byte `start` into `tally`; the file's mark, or None when it
    cannot be read or ends in a torn line (read whole, which counts it as `journal.read` does)."""
    fd = journal.open_file(path)
    if fd is None:
        return None
    try:
        held = os.dup(fd)  # the same open file for the mark: a file put in its place meanwhile is not it
    except OSError:
        os.close(fd)
        return None
    try:
        ends: list = []
        tally.add(journal.file_items(path, start, ends, fd=fd))
        if not ends or ends[0][0] != ends[0][1]:
            return None
        end, mark = ends[0][0], _mark(path, ends[0][0], held)
        return None if mark is None else (path, mark[1], mark[2], end, mark[4], mark[5])
    finally:
        os.close(held)


def _mark(path: Path, end: int, fd: int | None = None) -> tuple | None:
    """(path, device, inode, size, mtime, probe) of the file open as `fd` (else at `path`): the
    probe is its first PROBE bytes and the PROBE bytes before `end`, which a file put in its place
    with the same inode number (a fold removed it, an append made it again) does not have."""
    own = fd is None
    fd = journal.open_file(path) if own else fd
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
        size = min(PROBE, end)  # what lies before `end` only: a file that grew keeps it
        probe = os.pread(fd, size, 0) + os.pread(fd, size, end - size)
        return (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, probe)
    except OSError:
        return None
    finally:
        if own:
            os.close(fd)
