"""An adopted vault's file modes are the user's: a note keeps its mode through every engine write
(delete then restore, a team pull or merge), a file the engine brings in gets the mode the user's
umask gives, as git itself would; only `.memstrata/` stays private (real CLI, real git)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Memory

PY = sys.executable


@pytest.fixture(autouse=True)
def _clock(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:00:00Z")
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


@pytest.fixture
def umask022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def mem(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, MEMSTRATA_SERVICE="off")
    return subprocess.run([str(Path(PY).parent / "mem"), *args, "--root", str(root)], env=env,
                          capture_output=True, text=True, timeout=300)


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_delete_then_restore_brings_a_note_back_with_its_mode(tmp_path, embedder, umask022):
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    for name, perm in (("open.md", 0o644), ("private.md", 0o600), ("group.md", 0o640)):
        (vault / "Notes" / name).write_text(f"A note called {name}.\n")
        os.chmod(vault / "Notes" / name, perm)
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    for name, perm in (("open.md", 0o644), ("private.md", 0o600), ("group.md", 0o640)):
        note = vault / "Notes" / name
        before = note.read_bytes()
        entry_id = next(e.id for e in m.list() if e.path == f"Notes/{name}")
        for args in (("delete", entry_id), ("restore", entry_id)):
            run = mem(vault, *args)
            assert run.returncode == 0, run.stderr
        assert note.read_bytes() == before
        assert mode(note) == perm, (name, oct(mode(note)))
    assert mode(vault / ".memstrata") == 0o700 and mode(vault / ".memstrata/trash") == 0o700
