"""A vault stays the user's (issue 25): adopting an Obsidian-like folder adds one `mem-id:` line per
note and one hidden `.memstrata/` folder, nothing else; its `.trash/`, `.obsidian/` and own `id:`
are never read, rewritten or purged; reads never write; `mem sync` follows hand edits."""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.storage import codec

PY = sys.executable
_MEM_ID = re.compile(r"^mem-id: [0-9a-f]+\r?\n", re.M)


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:00:00Z")
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def make_vault(folder: Path) -> dict[str, bytes]:
    """A vault as Obsidian leaves it; returns every file's bytes."""
    files = {
        ".obsidian/app.json": b'{"theme": "dark"}',
        ".obsidian/workspace.json": b"{}",
        ".trash/deleted note.md": b"---\ntitle: gone\n---\nA note the user deleted in Obsidian.\n",
        ".trash/plain.md": b"No frontmatter, in the vault's trash.\n",
        "Zettel/202301011200 first.md": b"---\nid: 202301011200\ntags: [zk]\n---\nThe first idea, about widgets.\n",
        "Zettel/202301011200 copy.md": b"---\nid: 202301011200\naliases: [twin]\n---\nA copy with the same id.\n",
        "Zettel/deep/uid.md": b"---\nuid: u-1\npermalink: /x\n---\nPermalinked note.\n",
        "Daily/2026-11-29.md": b"Went hiking in the hills.\n",
        "Work/crlf.md": b"---\r\ntitle: Windows note\r\naliases: [win]\r\n---\r\n\r\nWritten on Windows.\r\n",
        "Work/attachments/photo.jpg": b"\xff\xd8\xff\xe0binary",
        "README.md": b"# My vault\n",
    }
    for rel, data in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return files


def without_engine(data: bytes) -> bytes:
    """A note's bytes less what adoption adds: the `mem-id:` line (and the block around it when the
    note had no frontmatter)."""
    if not data.lstrip(b"\xef\xbb\xbf").startswith(b"---"):
        return data
    text = data.decode("utf-8")
    alone = re.match(r"^(\ufeff?)---(\r?\n)mem-id: [0-9a-f]+\r?\n---\r?\n\r?\n", text)
    if alone:
        return (alone.group(1) + text[alone.end():]).encode("utf-8")
    return _MEM_ID.sub("", text, count=1).encode("utf-8")


def user_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and ".memstrata" not in p.relative_to(folder).parts}


def test_adopting_a_vault_adds_one_line_per_note_and_one_hidden_folder(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    before = make_vault(vault)
    m = Memory(vault, embedder=embedder)
    result = m.init(adopt=True)
    notes = [r for r in before if r.endswith(".md") and not r.startswith(".")]  # the top-level README too
    assert result["adopted"] == len(notes) == result["entries"] == 6  # duplicate user ids stop nothing
    assert result["index"]["embedded"] == 6
    after = user_files(vault)
    assert set(after) == set(before)  # no config.md, .gitignore, INDEX.md or starter folder among the notes
    for rel, data in before.items():
        if rel in notes:
            assert after[rel] != data and without_engine(after[rel]) == data, rel
        else:
            assert after[rel] == data, rel  # .obsidian/, .trash/, attachments
    assert {p.name for p in (vault / ".memstrata").iterdir()} >= {"config.md", "INDEX.md"}
    # the user's own keys are theirs: never the engine's id
    listed = {e.path: e for e in m.list()}
    assert len({e.id for e in listed.values()}) == 6
    copy = m.read("Zettel/202301011200 copy.md", count_access=False)
    assert copy.id != "202301011200" and copy.extra["id"] == "202301011200"  # an id: the text written
    assert m.recall("widgets").results[0].id == listed["Zettel/202301011200 first.md"].id
    # the vault's own trash is not the engine's: listed never, purged never
    assert m.trash_list() == []
    m.trash_purge(everything=True)
    assert (vault / ".trash" / "deleted note.md").read_bytes() == before[".trash/deleted note.md"]
    report = m.doctor()
    assert report.healthy, [f.to_dict() for f in report.findings]
    m.doctor(fix=True)
    assert user_files(vault) == after  # the doctor changes nothing of the user's, their `id:` included
    # a deleted note goes to the engine's trash, comes back byte for byte, and a purge takes only it
    gid = listed["Work/crlf.md"].id
    m.delete(gid)
    assert not (vault / "Work" / "crlf.md").exists()
    assert [i.id for i in m.trash_list()] == [gid]
    assert (vault / ".trash" / "plain.md").read_bytes() == before[".trash/plain.md"]
    m.restore(gid)
    restored = (vault / "Work" / "crlf.md").read_bytes()
    assert restored.endswith(b"\r\n\r\nWritten on Windows.\r\n") and b"aliases: [win]\r\n" in restored


def test_reads_never_write_and_sync_gives_a_hand_made_note_its_id(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    make_vault(vault)
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    lunch = vault / "Daily" / "lunch.md"
    lunch.write_bytes(b"Lunch with Ana about the widgets budget.\n")
    snapshot = user_files(vault)
    hits = m.recall("lunch with Ana").results
    assert hits and hits[0].path == "Daily/lunch.md"
    assert m.read(hits[0].id, count_access=False).body == "Lunch with Ana about the widgets budget.\n"
    m.list()
    m.read("Daily/lunch.md")
    m.stats()
    m.maintain(dry_run=True)
    assert user_files(vault) == snapshot  # recall, read, list, stats, a dry run: nothing written
    m.sync()
    text = lunch.read_bytes()
    assert text.startswith(b"---\nmem-id: ") and without_engine(text) == snapshot["Daily/lunch.md"]
    entry_id = codec.parse(text.decode(), id_key="mem-id").id
    assert m.recall("lunch with Ana").results[0].id == entry_id
    assert m.doctor().healthy


@pytest.mark.parametrize("adopted", [False, True])
def test_sync_follows_hand_renames_edits_and_deletes(tmp_path, clock, embedder, adopted):
    root = tmp_path / "tree"
    if adopted:
        make_vault(root)
        m = Memory(root, embedder=embedder)
        m.init(adopt=True, indexes=True)
        assert (root / "Zettel" / "INDEX.md").exists()  # asked for: --indexes
    else:
        m = Memory(root, embedder=embedder)
        m.init()
    a = m.write("Notes on the garden shed roof", category="home")
    b = m.write("The boiler needs a service in March", category="home")
    os.rename(root / a.path, root / "home" / "renamed.md")  # as Obsidian renames
    (root / b.path).unlink()  # deleted by hand
    (root / "home" / "new.md").write_text("A note added by hand about bicycles.\n", encoding="utf-8")
    m.sync()
    report = m.doctor()
    assert report.healthy, [f.to_dict() for f in report.findings]
    assert m.read(a.id, count_access=False).path == "home/renamed.md"
    assert m.recall("bicycles").results[0].path == "home/new.md"
    index = (root / "home" / "INDEX.md").read_text(encoding="utf-8")
    assert "renamed.md" in index and b.id not in index


def test_a_killed_adopt_resumes_with_the_vaults_rules(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    before = make_vault(vault)
    env = {**os.environ, "MEMSTRATA_SERVICE": "off"}
    proc = subprocess.Popen([PY, "-m", "memstrata.cli.app", "init", "--adopt", "--root", str(vault)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (vault / ".memstrata" / "config.md").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    m = Memory(vault, embedder=embedder)
    assert m.settings.compress_bodies is False and m.settings.archive_moves_files is False
    result = m.init(adopt=True)  # run again: it finishes the adoption
    assert result["entries"] == 6 and not (vault / "config.md").exists()
    assert m.settings.compress_bodies is False
    assert all(without_engine(user_files(vault)[r]) == d for r, d in before.items())


def test_a_badly_named_file_is_reported_and_never_stops_the_tree(tmp_path, clock, embedder):
    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    m.write("Something about widgets", category="team")
    folder = os.fsencode(tmp_path / "m" / "team")
    with open(os.path.join(folder, b"bad\xff\xfe.md"), "wb") as handle:
        handle.write(b"A teammate's file.\n")
    (tmp_path / "m" / "team" / "two\nlines.md").write_text("Newline in the name.\n", encoding="utf-8")
    written = m.write("More about gadgets", category="team")
    assert [e.id for e in m.list()] and m.recall("gadgets").results[0].id == written.id
    assert any("not read" in w for w in m.stats()["warnings"])
    index = (tmp_path / "m" / "team" / "INDEX.md").read_text(encoding="utf-8")
    assert all(line.count("|") == 7 for line in index.splitlines() if line.startswith("| ["))
    kinds = {f.kind for f in m.doctor(fix=True).findings}
    assert kinds == {"bad_name"}
    assert os.path.exists(os.path.join(folder, b"bad\xff\xfe.md"))  # reported, never moved or read


def test_list_shows_the_tier_maintain_then_writes_and_the_dry_run_counts_right(tmp_path, monkeypatch, embedder):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-01-01T10:00:00Z")
    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    for n in range(6):
        m.write(f"Fact number {n} about the deployment pipeline and its many stages, in detail. "
                f"It has a second sentence {n}. And a third one to compress.", category="ops")
    m.read(m.list()[0].id)  # a read journaled, not folded yet
    for day in ("2026-02-10", "2026-05-01"):
        monkeypatch.setenv("MEMSTRATA_NOW", f"{day}T10:00:00Z")
        m = Memory(tmp_path / "m", embedder=embedder)
        shown = {e.id: e.tier for e in m.list()}
        dry = m.maintain(dry_run=True).counts()
        real = m.maintain().counts()
        assert {k: v for k, v in dry.items() if k != "accesses"} == \
            {k: v for k, v in real.items() if k != "accesses"}, (day, dry, real)
        assert {e.id: e.tier for e in m.list()} == shown, day


def test_a_tree_of_the_old_layout_never_takes_an_editors_note_in_its_trash(tmp_path, clock, embedder):
    """A tree made by `mem init` (or adopted before `.memstrata/`) keeps `.trash/` at its top; a note an
    editor moved there is not one the engine trashed (its names are {id}--{slug}.md): never listed or purged."""
    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    gone = m.write("A fact to delete", category="notes")
    m.delete(gone.id)
    theirs = tmp_path / "m" / ".trash" / "deleted in obsidian.md"
    theirs.write_bytes(b"---\ntitle: mine\n---\nKept by the editor.\n")
    assert [i.id for i in m.trash_list()] == [gone.id]
    m.trash_purge(everything=True)
    assert m.trash_list() == [] and theirs.read_bytes() == b"---\ntitle: mine\n---\nKept by the editor.\n"
