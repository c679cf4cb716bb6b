"""Days in use: how long an entry has been idle, counted in days the tree was used, not calendar days."""
from __future__ import annotations

from bisect import bisect_right
from datetime import date, datetime, timezone
from typing import Iterable, Sequence

from memstrata.storage.entry import Entry


def day_of(stamp: datetime) -> date:
    """The UTC calendar day of a moment."""
    if stamp.tzinfo is not None:
        stamp = stamp.astimezone(timezone.utc)
    return stamp.date()


STAMPS = ("created", "updated", "last_access")  # the fields whose days show the tree was used


def entry_days(entries: Iterable[Entry]) -> set[date]:
    """The days the entries show the tree was used on: each one's created, updated and last_access day."""
    out: set[date] = set()
    for entry in entries:
        for stamp in (getattr(entry, name) for name in STAMPS):
            if stamp is not None:
                out.add(day_of(stamp))
    return out


def idle_days_in_use(entry: Entry, now: datetime, use_days: Sequence[date]) -> int:
    """How many days in `use_days` (sorted) fall after the day the entry was last touched, up to today.

    A tree nobody opened has no such days, so its entries do not age towards archive or
    forgetting however long it rests; a tree used every day ages them by the calendar.
    Never more than the calendar days since the entry was last touched.
    """
    stamp = entry.last_touched
    return 0 if stamp is None else days_in_use_since(stamp, now, use_days)


def days_in_use_since(stamp: datetime, now: datetime, use_days: Sequence[date]) -> int:
    """How many days in `use_days` (sorted) fall after the day of `stamp`, up to the day of `now`
    (a trash item's wait counts these, as an entry's idleness does)."""
    return max(0, bisect_right(use_days, day_of(now)) - bisect_right(use_days, day_of(stamp)))
