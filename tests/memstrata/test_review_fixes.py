"""Defects a new user's review found: a docs site's `index.md` and an Obsidian note titled "Memory"
were silently left out of an adopted vault, a restored expired entry went back to the trash at the
next maintain, and `mem setup` put capture hooks on a vault where capture is off without a word."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Memory


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def test_notes_named_like_engine_or_agent_files_in_another_case_are_adopted(tmp_path, embedder):
    vault = tmp_path / "vault"
    notes = {
        "index.md": "The home page says kiwifruit is green.\n",
        "guide/Index.md": "The guide's index: mangoes are orange.\n",
        "Psychology/Memory.md": "Working memory holds about seven items.\n",
        "Psychology/Agents.md": "Agents are autonomous programs that act for a user.\n",
        "other.md": "Bananas are yellow.\n",
        "AGENTS.md": "Codex: run the tests before you commit.\n",  # an agent's instructions, as Codex spells them
    }
    for rel, text in notes.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text, encoding="utf-8")
    m = Memory(vault, embedder=embedder)
    result = m.init(adopt=True)
    assert result["adopted"] == 5
    assert any("AGENTS.md" in line for line in result["skipped"])
    assert (vault / "AGENTS.md").read_text(encoding="utf-8") == notes["AGENTS.md"]  # never given an id line
    assert "mem-id:" in (vault / "index.md").read_text(encoding="utf-8")
    hits = m.recall("what colour is kiwifruit?").results
    assert hits and hits[0].path == "index.md"
    hits = m.recall("how many items does working memory hold?").results
    assert hits and hits[0].path == "Psychology/Memory.md"


def mem(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "mem"), *args], capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}, timeout=300)


def test_a_restored_expired_entry_stays(tmp_path):
    root = str(tmp_path / "m")
    assert mem("init", "--root", root).returncode == 0
    wrote = mem("write", "Temporary door code ORCA-7", "--title", "Badge", "--category", "tmp",
                "--expires", "2026-12-10", "--root", root, "--json", env={"MEMSTRATA_NOW": "2026-12-05T09:00:00Z"})
    assert wrote.returncode == 0, wrote.stderr
    entry_id = json.loads(wrote.stdout)["id"]
    later = {"MEMSTRATA_NOW": "2026-12-20T00:00:00Z"}
    assert mem("maintain", "--root", root, env=later).returncode == 0
    assert mem("read", entry_id, "--root", root).returncode == 3  # expired: in the trash
    assert mem("restore", entry_id, "--root", root, env=later).returncode == 0
    assert mem("maintain", "--root", root, env={"MEMSTRATA_NOW": "2026-12-20T00:00:02Z"}).returncode == 0
    assert "ORCA-7" in mem("read", entry_id, "--root", root).stdout


def test_setup_on_a_vault_without_capture_says_capture_is_off(tmp_path, embedder):
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "a.md").write_text("Kiwis are birds.\n", encoding="utf-8")
    Memory(vault, embedder=embedder).init(adopt=True)
    home = tmp_path / "home"
    home.mkdir()
    done = mem("setup", "claude", "--dry-run", "--root", str(vault), "--json", env={"HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert "capture no session" in done.stdout and "capture_in_vault" in done.stdout
