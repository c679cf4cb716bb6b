"""Row keys: which are a session's units, counted per category in one pass."""
from __future__ import annotations

from memstrata.retrieval.units import is_unit, units_per


def test_units_per_counts_what_is_unit_says_is_a_unit():
    ids = ["ses-1#0", "ses-1#1", "ses-1#2", "note-a", "path:notes/C#.md", "path:x#1", "ses-2#1", "note-b"]
    cats = ["sessions/a", "sessions/a", "sessions/a", "sessions/a", "notes", "notes", "sessions/b", "notes"]
    counts = units_per(ids, cats)
    assert counts == {"sessions/a": 3, "sessions/b": 1}
    expected: dict = {}
    for rid, cat in zip(ids, cats):
        if is_unit(rid):
            expected[cat] = expected.get(cat, 0) + 1
    assert counts == expected
