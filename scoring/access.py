"""What accesses (a read, a load, a review) do to an entry: dates, count, correlation, tier, weight."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone

from memstrata.scoring import tiers, weight
from memstrata.storage.entry import Entry


# Reads of one entry counted per machine (journal file) and UTC day, at most: past it a read is
# not counted (scoring.weight, which holds a count from the frontmatter to the same rate).
MAX_READS_PER_DAY = weight.MAX_READS_PER_DAY


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


def folded(entry: Entry, access: Access, now, settings) -> Entry:
    """`entry` as `mem maintain` writes it once its journaled accesses are folded in (an access
    dated after `now`, from a wrong clock or a planted line, counts as `now`)."""
    if now is not None and access.last > now:
        access = Access(now, access.count, access.correlation, access.per_day, access.settled)
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
