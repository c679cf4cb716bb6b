"""Compacting this machine's tracked journal file: the reads of past days as one line per entry.

An adopted vault's reads never leave the journal (its notes hold none of the engine's keys), so its
`.memstrata/access/<machine>.log` grew with every recall and every `mem sync --remote` committed it
again. What reads and aging take from the journal per entry is the last read, its correlation and
the count as capped per machine and day (scoring.access.Access); the days of use go to
`.access/<machine>.days` first (storage/usage.py). So the lines of past UTC days become one line
per entry, `<last read>\t<id>\t<correlation>\t<reads>`; today's lines are kept as they are (the
per-day cap still applies to them and to the reads still to come today), and so is a `# moved`
marker a stopped publish's file still needs. A reader counts the file the same before and after.

The file is replaced atomically (caller holds the tree lock; only a publish, also under it, appends
to it). Each machine compacts only its own file, so two machines never change one file and their
journals merge in git as before, without a conflict.
"""
from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

from memstrata.storage import journal, usage
from memstrata.storage.atomic import atomic_write_bytes
from memstrata.storage.clock import format_datetime, parse_datetime
from memstrata.storage.safe_io import is_regular_file

COMPACT_BYTES = 256 * 1024  # a team sync compacts this machine's file once it is past this size


def own_file(root: Path, machine: str | None) -> Path | None:
    """This machine's tracked journal file (None when its folder is not a real folder)."""
    folder = journal.real_folder(root, journal.JOURNAL_DIR, create=False)
    return folder / f"{journal.machine_name(machine)}{journal.LOG_SUFFIX}" if folder is not None else None


def due(root: Path, machine: str | None) -> bool:
    """Whether this machine's tracked file is past COMPACT_BYTES."""
    path = own_file(root, machine)
    try:
        return path is not None and is_regular_file(path) and path.stat().st_size > COMPACT_BYTES
    except OSError:
        return False


def _utc_day(stamp: str) -> date | None:
    try:
        when = parse_datetime(stamp)
        return (when.astimezone(timezone.utc) if when.tzinfo else when).date()
    except Exception:  # noqa: BLE001 - no time: no reader counts the line either
        return None


def compacted_text(lines, machine: str, today: date, waiting: set[str]) -> tuple[str, set[date], int]:
    """(the file's new text, the days its past lines fall on, how many lines it had) for the `lines`
    of a journal file of `machine`: past days' reads one line per entry, today's (and later) lines
    and the markers of the publishes in `waiting` as they are; torn and foreign lines dropped."""
    kept: list[str] = []
    days: set[date] = set()
    count = 0

    def past():
        nonlocal count
        for line in lines:
            count += 1
            if line.startswith("# moved "):
                if set(journal.MOVED_MARK.findall(line)) & waiting:
                    kept.append(line)
                continue
            parts = journal.well_formed_line(line)
            day = _utc_day(parts[0]) if parts is not None else None
            if day is None:
                continue
            if day >= today:
                kept.append(line)
                continue
            days.add(day)
            yield (*parts[:3], int(parts[3]) if len(parts) == 4 else None, machine)

    accesses = journal.parse_lines(past())
    summary = [line for entry_id, a in sorted(accesses.items()) for line in _summary(entry_id, a)]
    return "".join(f"{line}\n" for line in summary + kept), days, count


def _summary(entry_id: str, access) -> list[str]:
    """The compacted lines of one entry's past reads: one, `<last read>\t<id>\t<correlation>\t<reads>`;
    two when the correlation came from an earlier read than the last (it stays dated at its read, so a
    teammate's correlation given in between still counts as the later one)."""
    corr = "-" if access.correlation is None else f"{access.correlation:.4f}"
    at = access.correlation_at
    if access.correlation is None or at is None or at >= access.last or access.counted < 2:
        return [f"{format_datetime(access.last)}\t{entry_id}\t{corr}\t{access.counted}"]
    return [f"{format_datetime(at)}\t{entry_id}\t{corr}\t1",
            f"{format_datetime(access.last)}\t{entry_id}\t-\t{access.counted - 1}"]


def compact(root: Path, machine: str | None, now: datetime) -> dict | None:
    """Compact this machine's tracked journal file (caller holds the tree lock); None when there is
    none, or the days of use could not be recorded first (then the file is left as it was)."""
    path = own_file(root, machine)
    if path is None or not is_regular_file(path):
        return None
    pending = journal.real_folder(root, journal.PENDING_DIR, create=False)
    waiting = {journal.moving_token(p) for p in journal.files_in(pending, (journal.MOVING,))}
    fd = journal.open_file(path)
    if fd is None:
        return None
    size = path.stat().st_size
    today = (now.astimezone(timezone.utc) if now.tzinfo else now).date()
    text, days, lines = compacted_text(journal.stream_lines(fd), journal.machine_name(machine), today, waiting)
    usage.record(root, days, machine)
    if not days <= usage.read(root):
        return None  # the days of use would be lost with the lines: compact another time
    data = text.encode("utf-8")
    written = len(data) < size  # a file that would not shrink is left as it is (no change for git)
    if written:
        atomic_write_bytes(path, data, root=root)
    return {"lines_before": lines, "lines_after": text.count("\n") if written else lines, "bytes_before": size,
            "bytes_after": len(data) if written else size}
