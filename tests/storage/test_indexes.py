"""What makes a write rewrite INDEX.md: only changes to what the index lists."""
from datetime import datetime, timezone

from memstrata.storage.entry import Entry
from memstrata.storage.indexes import listing_changed


def test_only_listed_fields_make_an_index_change():
    t0 = datetime(2026, 5, 1, 9, tzinfo=timezone.utc)
    e = Entry(id="0123456789ab", title="DB choice", body="Postgres", category="projects", path="projects/db-choice.md",
              created=t0, updated=t0)
    accessed = e.copy(last_access=datetime(2026, 5, 3, tzinfo=timezone.utc), access_count=3, context_correlation=1.0)
    assert not listing_changed(accessed, e)
    assert listing_changed(e, None)
    for change in ({"title": "Database"}, {"status": "archived"}, {"tier": "warm"}, {"path": "projects/x.md"},
                   {"updated": datetime(2026, 5, 2, tzinfo=timezone.utc)}, {"category": "misc"}):
        assert listing_changed(e.copy(**change), e), change
