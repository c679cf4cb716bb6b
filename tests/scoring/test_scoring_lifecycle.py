"""Lifecycle plans: retier, compress, archive, expire, forget; idempotence; trash purge."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memstrata.scoring.lifecycle import Action, plan, trash_purge_due
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
S = Settings()


def aged(days: float, id: str = "e", **kw) -> Entry:
    return Entry(id=id, title=id, updated=NOW - timedelta(days=days), **kw)


def apply(entries: list[Entry], actions: list[Action]) -> list[Entry]:
    """What Memory does, fields only: no touch dates change; forgotten/expired leave the tree."""
    by_id = {e.id: e.copy() for e in entries}
    gone = set()
    for a in actions:
        e = by_id[a.entry_id]
        if a.kind == "retier":
            e.tier = a.to_value
        elif a.kind == "compress":
            e.layer = a.to_value
            e.full_content_file = f".full/{e.id}.md"
        elif a.kind == "archive":
            e.status = "archived"
        elif a.kind == "expire":
            e.status = "expired"
            gone.add(e.id)
        elif a.kind == "forget":
            gone.add(e.id)
    return [e for i, e in by_id.items() if i not in gone]


def kinds(actions, entry_id=None):
    return [(a.kind, a.from_value, a.to_value) for a in actions if entry_id in (None, a.entry_id)]


def test_fresh_hot_entry_needs_nothing():
    assert plan([aged(3)], NOW, S, set()) == []


def test_warm_entry_retiers_and_compresses_to_l1():
    actions = plan([aged(8)], NOW, S, set())
    assert kinds(actions) == [("retier", "hot", "warm"), ("compress", "L0", "L1")]
    assert actions[0].layer == "L1"


def test_cold_entry_from_warm_compresses_to_l2():
    actions = plan([aged(30, tier="warm", layer="L1")], NOW, S, set())
    assert kinds(actions) == [("retier", "warm", "cold"), ("compress", "L1", "L2")]


def test_archive_entry():
    actions = plan([aged(90, tier="cold", layer="L2")], NOW, S, set())
    assert kinds(actions) == [("retier", "cold", "archive"), ("compress", "L2", "L4"),
                              ("archive", "active", "archived")]


def test_boundary_89_stays_cold():
    actions = plan([aged(89, tier="cold", layer="L2")], NOW, S, set())
    assert actions == []


def test_important_untouched_by_plan():
    old = aged(400, important=True, importance=1.0)
    assert plan([old], NOW, S, set()) == []
    archived = aged(400, important=True, status="archived", tier="archive", layer="L0")
    assert plan([archived], NOW, S, set()) == []


def test_important_with_stale_tier_only_goes_back_to_hot():
    actions = plan([aged(40, important=True, tier="cold", layer="L2")], NOW, S, set())
    assert kinds(actions) == [("retier", "cold", "hot")]


def test_touched_again_retiers_without_decompressing():
    e = Entry(id="e", title="t", created=NOW - timedelta(days=60), tier="cold", layer="L2",
              last_access=NOW - timedelta(days=1))
    assert kinds(plan([e], NOW, S, set())) == [("retier", "cold", "hot")]


def test_never_decompress_deeper_layer():
    e = aged(10, tier="warm", layer="L2")
    assert plan([e], NOW, S, set()) == []


def test_expire():
    e = aged(1, expires=NOW - timedelta(hours=1))
    assert kinds(plan([e], NOW, S, set())) == [("expire", "active", "expired")]
    not_yet = aged(1, expires=NOW + timedelta(hours=1))
    assert plan([not_yet], NOW, S, set()) == []
    already = aged(1, status="expired", expires=NOW - timedelta(days=3))
    assert plan([already], NOW, S, set()) == []


def test_expire_applies_to_important_too():
    e = aged(1, important=True, expires=NOW - timedelta(days=1))
    assert kinds(plan([e], NOW, S, set())) == [("expire", "active", "expired")]


def test_forget_only_when_unreferenced():
    archived = aged(200, id="old", status="archived", tier="archive", layer="L4")
    assert kinds(plan([archived], NOW, S, set())) == [("forget", "archived", "trash")]
    assert plan([archived], NOW, S, {"old"}) == []
    citing = aged(1, id="new", related=["old"])
    assert plan([archived, citing], NOW, S, set()) == []


def test_forget_boundary_and_importance():
    at = aged(180, status="archived", tier="archive", layer="L4")
    before = aged(179, status="archived", tier="archive", layer="L4")
    assert kinds(plan([at], NOW, S, set())) == [("forget", "archived", "trash")]
    assert plan([before], NOW, S, set()) == []
    important = aged(500, status="archived", tier="archive", layer="L4", important=True)
    assert plan([important], NOW, S, set()) == []


def test_active_entry_past_forget_age_is_archived_and_forgotten_in_one_plan():
    actions = plan([aged(200)], NOW, S, set())
    assert kinds(actions) == [("archive", "active", "archived"), ("forget", "archived", "trash")]


def test_archived_entry_stays_archive_when_read():
    e = Entry(id="e", title="t", status="archived", tier="archive", layer="L4",
              created=NOW - timedelta(days=300), last_access=NOW - timedelta(days=2))
    assert plan([e], NOW, S, set()) == []


def test_archived_entry_with_stale_fields_is_aligned():
    e = aged(100, status="archived", tier="cold", layer="L2")
    assert kinds(plan([e], NOW, S, set())) == [("retier", "cold", "archive"), ("compress", "L2", "L4")]


AGES = [0, 5, 7, 8, 15, 29, 30, 60, 89, 90, 120, 179, 180, 400]


def population() -> list[Entry]:
    out = []
    for i, days in enumerate(AGES):
        out.append(aged(days, id=f"a{i}"))
        out.append(aged(days, id=f"b{i}", tier="cold", layer="L2"))
        out.append(aged(days, id=f"c{i}", status="archived", tier="archive", layer="L4"))
        out.append(aged(days, id=f"i{i}", important=True, tier="warm"))
        out.append(aged(days, id=f"x{i}", expires=NOW - timedelta(days=1)))
        out.append(Entry(id=f"r{i}", title="r", created=NOW - timedelta(days=days + 100), tier="cold",
                         layer="L2", last_access=NOW - timedelta(days=days)))
    return out


def test_plan_is_idempotent():
    entries = population()
    first = plan(entries, NOW, S, {"c13"})
    assert first
    after = apply(entries, first)
    assert plan(after, NOW, S, {"c13"}) == []


@pytest.mark.parametrize("days_later", [1, 10, 40, 100, 250])
def test_plan_converges_as_time_passes(days_later):
    later = NOW + timedelta(days=days_later)
    entries = apply(population(), plan(population(), NOW, S, set()))
    step = apply(entries, plan(entries, later, S, set()))
    assert plan(step, later, S, set()) == []


def test_trash_purge_due():
    # Since issue 16 an item must also have been reported (reported_at) before it can be purged, and
    # the retention runs from the later of trash date and first report (was: from the trash date alone).
    reported = NOW - timedelta(days=40)
    assert not trash_purge_due(NOW - timedelta(days=30), NOW, S, reported)
    assert trash_purge_due(NOW - timedelta(days=30, seconds=1), NOW, S, reported)
    assert not trash_purge_due(None, NOW, S, reported)
    assert trash_purge_due(NOW - timedelta(days=3), NOW, Settings(trash_retention_days=2), NOW - timedelta(days=3))


def test_trash_purge_waits_for_a_report_and_counts_retention_from_it():
    long_ago = NOW - timedelta(days=400)
    assert not trash_purge_due(long_ago, NOW, S, None), "never reported: never purged"
    assert not trash_purge_due(long_ago, NOW, S, NOW - timedelta(days=30)), "reported 30 days ago: not yet"
    assert trash_purge_due(long_ago, NOW, S, NOW - timedelta(days=31))


def test_trash_purge_counts_days_in_use():
    """Issue 39: a run with a clock moved ahead (MEMSTRATA_NOW=+90d) purged today's trash. The retention
    counts days the tree was used on after the report, as archive and forgetting do."""
    from memstrata.scoring.lifecycle import trash_purgeable_after
    from memstrata.scoring.usage import day_of

    reported = NOW - timedelta(days=90)
    daily = [day_of(NOW - timedelta(days=d)) for d in range(90, -1, -1)]
    assert not trash_purge_due(reported, NOW, S, reported, use_days=[day_of(reported)]), "90 days, none in use"
    assert not trash_purge_due(reported, NOW, S, reported, use_days=daily[:30]), "29 days in use since the report"
    assert trash_purge_due(reported, NOW, S, reported, use_days=daily[:31])
    assert trash_purge_due(reported, NOW, S, reported, use_days=daily)
    assert not trash_purge_due(NOW - timedelta(days=20), NOW, S, NOW - timedelta(days=20), use_days=daily)
    assert trash_purgeable_after(reported, S, reported, NOW, daily[:21]) == datetime(2026, 12, 10, tzinfo=timezone.utc)


def test_notes_that_stay_in_place_are_archived_never_forgotten():
    from dataclasses import replace

    from memstrata.scoring.lifecycle import plan
    from memstrata.storage.config import Settings
    from memstrata.storage.entry import Entry
    from datetime import datetime, timedelta, timezone

    now = datetime(2028, 1, 1, tzinfo=timezone.utc)
    old = Entry(id="aaaaaaaaaaaa", title="t", updated=now - timedelta(days=400), path="n/t.md")
    moving = {a.kind for a in plan([old], now, Settings())}
    kept = {a.kind for a in plan([old], now, replace(Settings(), archive_moves_files=False))}
    assert "forget" in moving and "forget" not in kept and "archive" in kept
