"""Days in use: idleness counted in days the tree was used; archive and forgetting follow it."""
from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

from memstrata.scoring.lifecycle import plan, plan_with_cascade
from memstrata.scoring.usage import day_of, entry_days, idle_days_in_use
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
S = Settings()


def aged(days: float, id: str = "e", **kw) -> Entry:
    return Entry(id=id, title=id, created=NOW - timedelta(days=days), updated=NOW - timedelta(days=days), **kw)


def daily(first: int, last: int = 0) -> list[date]:
    """Every day from `first` days ago to `last` days ago: a tree used daily."""
    return [day_of(NOW - timedelta(days=d)) for d in range(first, last - 1, -1)]


def kinds(actions, entry_id=None):
    return [a.kind for a in actions if entry_id in (None, a.entry_id)]


def test_idle_days_count_only_days_in_use_after_the_last_touch():
    e = aged(300)
    assert idle_days_in_use(e, NOW, []) == 0
    assert idle_days_in_use(e, NOW, daily(300)) == 300, "the touch day itself does not count; today does"
    assert idle_days_in_use(e, NOW, [day_of(NOW - timedelta(days=d)) for d in (400, 300, 200, 3)]) == 2
    assert idle_days_in_use(Entry(id="x", title="x"), NOW, daily(10)) == 0, "undated: not idle"
    assert idle_days_in_use(e, NOW, daily(300) + [day_of(NOW + timedelta(days=2))]) == 300, "no future days"


def test_entry_days_are_the_created_updated_and_read_days():
    e = Entry(id="e", title="e", created=NOW - timedelta(days=9), updated=NOW - timedelta(days=5),
              last_access=NOW - timedelta(hours=1))
    assert entry_days([e, Entry(id="u", title="u")]) == {day_of(NOW - timedelta(days=d)) for d in (9, 5, 0)}


def test_a_tree_nobody_opened_for_300_days_loses_nothing():
    entries = [aged(300, id=f"e{i}") for i in range(32)]
    use = entry_days(entries)  # the tree was only ever used on the day they were written
    actions = plan(entries, NOW, S, use_days=use)
    assert "forget" not in kinds(actions) and "archive" not in kinds(actions)
    assert {a.to_value for a in actions if a.kind == "retier"} == {"cold"}, "compressed in place, losslessly"
    planned, leaving = plan_with_cascade(entries, NOW, S, use_days=use)
    assert leaving == set()


def test_a_tree_used_daily_forgets_what_stayed_idle_past_the_limit():
    idle = aged(200, id="idle")
    read = aged(200, id="read", last_access=NOW - timedelta(days=3))
    linked = aged(200, id="linked")
    citing = aged(2, id="citing", related=["linked"])
    actions = plan([idle, read, linked, citing], NOW, S, use_days=daily(400))
    assert kinds(actions, "idle") == ["archive", "forget"]
    assert "untouched for 200 days" in actions[-1].reason
    assert kinds(actions, "read") == [], "read 3 days ago: stays"
    assert "forget" not in kinds(actions, "linked"), "linked by a live entry: never forgotten"


def test_idle_days_in_use_set_the_limit_not_calendar_days():
    e = aged(400, id="e")
    weekly = [day_of(NOW - timedelta(days=d)) for d in range(399, -1, -7)]  # 58 days in use
    assert kinds(plan([e], NOW, S, use_days=weekly)) == ["retier", "compress"]  # cold, stays in place
    e = aged(400, id="e", status="archived", tier="archive", layer="L4")
    assert plan([e], NOW, S, use_days=weekly) == [], "archived, but only 58 days in use since: kept"
    assert kinds(plan([e], NOW, S, use_days=daily(399, 220))) == ["forget"], "180 days in use: forgotten"
    assert plan([e], NOW, S, use_days=daily(399, 221)) == [], "179 days in use: kept"
    reason = plan([e], NOW, S, use_days=daily(399, 220))[0].reason
    assert "180 days of use (400 calendar days)" in reason


def test_archive_needs_more_than_cold_days_in_use():
    e = aged(120, id="e", tier="cold", layer="L2")
    assert plan([e], NOW, S, use_days=daily(88)) == [], "89 days in use (cold_days): stays cold"
    assert kinds(plan([e], NOW, S, use_days=daily(89))) == ["retier", "compress", "archive"]


def test_without_a_record_of_use_every_calendar_day_counts():
    assert kinds(plan([aged(200)], NOW, S)) == ["archive", "forget"]
