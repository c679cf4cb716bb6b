"""Compacting this machine's journal file: past days one line per entry, read back exactly as before
(last read, capped count, correlation), days of use recorded first, a stopped publish's marker kept."""
import shutil
from datetime import datetime, timedelta, timezone

from memstrata.storage import journal, journal_compact, usage

A, B = "abcdef123456", "0123456789ab"
NOW = datetime(2026, 12, 2, 15, 0, tzinfo=timezone.utc)


def _line(entry_id: str, when: datetime, corr: float | None = None) -> str:
    return f"{when.strftime('%Y-%m-%dT%H:%M:%SZ')}\t{entry_id}\t{'-' if corr is None else f'{corr:.4f}'}\n"


def _tree(tmp_path):
    """A journal as a vault's reads leave it: ten past days of reads (one day past the per-day cap),
    today's reads, a torn and a foreign line, and a stopped publish whose lines are already in."""
    root = tmp_path / "r"
    (root / ".access").mkdir(parents=True)
    (root / ".cache" / "access").mkdir(parents=True)
    lines = []
    for days_ago in range(10, 0, -1):
        day = NOW - timedelta(days=days_ago)
        for n in range(70 if days_ago == 7 else 3):
            lines.append(_line(A, day.replace(hour=8, minute=n % 60, second=n // 60), 1.3 if n == 1 else None))
        if days_ago % 4 == 0:
            lines.append(_line(B, day.replace(hour=9), 0.7))
    lines += ["not a journal line\n", "2026-11-30T08:00:00Z\tbad id!\t-\n"]
    lines += [_line(A, NOW.replace(hour=7)), _line(A, NOW.replace(hour=8), 1.1)]
    lines += [_line(B, NOW - timedelta(days=2)), "# moved 123-live\n", "# moved 99-gone\n"]
    (root / ".access" / "m.log").write_text("".join(lines) + "2026-12-02T09:0")  # a torn last line
    moving = root / ".cache" / "access" / "host.log.123-live.moving"
    moving.write_text(_line(B, NOW - timedelta(days=3)) * 2)  # published already: its marker is in m.log
    return root


def _reads(root, now=NOW) -> dict:
    return {i: (a.last, a.counted, a.correlation) for i, a in journal.read(root, now).items()}


def test_a_compacted_journal_counts_what_it_counted_before_and_after_more_reads(tmp_path):
    root = _tree(tmp_path)
    control = tmp_path / "control"
    shutil.copytree(root, control)
    before = _reads(root)
    days = journal.days(root, NOW.date())

    done = journal_compact.compact(root, "m", NOW)
    text = (root / ".access" / "m.log").read_text()
    assert done["lines_before"] == 107 and done["lines_after"] == 7, (done, text)  # A, B: 2 each (a correlation dated at its read), 2 today, 1 marker
    assert "# moved 123-live\n" in text and "99-gone" not in text
    assert _reads(root) == before
    assert before[A][1] == 9 * 3 + 50 + 2  # the day of 70 reads counts 50, compacted or not
    assert days <= usage.read(root) | journal.days(root, NOW.date())  # the days of use are kept
    assert journal_compact.compact(root, "m", NOW)["lines_after"] == 7  # again: nothing more to do

    for tree in (root, control):  # more reads today, past the cap, and tomorrow's
        with (tree / ".access" / "m.log").open("a") as out:
            out.write("".join(_line(A, NOW.replace(hour=10, minute=n)) for n in range(55)))
        journal.append(tree, [(B, NOW + timedelta(days=1), 0.9)])
    later = NOW + timedelta(days=1, hours=1)
    assert _reads(root, later) == _reads(control, later)
    journal_compact.compact(root, "m", later)
    assert _reads(root, later) == _reads(control, later)  # today (now a past day) capped as before


def test_compacting_needs_the_days_of_use_recorded_first(tmp_path):
    """When `.access/m.days` cannot be written, the lines stay: they are the only record of those days."""
    root = _tree(tmp_path)
    (root / ".access" / "m.days").mkdir()  # not a file: usage.record cannot write it
    size = (root / ".access" / "m.log").stat().st_size
    assert journal_compact.compact(root, "m", NOW) is None
    assert (root / ".access" / "m.log").stat().st_size == size
