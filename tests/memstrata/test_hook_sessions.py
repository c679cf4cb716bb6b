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


def test_a_record_that_cannot_be_written_is_left_and_a_held_lock_is_not_waited_for(tmp_path, monkeypatch):
    """An attacker's review: with a file where the records' folder goes, the SessionStart hook printed
    nothing; with the record's lock held, it waited past the agent's 10 s timeout."""
    import fcntl
    import os
    import time

    folder = tmp_path / ".cache" / "hook-sessions"
    folder.parent.mkdir()
    folder.write_text("not a folder")
    hook_sessions.record(tmp_path, "s3", ["a"])  # no error: the record is derived
    assert hook_sessions.injected(tmp_path, "s3") == set()
    folder.unlink()
    hook_sessions.record(tmp_path, "s3", ["a"])
    lock = next(folder.glob("*.lock"))
    fd = os.open(lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    monkeypatch.setattr(hook_sessions, "LOCK_WAIT", 0.3)
    try:
        began = time.monotonic()
        hook_sessions.record(tmp_path, "s3", ["b"])
        assert time.monotonic() - began < 5
    finally:
        os.close(fd)
    assert hook_sessions.injected(tmp_path, "s3") == {"a"}


def test_only_the_ids_shown_now_get_this_moment(tmp_path, monkeypatch):
    """A third attack: ids an older release listed (no moment kept) were all stamped with the next
    show's moment, and a reply that had used one of them no longer counted it."""
    import json

    hook_sessions._write(tmp_path, "s4", lambda data: {"ids": ["old"]})  # as an older release left it
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-05-01T11:00:00Z")
    hook_sessions.record(tmp_path, "s4", ["new"])
    assert hook_sessions.shown_at(tmp_path, "s4") == {"new": "2026-05-01T11:00:00Z"}
    path = next((tmp_path / ".cache" / "hook-sessions").glob("*.json"))
    path.write_text(json.dumps({"ids": ["old", "new"], "shown": "oops"}))
    hook_sessions.record(tmp_path, "s4", ["newer"])
    assert hook_sessions.shown_at(tmp_path, "s4") == {"newer": "2026-05-01T11:00:00Z"}
