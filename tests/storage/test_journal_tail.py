"""The journal read as it grows (storage/journal_tail.py): the same accesses and days as reading it whole, after
any sequence of appends, folds, publishes, compactions, hand edits, torn lines and planted files."""
import os
import random
from datetime import datetime, timedelta, timezone

import pytest

from memstrata.storage import journal, journal_compact
from memstrata.storage.journal_tail import JournalTail

IDS = ["abcdef123456", "bcdefa234561", "cdefab345612", "defabc456123"]
START = datetime(2026, 11, 20, 8, tzinfo=timezone.utc)


def _view(accesses: dict) -> dict:
    return {i: (a.last, a.count, a.counted, a.correlation, dict(a.per_day), a.settled) for i, a in accesses.items()}


class _Journal:
    """A tree's journal changed the ways the engine and its users change it."""

    def __init__(self, root, rng):
        self.root, self.rng, self.clock = root, rng, START

    def tick(self):
        self.clock += timedelta(minutes=self.rng.choice([0, 1, 7, 60 * 9]))  # 0: reads in one second
        return self.clock

    def line(self, when=None):
        corr = self.rng.choice([None, 0.25, 0.5, 0.9])
        return f"{journal.format_datetime(when or self.tick())}\t{self.rng.choice(IDS)}\t{'-' if corr is None else corr}\n"

    def pending(self):
        return self.root / journal.PENDING_DIR / f"{journal.machine_name()}{journal.LOG_SUFFIX}"

    def append(self):
        assert journal.append(self.root, [(self.rng.choice(IDS), self.tick(), self.rng.choice([None, 0.3, 0.7]))
                                          for _ in range(self.rng.randint(1, 4))])

    def fold(self):
        journal.release(journal.take(self.root, "m", self.clock)[1])

    def publish(self):
        journal.publish(self.root, "m")

    def compact(self):
        journal_compact.compact(self.root, "m", self.clock)

    def peer(self):
        folder = self.root / journal.JOURNAL_DIR
        folder.mkdir(exist_ok=True)
        with open(folder / "peer.log", "a") as out:
            out.write(self.line())

    def rewrite_in_place(self):
        path = self.pending()
        if path.exists() and path.stat().st_size > 40:
            with open(path, "r+b") as out:  # same inode, the first line's id changed, then one more line
                out.seek(21)
                out.write(self.rng.choice(IDS).encode())
                out.seek(0, os.SEEK_END)
                out.write(self.line().encode())

    def torn(self):
        path = self.pending()
        if path.exists():
            with open(path, "a") as out:
                out.write(self.line()[:self.rng.choice([10, 33, 36])])  # a crash mid-append

    def truncate(self):
        path = self.pending()
        if path.exists():
            os.truncate(path, path.stat().st_size // 2)

    def future(self):
        assert journal.append(self.root, [(IDS[0], self.clock + timedelta(days=3), None)])  # a wrong clock

    def planted(self):
        folder = self.root / journal.JOURNAL_DIR
        folder.mkdir(exist_ok=True)
        for n in range(journal.MAX_MACHINES_PER_DAY + 1):
            with open(folder / f"planted{n}.log", "a") as out:
                out.write(self.line(self.clock))


COMMON = ["append"] * 12 + ["fold", "publish", "compact", "peer", "peer"]
RARE = ["rewrite_in_place", "torn", "truncate", "future", "planted"]


@pytest.mark.parametrize("seed", range(6))
def test_reading_as_it_grows_gives_what_reading_whole_gives(tmp_path, seed):
    rng = random.Random(seed)
    root = tmp_path / "r"
    root.mkdir()
    changes, tail = _Journal(root, rng), JournalTail(root)
    for step in range(160):
        getattr(changes, rng.choice(COMMON + (RARE if seed % 2 else [])))()
        now = changes.clock + rng.choice([timedelta(hours=1)] * 6 + [timedelta(days=-2), timedelta(days=400)])
        assert _view(tail.accesses(now)) == _view(journal.read(root, now)), step
        assert tail.days(now) == journal.days(root, now.date()), step


def test_only_what_was_appended_is_read_again(tmp_path, monkeypatch):
    root = tmp_path / "r"
    root.mkdir()
    tail = JournalTail(root)
    assert journal.append(root, [(IDS[0], START, None)] * 50)
    assert tail.accesses(START)[IDS[0]].count == 50
    size = (root / journal.PENDING_DIR / f"{journal.machine_name()}.log").stat().st_size
    starts = []
    whole = journal.file_items
    monkeypatch.setattr(journal, "file_items", lambda path, start=0, *a, **k: starts.append(start) or whole(path, start, *a, **k))
    assert journal.append(root, [(IDS[1], START, 0.5)])
    grown = tail.accesses(START)
    assert starts == [size]  # the one file, from where the last reading stopped
    assert tail.accesses(START) is grown and starts == [size]  # nothing new: nothing read
    assert _view(grown) == _view(journal.read(root, START))


def test_a_dict_handed_out_never_changes_under_its_reader(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    tail = JournalTail(root)
    assert journal.append(root, [(IDS[0], START, 0.2)])
    before = tail.accesses(START)
    assert journal.append(root, [(IDS[0], START + timedelta(hours=1), 0.8), (IDS[1], START, None)])
    after = tail.accesses(START + timedelta(hours=2))
    assert (before[IDS[0]].count, before[IDS[0]].correlation, set(before)) == (1, 0.2, {IDS[0]})
    assert (after[IDS[0]].count, after[IDS[0]].correlation, set(after)) == (2, 0.8, {IDS[0], IDS[1]})
    assert sum(before[IDS[0]].per_day.values()) == 1


def test_this_copys_reads_count_when_planted_machines_filled_the_day_first(tmp_path):
    """The machine cap keeps the files read first: this copy's own. Its read appended after
    planted files filled the day is counted as reading the journal whole counts it."""
    root = tmp_path / "r"
    (root / journal.JOURNAL_DIR).mkdir(parents=True)
    for n in range(journal.MAX_MACHINES_PER_DAY):
        (root / journal.JOURNAL_DIR / f"planted{n}.log").write_text(f"2026-11-20T08:00:00Z\t{IDS[0]}\t-\n")
    assert journal.append(root, [(IDS[1], START, None)])
    tail = JournalTail(root)
    assert IDS[0] in tail.accesses(START)
    assert journal.append(root, [(IDS[0], START, None)])
    grown = tail.accesses(START)
    assert _view(grown) == _view(journal.read(root, START))
    assert (journal.machine_name(), START.date()) in grown[IDS[0]].per_day


def test_a_read_dated_after_now_counts_as_the_clock_moves_on(tmp_path):
    """A line from a machine whose clock ran ahead counts as now; read later, as its own time."""
    root = tmp_path / "r"
    root.mkdir()
    tail = JournalTail(root)
    assert journal.append(root, [(IDS[0], START + timedelta(days=1), 0.4)])
    assert tail.accesses(START)[IDS[0]].last == START and not tail.days(START)
    later = START + timedelta(days=2)
    assert tail.accesses(later)[IDS[0]].last == START + timedelta(days=1)  # nothing changed but the clock
    assert tail.days(later) == {(START + timedelta(days=1)).date()} == journal.days(root, later.date())


def test_a_read_dated_after_now_does_not_make_each_reading_read_the_whole_journal(tmp_path, monkeypatch):
    """A clock that ran ahead once (or a teammate's) left a line dated later: readings still go on
    from where the last stopped, and count that line as now until its time comes."""
    root = tmp_path / "r"
    root.mkdir()
    tail = JournalTail(root)
    assert journal.append(root, [(IDS[0], START + timedelta(hours=5), 0.9)] + [(IDS[1], START, None)] * 20)
    assert tail.accesses(START)[IDS[0]].last == START
    starts = []
    whole = journal.file_items
    monkeypatch.setattr(journal, "file_items", lambda path, start=0, *a, **k: starts.append(start) or whole(path, start, *a, **k))
    for hour in range(1, 8):
        now = START + timedelta(hours=hour)
        assert journal.append(root, [(IDS[0], now - timedelta(minutes=30), 0.1)])
        got = tail.accesses(now)
        assert all(start > 0 for start in starts), hour  # only what was appended
        monkeypatch.setattr(journal, "file_items", whole)
        assert _view(got) == _view(journal.read(root, now)), hour
        late = (got[IDS[0]].last, got[IDS[0]].correlation)
        assert late == ((now, 0.9) if hour <= 5 else (now - timedelta(minutes=30), 0.1))  # as now until its time came
        monkeypatch.setattr(journal, "file_items", lambda path, start=0, *a, **k: starts.append(start) or whole(path, start, *a, **k))


def _spy(monkeypatch, name):
    calls = []
    real = getattr(journal, name)
    monkeypatch.setattr(journal, name, lambda *a, **k: calls.append(a) or real(*a, **k))
    return calls


def test_a_torn_last_line_or_a_stopped_publish_is_not_read_again_while_nothing_changes(tmp_path, monkeypatch):
    """A peer's file pulled without its last newline, a publish stopped half-way: readings still go
    on from where the last stopped (the unfinished line counted each time, as a whole reading counts it)."""
    root = tmp_path / "r"
    (root / journal.JOURNAL_DIR).mkdir(parents=True)
    tail = JournalTail(root)
    assert journal.append(root, [(IDS[0], START, None)] * 5)
    (root / journal.JOURNAL_DIR / "peer.log").write_text(f"2026-11-20T08:00:00Z\t{IDS[1]}\t0.5\n"
                                                         f"2026-11-20T08:00:00Z\t{IDS[1]}\t0.25")  # no newline
    (root / journal.PENDING_DIR / "other.log.7-abc.moving").write_text(f"2026-11-20T08:00:00Z\t{IDS[2]}\t-\n")
    (root / journal.JOURNAL_DIR / "m.log").write_text(f"2026-11-20T07:00:00Z\t{IDS[3]}\t-\n")
    assert tail.accesses(START)[IDS[1]].count == 2 and IDS[2] in tail.accesses(START)
    starts = []
    real = journal.file_items
    monkeypatch.setattr(journal, "file_items", lambda path, start=0, *a, **k: starts.append((path.name, start)) or real(path, start, *a, **k))
    for hour in range(3):
        now = START + timedelta(hours=hour)
        assert journal.append(root, [(IDS[0], now, None)])
        got, days = tail.accesses(now), tail.days(now)
        assert starts and all(start > 0 for _, start in starts), starts  # only what came after the last reading
        del starts[:]
        monkeypatch.setattr(journal, "file_items", real)
        assert _view(got) == _view(journal.read(root, now)) and days == journal.days(root, now.date())
        monkeypatch.setattr(journal, "file_items", lambda path, start=0, *a, **k: starts.append((path.name, start)) or real(path, start, *a, **k))
    with open(root / journal.JOURNAL_DIR / "peer.log", "a") as out:
        out.write("00\n")  # the unfinished line completed: 0.2500
    later = START + timedelta(hours=3)
    assert _view(tail.accesses(later)) == _view(journal.read(root, later))
    with open(root / journal.JOURNAL_DIR / "m.log", "a") as out:
        out.write("# moved 7-abc\n")  # the stopped publish's lines are in a tracked file after all
    monkeypatch.setattr(journal, "file_items", real)
    assert _view(tail.accesses(later)) == _view(journal.read(root, later)) and IDS[2] not in tail.accesses(later)


def test_a_line_rewritten_in_place_without_growing_is_seen(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    tail = JournalTail(root)
    assert journal.append(root, [(IDS[0], START, None)] * 6)
    tail.accesses(START)
    path = root / journal.PENDING_DIR / f"{journal.machine_name()}.log"
    text = path.read_bytes()
    line = len(text) // 6
    with open(path, "r+b") as out:  # the third line's id, the same size, the same inode
        out.seek(2 * line + 21)
        out.write(IDS[1].encode())
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1000))
    assert _view(tail.accesses(START)) == _view(journal.read(root, START))
    assert tail.accesses(START)[IDS[1]].count == 1


def test_a_file_put_in_place_of_the_one_read_is_not_taken_for_it(tmp_path, monkeypatch):
    """A fold took the file between the reading and its mark, and an append made a new one: the
    mark is the file that was read, so the next reading sees a different file and reads whole."""
    root = tmp_path / "r"
    root.mkdir()
    tail = JournalTail(root)
    assert journal.append(root, [(IDS[0], START, None)] * 3)
    real = journal.file_items

    def then_replaced(path, *a, **k):
        yield from real(path, *a, **k)
        monkeypatch.setattr(journal, "file_items", real)
        journal.release(journal.take(root, "m", START)[1])  # folded away
        assert journal.append(root, [(IDS[1], START, None)] * 3 + [(IDS[0], START, None)])

    monkeypatch.setattr(journal, "file_items", then_replaced)
    tail.accesses(START)
    assert _view(tail.accesses(START)) == _view(journal.read(root, START))
    assert tail.accesses(START)[IDS[0]].count == 1 and tail.accesses(START)[IDS[1]].count == 3


def test_a_correlation_that_is_no_number_counts_as_none(tmp_path):
    root = tmp_path / "r"
    (root / journal.JOURNAL_DIR).mkdir(parents=True)
    (root / journal.JOURNAL_DIR / "peer.log").write_text(f"2026-11-20T08:00:00Z\t{IDS[0]}\tnan\n")
    assert journal.append(root, [(IDS[1], START, None)])
    tail = JournalTail(root)
    tail.accesses(START)
    assert journal.append(root, [(IDS[0], START, 0.3)])  # read from where the last reading stopped
    got = tail.accesses(START)
    assert got[IDS[0]].correlation == 0.3 == journal.read(root, START)[IDS[0]].correlation


def test_planted_machines_past_the_cap_leave_later_readings_going_on_from_the_last(tmp_path, monkeypatch):
    root = tmp_path / "r"
    (root / journal.JOURNAL_DIR).mkdir(parents=True)
    for n in range(journal.MAX_MACHINES_PER_DAY + 2):
        (root / journal.JOURNAL_DIR / f"planted{n}.log").write_text(f"2026-11-20T08:00:00Z\t{IDS[0]}\t-\n")
    assert journal.append(root, [(IDS[1], START, None)])
    tail = JournalTail(root)
    tail.accesses(START)
    starts = []
    real = journal.file_items
    monkeypatch.setattr(journal, "file_items", lambda path, start=0, *a, **k: starts.append(start) or real(path, start, *a, **k))
    for n in range(3):
        assert journal.append(root, [(IDS[2], START, None)])
        got = tail.accesses(START)
    assert starts and all(start > 0 for start in starts)
    monkeypatch.setattr(journal, "file_items", real)
    assert _view(got) == _view(journal.read(root, START))


def test_a_journal_read_whole_is_kept_only_for_times_that_count_it_the_same(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    tail = JournalTail(root)
    assert journal.append(root, [(IDS[0], START + timedelta(hours=5), None)])
    with open(root / journal.PENDING_DIR / f"{journal.machine_name()}.log", "a") as out:
        out.write("2026-11-20T08:00:00Z\t")  # torn: only a whole reading reads this journal
    assert tail.accesses(START)[IDS[0]].last == START  # counts as now
    later = START + timedelta(hours=9)
    assert tail.accesses(later)[IDS[0]].last == START + timedelta(hours=5) == journal.read(root, later)[IDS[0]].last


def test_a_stopped_publish_whose_marker_is_read_already_counts_nothing(tmp_path):
    root = tmp_path / "r"
    (root / journal.JOURNAL_DIR).mkdir(parents=True)
    (root / journal.PENDING_DIR).mkdir(parents=True)
    (root / journal.PENDING_DIR / "a.log.7-abc.moving").write_text(f"2026-11-20T08:00:00Z\t{IDS[2]}\t-\n")
    (root / journal.JOURNAL_DIR / "m.log").write_text(f"2026-11-20T08:00:00Z\t{IDS[2]}\t-\n# moved 7-abc\n")
    tail = JournalTail(root)
    assert tail.accesses(START)[IDS[2]].count == 1 == journal.read(root, START)[IDS[2]].count  # counted once
    assert journal.append(root, [(IDS[2], START, 0.5), (IDS[2], START + timedelta(days=1), -0.0)])
    assert _view(tail.accesses(START)) == _view(journal.read(root, START))
    assert str(tail.accesses(START + timedelta(days=2))[IDS[2]].correlation) == "0.0"  # not "-0.0"
