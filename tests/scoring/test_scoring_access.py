"""scoring/access.py without IO: a stopped fold's plan judged per entry, accesses dated in the future."""
from datetime import datetime, timedelta, timezone

from memstrata.scoring.access import Access, fold_record, fold_saved, folded, text_hash
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry

NOW = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)


def _entry(count=2) -> Entry:
    return Entry(id="abcdef123456", title="t", body="b", category="ops", path="ops/t.md", created=NOW,
                 updated=NOW, access_count=count)


def test_a_plan_record_tells_saved_from_not_saved():
    before, after = _entry(2), _entry(5)
    record = fold_record("old text", "new text", after)
    assert record == {"old": text_hash("old text"), "new": text_hash("new text"), "after": 5}
    assert fold_saved(record, text_hash("new text"), 5)        # the file as the fold wrote it
    assert not fold_saved(record, text_hash("old text"), 2)    # as it was: the lines still count
    assert fold_saved(record, None, None)                      # gone since: nothing left to count
    assert fold_saved(record, text_hash("edited after"), 5)    # edited since (the count kept): saved
    assert fold_saved(record, text_hash("reviewed after"), 6)  # a review added one on top: saved
    assert not fold_saved(record, text_hash("edited after"), before.access_count)
    assert fold_record(None, "new", after)["old"] is None      # a new file: no old hash


def test_an_access_dated_after_now_is_folded_as_now():
    far = Access(datetime(9999, 12, 31, tzinfo=timezone.utc), 2)
    out = folded(_entry(0), far, NOW, Settings())
    assert out.last_access == NOW and out.access_count == 2
    past = Access(NOW - timedelta(days=1), 1)
    assert folded(_entry(0), past, NOW, Settings()).last_access == NOW - timedelta(days=1)
