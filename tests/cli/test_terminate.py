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
    assert [p.name for p in notes.iterdir() if not p.name.endswith(".md")] == []  # no temp file of a part not begun
    assert all(p.read_text().count("The pump number") == 1 for p in notes.glob("n*.md"))


def test_an_ignored_hangup_stays_ignored(tmp_path):
    """`nohup mem ...`: a SIGHUP the caller ignores is no stop."""
    root = tmp_path / "mem"
    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "MEMSTRATA_HOME": str(root)}
    mem = [sys.executable, "-m", "memstrata.cli.app"]
    assert subprocess.run(mem + ["init"], env=env, capture_output=True, timeout=300).returncode == 0
    for i in range(300):
        (root / f"n{i}.md").write_text(f"# Note {i}\n\nThe pump number {i} was checked.\n")
    sync = subprocess.Popen(mem + ["sync"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    time.sleep(1.0)
    sync.send_signal(signal.SIGHUP)
    assert sync.wait(timeout=300) == 0, sync.stderr.read()[-500:]


def test_the_mcp_server_still_ends_on_sigterm_with_its_input_open(tmp_path):
    """A supervisor's SIGTERM ends `mem mcp` (stdio) though it never closes the server's stdin."""
    root = tmp_path / "mem"
    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "MEMSTRATA_HOME": str(root)}
    mem = [sys.executable, "-m", "memstrata.cli.app"]
    assert subprocess.run(mem + ["init"], env=env, capture_output=True, timeout=300).returncode == 0
    server = subprocess.Popen(mem + ["mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    try:
        time.sleep(3)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) != 0
    finally:
        server.kill()
        server.wait()
