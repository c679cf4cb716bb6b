"""A save an editor makes between the engine's last check and its rename is put back, never lost
(storage/replace_guard.py): written into the file the rename takes out, or renamed over the note."""
import os

import pytest

from memstrata.storage import replace_guard
from memstrata.storage.atomic import ChangedMeanwhile, atomic_write_bytes, one_sync

OLD, OURS, EDITOR = b"old text\n", b"the engine's text\n", b"old text\nSaved 1 by the editor.\n"


def _in_place_save(path):
    """An editor that truncates and writes the file it opened (the same inode)."""
    def check():
        with open(path, "r+b") as f:
            f.truncate(0)
            f.write(EDITOR)
        return True  # the check itself had passed: the save lands right after it
    return check


def _rename_save(path):
    """An editor that writes a temp file and renames it over the note."""
    def check():
        temp = path.parent / ".editor.swp"
        temp.write_bytes(EDITOR)
        os.replace(temp, path)
        return True
    return check


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name != "note.md")


@pytest.fixture(params=["exchange", "plain rename"])
def system(request, monkeypatch):
    if request.param == "plain rename":  # a system without renameat2 (macOS, an old kernel)
        monkeypatch.setattr(replace_guard._renameat2, "fn", None, raising=False)
    return request.param


@pytest.mark.parametrize("editor", [_in_place_save, _rename_save])
def test_a_save_in_the_window_is_kept_and_ours_is_refused(tmp_path, system, editor):
    if system == "plain rename" and editor is _rename_save:
        pytest.skip("a rename over the note in the window cannot be seen without an exchange")
    note = tmp_path / "note.md"
    note.write_bytes(OLD)
    with pytest.raises(ChangedMeanwhile):
        atomic_write_bytes(note, OURS, unchanged=editor(note))
    assert note.read_bytes() == EDITOR
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("editor", [_in_place_save, _rename_save])
def test_in_a_batch_the_caught_file_is_named_and_the_others_written(tmp_path, editor):
    note, other = tmp_path / "note.md", tmp_path / "other.md"
    note.write_bytes(OLD)
    other.write_bytes(OLD)
    with pytest.raises(ChangedMeanwhile) as caught:
        with one_sync():
            atomic_write_bytes(note, OURS, unchanged=editor(note))
            atomic_write_bytes(other, OURS, unchanged=lambda: True)
    assert caught.value.paths == [str(note)]
    assert note.read_bytes() == EDITOR and other.read_bytes() == OURS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["note.md", "other.md"]


def test_a_quiet_file_is_replaced_and_nothing_is_left_beside_it(tmp_path, system):
    note = tmp_path / "note.md"
    note.write_bytes(OLD)
    os.chmod(note, 0o644)
    atomic_write_bytes(note, OURS, unchanged=lambda: note.read_bytes() == OLD)
    assert note.read_bytes() == OURS
    assert _leftovers(tmp_path) == []


def test_a_save_after_ours_stays_and_the_caught_one_is_kept_beside_it(tmp_path):
    note = tmp_path / "note.md"
    note.write_bytes(OLD)
    temp = tmp_path / ".ours.tmp"
    temp.write_bytes(OURS)
    done = replace_guard.replace_checked(temp, note, _in_place_save(note))
    later = b"a later save\n"
    (tmp_path / ".later.swp").write_bytes(later)
    os.replace(tmp_path / ".later.swp", note)  # saved again before the engine settled
    assert replace_guard.settle(done) is False
    assert note.read_bytes() == later
    caught = [p for p in tmp_path.iterdir() if p.name.endswith(".caught")]
    assert [p.read_bytes() for p in caught] == [EDITOR]
