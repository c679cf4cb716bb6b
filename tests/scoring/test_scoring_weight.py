"""Weight formula against hand-computed values."""
from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest

from memstrata.scoring.weight import (
    clamp_correlation, compute_weight, effective_access_count, importance_factor, importance_label,
)
from memstrata.storage.entry import Entry

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


def entry(**kw) -> Entry:
    kw.setdefault("id", "e1")
    kw.setdefault("title", "t")
    return Entry(**kw)


@pytest.mark.parametrize("importance,important,factor,label", [
    (1.0, True, 3.0, "important"),
    (0.1, True, 3.0, "important"),
    (0.8, False, 3.0, "high"),
    (0.7, False, 3.0, "high"),
    (0.69, False, 1.5, "medium"),
    (0.5, False, 1.5, "medium"),
    (0.4, False, 1.5, "medium"),
    (0.39, False, 0.5, "low"),
    (0.2, False, 0.5, "low"),
])
def test_importance_factor(importance, important, factor, label):
    e = entry(importance=importance, important=important)
    assert importance_factor(e) == factor
    assert importance_label(e) == label


def test_high_ten_days_three_accesses_corr_1_2():
    e = entry(importance=0.8, access_count=3, last_access=NOW - timedelta(days=10))
    expected = 3.0 * (1 / (10 + 1) ** 0.3) * math.log(3 + 1) * 1.2
    assert compute_weight(e, NOW, 1.2) == pytest.approx(expected)


def test_uses_entry_correlation_when_none_given():
    e = entry(importance=0.2, access_count=5, last_access=NOW - timedelta(days=2),
              context_correlation=0.7)
    expected = 0.5 * (1 / 3 ** 0.3) * math.log(6) * 0.7
    assert compute_weight(e, NOW) == pytest.approx(expected)


def test_correlation_is_clamped():
    e = entry(importance=0.5, access_count=1, last_access=NOW)
    assert compute_weight(e, NOW, 9.0) == pytest.approx(1.5 * 1.0 * math.log(2) * 1.5)
    assert compute_weight(e, NOW, 0.0) == pytest.approx(1.5 * 1.0 * math.log(2) * 0.5)
    assert clamp_correlation(None) == 1.0
    assert clamp_correlation(float("nan")) == 1.0
    assert clamp_correlation(1.2) == 1.2


def test_never_accessed_counts_write_as_first_access():
    fresh = entry(importance=0.5, access_count=0, created=NOW)
    once = entry(importance=0.5, access_count=1, created=NOW)
    assert effective_access_count(fresh) == 1
    assert compute_weight(fresh, NOW) == pytest.approx(1.5 * math.log(2))
    assert compute_weight(fresh, NOW) == compute_weight(once, NOW)


def test_days_fall_back_to_updated_then_created_and_are_whole_days():
    updated = entry(importance=0.8, access_count=2, updated=NOW - timedelta(days=4, hours=20),
                    created=NOW - timedelta(days=50))
    assert compute_weight(updated, NOW, 1.0) == pytest.approx(3.0 / 5 ** 0.3 * math.log(3))
    created = entry(importance=0.8, access_count=2, created=NOW - timedelta(days=50))
    assert compute_weight(created, NOW, 1.0) == pytest.approx(3.0 / 51 ** 0.3 * math.log(3))
    undated = entry(importance=0.8, access_count=2)
    assert compute_weight(undated, NOW, 1.0) == pytest.approx(3.0 * math.log(3))


def test_last_access_wins_over_updated():
    e = entry(importance=0.5, access_count=1, last_access=NOW - timedelta(days=20),
              updated=NOW - timedelta(days=1))
    assert compute_weight(e, NOW, 1.0) == pytest.approx(1.5 / 21 ** 0.3 * math.log(2))


def test_older_weighs_less_more_accesses_weigh_more():
    young = entry(access_count=3, last_access=NOW - timedelta(days=1))
    old = entry(access_count=3, last_access=NOW - timedelta(days=100))
    busy = entry(access_count=30, last_access=NOW - timedelta(days=1))
    assert compute_weight(old, NOW) < compute_weight(young, NOW) < compute_weight(busy, NOW)


def test_a_count_is_believed_up_to_so_many_reads_a_day_since_created():
    """A count from a pull or a hand edit (`access_count: 100000000`) weighs what MAX_READS_PER_DAY
    reads a day since the entry was created would; the engine's own counts never reach the cap."""
    from memstrata.scoring.weight import MAX_READS_PER_DAY, credible_count

    now = datetime(2026, 11, 30, 9, tzinfo=timezone.utc)
    created = datetime(2026, 11, 27, 10, tzinfo=timezone.utc)
    assert credible_count(100_000_000, created, now) == 3 * MAX_READS_PER_DAY
    assert credible_count(120, created, now) == 120
    assert credible_count(100_000_000, now, now) == MAX_READS_PER_DAY
    assert credible_count(10**9, datetime(2027, 1, 1, tzinfo=timezone.utc), now) == MAX_READS_PER_DAY  # created in the future
    assert credible_count(float("nan"), created, now) == 0 and credible_count(-5, created, now) == 0
    assert credible_count(10**9, None, now) == MAX_READS_PER_DAY
    forged = Entry(id="a" * 12, title="x", created=now, last_access=now, access_count=100_000_000, important=True)
    honest = Entry(id="b" * 12, title="y", created=created, last_access=now, access_count=120, important=True)
    assert compute_weight(forged, now) < compute_weight(honest, now)
