"""A peer's config.md through real git: what would disarm or break this machine is held back, the rest applies."""
import subprocess

import pytest

from memstrata.errors import SecretDetected
from memstrata.storage.config import changed_settings


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def _one_clone(tmp_path, embedder):
    """A bare remote and one clone holding one synced entry."""
    from memstrata import Memory

    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True)
    a = Memory(tmp_path / "a", embedder=embedder)
    a.clone(str(tmp_path / "r.git"), machine="laptop")
    a.write("The backup runs at midnight.", title="Backups", category="ops")
    a.sync_remote()
    return a


def _push_config(tmp_path, text: str) -> None:
    """A hostile peer with plain git rewrites config.md's settings block and pushes."""
    peer = tmp_path / "peer"
    if not peer.exists():
        subprocess.run(["git", "clone", "-q", str(tmp_path / "r.git"), str(peer)], check=True)
    git = ["git", "-C", str(peer), "-c", "user.name=p", "-c", "user.email=p@x"]
    subprocess.run([*git, "pull", "-q", "--no-rebase"], check=True)
    (peer / "config.md").write_text(f"---\n{text}---\nmemstrata settings\n")
    subprocess.run([*git, "commit", "-q", "-am", "settings"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD"], check=True)


def test_a_peer_cannot_disarm_the_secret_guard_or_break_the_tree(tmp_path, embedder):
    from memstrata import Memory

    a = _one_clone(tmp_path, embedder)
    _push_config(tmp_path, "secrets: warn\nmax_entry_bytes: 100000000\nembedding_model: /nonexistent/model\n"
                           "hot_days: 5\n")
    result = a.sync_remote()
    held = {h["setting"]: h for h in result["settings_held_back"]}
    assert set(held) == {"secrets", "max_entry_bytes", "embedding_model"}
    assert "weaken the secret guard" in held["secrets"]["why"] and "not valid here" in held["max_entry_bytes"]["why"]
    again = Memory(tmp_path / "a", embedder=embedder)
    assert again.settings.secrets == "refuse" and again.settings.hot_days == 5  # the harmless change applies
    with pytest.raises(SecretDetected):
        again.write("aws key " + "AK" + "IA" + "Q3EGRB7ZNX5LMW2P", title="creds", category="ops")  # real-looking: a documented example passes
    assert again.recall("when does the backup run?").results  # still works: model and limits as before
    # what this machine pushed back is what the remote holds now: nobody trades the setting back and forth
    subprocess.run(["git", "clone", "-q", str(tmp_path / "r.git"), str(tmp_path / "look")], check=True)
    remote = (tmp_path / "look" / "config.md").read_text()
    assert "secrets: warn" not in remote and "100000000" not in remote and "hot_days: 5" in remote
    assert changed_settings(tmp_path / "a") == {"hot_days": 5}
    assert again.sync_remote()["settings_held_back"] == []


def test_a_pushed_lock_symlink_is_fixed_once_and_leaves_the_teams_tree(tmp_path, embedder):
    from memstrata import Memory
    from memstrata.errors import Locked

    a = _one_clone(tmp_path, embedder)
    peer = tmp_path / "peer"
    subprocess.run(["git", "clone", "-q", str(tmp_path / "r.git"), str(peer)], check=True)
    (peer / ".lock").symlink_to("/etc/passwd")
    git = ["git", "-C", str(peer), "-c", "user.name=p", "-c", "user.email=p@x"]
    subprocess.run([*git, "add", "-f", ".lock"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "lock"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD"], check=True)
    a.sync_remote()
    with pytest.raises(Locked, match="doctor --fix"):
        Memory(tmp_path / "a", embedder=embedder).write("x y z", title="T", category="ops")
    Memory(tmp_path / "a", embedder=embedder).doctor(fix=True)
    Memory(tmp_path / "a", embedder=embedder).sync_remote()
    listed = subprocess.run(["git", "-C", str(tmp_path / "r.git"), "ls-tree", "-r", "--name-only", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert ".lock" not in listed and "ops/backups.md" in listed
    assert Memory(tmp_path / "a", embedder=embedder).write("x y z", title="T", category="ops").action == "created"


def test_a_peer_cannot_make_this_machine_forget_or_purge_sooner(tmp_path, embedder):
    from memstrata import Memory

    a = _one_clone(tmp_path, embedder)
    _push_config(tmp_path, "forget_after_days: 0\ntrash_retention_days: 0\nhot_days: 5\n")
    result = a.sync_remote()
    held = {h["setting"]: h for h in result["settings_held_back"]}
    assert set(held) == {"forget_after_days", "trash_retention_days"}, result["settings_held_back"]
    assert all("sooner" in h["why"] for h in held.values())
    again = Memory(tmp_path / "a", embedder=embedder)
    assert (again.settings.forget_after_days, again.settings.trash_retention_days) == (180, 30)
    assert again.settings.hot_days == 5
    _push_config(tmp_path, "forget_after_days: 365\ntrash_retention_days: 60\nhot_days: 5\n")  # later: applies
    assert again.sync_remote()["settings_held_back"] == []
    assert Memory(tmp_path / "a", embedder=embedder).settings.forget_after_days == 365


def test_a_machines_own_lower_forget_after_days_survives_a_peers_echo(tmp_path, embedder):
    """A sets forget_after_days 0 itself; B holds it back and pushes its default (the echo). A keeps its 0
    (never committed), config.md keeps the team's default, and further syncs trade nothing back and forth."""
    from memstrata import Memory
    from memstrata.features.gitrepo import Git

    a = _one_clone(tmp_path, embedder)
    b = Memory(tmp_path / "b", embedder=embedder)
    b.clone(str(tmp_path / "r.git"), machine="desktop")
    a.config_set("forget_after_days", 0)
    a.sync_remote()
    held = b.sync_remote()["settings_held_back"]
    assert [h["setting"] for h in held] == ["forget_after_days"]
    echo = a.sync_remote()
    assert [(h["setting"], h["kept"]) for h in echo["settings_held_back"]] == [("forget_after_days", 0)]
    assert echo["settings_pulled"] == []
    assert Memory(tmp_path / "a", embedder=embedder).settings.forget_after_days == 0
    assert Memory(tmp_path / "b", embedder=embedder).settings.forget_after_days == 180
    assert "forget_after_days" not in changed_settings(tmp_path / "a")  # the team's file: B's default
    head = Git(tmp_path / "r.git").out("rev-parse", "HEAD")
    for _ in range(2):
        assert b.sync_remote()["settings_held_back"] == [] and a.sync_remote()["settings_held_back"] == []
    assert Git(tmp_path / "r.git").out("rev-parse", "HEAD") == head  # converged: no commit traded it back
    assert Memory(tmp_path / "a", embedder=embedder).settings.forget_after_days == 0
    a.config_set("forget_after_days", 400)  # set by hand again: config.md decides, for everyone
    assert Memory(tmp_path / "a", embedder=embedder).settings.forget_after_days == 400
