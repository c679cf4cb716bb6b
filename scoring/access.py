"""What accesses (a read, a load, a review) do to an entry: dates, count, correlation, tier, weight."""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timezone

from memstrata.scoring import tiers, weight
from memstrata.storage.clock import parse_datetime
from memstrata.storage.entry import Entry


# Reads of one entry counted per machine (journal file) and UTC day, at most: past it a read is
# not counted (scoring.weight, which holds a count from the frontmatter to the same rate).
MAX_READS_PER_DAY = weight.MAX_READS_PER_DAY
# Distinct machines whose reads of one entry count on one UTC day: the per machine and day cap
# does not bound how many machine files a pulled commit can plant. A reader reads this copy's own
# files first (storage/journal.py), so its reads always count.
MAX_MACHINES_PER_DAY = 8


@dataclass
class Access:
    """Accesses of one entry not yet in its file: the last one, how many, the last correlation given.

    `count` is every read the journal lines hold; `per_day` ((machine, UTC day) -> lines), when the
    journal gives it, is what `counted` caps; `settled` are the reads of compacted lines (one line for
    many past reads, storage/journal_compact.py), capped when they were compacted."""

    last: datetime
    count: int = 0
    correlation: float | None = None
    per_day: dict = field(default_factory=dict)
    settled: int = 0
    correlation_at: datetime | None = None  # the time of the read that gave `correlation`

    def correlate(self, corr: float | None, when: datetime) -> None:
        """Keep `corr` when it is the latest given: the correlation is the last read's that gave one,
        the larger of one second's (the same whatever order the journal's files are read in)."""
        if corr is None:
            return
        if self.correlation_at is None or when > self.correlation_at or (
                when == self.correlation_at and (self.correlation is None or corr > self.correlation)):
            self.correlation, self.correlation_at = corr, when

    def add(self, machine: str, when: datetime, settled: int | None = None) -> None:
        """One more journal line of `machine` at `when` (the count and the day it falls on); a
        compacted line's `settled` reads, already capped, are counted as they are."""
        if settled is not None:
            self.settled += settled
            return
        day = (when.astimezone(timezone.utc) if when.tzinfo else when).date()
        self.per_day[(machine, day)] = self.per_day.get((machine, day), 0) + 1

    @property
    def counted(self) -> int:
        """The reads that count: at most MAX_READS_PER_DAY per machine and day (compacted ones as they are)."""
        if not self.per_day and not self.settled:
            return self.count
        return sum(min(n, MAX_READS_PER_DAY) for n in self.per_day.values()) + self.settled

    def seen(self, entry: Entry) -> Entry:
        """`entry` with these accesses counted (dates and count only: what a read shows)."""
        last = max(self.last, entry.last_access) if entry.last_access else self.last
        out = entry.copy(last_access=last, access_count=entry.access_count + self.counted)
        if self.correlation is not None:
            out.context_correlation = weight.clamp_correlation(self.correlation)
        return out


class Tally:
    """Accesses per id counted from journal items, which can go on counting the lines appended
    since (storage/journal_tail.py). `fork` shares what is counted and copies each access before it
    changes, so a dict handed out never changes under its reader; a tally forked is never added to again.

    A line dated after `now` counts as `now`; with `hold_future` it is kept aside instead (`future`),
    for a reader that counts it at each later time (`at`) without reading the journal again."""

    def __init__(self, now: datetime | None = None, hold_future: bool = False):
        self.now, self.hold_future = now, hold_future
        self.accesses: dict[str, Access] = {}
        # (id, UTC day) -> the machines counted: one machine's name as it is (most keys), else a set
        self._machines: dict[tuple, str | set] = {}
        self._owned: set | None = None  # a fork's: the ids and (id, day) keys it copied (None: it owns all)
        self.days: set[date] = set()  # the UTC days of the lines' own times (as storage.journal.days reads them)
        self.future: list[tuple] = []  # the items held aside (hold_future)
        # per journal file, the items of its last line while it has no newline yet (a torn or unfinished
        # append): counted by `at` each time, never kept, since the next append may complete or spoil it
        self.unfinished: dict = {}
        self.published: set[str] = set()  # the tokens of `# moved` markers read (storage/journal.py)
        self.latest: datetime | None = None  # the latest time a line counted as it is was dated
        # a line the machine cap held back in this tally's own adds: which one depends on the order the
        # files are read in
        self.capped = False

    def fork(self, now: datetime | None, hold_future: bool | None = None) -> "Tally":
        """A tally that goes on from this one (at `now`) without changing it."""
        out = Tally(now, self.hold_future if hold_future is None else hold_future)
        out.accesses, out._machines, out.days, out._owned = dict(self.accesses), dict(self._machines), set(self.days), set()
        out.future, out.latest, out.unfinished = list(self.future), self.latest, dict(self.unfinished)
        out.published = set(self.published)
        return out

    def at(self, now: datetime | None) -> "Tally":
        """This tally with the lines held aside and the unfinished ones counted at `now` (itself when
        there are none)."""
        if not self.future and not any(self.unfinished.values()):
            return self
        out = self.fork(now, hold_future=False)
        out.future, out.unfinished = [], {}
        out.add(self.future, days=False)
        out.add([item for items in self.unfinished.values() for item in items])
        return out

    def add(self, items, days: bool = True) -> None:
        """Count (time, id, correlation, reads or None, machine) items (`days`: note their days too)."""
        owned, machines, accesses, now = self._owned, self._machines, self.accesses, self.now
        for item in items:
            stamp, entry_id, corr_text, reads, machine = item
            if days and stamp.endswith("Z"):
                try:
                    self.days.add(date.fromisoformat(stamp[:10]))
                except ValueError:
                    pass
            try:
                written = parse_datetime(stamp)
                if now is not None and written > now and self.hold_future:
                    self.future.append(item)
                    continue
                when = written if now is None or written <= now else now
                corr = None if corr_text == "-" else float(corr_text)
                corr = None if corr is None or not math.isfinite(corr) else corr + 0.0  # "nan" is none; -0.0 is 0.0
                day = (when.astimezone(timezone.utc) if when.tzinfo else when).date()
                self.latest = written if self.latest is None or written > self.latest else self.latest
            except (ValueError, TypeError, Exception):  # noqa: BLE001 - one bad line, not the journal
                continue
            if not self._count_machine((entry_id, day), machine):
                self.capped = True
                continue  # one more machine file than a team has: a planted one adds nothing
            seen = accesses.get(entry_id)
            if seen is None:
                seen = accesses[entry_id] = Access(when, 0)
            elif owned is not None and entry_id not in owned:
                seen = accesses[entry_id] = replace(seen, per_day=dict(seen.per_day))
            if owned is not None:
                owned.add(entry_id)
            seen.count += reads or 1
            seen.last = max(seen.last, when)
            seen.correlate(corr, when)
            seen.add(machine, when, settled=reads)  # capped per machine and day, but a compacted line's reads

    def _count_machine(self, key: tuple, machine: str) -> bool:
        """Count `machine` among those reading an entry on a day; False when MAX_MACHINES_PER_DAY others are."""
        counted = self._machines.get(key)
        if counted is None:
            self._machines[key] = machine
        elif isinstance(counted, str):
            if counted != machine:
                self._machines[key] = {counted, machine}
                self._own(key)
        elif machine not in counted:
            if len(counted) >= MAX_MACHINES_PER_DAY:
                return False
            if self._owned is not None and key not in self._owned:
                counted = self._machines[key] = set(counted)
                self._own(key)
            counted.add(machine)
        return True

    def _own(self, key) -> None:
        if self._owned is not None:
            self._owned.add(key)


def folded(entry: Entry, access: Access, now, settings) -> Entry:
    """`entry` as `mem maintain` writes it once its journaled accesses are folded in (an access
    dated after `now`, from a wrong clock or a planted line, counts as `now`)."""
    if now is not None and access.last > now:
        access = replace(access, last=now)
    after = access.seen(entry)  # the tier is left to `mem maintain`'s plan (scoring.lifecycle.tier_now): one rule
    after.weight = round(weight.compute_weight(after, now), 4)
    return after


def touched(entry: Entry, now, settings, correlation: float | None = None) -> Entry:
    """A copy of `entry` after one access at `now` (optionally with a new context correlation)."""
    after = entry.copy(last_access=now, access_count=entry.access_count + 1)
    if correlation is not None:
        after.context_correlation = weight.clamp_correlation(correlation)
    if after.status == "active":
        after.tier = tiers.tier_for(after, now, settings)
    after.weight = round(weight.compute_weight(after, now), 4)
    return after


def text_hash(text: str) -> str:
    """The sha256 of a file's text as a fold plan keeps it (storage.fold_plan.file_hash of the file)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fold_record(before_text: str | None, after_text: str, after: Entry) -> dict:
    """What a fold's plan keeps of one entry it is about to save (see `fold_saved`)."""
    return {"old": text_hash(before_text) if before_text is not None else None, "new": text_hash(after_text),
            "after": after.access_count}


def fold_saved(record: dict, current_hash: str | None, current_count: int | None) -> bool:
    """Whether a stopped fold had saved this entry (its journal lines are then in its file).

    The file as the fold would write it: saved; as it was before: not; gone: nothing to count
    (saved). Changed since by something else (an edit keeps the count; a review or a merge
    only adds): saved when its count reached the fold's."""
    if current_hash is None or current_hash == record.get("new"):
        return True
    if current_hash == record.get("old"):
        return False
    return current_count is not None and current_count >= int(record.get("after", 0))
