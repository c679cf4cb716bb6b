"""Defects an adversarial pass found after the access journal and the team sync landed: each stays fixed."""
import json
import os
import stat
import subprocess
import sys

import pytest

from memstrata import Memory
from memstrata.storage import journal

PY = sys.executable


@pytest.fixture
def tree(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    m = Memory(tmp_path / "r", embedder=embedder)
    m.init()
    m.entry = m.write("We chose Postgres for alpha.", title="DB choice", category="projects/alpha")
    return m


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("folder", [journal.JOURNAL_DIR, journal.PENDING_DIR])
def test_a_symlinked_access_folder_is_never_followed(tree, tmp_path, folder):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.log").write_text("keep me\n")
    (outside / "other.taken").write_text("keep me too\n")
    (tree.root / folder).parent.mkdir(exist_ok=True)
    os.symlink(outside, tree.root / folder)
    assert tree.read(tree.entry.id).id == tree.entry.id  # a read still answers
    tree.maintain()
    assert _files(outside) == {"precious.log": b"keep me\n", "other.taken": b"keep me too\n"}


@pytest.mark.parametrize("folder", [journal.JOURNAL_DIR, journal.PENDING_DIR])
def test_odd_files_in_the_journal_neither_hang_nor_break_maintain(tree, folder):
    folder = tree.root / folder
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / "evil.log")
    (folder / "d.log").mkdir()
    with open(folder / "big.log", "wb") as handle:  # sparse, over 64 MB of one endless foreign line: skipped
        handle.truncate(64 * 1024 * 1024 + 1)
    tree.read(tree.entry.id)
    code = subprocess.run([PY, "-m", "memstrata.cli.app", "maintain", "--root", str(tree.root)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MEMSTRATA_SERVICE": "off"}).returncode
    assert code == 0
    assert tree.resolve(tree.entry.id).access_count == 1


def test_an_import_never_takes_another_entrys_sidecar_or_versions(tree, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2027-03-01T00:00:00Z")
    tree.maintain()
    original = tree.decompress(tree.entry.id, show=True)["body"]
    lines = [{"title": "innocent", "body": "hello", "category": "notes", "layer": "L1",
              "full_content_file": f".full/{tree.entry.id}.md", "full_content": "PWNED"}]
    (tmp_path / "e.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    tree.import_jsonl(tmp_path / "e.jsonl")
    assert tree.decompress(tree.entry.id, show=True)["body"] == original
    other = tree.write("A second entry, soon in the trash.", title="second", category="notes")
    tree.update(other.id, "Its second body.")
    tree.delete(other.id)
    (tmp_path / "e2.jsonl").write_text(json.dumps({"id": other.id, "title": "imposter", "body": "x",
                                                   "category": "notes", "versions": {"1": "EVIL v1"}}) + "\n")
    report = tree.import_jsonl(tmp_path / "e2.jsonl")
    assert report["imported"] == 0 and report["skipped"] == 1
    assert "EVIL" not in (tree.root / ".versions" / other.id / "v1.md").read_text()
    assert tree.restore(other.id).id == other.id


def test_tree_imports_read_only_regular_files_inside_the_source(tree, tmp_path):
    src = tmp_path / "pme" / "notes"
    src.mkdir(parents=True)
    (src / "ok.md").write_text("A fine note.\n")
    os.mkfifo(src / "fifo.md")
    os.symlink("/dev/zero", src / "zero.md")
    os.symlink("/etc/hostname", src / "outside.md")
    viking = tmp_path / "viking" / "hot" / "projects"
    viking.mkdir(parents=True)
    (viking / "steal.md").write_text("---\ntitle: Steal\nlayer: L2\nfull_content_file: /etc/hostname\n---\n\ns\n")
    done = subprocess.run([PY, "-m", "memstrata.cli.app", "import", str(tmp_path / "pme"), "--root", str(tree.root),
                           "--json"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MEMSTRATA_SERVICE": "off"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["imported"] == 1
    tree.import_tree(tmp_path / "viking")
    hostname = open("/etc/hostname").read().strip()
    (stolen,) = [e for e in tree.list() if e.title == "Steal"]
    assert hostname not in tree.read(stolen.id, count_access=False).body


def test_adopt_never_opens_a_fifo_named_index(tmp_path):
    vault = tmp_path / "vault" / "notes"
    vault.mkdir(parents=True)
    (vault / "a.md").write_text("A note.\n")
    os.mkfifo(vault / "INDEX.md")
    args = [PY, "-m", "memstrata.cli.app", "init", "--adopt", "--root", str(tmp_path / "vault")]
    env = {**os.environ, "MEMSTRATA_SERVICE": "off"}
    done = subprocess.run(args + ["--indexes"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2 and "notes/INDEX.md" in done.stderr  # would be written: refused, named, nothing written
    assert sorted(p.name for p in (tmp_path / "vault").iterdir()) == ["notes"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, env=env)  # no folder INDEX.md in a vault
    assert done.returncode == 0 and stat.S_ISFIFO(os.lstat(vault / "INDEX.md").st_mode)
