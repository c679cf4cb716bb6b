"""SIGTERM and SIGHUP stop a command as Ctrl-C does (exit 130): a batch of writes settles, so a `mem sync`
stopped by `timeout`, an agent's harness or a closed terminal leaves no `.kept` file beside the notes
(storage/replace_guard.py); killed outright it left 8-32 of 1,500."""
import os
import signal
import subprocess
import sys
import time

import pytest


@pytest.mark.parametrize("which", [signal.SIGTERM, signal.SIGHUP])
def test_a_sync_stopped_by_a_signal_settles_its_writes(tmp_path, which):
    root = tmp_path / "mem"
    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "MEMSTRATA_HOME": str(root)}
    mem = [sys.executable, "-m", "memstrata.cli.app"]
    assert subprocess.run(mem + ["init"], env=env, capture_output=True, timeout=300).returncode == 0
    notes = root / "notes"
    notes.mkdir()
    for i in range(1500):  # hand-made notes: the sync gives each its id, in batches of atomic writes
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nThe pump number {i} was checked on a Monday.\n")
    sync = subprocess.Popen(mem + ["sync"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and sync.poll() is None:
        if any("mem-id:" in p.read_text() or "\nid:" in p.read_text() for p in list(notes.glob("n*.md"))[:200]):
            break  # ids are being given: a batch is being written
        time.sleep(0.01)
    sync.send_signal(which)
    assert sync.wait(timeout=300) in (0, 130)
    assert [p.name for p in root.rglob("*.kept")] == []
    assert all(p.read_text().count("The pump number") == 1 for p in notes.glob("n*.md"))
