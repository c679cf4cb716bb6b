"""A vault note's own `id:` (kept beside the engine's `mem-id:` at adoption) names the note wherever an
id is taken - read, update, history, delete - unless it names two notes: then the error names both files."""
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from team_scenario import env, mem  # noqa: E402

from memstrata.errors import InvalidInput  # noqa: E402


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def _vault(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    (vault / "Zettel").mkdir(parents=True)
    (vault / "Zettel" / "Paxos.md").write_text("---\nid: foo\ntags: [consensus]\n---\n\nPaxos needs a quorum.\n")
    (vault / "Zettel" / "Raft.md").write_text("---\nid: 202301011200\n---\n\nRaft elects a leader.\n")
    (vault / "Zettel" / "Gossip.md").write_text("---\nid: twin\n---\n\nGossip spreads news.\n")
    (vault / "Zettel" / "Epidemic.md").write_text("---\nid: twin\n---\n\nEpidemic protocols, same idea.\n")
    mem("init", "--adopt", "--root", str(vault), machine="desktop")
    return vault


def test_the_users_own_id_is_a_reference_everywhere(tmp_path, embedder):
    from memstrata import Memory

    vault = _vault(tmp_path)
    text = (vault / "Zettel" / "Paxos.md").read_text()
    assert "id: foo\n" in text and "mem-id: " in text  # adoption kept the user's id and added the engine's
    read = mem("read", "foo", "--root", str(vault), machine="desktop")  # the real CLI, as the reviewer ran it
    assert read["path"] == "Zettel/Paxos.md" and "quorum" in read["body"]
    assert mem("read", "202301011200", "--root", str(vault), machine="desktop")["path"] == "Zettel/Raft.md"

    m = Memory(vault, embedder=embedder)
    engine_id = m.read("foo", count_access=False).id
    m.update("foo", "Paxos needs a majority quorum of acceptors.")
    assert "majority quorum" in (vault / "Zettel" / "Paxos.md").read_text()
    assert "id: foo\n" in (vault / "Zettel" / "Paxos.md").read_text()  # the user's key stays as it was
    assert len(m.history("foo")) == 2 and m.history("foo") == m.history(engine_id)
    m.delete("foo")
    assert not (vault / "Zettel" / "Paxos.md").exists()
    assert m.restore(engine_id) and (vault / "Zettel" / "Paxos.md").exists()


def test_an_own_id_that_names_two_notes_names_both_files(tmp_path, embedder):
    from memstrata import Memory

    vault = _vault(tmp_path)
    done = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "read", "twin", "--root", str(vault), "--json"],
                          capture_output=True, text=True, env=env(), timeout=300)
    assert done.returncode == 2, done
    message = done.stderr + done.stdout
    assert "Zettel/Gossip.md" in message and "Zettel/Epidemic.md" in message

    m = Memory(vault, embedder=embedder)
    raft = m.read("202301011200", count_access=False)
    # a note whose own id is another note's engine id: neither is chosen behind the user's back
    other = vault / "Zettel" / "Leases.md"
    other.write_text(f"---\nid: {raft.id}\n---\n\nLeases bound clock skew.\n")
    m.sync()  # as a user would after adding a note by hand: it gets its mem-id, the catalog sees it
    with pytest.raises(InvalidInput) as err:
        m.read(raft.id, count_access=False)
    assert "Zettel/Raft.md" in str(err.value) and "Zettel/Leases.md" in str(err.value)
    assert m.read("Zettel/Raft.md", count_access=False).id == raft.id  # a path still names it


def test_an_own_id_with_a_slash_names_its_note_when_no_file_has_that_path(tmp_path, embedder):
    from memstrata import Memory

    vault = _vault(tmp_path)
    (vault / "Zettel" / "Alpha.md").write_text("---\nid: sub/a2\n---\n\nAlpha grows tomatoes.\n")
    (vault / "sub").mkdir()
    (vault / "sub" / "real.md").write_text("---\nid: Zettel/Paxos.md\n---\n\nA note whose own id is a path.\n")
    mem("sync", "--root", str(vault), machine="desktop")
    read = mem("read", "sub/a2", "--root", str(vault), machine="desktop")  # the real CLI
    assert read["path"] == "Zettel/Alpha.md" and "tomatoes" in read["body"]

    m = Memory(vault, embedder=embedder)
    m.update("sub/a2", "Alpha grows tomatoes and basil.")
    assert "basil" in (vault / "Zettel" / "Alpha.md").read_text()
    assert len(m.history("sub/a2")) == 2
    assert m.read("Zettel/Paxos.md", count_access=False).path == "Zettel/Paxos.md"  # a file at the path wins
    done = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "read", "sub/none", "--root", str(vault)],
                          capture_output=True, text=True, env=env(), timeout=300)
    assert done.returncode == 3 and done.stderr.strip() == "mem: error: no entry at sub/none"
