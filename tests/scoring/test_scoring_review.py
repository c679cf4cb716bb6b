"""Review schedule: 1/3/7/15/30 days, mastered to archive, due and stats."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memstrata.errors import InvalidInput
from memstrata.scoring.review import REVIEW_INTERVALS, due, mark_review, stats
from memstrata.storage.entry import Entry

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


def test_intervals_constant():
    assert REVIEW_INTERVALS == (1, 3, 7, 15, 30)


def test_reviewed_schedule_1_3_7_15_30_then_30():
    e = Entry(id="e", title="t", review_status="pending_review")
    gaps = []
    clock = NOW
    for _ in range(7):
        changes = mark_review(e, "reviewed", clock)
        assert changes["last_reviewed"] == clock
        assert changes["review_count"] == e.review_count + 1
        assert changes["archive"] is False
        gaps.append((changes["next_review"] - clock).days)
        fields = {k: v for k, v in changes.items() if k != "archive"}
        e = e.copy(**fields)
        clock = changes["next_review"]
    assert gaps == [1, 3, 7, 15, 30, 30, 30]
    assert e.review_count == 7


def test_mastered_goes_to_archive():
    e = Entry(id="e", title="t", review_status="reviewed", review_count=2)
    changes = mark_review(e, "mastered", NOW)
    assert changes == {"review_status": "mastered", "review_count": 3, "last_reviewed": NOW,
                       "next_review": None, "archive": True}


def test_mastered_important_is_not_archived():
    e = Entry(id="e", title="t", important=True)
    assert mark_review(e, "mastered", NOW)["archive"] is False


def test_reviewing_and_pending_change_status_only():
    e = Entry(id="e", title="t", review_count=2, next_review=NOW + timedelta(days=3))
    assert mark_review(e, "reviewing", NOW) == {"review_status": "reviewing", "archive": False}
    assert mark_review(e, "Pending-Review", NOW) == {"review_status": "pending_review",
                                                     "next_review": None, "archive": False}


def test_invalid_status():
    with pytest.raises(InvalidInput) as info:
        mark_review(Entry(id="e", title="t"), "memorised", NOW)
    assert "\n" not in info.value.message


def test_due_and_stats():
    entries = [
        Entry(id="a", title="a", review_status="pending_review"),
        Entry(id="b", title="b", review_status="reviewed", next_review=NOW - timedelta(days=2)),
        Entry(id="c", title="c", review_status="reviewed", next_review=NOW + timedelta(days=1)),
        Entry(id="d", title="d", review_status="mastered"),
        Entry(id="e", title="e"),
        Entry(id="f", title="f", review_status="reviewed", next_review=NOW),
        Entry(id="g", title="g", review_status="reviewing", next_review=NOW - timedelta(days=5)),
    ]
    assert [e.id for e in due(entries, NOW)] == ["a", "g", "b", "f"]
    assert stats(entries) == {"pending_review": 1, "reviewing": 1, "reviewed": 3, "mastered": 1}
    assert stats([]) == {"pending_review": 0, "reviewing": 0, "reviewed": 0, "mastered": 0}
