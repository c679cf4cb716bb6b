"""The access journal read as it grows: a file that was only appended to is read from where the last reading stopped.

Every counted recall appends a line, and every recall reads the journal's accesses (and, for a hit old
enough for the archive tier, its days of use); read whole each time, the journal of a vault (whose
reads are never folded) cost a recall more with every recall.
A reading remembers each file's identity (device, inode), where its last whole line ended and the
bytes around that point. The next reading goes on from there when every file is the one it was and
only grew; anything else (a file added, taken, rewritten, truncated or replaced; a line the machine
cap held back; the clock gone back past a line counted) reads the journal whole again. Kept aside and
counted at each reading: a line dated after the time it is read at (a clock that ran ahead), and a
file's last line while it has no newline (read again from its start next time). A stopped publish's
file is read last, as `journal.read` reads it. So the accesses and days are always those of
`journal.read` and `journal.days`.
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
        # a journal only `journal.read` reads (a file that cannot be read, the cap): what it read, kept
        # until the files change (journal.signature) or the clock goes back past its latest line
        self._whole: tuple | None = None

    def accesses(self, now: datetime | None) -> dict[str, Access]:
        """Every access not yet folded, per entry id, as `journal.read(root, now)` gives them."""
        counted = self._counted(now)
        return counted.accesses if counted is not None else self._read_whole_only(now).accesses

    def days(self, now: datetime) -> frozenset[date]:
        """The UTC days of the reads not yet folded, none after `now`'s, as `journal.days` gives them."""
        counted = self._counted(now)
        days = counted.days if counted is not None else self._read_whole_only(now).days
        return frozenset(day for day in days if day <= now.date())

    def _counted(self, now: datetime | None) -> Tally | None:
        """The journal's tally at `now` (the lines held aside counted), or None: only a whole reading decides."""
        tally = self._current(now)
        counted = tally.at(now) if tally is not None else None
        if counted is None or counted.capped and counted is not tally:
            return None  # a line held aside held back by the cap: the files' order decides
        return counted

    def _read_whole_only(self, now: datetime | None) -> Tally:
        """`journal.read`'s tally, read again only when the files changed or the time they were read at
        would count a line otherwise."""
        with self._lock:
            signature = journal.signature(self.root)
            kept = self._whole
            if kept is None or kept[0] != signature or not _same_at(kept[1], now):
                kept = self._whole = (signature, journal.tally(self.root, now))
            return kept[1]

    def _current(self, now: datetime | None) -> Tally | None:
        """The tally of the journal as it is now, or None when only `journal.read` can read it."""
        with self._lock:
            if self._tally is not None and now is not None and self._tally.latest is not None \
                    and self._tally.latest > now:
                return None  # the clock went back past a line counted as it was dated: it counts as now then
            paths = _in_order(journal.files(self.root))
            grown = self._grown(paths)
            if grown is None:
                return self._read_whole(paths, now)
            if not grown:
                return self._tally
            tally, marks = self._tally.fork(now), list(self._marks)
            waiting = _waiting(tally, paths)
            for index, start in grown:
                mark = _read_into(tally, paths[index], start)
                if mark is None:
                    return self._read_whole(paths, now)
                marks[index] = mark
            if tally.capped or _waiting(tally, paths) != waiting:
                # a line held back (which one depends on the order the files are read in), or a stopped
                # publish's marker now read after its file was counted
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
            if path != known:
                return None
            seen = _mark(path, end)
            if seen is None or seen[1:3] != (device, inode) or seen[5] != probe:
                return None
            size = seen[3]
            if size < end or size == end and seen[4] != mtime:  # shorter, or rewritten in place
                return None
            if size > end:
                if path.name.endswith(journal.MOVING):
                    return None  # a publish's taken file never grows
                grown.append((index, end))
        return grown

    def _read_whole(self, paths: list[Path], now: datetime | None) -> Tally | None:
        """The journal read whole into a new tally, remembering where each file ended; None (nothing
        kept) when a file cannot be read."""
        tally, marks = Tally(now, hold_future=True), []
        for path in paths:
            mark = _read_into(tally, path, 0)
            if mark is None:
                self._tally, self._marks = None, ()
                return None
            marks.append(mark)
        self._tally, self._marks = tally, tuple(marks)
        return tally


def _in_order(paths: list[Path]) -> list[Path]:
    """The journal's files in the order `journal.read` reads them: a stopped publish's taken files last
    (whether a marker says their lines are in already is known once the rest is read)."""
    return [p for p in paths if not p.name.endswith(journal.MOVING)] + \
        [p for p in paths if p.name.endswith(journal.MOVING)]


def _waiting(tally: Tally, paths: list[Path]) -> set[str]:
    """The tokens of the stopped publishes' files whose lines count (no marker read for them)."""
    return {journal.moving_token(p) for p in paths if p.name.endswith(journal.MOVING)} - tally.published


def _same_at(tally: Tally, now: datetime | None) -> bool:
    """Whether `tally`, read at its time, counts as a reading at `now` would: no line after either time."""
    if tally.now == now or tally.latest is None:
        return True
    return all(t is not None and tally.latest <= t for t in (tally.now, now))


def _read_into(tally: Tally, path: Path, start: int) -> tuple | None:
    """Count the whole lines of `path` from byte `start` into `tally` (its last line without a newline
    goes to `tally.unfinished`; a stopped publish's file whose marker was read counts nothing); the
    file's mark, or None when it cannot be read."""
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
        unfinished: list = []
        if path.name.endswith(journal.MOVING) and journal.moving_token(path) in tally.published:
            os.close(fd)
            end = os.fstat(held).st_size  # its lines are in a tracked file already (journal._lines)
        else:
            def whole_lines():
                for item in journal.file_items(path, start, ends, tally.published, fd=fd):
                    if ends:  # read past the last newline: the unfinished last line (line_files.stream_lines)
                        unfinished.append(item)
                    else:
                        yield item

            tally.add(whole_lines())
            if not ends:
                return None
            end = ends[0][0]
        tally.unfinished[path] = unfinished
        mark = _mark(path, end, held)
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
