"""A note made by hand in a clone of an adopted vault is pushed with its `mem-id:` (given before the
commit of that round), so every clone has the one id and `git status` is clean after a sync; a note
pushed without one (a peer without memstrata) gets the same id on every clone (real git, real CLI)."""
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from team_scenario import mem  # noqa: E402


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def mem_id(text: str) -> str | None:
    lines = [ln for ln in text.splitlines() if ln.startswith("mem-id: ")]
    return lines[0].split(": ", 1)[1] if lines else None


def adopted_and_cloned(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The reviewer's set-up: a vault adopted, pushed to a bare remote, cloned as a second machine."""
    bare, vault, vault2 = tmp_path / "remote.git", tmp_path / "vault", tmp_path / "vault2"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    (vault / "Main Notes").mkdir(parents=True)
    (vault / "Main Notes" / "Paxos.md").write_text("Paxos reaches consensus with a quorum of acceptors.\n")
    mem("init", "--adopt", "--root", str(vault), machine="desktop")
    git(vault, "init", "-q")
    git(vault, "remote", "add", "origin", str(bare))
    assert mem("sync", "--remote", "--root", str(vault), machine="desktop")["pushed"]
    mem("init", "--clone", str(bare), "--root", str(vault2), "--machine", "laptop", machine="laptop")
    return bare, vault, vault2


def test_a_hand_made_note_is_pushed_with_its_id_and_both_clones_agree(tmp_path):
    bare, vault, vault2 = adopted_and_cloned(tmp_path)
    (vault2 / "Main Notes" / "Raft.md").write_text("Raft elects a leader for each term.\n")
    assert mem("sync", "--remote", "--root", str(vault2), machine="laptop")["pushed"]
    given = mem_id((vault2 / "Main Notes" / "Raft.md").read_text())
    assert given and mem_id(git(bare, "show", "HEAD:Main Notes/Raft.md")) == given  # pushed with it
    assert git(vault2, "status", "--porcelain") == ""  # no id left in an uncommitted change
    mem("sync", "--remote", "--root", str(vault), machine="desktop")
    assert mem_id((vault / "Main Notes" / "Raft.md").read_text()) == given
    assert git(vault, "status", "--porcelain") == ""
    assert "leader" in mem("read", given, "--root", str(vault), machine="desktop")["body"]


def test_a_note_pushed_without_an_id_gets_the_same_id_on_every_clone(tmp_path):
    bare, vault, vault2 = adopted_and_cloned(tmp_path)
    peer = tmp_path / "phone"  # Obsidian Git on a phone: plain git, no memstrata
    git(tmp_path, "clone", "-q", str(bare), str(peer))
    (peer / "Main Notes" / "Gossip.md").write_text("Gossip spreads membership changes.\n")
    git(peer, "add", "-A")
    git(peer, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "-m", "from the phone")
    git(peer, "push", "-q", "origin", "HEAD")
    mem("sync", "--remote", "--root", str(vault), machine="desktop")
    mem("sync", "--remote", "--root", str(vault2), machine="laptop")
    first = mem_id((vault / "Main Notes" / "Gossip.md").read_text())
    assert first and mem_id((vault2 / "Main Notes" / "Gossip.md").read_text()) == first
    assert mem_id(git(bare, "show", "HEAD:Main Notes/Gossip.md")) == first
    assert git(vault, "status", "--porcelain") == "" and git(vault2, "status", "--porcelain") == ""
    mem("sync", "--remote", "--root", str(vault), machine="desktop")
    assert mem_id((vault / "Main Notes" / "Gossip.md").read_text()) == first
    assert git(vault, "status", "--porcelain") == ""
