"""A daily tool that respects the user's files: roots only where `mem init` made one, adopted notes,
reads that never rewrite entries (the access journal), an id for every hand-made entry."""
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.cli.app import main as mem_main
from memstrata.errors import InvalidInput, NotFound
from memstrata.storage import codec, journal

PY = sys.executable


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:00:00Z")
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def _snapshot(folder: Path) -> dict:
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        out[rel] = path.read_bytes() if path.is_file() else "dir"
    return out


def _vault(folder: Path) -> None:
    """A realistic notes folder: nested notes with and without frontmatter, wiki links, attachments."""
    (folder / ".obsidian").mkdir(parents=True)
    (folder / ".obsidian" / "app.json").write_text('{"theme": "dark"}')
    (folder / "journal" / "2026").mkdir(parents=True)
    (folder / "journal" / "2026" / "trip.md").write_text(
        "# Trip to Lisbon\n\nSaw the [[Tram 28]] and ate pastéis.\n\n![[photo.jpg]]\n", encoding="utf-8")
    (folder / "journal" / "2026" / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0binary")
    (folder / "projects").mkdir()
    (folder / "projects" / "garden.md").write_text(
        "---\ntitle: Garden plan\ncreated: 2026-01-05\ntags: [home, garden]\naliases: [veg patch]\n---\nTomatoes by the fence.\n\n"
        "    indented code stays\n", encoding="utf-8")
    (folder / "projects" / "empty-front.md").write_text("---\n---\nOnly a body.", encoding="utf-8")
    (folder / "projects" / "bom.md").write_bytes("\ufeffA note with a byte order mark.\n".encode("utf-8"))


def _bodies(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): codec.split_frontmatter(p.read_text(encoding="utf-8"))[1]
            for p in folder.rglob("*.md") if ".obsidian" not in p.parts and p.name not in ("INDEX.md", "config.md")}


def _mem(*args) -> int:
    try:
        return mem_main(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)


def test_no_command_but_init_writes_into_a_folder_that_is_not_a_tree(tmp_path, clock, capsys):
    folder = tmp_path / "somefolder"
    _vault(folder)
    before = _snapshot(folder)
    for args in (["list"], ["write", "x", "-c", "test"], ["recall", "garden"], ["stats"], ["doctor"],
                 ["maintain"], ["sync"], ["read", "projects/garden.md"], ["config", "set", "hot_days", "3"],
                 ["import", str(tmp_path / "none.jsonl")], ["daily", "hello"]):
        code = _mem(*args, "--root", str(folder))
        err = capsys.readouterr().err
        assert code != 0, args
        assert "not a memory tree" in err or "nothing to import" in err, (args, err)
    proc = subprocess.run([PY, "-m", "memstrata.cli.app", "autoload", "--hook"], input=json.dumps({"prompt": "k8s"}),
                          capture_output=True, text=True, env={**os.environ, "MEMSTRATA_HOME": str(folder)}, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == ""
    assert _snapshot(folder) == before
    with pytest.raises(NotFound):
        Memory(folder).list()


def test_init_adopts_a_vault_on_purpose_and_changes_only_id_lines(tmp_path, clock, capsys, embedder, monkeypatch):
    folder = tmp_path / "vault"
    _vault(folder)
    bodies = _bodies(folder)
    before = _snapshot(folder)
    assert _mem("init", "--root", str(folder)) == 2
    assert "--adopt" in capsys.readouterr().err
    assert _snapshot(folder) == before
    assert _mem("init", "--adopt", "--root", str(folder), "--json") == 0
    adopted = json.loads(capsys.readouterr().out)
    assert adopted["adopted"] == 4
    assert adopted["index"]["embedded"] == 4  # found by meaning at once, no `mem sync` needed
    assert _bodies(folder) == bodies  # every body byte for byte
    assert (folder / ".obsidian" / "app.json").read_text() == '{"theme": "dark"}'
    assert (folder / "journal" / "2026" / "photo.jpg").read_bytes() == before["journal/2026/photo.jpg"]
    garden = (folder / "projects" / "garden.md").read_text(encoding="utf-8")
    assert garden.startswith("---\nmem-id: ") and "aliases: [veg patch]\n" in garden  # its own lines as they were
    m = Memory(folder, embedder=embedder)
    ids = {e.path: e.id for e in m.list()}
    assert len(ids) == 4 and all(ids.values())
    assert {e.path: e.id for e in m.list()} == ids  # stable: written once
    # the adopted notes round-trip through export and import, bodies unchanged
    m.export_jsonl(tmp_path / "out.jsonl")
    other = Memory(tmp_path / "copy", embedder=embedder)
    other.init()
    assert other.import_jsonl(tmp_path / "out.jsonl")["imported"] == 4
    copied = {e.id: other.read(e.id, count_access=False).body for e in other.list()}
    assert copied == {ids[p]: body for p, body in bodies.items()}
    # aging never cuts an adopted note's text: a year and a half later, maintain compresses nothing
    assert m.settings.compress_bodies is False
    with pytest.raises(InvalidInput, match="must be true or false"):
        m.config_set("compress_bodies", "maybe")
    monkeypatch.setenv("MEMSTRATA_NOW", "2028-06-01T10:00:00Z")
    aging = Memory(folder, embedder=embedder)
    report = aging.maintain()
    assert not report.counts().get("retier") and not report.counts().get("compress")  # nothing to write
    assert _bodies(folder) == bodies
    # the tier is the engine's, computed when shown (docs/vault.md): aged, and the note as it was
    assert {e.path: e.tier for e in aging.list()}["projects/garden.md"] in ("cold", "archive")
    aged = (folder / "projects" / "garden.md").read_text(encoding="utf-8")
    own = garden.split("---\n")[1].splitlines()
    assert aged == garden and "created: 2026-01-05\n" in aged
    # to the trash and back: still the note's own lines, its body byte for byte
    m = Memory(folder, embedder=embedder)
    gid = ids["projects/garden.md"]
    m.delete(gid)
    in_trash = next((folder / ".memstrata" / "trash").glob(f"{gid}--*.md")).read_text(encoding="utf-8")
    assert [line for line in in_trash.split("---\n")[1].splitlines() if line in own] == own
    m.restore(gid)
    back = (folder / "projects" / "garden.md").read_text(encoding="utf-8")
    assert back == garden  # byte for byte
    assert "trashed_at" not in back and "layer:" not in back and back.endswith(bodies["projects/garden.md"])


def test_a_hand_made_entry_gets_an_id_at_sync_and_can_be_deleted_and_restored(tmp_path, clock, embedder):
    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    (m.root / "music").mkdir()
    (m.root / "music" / "guitar.md").write_text("Practise scales every morning.\n", encoding="utf-8")
    (listed,) = [e for e in m.list() if e.category == "music"]  # a read: listed without an id, never written
    assert not listed.id and (m.root / "music" / "guitar.md").read_text(encoding="utf-8").startswith("Practise")
    m.sync()  # issue 25: ids come from sync, maintain or a write
    (entry,) = [e for e in m.list() if e.category == "music"]
    assert entry.id and "id: " + entry.id in (m.root / "music" / "guitar.md").read_text(encoding="utf-8")
    with pytest.raises(NotFound, match="at least 4 characters"):
        m.read(entry.id[:3])
    m.delete(entry.id)
    with pytest.raises(NotFound, match=f"in the trash .*mem restore {entry.id}"):
        m.read(entry.id)
    restored = m.restore(entry.id)
    assert restored.id == entry.id and m.read(entry.id, count_access=False).body == "Practise scales every morning.\n"
    (m.root / "music" / "bass.md").write_text("Walking bass lines.\n", encoding="utf-8")
    updated = m.update("music/bass.md", tags=["bass"])  # found by path, given an id, updated under it
    assert updated.id and m.read(updated.id, count_access=False).tags == ["bass"]


def test_reads_and_prompt_hooks_never_rewrite_entry_files(tmp_path, clock, embedder, monkeypatch):
    """A day of hook calls leaves `git status` clean (the journal is git-ignored); maintain folds it in."""
    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    ids = [m.write(text, title=title, category="notes").id for title, text in [
        ("db", "We chose Postgres for the alpha project."), ("ui", "The user prefers dark mode."),
        ("deploy", "Deploys go out on Tuesdays after the standup.")]]
    git = ["git", "-C", str(m.root), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "memories"], check=True)
    for n in range(120):
        monkeypatch.setenv("MEMSTRATA_NOW", f"2026-11-30T{10 + n // 60:02d}:{n % 60:02d}:00Z")
        m.autoload(["which database?", "dark mode", "when do we deploy?"][n % 3])
        m.read(ids[n % 3])
        m.recall("postgres")
    status = subprocess.run(git + ["status", "--porcelain", "--untracked-files=all"], capture_output=True,
                            text=True, check=True).stdout.split("\n")
    assert [line for line in status if line.strip()] == []
    assert m.read(ids[0], count_access=False).access_count >= 40  # the journal counts
    report = m.maintain()
    assert report.accesses_folded == 3 and not journal.read(m.root)
    folded = m.resolve(ids[0])
    assert folded.access_count >= 40 and folded.last_access is not None


def test_an_old_tree_whose_journal_is_tracked_still_counts_and_folds(tmp_path, clock, embedder):
    """Accesses an older version left in this machine's tracked `.access/<host>.log` are counted
    beside the pending ones and folded; a pulled peer's file is counted and left to the peer."""
    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    entry = m.write("We chose Postgres for the alpha project.", title="db", category="notes")
    old = m.root / journal.JOURNAL_DIR
    old.mkdir()
    mine = old / f"{journal.machine_name()}.log"
    mine.write_text(f"2026-11-29T09:00:00Z\t{entry.id}\t-\n" * 3 + "2026-11-29T09:0")  # torn
    (old / "peer.log").write_text(f"2026-11-29T10:00:00Z\t{entry.id}\t1.0000\n")
    git = ["git", "-C", str(m.root), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "memories"], check=True)
    m.read(entry.id)
    assert (m.root / journal.PENDING_DIR).is_dir()
    assert m.read(entry.id, count_access=False).access_count == 5
    report = m.maintain()
    assert report.accesses_folded == 1
    folded = m.resolve(entry.id)
    assert folded.access_count == 4 and folded.last_access == datetime(2026, 11, 30, 10, tzinfo=timezone.utc)
    assert m.read(entry.id, count_access=False).access_count == 5  # the peer's read still counts
    assert not mine.exists() and (old / "peer.log").exists()
    status = subprocess.run(git + ["status", "--porcelain", "--untracked-files=all"], capture_output=True,
                            text=True, check=True).stdout
    assert f"D .access/{mine.name}" in status  # maintain changes the tree: the fold is a change to commit


def test_doctor_leaves_git_alone_and_git_modes_are_no_damage(tmp_path, clock, embedder):
    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    r = m.write("Deploys go out on Tuesdays.", title="deploy", category="ops")
    git = ["git", "-C", str(m.root), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "memories"], check=True)
    os.chmod(m.root / r.path, 0o644)  # what a checkout leaves
    os.chmod(m.root / "ops", 0o755)
    report = Memory(m.root, embedder=embedder).doctor()
    assert report.healthy, report.findings
    assert report.checked["entry_files"] == 1


def test_everyday_commands_behave_as_people_expect(tmp_path, clock, capsys, embedder):
    root = str(tmp_path / "m")
    assert _mem("--root", root, "init") == 0
    assert _mem("--json", "--root", root, "write", "Replication lag is 2s.", "--title", "lag", "-c", "db",
                "--tag", "db, decision") == 0
    entry_id = json.loads(capsys.readouterr().out.split("memory tree ready")[-1].split("\n", 1)[-1])["id"]
    assert _mem("update", entry_id[:5], "--tag", "replication", "--root", root) == 0  # a unique prefix; --tag adds
    assert Memory(root).resolve(entry_id).tags == ["db", "decision", "replication"]
    assert _mem("update", entry_id, "--untag", "decision", "--root", root) == 0
    assert Memory(root).resolve(entry_id).tags == ["db", "replication"]
    assert _mem("update", entry_id, "--tags", "ops", "--root", root) == 0
    assert Memory(root).resolve(entry_id).tags == ["ops"]
    capsys.readouterr()
    assert _mem("config", "set", "promote_threshold", "7", "--root", root) == 2
    assert _mem("config", "set", "split_threshold", "0", "--root", root) == 2
    assert _mem("config", "set", "embedding_model", "a\nb", "--root", root) == 2
    assert _mem("config", "set", "hot_dayz", "3", "--root", root) == 2
    assert "did you mean hot_days" in capsys.readouterr().err
    assert _mem("config", "set", "hot_days", "3", "--root", root) == 0
    assert _mem("config", "unset", "hot_days", "--root", root) == 0
    assert Memory(root).settings.hot_days == 7
    assert _mem("write", "x", "-c", "DB/sub", "--root", root) == 2  # differs from db/ only in case
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"qid": 1, "query": "replication lag"}\nnot json\n{"qid": 3}\n{"qid": 4, "query": "lag"}\n')
    capsys.readouterr()
    assert _mem("recall", "--queries", str(queries), "--root", root, "--jsonl") == 2
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [("error" in r) for r in rows] == [False, True, True, False] and rows[0]["results"]


def test_restore_takes_an_id_prefix_or_the_path_it_was_deleted_from(tmp_path, clock, embedder):
    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    r = m.write("Park on level 3.", title="parking", category="general")
    m.delete(r.id[:5])
    assert m.restore(r.id[:5]).id == r.id
    m.delete(r.id)
    assert m.restore("general/parking.md").id == r.id


def test_adopt_names_every_note_it_could_not_take_and_keeps_the_vaults_own_daily_folder(tmp_path, clock, capsys,
                                                                                          embedder):
    folder = tmp_path / "vault"
    (folder / "notes").mkdir(parents=True)
    (folder / "Daily").mkdir()
    (folder / "notes" / "a.md").write_text("---\nid: aaaaaaaaaaaa\n---\nOne.\n", encoding="utf-8")
    (folder / "notes" / "b.md").write_text("---\nid: aaaaaaaaaaaa\n---\nTwo.\n", encoding="utf-8")
    (folder / "notes" / "c.md").write_text("---\ntitle: [broken\n---\nBad.\n", encoding="utf-8")
    (folder / "Daily" / "2026-11-30.md").write_text("Went hiking.\n", encoding="utf-8")
    assert _mem("init", "--adopt", "--root", str(folder)) == 0
    out, err = capsys.readouterr()
    assert "3 notes adopted (3 given an id)" in out  # a user's own `id:` is theirs: duplicates stop nothing
    assert "not adopted: notes/c.md (unreadable: malformed YAML" in err
    assert "has the id of" not in err
    assert (folder / "notes" / "b.md").read_text(encoding="utf-8").endswith("id: aaaaaaaaaaaa\n---\nTwo.\n")
    assert not (folder / "daily").exists()  # no lowercase twin of the vault's Daily/
    m = Memory(folder, embedder=embedder)
    result = m.daily("Fixed the login bug")
    assert result.path == "Daily/2026-11-30.md" and result.action == "appended"
    body = m.read(result.id, count_access=False).body
    assert body.startswith("Went hiking.\n") and "Fixed the login bug" in body
