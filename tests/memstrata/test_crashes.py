"""Writers killed with SIGKILL at random moments, many times: nothing acknowledged is lost.

The main test runs bench/safety.py's crash rounds at CI size (MEMSTRATA_SAFETY_SCALE=N
multiplies it; `python bench/safety.py` runs 100 kills): writer processes that write,
update, delete, compress (maintain) and promote are killed at random times, so kills land
during file writes, between a file and its index rows, during INDEX.md rewrites and
during compression and promotion. Then: every acknowledged write is there with a body it
was given, acknowledged deletes are in the trash, no temp file counts as an entry,
`doctor(fix=True)` brings the catalog, INDEX.md and the vector table back in line, and
the next writer gets the lock at once.

The smaller tests aim at one moment each, without hooks in the engine.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from memstrata import Memory
from memstrata.storage import codec
from memstrata.storage.catalog import read_entry_file
from memstrata.storage.entry import Entry
from memstrata.storage.lock import TreeLock

from .test_concurrency import SCALE, load_harness


def _env():
    return {**os.environ, "HF_HUB_OFFLINE": "1", "MEMSTRATA_SERVICE": "off"}


def test_random_sigkills_lose_nothing(tmp_path, embedder):
    safety = load_harness()
    kills = max(2, int(6 * SCALE))
    result = safety.crashes(tmp_path / "mem", kills=kills, writers_per_round=2, min_delay=1.0, max_delay=5.0,
                            embedder=embedder)
    assert result["failures"] == []
    assert result["kills"] >= kills
    assert result["entries_lost"] == 0
    assert result["acknowledged_writes"] >= result["rounds"]  # each round wrote before it was killed
    assert result["next_lock_seconds"] < 1.0


HOLDER = textwrap.dedent("""
    import sys, time
    from memstrata.storage.lock import TreeLock
    with TreeLock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(600)
""")


def test_lock_of_a_killed_holder_does_not_block(tmp_path):
    root = tmp_path / "mem"
    Memory(root).init()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(root)], stdout=subprocess.PIPE, text=True,
                              env=_env())
    assert holder.stdout.readline().strip() == "held"
    from memstrata.errors import Locked

    with pytest.raises(Locked):
        with TreeLock(root, timeout=0.3):
            pass
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    started = time.monotonic()
    with TreeLock(root, timeout=5):
        pass
    assert time.monotonic() - started < 1.0
    assert (root / ".lock").exists()  # the file stays; it is harmless


REWRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from memstrata.storage.atomic import atomic_write_text
    path, a, b = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    print("go", flush=True)
    n = 0
    while True:
        atomic_write_text(path, Path(a if n % 2 else b).read_text())
        n += 1
""")


def test_kill_during_file_writes_leaves_old_or_new_file(tmp_path, embedder):
    """A file being rewritten over and over, killed at random: always one whole version, temp files aside."""
    root = tmp_path / "mem"
    Memory(root).init()
    (root / "c").mkdir(mode=0o700)
    texts = []
    for n, size in enumerate((300, 200_000)):
        entry = Entry(id=f"e{n}", title=f"version {n}", body=("x" * 79 + "\n") * (size // 80), category="c",
                      path="c/e.md")
        (tmp_path / f"v{n}.md").write_text(codec.render(entry))
        texts.append(codec.render(entry))
    (root / "c" / "e.md").write_text(texts[0])
    rng = random.Random(3)
    for _ in range(int(12 * SCALE)):
        proc = subprocess.Popen([sys.executable, "-c", REWRITER, str(root / "c" / "e.md"), str(tmp_path / "v0.md"),
                                 str(tmp_path / "v1.md")], stdout=subprocess.PIPE, text=True, env=_env())
        proc.stdout.readline()
        time.sleep(rng.uniform(0.01, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert (root / "c" / "e.md").read_text() in texts
        assert read_entry_file(root, "c/e.md").title in ("version 0", "version 1")
    m = Memory(root, embedder=embedder)
    assert [e.path for e in m.list()] == ["c/e.md"]  # leftover temp files are never entries
    report = m.doctor(fix=True)
    assert all(f.kind != "unparseable" for f in report.findings)
    assert not list((root / "c").glob(".*.tmp"))  # their writers are dead: removed
    assert m.doctor().healthy


def test_file_written_but_index_not_yet(tmp_path, embedder):
    """The state a kill between the file and its index leaves: doctor --fix brings it in line."""
    root = tmp_path / "mem"
    m = Memory(root, embedder=embedder)
    m.init()
    first = m.write("The deploy runs on Fridays after the freeze.", title="Deploy day", category="ops")
    assert m.doctor().healthy
    orphan = Entry(id="abcdef123456", title="Written then killed", body="Backups rotate weekly on the NAS.",
                   category="ops", path="ops/written-then-killed.md")
    from memstrata.storage.atomic import atomic_write_text

    atomic_write_text(root / orphan.path, codec.render(orphan))  # the file, nothing else
    report = m.doctor()
    kinds = {f.kind for f in report.findings}
    assert {"index_md", "vectors_rows"} <= kinds and not report.healthy
    fixed = Memory(root, embedder=embedder).doctor(fix=True)
    assert fixed.healthy and all(f.fixed for f in fixed.findings), fixed.findings
    again = Memory(root, embedder=embedder)
    assert again.doctor().healthy
    assert {e.id for e in again.list()} == {first.id, orphan.id}
    assert orphan.id in (root / "ops" / "INDEX.md").read_text()
