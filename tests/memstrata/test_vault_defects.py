"""Adopted vaults keep the user's files whole: a frontmatter style the engine cannot add a line to
is left as it was, a folder is a tree only by a real engine config, a note edited while the engine
gives it its id loses nothing, long names, killed writes and modes (defects found by an attacker)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memstrata import Memory
from memstrata.storage import codec

PY = sys.executable


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:00:00Z")
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def mem(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, MEMSTRATA_SERVICE="off")
    return subprocess.run([str(Path(PY).parent / "mem"), *args, "--root", str(root)], env=env,
                          capture_output=True, text=True, timeout=300)


def test_adopt_keeps_flow_and_indented_frontmatter_valid(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    notes = {
        "Notes/flow.md": "---\n{title: Flow style, tags: [a, b]}\n---\nbody\n",
        "Notes/indented.md": "---\n  title: Indented\n  tags: [a]\n---\nbody\n",
        "Notes/plain.md": "---\ntitle: Plain\n---\nbody\n",
    }
    for rel, text in notes.items():
        (vault / rel).write_text(text)
    result = Memory(vault, embedder=embedder).init(adopt=True)
    for rel, text in notes.items():
        after = (vault / rel).read_text()
        data, body = codec.split_frontmatter(after)  # never unparseable
        before, old_body = codec.split_frontmatter(text)
        assert body == old_body, rel
        assert {k: v for k, v in data.items() if k != "mem-id"} == before, rel
        assert data.get("mem-id"), rel
    assert result["entries"] == 3
    assert not any("cannot add a line" in s for s in result["skipped"])


def test_a_style_no_line_fits_is_skipped_with_a_warning_and_left_as_it_was(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    tagged = "---\n!!map\ntitle: Tagged\n---\nbody\n"  # valid; a line above the tag would break it
    (vault / "Notes/tagged.md").write_text(tagged)
    result = Memory(vault, embedder=embedder).init(adopt=True)
    assert (vault / "Notes/tagged.md").read_text() == tagged
    assert any("Notes/tagged.md" in s and "cannot add a line" in s for s in result["skipped"])
    fixed = mem(vault, "doctor", "--fix")
    assert (vault / "Notes/tagged.md").read_text() == tagged, fixed.stdout  # never quarantined
