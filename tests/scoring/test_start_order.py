"""The session-start order (scoring/start_order.py): pure, no IO, a fixed clock."""
from __future__ import annotations

import math
import random
from datetime import datetime, timedelta, timezone

import pytest

from memstrata.scoring.start_order import (STRENGTH_MAX, STRENGTH_PLAIN, bound, in_order, score_key, start_score, strong,
                                          written, written_bonus)
from memstrata.scoring.weight import compute_weight
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry

NOW = datetime(2026, 6, 1, 9, 0, tzinfo=timezone.utc)
S = Settings()  # autoload_written_boost 2.0, autoload_written_half_life_days 7


def note(name, written_days, used_days=None, uses=0, importance=0.5, important=False, correlation=1.0, updated_days=None):
    created = NOW - timedelta(days=written_days)
    return Entry(id=name, title=name, path=f"n/{name}.md", created=created,
                 updated=NOW - timedelta(days=updated_days) if updated_days is not None else created,
                 last_access=None if used_days is None else NOW - timedelta(days=used_days), access_count=uses,
                 importance=importance, important=important, context_correlation=correlation)


def test_the_bonus_halves_every_half_life_and_the_weight_is_the_source_formula():
    assert written_bonus(0, S) == pytest.approx(3.0)
    assert written_bonus(7, S) == pytest.approx(2.0)
    assert written_bonus(14, S) == pytest.approx(1.5)
    e = note("a", 10, uses=4)
    assert start_score(e, NOW, S) == pytest.approx(compute_weight(e, NOW) * written_bonus(10, S))
    assert start_score(e, NOW, Settings(autoload_written_boost=0.0)) == pytest.approx(compute_weight(e, NOW))


def test_an_update_is_a_write_and_a_read_is_not():
    edited = note("edited", 60, updated_days=1)
    assert written(edited) == NOW - timedelta(days=1)
    read = note("read", 60, used_days=1, uses=1)
    assert written(read) == NOW - timedelta(days=60)
    assert start_score(edited, NOW, S) > start_score(read, NOW, S)


def test_written_this_week_beats_what_was_only_shown_or_old():
    """The issue's loop: an entry loaded every day by the hook used to weigh 14 against 2 for its
    replacement. Loads no longer count (access_count stays as the person's uses): written this week
    comes first; among old notes the one used most comes first."""
    this_week = note("new", 3)
    old_never_used = note("old", 100)
    old_used_twice = note("used", 100, used_days=40, uses=2)
    order = [e.id for e, _ in in_order([], sorted([old_never_used, this_week, old_used_twice],
                                                  key=lambda e: e.last_touched, reverse=True), NOW, S, 2)]
    assert order == ["new", "used", "old"]
    # a person's real uses still count: an entry read twenty times yesterday outranks a fresh note
    busy = note("busy", 200, used_days=1, uses=20)
    assert start_score(busy, NOW, S) > start_score(this_week, NOW, S)


def test_the_bound_holds_for_every_entry():
    rng = random.Random(3)
    for _ in range(3000):
        written_days = rng.uniform(0, 400)
        used = rng.choice([None, rng.uniform(0, written_days)])
        updated = rng.choice([None, rng.uniform(0, written_days)])
        e = note("x", written_days, used_days=used, uses=rng.randint(0, 60), importance=rng.random(),
                 important=rng.random() < 0.1, correlation=rng.uniform(0.3, 1.7), updated_days=updated)
        touched_days = (NOW - e.last_touched).total_seconds() / 86400
        assert start_score(e, NOW, S) <= bound(touched_days, 60, S) + 1e-9
        if not strong(e):  # medium importance or less, a neutral correlation or less
            assert start_score(e, NOW, S) <= bound(touched_days, 60, S, STRENGTH_PLAIN) + 1e-9


def by_touch(entries):
    """As the catalog gives them: by the second last touched, latest first, then by path."""
    return sorted(entries, key=lambda e: (-math.floor(e.last_touched.timestamp()), e.path))


def as_read(entries):
    """The entries as the catalog gives them (`by_touch`), lazily, and the list of those read so far."""
    read = []

    def stream():
        for e in by_touch(entries):
            read.append(e)
            yield e

    return stream(), read


def full_sort(entries, factor=1.0):
    """The order in_order promises: score to 9 digits, the latest write to the second, the path."""
    return sorted(entries, key=lambda e: (-score_key(start_score(e, NOW, S) * factor),
                                          -math.floor(written(e).timestamp()), e.path))


def _tree(n, seed):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        w = rng.uniform(0, 300)
        out.append(note(f"e{i:04d}", w, used_days=rng.choice([None, rng.uniform(0, w)]), uses=rng.choice([0, 0, 1, 3, 12]),
                        importance=rng.choice([0.2, 0.5, 0.8]), important=rng.random() < 0.02,
                        correlation=rng.choice([1.0, 1.0, 0.7, 1.4]), updated_days=rng.choice([None, rng.uniform(0, w)])))
    return out


@pytest.mark.parametrize("seed, strong_first", [(1, False), (2, False), (3, True), (4, True)])
def test_the_lazy_order_is_the_full_sort_and_reads_only_what_it_needs(seed, strong_first):
    """The strong entries given first, the rest is bounded three times tighter: fewer read."""
    entries = _tree(2000, seed)
    counted, read = as_read(entries)
    want = full_sort(entries)
    first = [e for e in entries if strong(e)] if strong_first else []
    got = in_order(first, counted, NOW, S, max(e.access_count for e in entries),
                   STRENGTH_PLAIN if strong_first else STRENGTH_MAX)
    top = [next(got) for _ in range(20)]
    assert [e.id for e, _ in top] == [e.id for e in want[:20]]
    assert len(read) < len(entries) // (8 if strong_first else 2)  # the top 20 did not need the whole tree
    rest = [e.id for e, _ in got]
    assert [e.id for e, _ in top] + rest == [e.id for e in want]


def test_entries_given_first_are_ranked_with_the_rest_and_never_twice():
    entries = _tree(300, 9)
    stream = by_touch(entries)
    used_lately = [e.copy(last_access=NOW, access_count=e.access_count + 5) for e in entries[:5]]  # journaled uses
    undated = [Entry(id="nodate", title="nodate", path="n/nodate.md")]
    got = [e for e, _ in in_order(used_lately + undated, stream, NOW, S, 12)]
    assert len(got) == len(entries) + 1 and len({e.id for e in got}) == len(got)
    scores = [score_key(start_score(e, NOW, S)) for e in got]
    assert scores == sorted(scores, reverse=True)


def test_a_vault_copied_in_one_go_is_the_full_sort_and_read_only_as_far_as_the_ties_need():
    """3,000 notes copied in three seconds (one date each, no use): the order is the full sort (scores
    to 9 digits, ties by the latest write to the second, then the path) and the top 10 are given after
    reading a few more, not the 1,000 of the latest second (the catalog gives a second's notes by path)."""
    rng = random.Random(5)
    base = NOW - timedelta(days=2)
    entries = []
    for i in range(3000):
        stamp = base - timedelta(seconds=i // 1000)
        name = f"{rng.randrange(10 ** 6):06d}-{i}"
        entries.append(Entry(id=name, title=name, path=f"vault/{name}.md", created=stamp, updated=stamp))
    counted, read = as_read(entries)
    want = full_sort(entries)
    got = in_order([], counted, NOW, S, 0, STRENGTH_PLAIN)
    top = [next(got) for _ in range(10)]
    assert [e.id for e, _ in top] == [e.id for e in want[:10]]
    assert len(read) <= 20
    assert [e.id for e, _ in top] + [e.id for e, _ in got] == [e.id for e in want]


def test_the_bound_keeps_a_margin_over_its_own_rounding():
    """An attacker's review: A and Z written the same second, Z also read an hour later (one use):
    Z's score was one ulp above the bound computed at its touch, and the block gave Z first."""
    a = Entry(id="a", title="a", path="n/a.md", created=NOW - timedelta(days=11))
    z = Entry(id="z", title="z", path="n/z.md", created=NOW - timedelta(days=11),
              last_access=NOW - timedelta(days=11) + timedelta(hours=1), access_count=1)
    stream = by_touch([a, z])
    want = full_sort([a, z])
    assert [e.id for e, _ in in_order([], stream, NOW, S, 1, STRENGTH_PLAIN)] == [e.id for e in want]


def test_a_second_of_unused_notes_is_read_only_as_far_as_the_ties_need_at_any_moment():
    """The scale bench's tree (9,000 notes written in one second, no use) read all of them at a third
    of the moments of a day: the ceiling's margin was as wide as the 9-digit rounding, so the ceiling
    rounded above the notes' own scores, by the digits of the bound. At every moment now: a few read."""
    base = NOW - timedelta(days=40)
    entries = [Entry(id=f"n{i:04d}", title=f"n{i}", path=f"vault/n{i:04d}.md", created=base, updated=base)
               for i in range(1500)]
    slow = []
    for minutes in range(0, 24 * 60, 7):
        now = NOW + timedelta(minutes=minutes, seconds=minutes % 60)
        stream, read = as_read(entries)
        got = in_order([], stream, now, S, 0, STRENGTH_PLAIN)
        top = [next(got)[0].id for _ in range(10)]
        assert top == [e.id for e in entries[:10]]  # one score, one second: by path
        if len(read) > 20:
            slow.append((minutes, len(read)))
    assert slow == []

