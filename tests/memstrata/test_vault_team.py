"""`mem sync --remote` in an adopted vault (real git, a bare remote, two clones): what git shares is
the notes and the engine's truth in `.memstrata/` (config, root index, kept versions, access
journal), never derived data, the trash, locks or temp files, and nothing is added at the vault's
top; edits on both sides merge by the team rules with the vault's `mem-id:` key; doctor is clean."""
import os
import subprocess
from pathlib import Path

import pytest

from memstrata import Memory


@pytest.fixture(autouse=True)
def _clock(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


NOTES = {
    "Welcome.md": "# Welcome\nThis vault is about sailing boats.\n",
    "Zettel/202301011200 rigging.md": "---\nid: 202301011200\ntags: [zk]\n---\nThe mast is stepped on the keel.\n",
    "Projects/garden.md": "Plant tomatoes in May.\n",
    "Daily/2026-11-29.md": "Went hiking in the hills.\n",
    ".obsidian/app.json": '{"theme": "dark"}',
    "config.md": "---\nfont: serif\n---\nHow I set up Obsidian and memstrata.\n",  # the user's own note
}


def vault_in_git(tmp_path, embedder, notes: dict, modes: dict | None = None) -> tuple[Memory, Path]:
    """A user's vault (`notes`, with the file `modes` the user gave some) already in git with a bare
    remote `origin`, adopted as machine "laptop" and pushed; (the vault, the bare remote)."""
    bare, a_root = tmp_path / "r.git", tmp_path / "a"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    for rel, text in notes.items():
        (a_root / rel).parent.mkdir(parents=True, exist_ok=True)
        (a_root / rel).write_text(text)
    for rel, mode in (modes or {}).items():
        os.chmod(a_root / rel, mode)
    git(a_root, "init", "-q")
    git(a_root, "add", "-A")
    git(a_root, "commit", "-q", "-m", "the user's vault")
    git(a_root, "remote", "add", "origin", str(bare))
    a = Memory(a_root, embedder=embedder)
    a.init(adopt=True)
    git(a_root, "config", "memstrata.machine", "laptop")
    assert a.sync_remote()["pushed"]
    return a, bare


def adopted_pair(tmp_path, embedder) -> tuple[Memory, Memory]:
    """A user's vault already in git, adopted and pushed to a bare remote, and a second clone of it."""
    a, bare = vault_in_git(tmp_path, embedder, NOTES)
    b = Memory(tmp_path / "b", embedder=embedder)
    b.clone(str(bare), machine="desktop")
    return a, b


def ids(m: Memory) -> dict[str, str]:
    return {e.path: e.id for e in m.list()}


def test_what_an_adopted_vault_shares_through_git(tmp_path, embedder):
    a, b = adopted_pair(tmp_path, embedder)
    tracked = set(git(a.root, "ls-files").split())
    assert {".memstrata/config.md", ".memstrata/INDEX.md", ".memstrata/.gitignore"} <= tracked
    assert {"Welcome.md", "Projects/garden.md", ".obsidian/app.json"} <= tracked
    engine = {p for p in tracked if p.startswith(".memstrata/")}
    assert not [p for p in engine if p.split("/")[1] in ("cache", "vectors", "trash", "quarantine", ".lock")]
    assert not {".gitattributes", ".gitignore", "INDEX.md"} & tracked  # nothing added at the vault's top
    assert git(a.root, "show", "HEAD:config.md").startswith("---\nmem-id: ")  # the user's config.md: a note
    assert "*.md -merge" in (Path(git(a.root, "rev-parse", "--absolute-git-dir").strip()) / "info/attributes").read_text()
    assert ids(b) == ids(a) and len(ids(a)) == 5
    assert b.recall("sailing boats").results[0].path == "Welcome.md"
    assert b.doctor().findings == [] and a.doctor().findings == []
    assert git(b.root, "status", "--porcelain") == ""


def test_edits_on_both_clones_of_an_adopted_vault_merge(tmp_path, embedder):
    a, b = adopted_pair(tmp_path, embedder)
    known = ids(a)
    zettel, daily = known["Zettel/202301011200 rigging.md"], known["Daily/2026-11-29.md"]
    # a: a hand edit of a top-level note, a new note without a category, an edit of the Zettel note
    welcome = a.root / "Welcome.md"
    welcome.write_text(welcome.read_text().replace("sailing boats", "sailing boats and dinghies"))
    new = a.write("Buy a new jib before the regatta.", title="Jib")
    a.update(zettel, "The mast is stepped on deck.")
    # b: a hand edit in a folder, a delete, and an edit of the same Zettel note (the conflict rule)
    garden = b.root / "Projects/garden.md"
    garden.write_text(garden.read_text().replace("May", "late May"))
    b.delete(daily)
    b.update(zettel, "The mast is stepped through the deck onto the keel.")
    for m in (a, b, a):
        m.sync()
        result = m.sync_remote()
        assert not result["skipped"], result
    for m in (a, b):
        assert git(m.root, "status", "--porcelain") == ""
        paths = ids(m)
        assert set(paths) == {"Welcome.md", "jib.md", "Zettel/202301011200 rigging.md", "Projects/garden.md",
                              "config.md"}
        assert paths["jib.md"] == new.id and paths["Zettel/202301011200 rigging.md"] == zettel
        assert "dinghies" in (m.root / "Welcome.md").read_text()
        assert "late May" in (m.root / "Projects/garden.md").read_text()
        text = (m.root / "Zettel/202301011200 rigging.md").read_text()
        assert "id: 202301011200\n" in text and f"mem-id: {zettel}\n" in text  # the user's key stays theirs
        history = m.history(zettel)
        # the note holds no `history:` (none of the engine's keys): the versions are the kept files
        assert [h["version"] for h in history] == [1, 2, 3] and history[2]["current"]
        # ... and the conflict's lines (date, machines, why) are kept beside them, `.memstrata/versions/{id}/vN.json`
        assert all(h["date"] for h in history), history
        lost, won = history[1]["summary"], history[2]["summary"]
        assert lost.endswith("; kept, lost a conflict with laptop)") or lost.endswith("; kept, lost a conflict with desktop)")
        assert "won a conflict with" in won and ("(by laptop;" in won) != ("(by laptop;" in lost), history
        assert not [line for line in text.splitlines() if line.startswith(("version:", "history:", "tier:"))]
        assert (m.root / f".memstrata/versions/{zettel}/v2.md").is_file()
        assert daily in {t.id for t in m.trash_list()}  # b's delete is in a's trash too
        assert m.recall("regatta jib").results[0].id == new.id
        assert (m.root / "config.md").read_text().endswith("---\nHow I set up Obsidian and memstrata.\n")
        assert not (m.root / ".gitattributes").exists()
        assert not [p for p in git(m.root, "ls-files").split() if p.endswith(".tmp") or "/trash/" in p]
        report = m.doctor()
        assert report.findings == [], [f.to_dict() for f in report.findings]


def test_a_peers_engine_settings_in_a_vault_are_guarded_and_the_users_config_md_is_untouched(tmp_path, embedder):
    from memstrata.errors import SecretDetected

    a, b = adopted_pair(tmp_path, embedder)
    users = (b.root / "config.md").read_bytes()
    engine = a.root / ".memstrata/config.md"  # a peer with plain git weakens the secret guard
    engine.write_text(engine.read_text().replace("---\n", "---\nsecrets: warn\nhot_days: 5\n", 1))
    git(a.root, "commit", "-q", "-am", "settings")
    git(a.root, "push", "-q", "origin", "HEAD")
    result = b.sync_remote()
    assert [h["setting"] for h in result["settings_held_back"]] == ["secrets"]
    again = Memory(b.root, embedder=embedder)
    assert again.settings.secrets == "refuse" and again.settings.hot_days == 5
    with pytest.raises(SecretDetected):
        again.write("aws key " + "AK" + "IA" + "Q3EGRB7ZNX5LMW2P", title="creds")  # real-looking: a documented example passes
    assert (b.root / "config.md").read_bytes() == users  # the vault's own config.md: a note, never the engine's
    assert again.doctor().findings == []


def test_a_peers_gitignore_never_takes_engine_files_or_notes_out_of_git(tmp_path):
    from memstrata.features.team import engine_ignores
    from memstrata.storage import layout, tree

    vault = tmp_path / "v"
    (vault / ".memstrata").mkdir(parents=True)
    (vault / ".memstrata/config.md").write_text("---\n---\nmemstrata\n")
    assert layout.is_adopted(vault)
    (vault / ".memstrata/.gitignore").write_text("*\n")  # a peer's commit
    assert tree.ensure_gitignore(vault) and (vault / ".memstrata/.gitignore").read_text() == layout.ADOPTED_GITIGNORE
    assert not tree.ensure_gitignore(vault)
    for kept in (".memstrata/config.md", ".memstrata/INDEX.md", ".memstrata/versions/x.md", "notes/a.md", "a.md"):
        assert not engine_ignores(vault, kept), kept
    for out in (".memstrata/vectors/t.lance", ".memstrata/.lock", ".memstrata/cache/c.db", ".memstrata/.a.1.f.tmp"):
        assert engine_ignores(vault, out), out
    plain = tmp_path / "tree"
    plain.mkdir()
    assert engine_ignores(plain, ".vectors/chunks.lance/x") and engine_ignores(plain, "p/.lock")
    assert not engine_ignores(plain, "projects/a.md") and not engine_ignores(plain, "config.md")


def test_the_prompt_hooks_session_record_stays_in_memstrata_and_out_of_git(tmp_path, embedder):
    a, _ = adopted_pair(tmp_path, embedder)
    hook = a.autoload("which boats is this vault about? sailing boats", hot=False, session_id="s1")
    assert [i.entry.path for i in hook.items] == ["Welcome.md"]
    assert list((a.root / ".memstrata" / "cache" / "hook-sessions").glob("*.json"))
    assert not (a.root / ".cache").exists()  # nothing written among the user's folders
    assert git(a.root, "status", "--porcelain", "--untracked-files=all") == ""
    a.sync_remote()
    assert not [p for p in git(a.root, "ls-files").split() if "hook-sessions" in p]


def test_a_plain_trees_hook_sessions_are_never_committed(tmp_path, embedder):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from team_scenario import two_clones

    a, _ = two_clones(tmp_path, embedder)
    a.write("The mast is stepped on the keel.", title="Rigging", category="boats")
    assert a.autoload("where is the mast of the boat stepped?", hot=False, session_id="s1").items
    assert list((a.root / ".cache" / "hook-sessions").glob("*.json"))
    assert a.sync_remote()["pushed"]
    assert not [p for p in git(a.root, "ls-files").split() if p.startswith(".cache")]
    assert git(a.root, "status", "--porcelain", "--untracked-files=all") == ""


def test_mem_init_clone_of_a_vault_reports_the_notes_it_embedded_once(tmp_path, embedder):
    """`mem init --clone` of an adopted vault embeds its notes once and says so (it printed "index: 0
    embedded": the init had embedded them all, the count shown was the empty sync after it)."""
    import json
    import sys

    adopted_pair(tmp_path, embedder)
    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "HF_HUB_OFFLINE": "1"}

    def clone(name: str, *json_flag: str) -> str:
        done = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "init", "--clone", str(tmp_path / "r.git"),
                               "--machine", name, "--root", str(tmp_path / name), *json_flag],
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    data = json.loads(clone("c", "--json"))
    assert data["index"]["embedded"] == 5 and "index" not in data["init"]
    text = clone("d")
    assert text.count("embedded") == 1 and "index: 5 embedded" in text
