"""A property of adopted vaults (issue 25): for random vault trees and random sequences of engine
commands and hand edits (rename, delete, edit), every byte outside the engine's lines and its
`.memstrata/` folder is as the user left it, and `mem doctor` is clean after `mem sync`."""
import os
import re
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory

_ENGINE_LINE = re.compile(r"^(mem-id|title|updated|tier|last_access|access_count|weight|version|history):")

folders = st.sampled_from(["Notes", "Notes/deep", "Daily", "Work"])
words = st.sampled_from(["widgets", "garden", "boiler", "Lisbon", "budget", "tram", "hiking", "review"])
fronts = st.sampled_from(["", "---\nid: 202301011200\n---\n", "---\ntags: [a]\naliases: [x]\n---\n",
                          "---\r\nuid: u-1\r\n---\r\n\r\n", "\ufeff"])
notes = st.lists(st.tuples(folders, st.integers(0, 99), fronts, st.lists(words, min_size=1, max_size=6)),
                 min_size=1, max_size=5, unique_by=lambda n: (n[0], n[1]))
ops = st.lists(st.tuples(st.sampled_from(["write", "delete", "hand_rename", "hand_delete", "hand_edit", "read",
                                          "list", "sync"]), st.integers(0, 99), words),
               max_size=5)


def _user_lines(text: str) -> tuple[list[str], str]:
    """The user's frontmatter lines (the engine's own keys left out) and the body of a note."""
    bare = text.lstrip("\ufeff")
    if not bare.startswith("---"):
        return [], text
    block, sep, body = bare[3:].partition("\n---")
    lines = [line for line in block.replace("\r", "").split("\n") if line and not _ENGINE_LINE.match(line)]
    if re.fullmatch(r"\n*", block.replace("\r", "")) or lines == []:
        # only the engine's block: the note had none of its own
        body = body.split("\n", 1)[1] if "\n" in body else ""
        return [], body[1:] if body.startswith("\n") else body
    return lines, body


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(vault=notes, steps=ops)
def test_a_vault_stays_the_users_whatever_happens(vault, steps, embedder, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:00:00Z")
    root = Path(tempfile.mkdtemp(prefix="vault-"))
    try:
        (root / ".obsidian").mkdir()
        (root / ".obsidian" / "app.json").write_bytes(b"{}")
        (root / ".trash").mkdir()
        (root / ".trash" / "old.md").write_bytes(b"---\nid: 1\n---\nObsidian's trash.\n")
        expected: dict[str, str] = {}  # the user's notes: path -> text as the user wrote it
        for folder, n, front, body in vault:
            rel = f"{folder}/note-{n}.md"
            text = front + " ".join(body) + "\n"
            (root / folder).mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8", newline="")
            expected[rel] = text
        m = Memory(root, embedder=embedder)
        m.init(adopt=True)
        for kind, n, word in steps:
            paths = sorted(expected)
            pick = paths[n % len(paths)] if paths else None
            if kind == "write":
                m.write(f"Engine note about {word} number {n}", category="Engine")
            elif kind == "delete" and pick:
                m.delete(pick)
                del expected[pick]
            elif kind == "hand_rename" and pick:
                target = f"{pick[:-3]}-moved.md"
                if not os.path.exists(root / target):
                    os.rename(root / pick, root / target)
                    expected[target] = expected.pop(pick)
            elif kind == "hand_delete" and pick:
                (root / pick).unlink()
                del expected[pick]
            elif kind == "hand_edit" and pick:
                with open(root / pick, "a", encoding="utf-8", newline="") as handle:
                    handle.write(f"Added by hand: {word}.\n")
                expected[pick] += f"Added by hand: {word}.\n"
            elif kind == "read" and pick:
                m.read(pick)
                m.recall(word)
            elif kind == "list":
                m.list()
                m.stats()
            elif kind == "sync":
                m.sync()
        m.sync()
        report = m.doctor()
        assert report.healthy, [f.to_dict() for f in report.findings]
        assert (root / ".trash" / "old.md").read_bytes() == b"---\nid: 1\n---\nObsidian's trash.\n"
        assert (root / ".obsidian" / "app.json").read_bytes() == b"{}"
        assert not (root / "config.md").exists() and not (root / ".gitignore").exists()
        for rel, text in expected.items():
            have = (root / rel).read_bytes().decode("utf-8")
            assert "mem-id: " in have, rel
            assert _user_lines(have) == _user_lines(text), rel
        listed = {e.path for e in m.list()}
        assert set(expected) <= listed
    finally:
        shutil.rmtree(root, ignore_errors=True)
