"""Tier boundaries and tier -> layer."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memstrata.errors import InvalidInput
from memstrata.scoring.tiers import days_since_touched, layer_for_tier, tier_for
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
S = Settings()


def aged(days: float, **kw) -> Entry:
    return Entry(id="e", title="t", updated=NOW - timedelta(days=days), **kw)


@pytest.mark.parametrize("days,tier", [
    (0, "hot"), (7, "hot"), (7.99, "hot"), (8, "warm"), (29, "warm"), (29.5, "warm"),
    (30, "cold"), (89, "cold"), (89.9, "cold"), (90, "archive"), (400, "archive"),
])
def test_boundaries(days, tier):
    assert tier_for(aged(days), NOW, S) == tier


def test_important_is_always_hot():
    assert tier_for(aged(400, important=True), NOW, S) == "hot"


def test_latest_touch_counts():
    e = Entry(id="e", title="t", created=NOW - timedelta(days=300), updated=NOW - timedelta(days=100),
              last_access=NOW - timedelta(days=3))
    assert days_since_touched(e, NOW) == 3
    assert tier_for(e, NOW, S) == "hot"


def test_undated_entry_is_hot():
    assert tier_for(Entry(id="e", title="t"), NOW, S) == "hot"


def test_settings_move_boundaries():
    s = Settings(hot_days=1, warm_days=2, cold_days=3)
    assert [tier_for(aged(d), NOW, s) for d in (1, 2, 3, 4)] == ["hot", "warm", "cold", "archive"]


def test_layer_for_tier():
    assert [layer_for_tier(t) for t in ("hot", "warm", "cold", "archive")] == ["L0", "L1", "L2", "L4"]
    with pytest.raises(InvalidInput):
        layer_for_tier("tepid")
