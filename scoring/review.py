"""Review tracking: pending_review -> reviewing -> reviewed -> mastered on a 1/3/7/15/30-day schedule."""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Iterable

from memstrata.storage.entry import REVIEW_STATUSES, Entry

from memstrata.storage.errors import InvalidInput

# Days until the next review after the 1st, 2nd, 3rd, 4th and 5th-or-later completed review.
REVIEW_INTERVALS = (1, 3, 7, 15, 30)
ARCHIVE_FLAG = "archive"  # the one key of mark_review's result that is not an Entry field


def normalise_review_status(status) -> str:
    """A review status from user input (case and -/_ tolerant); InvalidInput otherwise."""
    text = str(status or "").strip().lower().replace("-", "_").replace(" ", "_")
    if text not in REVIEW_STATUSES:
        raise InvalidInput(f"review status must be one of {', '.join(REVIEW_STATUSES)}, not {status!r}")
    return text


def interval_for(review_count: int) -> int:
    """Days to the next review once `review_count` reviews are done (1, 3, 7, 15, then 30)."""
    index = min(max(review_count, 1), len(REVIEW_INTERVALS)) - 1
    return REVIEW_INTERVALS[index]


def mark_review(entry: Entry, status, now: datetime) -> dict:
    """The field changes for marking an entry with a review status.

    - pending_review: status only, next_review None (due now, waiting for a first review).
    - reviewing: status only (a review has started).
    - reviewed: review_count + 1, last_reviewed now, next_review now + 1/3/7/15/30 days
      for the 1st/2nd/3rd/4th/5th-and-later completed review.
    - mastered: review_count + 1, last_reviewed now, next_review None.
    Keys are Entry field names, plus `archive` (bool): True when the entry should move to
    the archive tier (mastered, unless the entry is important: important entries are never
    archived).
    """
    value = normalise_review_status(status)
    changes: dict = {"review_status": value}
    if value == "pending_review":
        changes["next_review"] = None
    elif value in ("reviewed", "mastered"):
        count = int(entry.review_count or 0) + 1
        changes["review_count"] = count
        changes["last_reviewed"] = now
        changes["next_review"] = now + timedelta(days=interval_for(count)) if value == "reviewed" else None
    changes[ARCHIVE_FLAG] = value == "mastered" and not entry.important
    return changes


def is_due(entry: Entry, now: datetime) -> bool:
    """Tracked (review_status set), not mastered, not expired, and next_review unset or at/before now."""
    if entry.review_status is None or entry.review_status == "mastered" or entry.status == "expired":
        return False
    return entry.next_review is None or entry.next_review <= now


def due(entries: Iterable[Entry], now: datetime) -> list[Entry]:
    """Entries due for review at `now`, most overdue first (never-scheduled ones first of all)."""
    hits = [e for e in entries if is_due(e, now)]
    hits.sort(key=lambda e: (e.next_review is not None, e.next_review or now, e.id))
    return hits


def stats(entries: Iterable[Entry]) -> dict:
    """Count of entries per review status (every status present, zeros included; untracked left out)."""
    counts = {status: 0 for status in REVIEW_STATUSES}
    for entry in entries:
        if entry.review_status in counts:
            counts[entry.review_status] += 1
    return counts
