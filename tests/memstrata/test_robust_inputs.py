"""Defects an attacker found: a note the system will not let the engine write, oversized and
undecodable queries, output encodings, --queries as one document, hostile category names."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Memory

MEM = str(Path(sys.executable).with_name("mem"))


def _chattr(flag: str, *paths) -> bool:
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True).returncode == 0


def test_an_immutable_note_or_folder_is_skipped_with_its_reason_and_the_rest_adopted(tmp_path, embedder):
    vault = tmp_path / "vault"
    (vault / "ok").mkdir(parents=True)
    (vault / "frozen").mkdir()
    (vault / "imm.md").write_text("# imm\nimmutable note\n")
    (vault / "ok" / "y.md").write_text("# y\nyes\n")
    (vault / "frozen" / "z.md").write_text("# z\nin a frozen folder\n")
    if not _chattr("+i", vault / "imm.md", vault / "frozen"):
        pytest.skip("chattr +i needs root on a file system that has it")
    try:
        out = Memory(vault, embedder=embedder).init(adopt=True)
        assert out["adopted"] == 1
        assert "not adopted: imm.md (cannot write: Operation not permitted)" in out["skipped"]
        assert "not adopted: frozen/z.md (cannot write: Operation not permitted)" in out["skipped"]
        assert len(out["skipped"]) == 2
        assert "mem-id:" in (vault / "ok" / "y.md").read_text()
        assert not [p for p in os.listdir(vault) if p.endswith(".tmp")]
    finally:
        _chattr("-i", vault / "imm.md", vault / "frozen")
