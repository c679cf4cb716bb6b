"""A sync in a long-lived process (the warm service) that skips work when nothing changed still
sees every change: hand edits reach INDEX.md, a killed write's temp copy is removed."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from memstrata import Memory


def _age(folder, seconds=3600):
    """Set a folder's mtime in the past (a folder a sweep may trust: not changed just now)."""
    then = time.time() - seconds
    os.utime(folder, (then, then))


def test_a_warm_sync_puts_hand_edits_into_index_md(tmp_path, embedder):
    root = tmp_path / "mem"
    m = Memory(root, embedder=embedder)
    m.init()
    m.write("The standup moved to 9:30 on Mondays.", title="Standup time", category="meetings")
    m.sync()
    index = root / "meetings" / "INDEX.md"
    before = index.read_text()
    m.sync()  # nothing changed: the same listing
    assert index.read_text() == before
    (root / "meetings" / "retro.md").write_text("---\ntitle: Sprint retro\n---\nWe keep the demo on Fridays.\n")
    m.sync()
    assert "Sprint retro" in index.read_text()
    (root / "meetings" / "retro.md").unlink()
    m.sync()
    assert "Sprint retro" not in index.read_text() and "Standup time" in index.read_text()
    index.write_text("edited by hand\n")  # an INDEX.md changed by hand is written again
    m.sync()
    assert "Standup time" in index.read_text()


def test_a_warm_sync_removes_temps_left_after_its_last_sweep(tmp_path, embedder):
    root = tmp_path / "mem"
    m = Memory(root, embedder=embedder)
    m.init()
    m.write("Rotate the backup disks every first Sunday.", title="Backups", category="ops")
    folder = root / "ops"
    _age(folder)
    m.sync()  # the sweep saw the folder without temps
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        temp = folder / f".backups.md.{writer.pid}.0badcafe.tmp"
        temp.write_text("in the middle of a write\n")
        _age(folder, 1800)
        m.sync()
        assert temp.exists()  # its writer is alive
    finally:
        writer.kill()
        writer.wait()
    m.sync()  # the folder's mtime did not move since, but it held a temp: looked at again
    assert not temp.exists()
    dead = folder / f".other.md.{writer.pid}.0badcafe.tmp"
    dead.write_text("half\n")
    _age(folder, 900)
    m.sync()
    assert not dead.exists()


def test_a_fresh_sync_after_an_unchanged_one_still_sees_hand_edits(tmp_path, embedder):
    # Each Memory is a new process's view: no watcher history, only the saved listing signature.
    root = tmp_path / "mem"
    Memory(root, embedder=embedder).init()
    Memory(root, embedder=embedder).write("The standup moved to 9:30.", title="Standup time", category="meetings")
    Memory(root, embedder=embedder).sync()
    Memory(root, embedder=embedder).sync()
    index = root / "meetings" / "INDEX.md"
    (root / "meetings" / "retro.md").write_text("---\ntitle: Sprint retro\n---\nWe keep the demo on Fridays.\n")
    Memory(root, embedder=embedder).sync()
    assert "Sprint retro" in index.read_text()
    (root / "meetings" / "retro.md").rename(root / "meetings" / "retro-42.md")  # same size and mtime
    Memory(root, embedder=embedder).sync()
    assert "retro-42.md" in index.read_text() and "(<retro.md>)" not in index.read_text()
    index.write_text("edited by hand\n")
    Memory(root, embedder=embedder).sync()
    assert "Standup time" in index.read_text() and "Sprint retro" in index.read_text()
    (root / "INDEX.md").unlink()
    Memory(root, embedder=embedder).sync()
    assert "meetings" in (root / "INDEX.md").read_text()
