"""A captured turn that repeats a decision since changed is not injected at a prompt (issue 37, item 4):
the current version is, and a turn that repeats the current text still is."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memstrata import Memory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capture"))
from transcripts import Claude  # noqa: E402

OLD = "The user prefers dark mode (Dracula) in VS Code and in the terminal."
NEW = "The user switched to light mode (Solarized Light) because of glare in the new office."
PROMPT = "set up the editor colours for the new laptop the way I like them"


def _session(m: Memory, folder: Path, session: str, day: str, said: str) -> None:
    talk = Claude(session=session, cwd=str(folder))
    talk.user("set up my editor colours the way I like them", f"{day}T10:00:00.000Z")
    talk.reply(f"According to the memory, {said}", f"{day}T10:00:20.000Z")
    assert m.capture([talk.write(folder)])["new_sessions"] == 1


@pytest.fixture
def tree(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-06-10T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    m.write(OLD, title="Editor theme", category="preferences", created="2026-05-01T10:00:00Z")
    _session(m, tmp_path, "5a1e0000-1111-4aaa-8bbb-000000000001", "2026-05-10", OLD)
    return m, tmp_path


def test_a_turn_quoting_the_replaced_version_is_left_out(tree):
    m, folder = tree
    before = m.autoload(PROMPT).markdown()
    assert "Dracula" in before and "According to the memory" in before  # the turn is injected while true
    written = m.write(NEW, title="Editor theme", category="preferences")
    assert written.version == 2  # the same subject: a new version, the old text kept in history
    after = m.autoload(PROMPT).markdown()
    assert "Solarized" in after and "Dracula" not in after, after
    _session(m, folder, "5a1e0000-1111-4aaa-8bbb-000000000002", "2026-06-05", NEW)
    later = m.autoload(PROMPT).markdown()
    assert "According to the memory, " + NEW in later and "Dracula" not in later, later
    hits = m.recall(PROMPT, k=10, count_access=False).results
    assert any(h.turn is not None and "Dracula" in (h.snippet or "") for h in hits)  # recall still finds the record


def test_reverting_makes_the_old_text_current_again(tree):
    m, _ = tree
    first = m.write(NEW, title="Editor theme", category="preferences")
    m.revert(first.id, 1)
    block = m.autoload(PROMPT).markdown()
    assert "Dracula" in block and "According to the memory" in block, block


def test_a_hand_edit_back_to_the_old_text_is_seen_by_the_same_process(tree):
    """The kept versions are read again when the note's file changes, not only when a version is
    kept: a hand edit back to the old fact (no version kept) makes the turn current again."""
    m, _ = tree
    written = m.write(NEW, title="Editor theme", category="preferences")
    assert "Dracula" not in m.autoload(PROMPT).markdown()
    path = m.root / written.path
    path.write_text(path.read_text(encoding="utf-8").replace(NEW, OLD), encoding="utf-8")
    m.sync()
    assert "According to the memory" in m.autoload(PROMPT).markdown()
