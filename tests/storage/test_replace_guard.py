"""A save an editor makes between the engine's last check and its rename is put back, never lost
(storage/replace_guard.py): written into the file the rename takes out, or renamed over the note."""
import os
import re
import subprocess
import sys
import time

import pytest

from memstrata.storage import atomic, libc, replace_guard
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
        monkeypatch.setitem(libc._found, "renameat2", None)
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
    kept = [p for p in tmp_path.iterdir() if replace_guard.is_kept_file(p.name)]
    assert [p.read_bytes() for p in kept] == [EDITOR]


def test_a_save_into_ours_before_it_is_settled_is_kept(tmp_path, monkeypatch):
    """An editor saves in the window, then saves again in place into ours before the engine settles:
    that later save stays the note (ours is not exchanged back out with it), the first is kept beside."""
    note = tmp_path / "note.md"
    note.write_bytes(OLD)
    again = b"the engine's text\nSaved 2 by the editor.\n"
    real_sync = atomic.fsync_dir

    def editor_saves_into_ours(folder):
        with open(note, "r+b") as f:
            f.truncate(0)
            f.write(again)
        real_sync(folder)

    monkeypatch.setattr(atomic, "fsync_dir", editor_saves_into_ours)
    with pytest.raises(ChangedMeanwhile):
        atomic_write_bytes(note, OURS, unchanged=_in_place_save(note))
    assert note.read_bytes() == again
    assert [p.read_bytes() for p in tmp_path.iterdir() if replace_guard.is_kept_file(p.name)] == [EDITOR]


SLOW_EDITOR = """
import os, sys, time
path, text, first = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
with open(path, "r+b") as f:
    if first == "truncate":
        f.truncate(0)
        f.flush()
    open(path + ".opened", "w").close()
    time.sleep(0.4 if first == "truncate" else 0.03)  # an editor writes within HOLDER_WAIT of opening
    f.truncate(0)
    f.write(text)
"""


@pytest.mark.parametrize("first", ["truncate", "nothing"])
def test_an_editor_half_way_through_its_save_is_waited_for(tmp_path, system, first):
    """The editor opened the note (and truncated it, or not yet) and writes only later: its file goes back
    whole (exchanged back; or, without an exchange, copied once nobody writes it), never empty, never
    written into a file no name leads to."""
    note = tmp_path / "note.md"
    note.write_bytes(OLD)
    editor = []

    def check():
        editor.append(subprocess.Popen([sys.executable, "-c", SLOW_EDITOR, str(note), EDITOR.decode(), first]))
        while not os.path.exists(str(note) + ".opened"):
            time.sleep(0.002)
        os.unlink(str(note) + ".opened")
        return True

    with pytest.raises(ChangedMeanwhile):
        atomic_write_bytes(note, OURS, unchanged=check)
    assert editor[0].wait(timeout=30) == 0
    assert note.read_bytes() == EDITOR
    assert _leftovers(tmp_path) == []


def test_a_batch_of_thousands_settles_within_a_small_descriptor_limit(tmp_path):
    script = r"""
import resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_NOFILE, (100, 100))
from memstrata.storage.atomic import atomic_write_bytes, one_sync
folder = Path(sys.argv[1])
notes = [folder / f"n{i}.md" for i in range(1500)]
for n in notes:
    n.write_bytes(b"old\n")
with one_sync():
    for n in notes:
        atomic_write_bytes(n, b"new\n", unchanged=lambda n=n: n.read_bytes() == b"old\n")
print(sum(n.read_bytes() == b"new\n" for n in notes))
"""
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "1500"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".md")) == []


KILLED_WRITER = r"""
import os, signal, sys
from memstrata import Memory
from memstrata.storage import atomic
m = Memory(sys.argv[1])
real = atomic.fsync_dir
def die_after_the_exchange(folder):  # killed between the exchange and its settle
    if any(name.endswith(".kept") for name in os.listdir(folder)):
        os.kill(os.getpid(), signal.SIGKILL)
    real(folder)
atomic.fsync_dir = die_after_the_exchange
m.update(sys.argv[2], "The pump was checked again.\n")
"""


def test_a_writer_killed_before_it_settled_leaves_a_kept_file_the_doctor_sorts(tmp_path, embedder, monkeypatch):
    """A kill between the exchange and its settle leaves the note's previous file as `.kept`: the doctor
    removes it when the tree holds its text (here the version the update kept); one holding a text found
    nowhere else (an editor's save) it names and leaves, and no sync removes it."""
    from memstrata import Memory

    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    m = Memory(tmp_path / "t", embedder=embedder)
    m.init()
    entry = m.write("The water pump in the basement was replaced in March.\n", title="Water pump", category="house")
    note = m.root / entry.path
    env = {**os.environ, "MEMSTRATA_SERVICE": "off"}
    done = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(m.root), entry.id], env=env, timeout=300,
                          capture_output=True, text=True)
    assert done.returncode == -9, done.stderr[-2000:]
    kept = [p for p in note.parent.iterdir() if replace_guard.is_kept_file(p.name)]
    assert len(kept) == 1 and "replaced in March" in kept[0].read_text()
    assert m.resolve(entry.id).body.strip() == "The pump was checked again."
    found = [f for f in m.doctor(fix=True).findings if f.kind == "kept_file"]
    assert [f.path for f in found] == [f"house/{kept[0].name}"] and found[0].fixed and not kept[0].exists()

    caught = note.parent / replace_guard.sibling_name(note.name, replace_guard.KEPT_SUFFIX)
    caught.write_text(note.read_text() + "Saved 1 by the editor.\n")  # a save found nowhere else
    found = [f for f in m.doctor(fix=True).findings if f.kind == "kept_file"]
    assert [f.path for f in found] == [f"house/{caught.name}"] and not found[0].fixable and not found[0].fixed
    m.sync()
    assert caught.exists()
    caught.unlink()

    # a maintain killed half-way leaves the note as it was before its tier and weight changed: a copy
    # (an attacker's review: twelve such files, each one "needs you")
    text = note.read_text()
    assert "\ntier: " in text and "\nweight: " in text
    before = re.sub(r"(?m)^weight: .*$", "weight: 0.01", re.sub(r"(?m)^tier: .*$", "tier: cold", text))
    assert before != text and "tier: cold" in before
    engine = note.parent / replace_guard.sibling_name(note.name, replace_guard.KEPT_SUFFIX)
    engine.write_text(before)
    edited = note.parent / replace_guard.sibling_name(note.name, replace_guard.KEPT_SUFFIX)
    edited.write_text(before.replace("checked again", "checked again by Ana"))  # and a word of the user's
    found = {f.path: f for f in m.doctor(fix=True).findings if f.kind == "kept_file"}
    assert found[f"house/{engine.name}"].fixed and not engine.exists()
    assert not found[f"house/{edited.name}"].fixable and edited.exists()


LEASE_LOOP = r"""
import os, sys, time
from memstrata.storage import replace_guard
fd = os.open(sys.argv[1], os.O_RDONLY)
end = time.monotonic() + 3
while time.monotonic() < end:
    replace_guard._open_for_writing(fd)
print("alive")
"""
OPENER = r"""
import os, sys, time
end = time.monotonic() + 3
while time.monotonic() < end:
    os.close(os.open(sys.argv[1], os.O_WRONLY))
"""


def test_asking_for_writers_while_another_process_opens_the_file_never_ends_the_engine(tmp_path):
    """The lease that asks is broken by an open for writing; the kernel's notice (SIGIO by default)
    ended the process: it is asked for as SIGURG, which is ignored."""
    note = tmp_path / "note.md"
    note.write_bytes(OLD)
    opener = subprocess.Popen([sys.executable, "-c", OPENER, str(note)])
    asker = subprocess.run([sys.executable, "-c", LEASE_LOOP, str(note)], capture_output=True, text=True, timeout=120)
    opener.wait(timeout=60)
    assert asker.returncode == 0 and asker.stdout.strip() == "alive", (asker.returncode, asker.stderr[-500:])


def test_an_idle_writer_holding_the_note_open_does_not_stop_writes(tmp_path):
    """A process that keeps the note open for writing and writes nothing (a shell's `exec 3>>note`) is
    given a moment, then the write goes on: it is no editor's save under way."""
    note = tmp_path / "note.md"
    note.write_bytes(OLD)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1], 'ab'); "
                               "print('open', flush=True); time.sleep(60)", str(note)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"open"
        for n in range(3):
            atomic_write_bytes(note, OURS + bytes([48 + n]), unchanged=lambda: True)
        assert note.read_bytes() == OURS + b"2" and _leftovers(tmp_path) == []
    finally:
        holder.kill()
        holder.wait()


def test_the_doctor_sees_a_kept_file_at_the_top_of_an_adopted_vault(tmp_path, embedder, monkeypatch):
    """A vault's own top-level dot-files are the user's and left unread, but a `.kept` file is ours."""
    from memstrata import Memory

    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "ideas.md").write_text("# Ideas\n\nA garden shed with a green roof.\n")
    (vault / ".obsidian-note").write_text("the user's own dot-file\n")
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    caught = vault / replace_guard.sibling_name("ideas.md", replace_guard.KEPT_SUFFIX)
    caught.write_text("# Ideas\n\nA garden shed with a green roof.\nSaved 1 by the editor.\n")
    found = [f for f in m.doctor().findings if f.kind == "kept_file"]
    assert [f.path for f in found] == [caught.name] and "ideas.md" in found[0].detail
    caught.unlink()
    # a property named like an engine key is the user's in a vault: an edit of it is no copy to remove
    (vault / "scale.md").write_text("---\nweight: 72\n---\n\nMorning weigh-in.\n")
    edited = vault / replace_guard.sibling_name("scale.md", replace_guard.KEPT_SUFFIX)
    edited.write_text("---\nweight: 73\n---\n\nMorning weigh-in.\n")
    found = [f for f in m.doctor(fix=True).findings if f.kind == "kept_file"]
    assert [f.path for f in found] == [edited.name] and not found[0].fixable and edited.exists()


def test_every_signal_caught_in_a_write_is_delivered_after_it(tmp_path):
    """Signals that arrive while a replace settles wait for it, then each is delivered once."""
    import signal

    got = []
    saved = {sig: signal.signal(sig, lambda signum, frame: got.append(signum)) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        note = tmp_path / "note.md"
        note.write_bytes(OLD)

        def check():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGHUP)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            assert got == []  # not yet: the replace is under way
            return True

        atomic_write_bytes(note, OURS, unchanged=check)
        assert sorted(got) == sorted([signal.SIGTERM, signal.SIGHUP]) and note.read_bytes() == OURS
        assert all(signal.getsignal(s) is not None and getattr(signal.getsignal(s), "__name__", "") == "<lambda>"
                   for s in saved)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


ASYNC_LOOP = r"""
import asyncio, os, signal, sys
from memstrata.storage.atomic import atomic_write_bytes
calls = []
async def main():
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, lambda: calls.append(1))
    note = sys.argv[1]
    open(note, "wb").write(b"old")
    atomic_write_bytes(note, b"new", unchanged=lambda: os.kill(os.getpid(), signal.SIGTERM) or True)
    await asyncio.sleep(0.3)
asyncio.run(main())
print(len(calls))
"""


def test_an_event_loops_signal_handler_is_called_once(tmp_path):
    done = subprocess.run([sys.executable, "-c", ASYNC_LOOP, str(tmp_path / "note.md")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "1", (done.stdout, done.stderr[-500:])
