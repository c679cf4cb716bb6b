"""An adopted vault's file modes are the user's: a note keeps its mode through every engine write
(delete then restore, a team pull or merge), a file the engine brings in gets the mode the user's
umask gives, as git itself would; only `.memstrata/` stays private (real CLI, real git)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Memory

sys.path.insert(0, str(Path(__file__).parent))
from test_vault_team import git, vault_in_git  # noqa: E402  (a user's vault in git, adopted and pushed)

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
        for args in (("delete", entry_id), ("trash", "list"), ("restore", entry_id)):  # listing rewrites it
            run = mem(vault, *args)
            assert run.returncode == 0, run.stderr
        assert note.read_bytes() == before
        assert mode(note) == perm, (name, oct(mode(note)))
    assert mode(vault / ".memstrata") == 0o700 and mode(vault / ".memstrata/trash") == 0o700


def test_a_note_trashed_by_an_older_release_comes_back_with_the_umasks_mode(tmp_path, embedder):
    """Before the mode was recorded, `mem` trashed under its umask 077: the trash file is 0600 and
    says nothing of the note's mode. A restore gives it what the user's umask gives a new file."""
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    for name in ("old.md", "kept.md"):
        (vault / "Notes" / name).write_text(f"A note called {name}, trashed long ago.\n")
        os.chmod(vault / "Notes" / name, 0o644)
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    ids = {e.path: e.id for e in m.list()}
    before = (vault / "Notes/old.md").read_bytes()
    for name in ("old.md", "kept.md"):
        assert mem(vault, "delete", ids[f"Notes/{name}"]).returncode == 0
    trashed = {p.name.split("--")[0]: p for p in (vault / ".memstrata/trash").glob("*--*.md")}
    # the older release's trash file: no recorded mode, written anew under umask 077
    old = trashed[ids["Notes/old.md"]]
    text = "".join(line for line in old.read_text().splitlines(True) if not line.startswith("trashed_mode:"))
    old.unlink()
    mask = os.umask(0o077)
    try:
        with open(old, "w") as out:
            out.write(text)
    finally:
        os.umask(mask)
    assert mode(old) == 0o600 and "trashed_mode" not in old.read_text()
    # one trashed in between (its mode kept on the file, none recorded): that mode
    kept = trashed[ids["Notes/kept.md"]]
    kept.write_text("".join(ln for ln in kept.read_text().splitlines(True) if not ln.startswith("trashed_mode:")))
    os.chmod(kept, 0o640)
    mask = os.umask(0o027)  # the user's umask now: a new file of theirs is 0640
    try:
        for name in ("old.md", "kept.md"):
            run = mem(vault, "restore", ids[f"Notes/{name}"])
            assert run.returncode == 0, run.stderr
    finally:
        os.umask(mask)
    assert (vault / "Notes/old.md").read_bytes() == before
    assert mode(vault / "Notes/old.md") == 0o640 and mode(vault / "Notes/kept.md") == 0o640
    mask = os.umask(0o022)
    try:  # and with the umask most users have
        for args in (("delete", ids["Notes/old.md"]), ("restore", ids["Notes/old.md"])):
            assert mem(vault, *args).returncode == 0
    finally:
        os.umask(mask)
    assert mode(vault / "Notes/old.md") == 0o640  # recorded now: its own mode, whatever the umask


def test_the_recorded_mode_reads_as_ls_shows_it():
    from memstrata.storage.trash import parse_mode

    assert parse_mode("rw-r--r--") == 0o644 and parse_mode("rwx------") == 0o700 and parse_mode("---------") == 0
    for bad in ("", "0644", 644, "rw-r--r-", "rw-r--r--x", "wr-r--r--", None):
        assert parse_mode(bad) is None


def vault_pair(tmp_path, embedder) -> tuple[Memory, Path, Path]:
    """A user's 0644 vault in git, adopted and pushed to a bare remote; a second plain git clone of it."""
    notes = {"Welcome.md": "Sailing boats.\n", "Notes/private.md": "My own secret plans.\n",
             ".obsidian/app.json": '{"theme": "dark"}'}
    a, bare = vault_in_git(tmp_path, embedder, notes, modes={"Notes/private.md": 0o600})  # the user's private one
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))
    git(other, "config", "user.email", "peer@example.org")
    git(other, "config", "user.name", "peer")
    return a, other, bare


def test_a_pull_and_a_merge_keep_each_notes_mode_and_new_notes_get_the_umasks(tmp_path, embedder, umask022):
    a, other, _ = vault_pair(tmp_path, embedder)
    assert mode(a.root / "Welcome.md") == 0o644 and mode(a.root / "Notes/private.md") == 0o600
    # the peer edits both notes and adds one; this clone edits Welcome.md too (a merge, not a fast-forward)
    for rel, line in (("Welcome.md", "Dinghies too.\n"), ("Notes/private.md", "More plans.\n")):
        with open(other / rel, "a") as out:
            out.write(line)
    (other / "Notes/new.md").write_text("A note from the peer.\n")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "peer edits")
    git(other, "push", "-q", "origin", "HEAD")
    welcome = a.root / "Welcome.md"
    welcome.write_text(welcome.read_text().replace("Sailing boats.", "Sailing boats and yachts."))
    result = a.sync_remote()
    assert result["pushed"], result
    assert [c["path"] for c in result["conflicts"]] == ["Welcome.md"], result["conflicts"]  # one side kept as a version
    assert "More plans." in (a.root / "Notes/private.md").read_text()
    assert mode(welcome) == 0o644                       # merged by the team rules
    assert mode(a.root / "Notes/private.md") == 0o600   # pulled by git: still the user's private mode
    assert mode(a.root / "Notes/new.md") == 0o644       # new: what the umask gives, as git would
    assert mode(a.root / ".memstrata") == 0o700
    assert git(a.root, "status", "--porcelain") == ""
    assert a.doctor().findings == []


def test_mem_sync_remote_pulls_with_the_users_umask_not_the_engines(tmp_path, embedder, umask022):
    a, other, _ = vault_pair(tmp_path, embedder)
    with open(other / "Welcome.md", "a") as out:
        out.write("Dinghies too.\n")
    (other / "Notes/new.md").write_text("A note from the peer.\n")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "peer edits")
    git(other, "push", "-q", "origin", "HEAD")
    run = mem(a.root, "sync", "--remote")  # `mem` itself runs with umask 077 for the engine's files
    assert run.returncode == 0, run.stderr
    assert "Dinghies too." in (a.root / "Welcome.md").read_text()
    assert mode(a.root / "Welcome.md") == 0o644 and mode(a.root / "Notes/new.md") == 0o644
    assert mode(a.root / "Notes/private.md") == 0o600


def test_init_clone_of_a_vault_gives_the_umasks_modes_and_keeps_only_the_engine_folder_private(
        tmp_path, embedder, umask022):
    a, _, bare = vault_pair(tmp_path, embedder)
    b_root = tmp_path / "b"
    run = mem(b_root, "init", "--clone", str(bare))
    assert run.returncode == 0, run.stderr
    assert mode(b_root) == 0o755
    for rel in ("Welcome.md", "Notes/private.md", ".obsidian/app.json"):  # git keeps no read bits: the umask's
        assert mode(b_root / rel) == 0o644, rel
    assert mode(b_root / "Notes") == 0o755 and mode(b_root / ".obsidian") == 0o755
    assert mode(b_root / ".memstrata") == 0o700
    # `.git/` as the user's own `git clone` leaves it under umask 022 (git ran under umask 077 first)
    inside = list((b_root / ".git").rglob("*"))
    assert mode(b_root / ".git") == 0o755 and mode(b_root / ".git/config") == 0o644
    assert [p for p in inside if p.is_dir() and mode(p) != 0o755] == []
    assert [p for p in inside if p.is_file() and mode(p) & 0o044 != 0o044] == []
    assert {mode(p) for p in (b_root / ".git/objects").rglob("*") if p.is_file()} <= {0o444, 0o644}
    b = Memory(b_root, embedder=embedder)
    assert b.doctor().findings == []
    assert git(b_root, "status", "--porcelain") == ""


def test_init_clone_of_the_engines_own_tree_stays_private(tmp_path, embedder, umask022):
    bare, a_root = tmp_path / "r.git", tmp_path / "a"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    a = Memory(a_root, embedder=embedder)
    a.init()
    a.write("The team deploys on Fridays.", title="Deploys")
    git(a_root, "init", "-q")
    git(a_root, "remote", "add", "origin", str(bare))
    assert a.sync_remote()["pushed"]
    b_root = tmp_path / "b"
    run = mem(b_root, "init", "--clone", str(bare))
    assert run.returncode == 0, run.stderr
    assert mode(b_root) == 0o700
    loose = [p for p in b_root.rglob("*") if ".git" not in p.relative_to(b_root).parts and p.stat().st_mode & 0o077]
    assert loose == []


def test_a_note_mem_writes_into_a_vault_gets_the_umasks_mode(tmp_path, embedder, umask022):
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    (vault / "Notes/n.md").write_text("A note.\n")
    Memory(vault, embedder=embedder).init(adopt=True)
    run = mem(vault, "write", "Buy a new jib before the regatta.", "--title", "Jib", "--category", "Notes")
    assert run.returncode == 0, run.stderr
    written = [p for p in (vault / "Notes").iterdir() if p.name != "n.md"]
    assert len(written) == 1 and mode(written[0]) == 0o644
    run = mem(vault, "write", "Reef the main early.", "--title", "Reefing", "--category", "Sailing/Tips")
    assert run.returncode == 0, run.stderr
    assert mode(vault / "Sailing") == 0o755 and mode(vault / "Sailing/Tips") == 0o755  # new folders: the umask's
    assert [mode(p) for p in (vault / "Sailing/Tips").iterdir()] == [0o644]
