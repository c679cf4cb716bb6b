"""A merge never resolves a path by its content alone when the ids differ: base, ours and theirs of a path
are one entry only when they carry one id, else they are different entries and both are kept. A
teammate's edit was lost when a rename reused its path (its only copy an orphan version the doctor
quarantined and the next sync deleted). Real git remotes, `mem init --clone`, `mem sync --remote`
processes, renames by `mv` (issue 39, item 1)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from team_scenario import MARKERS, mem  # noqa: E402


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def vault_pair(tmp_path: Path, notes: dict) -> tuple[Path, Path, dict]:
    """Vault A (its notes in git, adopted, pushed to a bare remote) and clone B; the ids by path."""
    bare, a = tmp_path / "r.git", tmp_path / "a"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    for rel, text in notes.items():
        (a / rel).parent.mkdir(parents=True, exist_ok=True)
        (a / rel).write_text(text)
    git(a, "init", "-q")
    git(a, "add", "-A")
    git(a, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "-m", "the user's vault")
    git(a, "remote", "add", "origin", str(bare))
    mem("init", "--adopt", "--root", str(a), machine="laptop")
    git(a, "config", "memstrata.machine", "laptop")
    assert mem("sync", "--remote", "--root", str(a), machine="laptop")["pushed"]
    b = tmp_path / "b"
    mem("init", "--clone", str(bare), "--machine", "desktop", "--root", str(b), machine="desktop")
    ids = {e["path"]: e["id"] for e in mem("list", "--root", str(a), machine="laptop")["entries"]}
    return a, b, ids


def sync(root: Path, machine: str) -> dict:
    return mem("sync", "--remote", "--root", str(root), machine=machine)


def nothing_lost(root: Path, machine: str, wanted: dict) -> None:
    """Each id of `wanted` (id -> words its body holds) is an entry of the tree with those words; no kept
    version is an orphan; nothing quarantined; the doctor is clean; no conflict markers."""
    for entry_id, words in wanted.items():
        body = mem("read", entry_id, "--root", str(root), machine=machine)["body"]
        assert words in body, (root, entry_id, body)
    live = {e["id"] for e in mem("list", "--root", str(root), machine=machine)["entries"]}
    trashed = {i["id"] for i in mem("trash", "list", "--root", str(root), machine=machine)["entries"]}
    for folder in (root / ".memstrata/versions", root / ".versions"):
        if folder.is_dir():
            orphans = {p.name for p in folder.iterdir()} - live - trashed
            assert not orphans, (root, orphans)
    doctor = mem("doctor", "--root", str(root), machine=machine)
    # two entries of one category titled alike (a teammate's edit kept beside a new entry at its path) is
    # the doctor's `shared_title` notice (docs/versions.md), no damage
    assert [f for f in doctor["findings"] if f["kind"] != "shared_title"] == [], doctor["findings"]
    for rel in git(root, "ls-files").split("\n"):
        if rel.endswith(".md"):
            assert not MARKERS.search((root / rel).read_text()), rel
    assert not (root / ".memstrata/quarantine").exists() and not (root / ".quarantine").exists()


NOTES = {"notes/a.md": "Alpha: the boiler is serviced in October.\n",
         "notes/b.md": "Bravo: the gutters are cleaned in November.\n",
         "notes/d.md": "Delta: the chimney is swept in March.\n"}


@pytest.mark.parametrize("first", ["editor", "renamer"])
@pytest.mark.parametrize("move", ["b_onto_a", "swap"])
def test_a_rename_onto_an_edited_path_keeps_both_entries(tmp_path, embedder, first, move):
    a, b, ids = vault_pair(tmp_path, NOTES)
    alpha, bravo = ids["notes/a.md"], ids["notes/b.md"]
    with open(a / "notes/a.md", "a") as f:  # laptop appends to a.md
        f.write("Alpha: also the radiators are bled.\n")
    if move == "swap":  # desktop: a -> c, b -> a
        os.replace(b / "notes/a.md", b / "notes/c.md")
    os.replace(b / "notes/b.md", b / "notes/a.md")  # desktop reuses a.md's path for b
    order = [(a, "laptop"), (b, "desktop"), (a, "laptop")] if first == "editor" else \
        [(b, "desktop"), (a, "laptop"), (b, "desktop")]
    for root, machine in order:
        sync(root, machine)
    for root, machine in ((a, "laptop"), (b, "desktop")):
        nothing_lost(root, machine, {alpha: "radiators are bled", bravo: "gutters"})
        assert git(root, "status", "--porcelain") == ""
    if move == "swap":  # laptop's edit went with the entry to where desktop moved it
        assert "radiators" in (b / "notes/c.md").read_text() and "gutters" in (b / "notes/a.md").read_text()


def test_a_pulled_rename_onto_an_untouched_entry_puts_it_into_this_machines_trash(tmp_path, embedder):
    """Only desktop touched notes/a.md (a rename onto it): the merge is git's own, and laptop, which pulls
    it, gets the entry it held there in its trash (restorable), its kept version no orphan."""
    a, b, ids = vault_pair(tmp_path, NOTES)
    alpha = ids["notes/a.md"]
    mem("update", alpha, "Alpha: the boiler is serviced in October by Hansen.", "--root", str(a), machine="laptop")
    sync(a, "laptop")
    sync(b, "desktop")
    os.replace(b / "notes/b.md", b / "notes/a.md")
    sync(b, "desktop")
    sync(a, "laptop")
    trashed = mem("trash", "list", "--root", str(a), machine="laptop")["entries"]
    assert [(i["id"], i["trashed_from"]) for i in trashed] == [(alpha, "notes/a.md")], trashed
    assert (a / f".memstrata/versions/{alpha}/v1.md").is_file()
    assert mem("doctor", "--root", str(a), machine="laptop")["findings"] == []
    mem("restore", alpha, "--root", str(a), machine="laptop")
    assert "by Hansen" in mem("read", alpha, "--root", str(a), machine="laptop")["body"]
    assert "Bravo" in (a / "notes/a.md").read_text()  # the path keeps the entry desktop put there


def test_a_plain_tree_entry_deleted_and_written_anew_at_its_path_keeps_the_teammates_edit(tmp_path, embedder):
    """A plain tree: desktop deletes "Standup" and writes a new "Standup" (same path, a new id); laptop
    edits the old one. Both are kept on both machines."""
    bare, a, b = tmp_path / "r.git", tmp_path / "a", tmp_path / "b"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    mem("init", "--clone", str(bare), "--machine", "laptop", "--root", str(a), machine="laptop")
    old = mem("write", "Standup at 9:15 in the small room.", "--title", "Standup", "-c", "meetings",
              "--root", str(a), machine="laptop")
    sync(a, "laptop")
    mem("init", "--clone", str(bare), "--machine", "desktop", "--root", str(b), machine="desktop")
    mem("delete", old["id"], "--root", str(b), machine="desktop")
    new = mem("write", "Standup moves to 10:00, on video.", "--title", "Standup", "-c", "meetings", "--force",
              "--root", str(b), machine="desktop")
    assert new["path"] == old["path"] and new["id"] != old["id"]
    mem("update", old["id"], "Standup at 9:15 in the small room; bring the sprint board.", "--root", str(a),
        machine="laptop")
    for root, machine in ((a, "laptop"), (b, "desktop"), (a, "laptop")):
        sync(root, machine)
    for root, machine in ((a, "laptop"), (b, "desktop")):
        nothing_lost(root, machine, {old["id"]: "sprint board", new["id"]: "on video"})
