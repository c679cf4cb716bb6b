"""The team merge rules as pure functions: access facts never conflict, text changes follow the conflict rule."""
from datetime import datetime, timezone

from memstrata.scoring.merge import (describe_changes, keep_edit_over_delete, merge_entry, merge_access,
                                     same_entry)
from memstrata.storage.entry import Entry


def _t(day, hour=0):
    return datetime(2026, 7, day, hour, tzinfo=timezone.utc)


BASE = Entry(id="e1", title="Release day", body="Thursdays.\n", category="ops", updated=_t(1), version=1,
             access_count=2, last_access=_t(1), weight=1.0)


def test_only_access_facts_differ_is_no_conflict():
    ours = BASE.copy(access_count=5, last_access=_t(3), weight=1.4)
    theirs = BASE.copy(access_count=3, last_access=_t(2), weight=1.2)
    m = merge_entry(BASE, ours, theirs, "a", "b")
    assert m.kind == "access" and not m.kept
    assert m.entry.access_count == 6           # both sides' reads counted
    assert m.entry.last_access == _t(3) and m.entry.weight == 1.4  # the newer
    assert m.entry.body == BASE.body and m.entry.version == 1


def test_one_side_changed_text_other_side_metadata():
    ours = BASE.copy(body="Fridays.\n", version=2, updated=_t(2))
    theirs = BASE.copy(tags=["release"], access_count=4)
    m = merge_entry(BASE, ours, theirs, "a", "b")
    assert m.kind == "ours" and m.entry.body == "Fridays.\n" and m.entry.tags == ["release"]
    assert m.entry.access_count == 4 and m.entry.version == 2


def test_both_changed_text_newer_is_current_other_kept():
    ours = BASE.copy(body="Fridays.\n", version=2, updated=_t(3))
    theirs = BASE.copy(body="Wednesdays.\n", version=2, updated=_t(2))
    m = merge_entry(BASE, ours, theirs, "laptop", "desktop/agent-x", kept_versions=[1])
    assert m.kind == "conflict"
    assert m.entry.body == "Fridays.\n" and m.entry.version == 3
    [(n, kept)] = m.kept
    assert n == 2 and kept.body == "Wednesdays.\n" and kept.version == 2
    lines = {h["version"]: h["summary"] for h in m.entry.history}
    assert "by desktop/agent-x" in lines[2] and "lost a conflict" in lines[2]
    assert "by laptop" in lines[3] and "won a conflict with desktop/agent-x" in lines[3]
    # the same merge seen from the other side gives the same current text
    other = merge_entry(BASE, theirs, ours, "desktop/agent-x", "laptop", kept_versions=[1])
    assert other.entry.body == m.entry.body and other.kept[0][1].body == kept.body


def test_delete_against_edit():
    assert keep_edit_over_delete(BASE, BASE.copy(body="Fridays.\n"))
    assert keep_edit_over_delete(BASE, BASE.copy(tags=["x"]))
    assert not keep_edit_over_delete(BASE, BASE.copy(access_count=9, last_access=_t(5), weight=2.0))


def test_new_files_at_one_path_and_commit_message():
    assert same_entry(BASE, BASE.copy(body="x")) and not same_entry(BASE, BASE.copy(id="e2"))
    assert merge_access(None, BASE.copy(access_count=3), BASE)["access_count"] == 3
    assert describe_changes(3, 1, 2) == "3 new, 1 updated, 2 deleted"
    assert describe_changes(0, 0, 0) == "no entry changes"


def test_a_path_whose_sides_carry_different_ids_holds_different_entries():
    """Issue 39: a rename onto an edited path merged two entries by their texts (one edit lost)."""
    from memstrata.scoring.merge import split_by_id

    x, x2, y, z = Entry(id="x", title="a", body="1"), Entry(id="x", title="a", body="2"), \
        Entry(id="y", title="b", body="3"), Entry(id="z", title="c", body="4")
    assert split_by_id(x, x2, x) is None and split_by_id(x, Entry(id="", title="a", body="5"), x2) is None
    renamed = split_by_id(x, y, x2)  # ours put y at the path, theirs edited x
    assert renamed.lineage == (x, None, x2) and renamed.ours_new is y and renamed.theirs_new is None
    both = split_by_id(x, y, z)
    assert both.lineage == (x, None, None) and (both.ours_new, both.theirs_new) == (y, z)
    assert split_by_id(None, y, z).lineage == (None, None, None)
    gone = split_by_id(x, None, y)  # ours deleted x, theirs put y there
    assert gone.lineage == (x, None, None) and gone.theirs_new is y
