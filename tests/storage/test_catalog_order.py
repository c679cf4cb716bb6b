"""The catalog's latest-first order: touched time, then path (what the session start's early stop relies on)."""
from __future__ import annotations

from memstrata import Memory


def test_entries_touched_at_the_same_time_come_by_path(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-06-01T09:00:00Z")
    m = Memory(tmp_path / "mem")
    m.init()
    for title in ("Zebra crossing", "Apple pie", "Mango season", "Banana bread"):
        m.write(f"{title}: a note.", title=title, category="notes", created="2026-05-30T10:00:00Z", force=True)
    m.write("Later note.", title="Later", category="notes", created="2026-05-31T10:00:00Z", force=True)
    order = [e.path for e in m.state.catalog.latest_first("active")]
    assert order == ["notes/later.md", "notes/apple-pie.md", "notes/banana-bread.md", "notes/mango-season.md",
                     "notes/zebra-crossing.md"]
