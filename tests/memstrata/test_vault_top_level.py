"""Notes at an adopted vault's top level are entries (category "", shown "/"): Obsidian keeps new
notes there. Adopting adds one `mem-id:` line to each (git shows nothing else), recall finds them,
`mem sync` follows edits, renames and deletes, writes without a category land there, the trash
brings them back there; README.md and config.md are the user's notes; trees made by `mem init` keep
their rule (entries in folders)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Memory

PY = sys.executable


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:00:00Z")
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def git(root: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@x")
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout


NOTES = {
    "Welcome.md": "# Welcome\nThis vault is about sailing boats and their rigging.\n",
    "README.md": "---\ntheme: dark\n---\n# My vault\nRead me first.\n",
    "config.md": "---\nfont: serif\n---\nHow I set up memstrata and Obsidian.\n",  # the user's, not the engine's
    "Daily/2026-11-29.md": "Went hiking in the hills.\n",
}


def make_vault(vault: Path) -> None:
    for rel, text in {**NOTES, "CLAUDE.md": "Instructions for Claude.\n"}.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text)
    git(vault, "init", "-q")
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "the user's vault")


def test_top_level_notes_are_adopted_with_one_id_line_and_found(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    make_vault(vault)
    m = Memory(vault, embedder=embedder)
    result = m.init(adopt=True)
    assert result["entries"] == 4 and result["skipped"] == ["not adopted: CLAUDE.md (a reserved name)"]
    # git sees one added line per note with frontmatter, the id block for one without, nothing removed
    numstat = {line.split("\t")[2]: line.split("\t")[:2] for line in git(vault, "diff", "--numstat").splitlines()}
    assert numstat == {"README.md": ["1", "0"], "config.md": ["1", "0"], "Welcome.md": ["4", "0"],
                       "Daily/2026-11-29.md": ["4", "0"]}
    added = [line for line in git(vault, "diff", "-U0").splitlines() if line.startswith("+") and line[:4] != "+++ "]
    assert sorted(set(line if not line.startswith("+mem-id: ") else "+mem-id" for line in added)) == ["+", "+---",
                                                                                                   "+mem-id"]
    assert git(vault, "show", "HEAD:CLAUDE.md") == (vault / "CLAUDE.md").read_text()  # an agent's file: untouched
    assert not [p for p in os.listdir(vault) if p not in (".git", ".memstrata", "Daily", "CLAUDE.md", *NOTES)]  # nothing else
    listed = {e.path: e for e in m.list()}
    assert listed["Welcome.md"].category == "" and listed["README.md"].category == ""
    hit = m.recall("sailing rigging").results[0]
    assert hit.path == "Welcome.md" and hit.category == ""
    assert [e.path for e in m.list(category="/")] == sorted(listed)  # "/" is the whole vault
    assert [e.path for e in m.list(category="Daily")] == ["Daily/2026-11-29.md"]
    assert "| [/](<../>) |  | 3 | 4 |" in (vault / ".memstrata/INDEX.md").read_text()
    assert m.doctor().healthy
    shown = subprocess.run([str(Path(PY).parent / "mem"), "list", "--root", str(vault)], capture_output=True,
                           text=True, timeout=300, env=dict(os.environ, COLUMNS="200"))
    assert shown.returncode == 0 and "│ /        │" in shown.stdout, shown.stdout + shown.stderr


def test_sync_follows_edits_renames_and_deletes_of_top_level_notes(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    make_vault(vault)
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    welcome = {e.path: e for e in m.list()}["Welcome.md"].id
    text = (vault / "Welcome.md").read_text().replace("sailing boats and their rigging", "growing tomatoes")
    (vault / "Welcome.md").write_text(text)
    (vault / "Welcome.md").rename(vault / "Start here.md")
    (vault / "README.md").unlink()
    (vault / "Inbox.md").write_text("Call the plumber about the leaking kitchen tap.\n")
    m.sync()
    listed = {e.path: e for e in m.list()}
    assert set(listed) == {"Start here.md", "config.md", "Inbox.md", "Daily/2026-11-29.md"}
    assert listed["Start here.md"].id == welcome  # the id is in the file: a rename keeps it
    assert m.recall("growing tomatoes").results[0].id == welcome
    assert m.recall("leaking kitchen tap").results[0].path == "Inbox.md"
    assert (vault / "Inbox.md").read_text().startswith("---\nmem-id: ")
    assert m.doctor().healthy


def test_writes_trash_and_restore_at_the_top_level(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    make_vault(vault)
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    written = m.write("Buy a new jib before the regatta.", title="Jib")
    assert written.path == "jib.md" and not (vault / "general").exists()  # no folder made for it
    readme = m.write("Not the vault's README.", title="README", force=True)  # force: no conflict check
    assert readme.path == "readme-entry.md" and (vault / "README.md").read_text().endswith("Read me first.\n")
    moved = m.update(written.id, category="Boats")
    assert moved.path == "Boats/jib.md"
    back = m.update(written.id, category="/")
    assert back.path == "jib.md"
    welcome = {e.path: e for e in m.list()}["Welcome.md"].id
    m.delete(welcome)
    assert not (vault / "Welcome.md").exists() and [i.trashed_from for i in m.trash_list()] == ["Welcome.md"]
    restored = m.restore(welcome)
    assert restored.path == "Welcome.md" and restored.category == ""
    assert "This vault is about sailing boats" in (vault / "Welcome.md").read_text()
    assert m.doctor().healthy


def test_a_tree_made_by_mem_init_keeps_entries_in_folders(tmp_path, clock, embedder):
    root = tmp_path / "tree"
    m = Memory(root, embedder=embedder)
    m.init()
    (root / "loose.md").write_text("A note at the top of a tree made by mem init.\n")
    m.sync()
    assert "loose.md" not in {e.path for e in m.list()}
    assert (root / "loose.md").read_text() == "A note at the top of a tree made by mem init.\n"
    assert m.write("Filed.", title="Filed").path == "general/filed.md"


def test_mem_init_without_adopt_refuses_a_vault_whose_notes_are_all_at_the_top(tmp_path, clock, embedder):
    from memstrata.errors import InvalidInput

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Welcome.md").write_text("# Welcome\n")  # a new Obsidian vault: one note, at the top
    with pytest.raises(InvalidInput, match="--adopt"):
        Memory(vault, embedder=embedder).init()
    assert sorted(os.listdir(vault)) == ["Welcome.md"]
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# A project\n")  # a README alone is no vault
    Memory(repo, embedder=embedder).init()
    assert (repo / "config.md").is_file() and (repo / "README.md").read_text() == "# A project\n"


def test_the_warm_service_takes_calls_for_an_adopted_vault(tmp_path, clock, embedder):
    from memstrata.service import client

    vault = tmp_path / "vault"
    make_vault(vault)
    Memory(vault, embedder=embedder).init(adopt=True)
    assert client.is_tree(str(vault))  # its settings are in .memstrata/: calls go to the service
    (vault / ".memstrata/config.md").write_text((vault / ".memstrata/config.md").read_text().replace(
        "---\n", "---\nservice: off\n", 1))
    os.environ.pop("MEMSTRATA_SERVICE", None)
    assert client.service_mode(str(vault)) == "off"


def test_a_template_whose_frontmatter_is_not_yaml_is_left_where_it_is(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    make_vault(vault)
    template = vault / "templates/Daily Note.md"
    template.parent.mkdir()
    template.write_text("---\ndate: {{date}}\ntags: daily\n---\n# {{title}}\n")
    before = template.read_bytes()
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    for fix in (False, True):
        report = m.doctor(fix=fix)
        assert report.healthy, report.to_dict()
        said = [f for f in report.findings if f.kind == "unparseable"]
        assert [(f.path, f.fixable, f.fixed) for f in said] == [("templates/Daily Note.md", False, False)]
    assert template.read_bytes() == before  # never quarantined: a team sync would push it as deleted
    from memstrata.doctor import report_lines

    assert [line for line in report_lines(report) if "Daily Note" in line][0].startswith("[note] unparseable")
