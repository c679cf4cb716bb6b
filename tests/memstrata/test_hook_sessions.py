"""The hooks' per-session record keeps what was shown last when it outgrows its cap."""
from memstrata.features import hook_sessions


def test_a_full_record_drops_the_oldest_shown_not_the_last_in_sort_order(tmp_path, monkeypatch):
    monkeypatch.setattr(hook_sessions, "MAX_IDS", 3)
    hook_sessions.record(tmp_path, "s1", ["zz-old", "aa-old"])
    hook_sessions.record(tmp_path, "s1", ["mm-new", "aa-old", "bb-newest"])
    assert hook_sessions.injected(tmp_path, "s1") == {"aa-old", "mm-new", "bb-newest"}


def test_uses_and_brought_ids_are_kept_once_in_the_order_given(tmp_path):
    hook_sessions.note_uses(tmp_path, "s2", ["b", "a", "b"])
    hook_sessions.note_uses(tmp_path, "s2", ["a", "c"])
    hook_sessions.note_followup(tmp_path, "s2", "done", ["x", "y"])
    hook_sessions.note_followup(tmp_path, "s2", "done", ["y", "z"])
    data = hook_sessions.read(tmp_path, "s2")
    assert data["used"] == ["b", "a", "c"]
    assert data["brought"] == ["x", "y", "z"]
    assert hook_sessions.brought(tmp_path, "s2") == ["x", "y", "z"]
