"""Team memory through real git: a bare remote, three clones written by the CLI, the API and MCP, syncing at random."""
import subprocess
import sys

import anyio
import pytest

from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from team_scenario import Team, plain_git_peer, two_clones  # noqa: E402  (shared with bench/team_sync.py)


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def test_three_writers_three_clones_lose_nothing(tmp_path, embedder):
    team = Team(tmp_path, embedder, seed=18)
    anyio.run(team.run, 20)
    figures = team.check()
    assert figures["writes"] > 0 and figures["syncs"] >= 5


def test_both_changed_one_entry_is_the_conflict_rule(tmp_path, embedder):
    a, b = two_clones(tmp_path, embedder, "laptop", "desktop")
    r = a.write("The release train leaves on Thursdays.", title="Release day", category="ops")
    a.sync_remote()
    b.sync_remote()
    b.update(r.id, "The release train leaves on Fridays.")
    a.read(r.id)  # an access on one side only: never a conflict on its own
    a.update(r.id, "The release train leaves on Wednesdays.")
    assert b.sync_remote()["pushed"]
    result = a.sync_remote()
    assert [c["kind"] for c in result["conflicts"]] == ["conflict"]
    b.sync_remote()
    for m in (a, b):
        current = m.read(r.id, count_access=False)
        assert current.body.strip() == "The release train leaves on Wednesdays."  # the newer one
        history = m.history(r.id)
        assert [h["version"] for h in history] == [1, 2, 3]
        assert "by desktop" in history[1]["summary"] and "lost a conflict" in history[1]["summary"]
        assert "by laptop" in history[2]["summary"]
        assert m.history_show(r.id, 2).strip() == "The release train leaves on Fridays."
        found = m.recall("when does the release train leave?", k=1, min_relevance=0)
        assert found.results and found.results[0].id == r.id, (found.strategy, found.notes)
        assert m.doctor().findings == []


def test_delete_against_edit_keeps_the_edit_and_reads_do_not(tmp_path, embedder):
    a, b = two_clones(tmp_path, embedder, "a", "b")
    kept = a.write("Backups run nightly at 02:00.", title="Backups", category="ops")
    gone = a.write("The office plant needs water on Mondays.", title="Plant", category="misc")
    a.sync_remote()
    b.sync_remote()
    a.delete(kept.id)
    b.update(kept.id, "Backups run nightly at 03:00 since the move.")
    b.delete(gone.id)
    a.read(gone.id)  # only read on a: the delete wins
    a.sync_remote()
    b.sync_remote()
    a.sync_remote()
    for m in (a, b):
        assert m.read(kept.id, count_access=False).body.strip() == "Backups run nightly at 03:00 since the move."
        assert gone.id not in {e.id for e in m.list()}
        assert gone.id in {t.id for t in m.trash_list()}  # the other machine's delete lands in this trash too
        assert m.doctor().findings == []


def test_sync_needs_a_git_tree(tmp_path):
    from memstrata import Memory
    from memstrata.errors import InvalidInput

    m = Memory(tmp_path / "plain")
    m.init()
    with pytest.raises(InvalidInput, match="not a git repository"):
        m.sync_remote()
    done = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "sync", "--remote", "--root", str(tmp_path / "plain")], capture_output=True,
                          text=True)
    assert done.returncode == 2 and done.stderr.startswith("mem: error: ") and done.stderr.count("\n") == 1
    # no tree there at all: said so (it used to read "git is not installed")
    missing = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "sync", "--remote", "--root",
                              str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert missing.returncode == 3 and "no memory tree" in missing.stderr and "not installed" not in missing.stderr
    assert not (tmp_path / "nowhere").exists()


def test_a_pulled_symlink_is_reported_and_never_followed(tmp_path, embedder):
    """A peer commits `notes/leak.md -> a file outside the tree`: the sync names it, nothing reads it."""
    secret = tmp_path / "outside.md"
    secret.write_text("---\nid: aaaaaaaaaaaa\ntitle: Outside\n---\nthe outside secret is swordfish\n")
    a, b = two_clones(tmp_path, embedder, "laptop", "desktop")
    a.write("The backup runs at midnight.", title="Backups", category="ops")
    a.sync_remote()
    peer, git = plain_git_peer(tmp_path)
    (peer / "notes").mkdir()
    (peer / "notes" / "leak.md").symlink_to(secret)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "leak"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD"], check=True)
    result = b.sync_remote()
    assert {"path": "notes/leak.md", "kind": "symlink"} in result["ignored"]
    assert all("swordfish" not in (e.body or "") for e in b.list())
    found = b.recall("what is the outside secret?", min_relevance=0)
    assert all("swordfish" not in (h.snippet or "") for h in found.results)


def test_a_peers_merge_attribute_never_merges_two_texts(tmp_path, embedder):
    """A peer appends `*.md merge=union` to .gitattributes: both changed texts still go
    through the conflict rule (one current, one kept), never pasted together."""
    from memstrata import Memory

    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True)
    a = Memory(tmp_path / "a", embedder=embedder)
    a.clone(str(tmp_path / "r.git"), machine="laptop")
    r = a.write("The rate limit is 100 requests per minute per key.", title="Rate limit", category="ops")
    a.sync_remote()
    peer, git = plain_git_peer(tmp_path)
    with open(peer / ".gitattributes", "a") as f:
        f.write("*.md merge=union\n")
    subprocess.run([*git, "commit", "-qam", "union"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD"], check=True)
    a.sync_remote()  # the attribute arrives first (a fast-forward) ...
    entry = peer / r.path  # ... then two machines change one entry
    entry.write_text(entry.read_text().replace("100 requests", "300 requests"))
    subprocess.run([*git, "commit", "-qam", "300"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD"], check=True)
    a.update(r.id, "The rate limit is 500 requests per minute per key.")
    result = a.sync_remote()
    assert [c["kind"] for c in result["conflicts"]] == ["conflict"]
    body = a.read(r.id, count_access=False).body
    assert body.count("requests per minute") == 1, body


def _status(m) -> str:
    return subprocess.run(["git", "-C", str(m.root), "status", "--porcelain", "--untracked-files=all"],
                          capture_output=True, text=True, check=True).stdout


def test_reads_stay_out_of_git_until_a_sync_shares_them(tmp_path, embedder):
    """Reads go to the git-ignored pending journal; a sync moves them into `.access/<machine>.log`
    right before it commits, the other clone counts them after pulling, and a fold on either
    side counts each read once."""
    from memstrata.storage import journal

    a, b = two_clones(tmp_path, embedder, "laptop", "desktop")
    r = a.write("The staging database is rebuilt every Sunday.", title="Staging", category="ops")
    a.sync_remote()
    b.sync_remote()
    for _ in range(3):
        b.read(r.id)
    assert _status(b) == "" and b.read(r.id, count_access=False).access_count == 3
    result = b.sync_remote()
    assert result["accesses_shared"] == 3 and result["pushed"] and _status(b) == ""
    assert (b.root / ".access" / "desktop.log").is_file()
    assert not list((b.root / journal.PENDING_DIR).iterdir())
    assert b.read(r.id, count_access=False).access_count == 3  # moved, not doubled
    a.sync_remote()
    assert a.read(r.id, count_access=False).access_count == 3  # the peer's reads, pulled
    assert a.maintain().accesses_folded == 0  # the peer's reads are the peer's to fold
    assert b.maintain().accesses_folded == 1
    b.sync_remote()
    a.sync_remote()
    for m in (a, b):
        assert m.read(r.id, count_access=False).access_count == 3, m.root  # folded once, in the entry
        assert not (m.root / ".access" / "desktop.log").exists()


def test_two_clones_with_one_machine_name_keep_both_sides_reads(tmp_path, embedder):
    """Two clones that share a machine name append to one tracked journal file: the merge keeps both sides' lines."""
    a, b = two_clones(tmp_path, embedder, "twin", "twin")
    r = a.write("The VPN certificate expires in March.", title="VPN", category="ops")
    a.read(r.id)
    a.sync_remote()
    b.sync_remote()
    a.read(r.id)
    b.read(r.id)
    b.read(r.id)
    a.sync_remote()
    result = b.sync_remote()
    assert [c["kind"] for c in result["conflicts"]] == ["merged_lines"]
    a.sync_remote()
    for m in (a, b):
        assert m.read(r.id, count_access=False).access_count == 4, m.root
        assert _status(m) == ""


def test_two_clones_on_one_host_get_their_own_names_and_fold_each_read_once(tmp_path, embedder, monkeypatch):
    """Two clones of one team tree on one host, no machine name given: each takes its own name (the
    host name and a token kept in its git config), so their journal files differ and each folds
    only its own reads (one shared `.access/<host>.log` was folded by both: reads counted twice)."""
    import socket

    from memstrata import Memory
    from memstrata.features.gitrepo import Git

    monkeypatch.delenv("MEMSTRATA_MACHINE", raising=False)
    a, b = two_clones(tmp_path, embedder, None, None)
    r = a.write("The VPN certificate expires in March.", title="VPN", category="ops")
    a.sync_remote()
    b.sync_remote()
    a.read(r.id)
    b.read(r.id)
    b.read(r.id)
    for m in (a, b, a, b):
        m.sync_remote()
    names = [Git(m.root).machine() for m in (a, b)]
    assert names[0] != names[1] and all(n.startswith(socket.gethostname() + "-") for n in names), names
    assert names == [Git(m.root).machine() for m in (a, b)]  # stable: kept in each clone's git config
    assert sorted(p.name for p in (a.root / ".access").glob("*.log")) == sorted(f"{n}.log" for n in names)
    assert a.maintain().accesses_folded == 1 and b.maintain().accesses_folded == 1
    for m in (a, b, a):
        m.sync_remote()
    for m in (a, b):
        assert Memory(m.root, embedder=embedder).read(r.id, count_access=False).access_count == 3, m.root
        assert {p.name for p in (m.root / ".access").glob("*.days")} == {f"{n}.days" for n in names}, m.root


def test_a_lone_repository_keeps_the_host_name():
    from memstrata.features.gitrepo import own_machine_name

    assert own_machine_name("laptop", cloned=False, token="3f9a2c") == "laptop"
    assert own_machine_name("laptop", cloned=True, token="3f9a2c") == "laptop-3f9a2c"


def test_an_edit_of_an_entry_deleted_beside_another_update_stays_with_its_entry(tmp_path, embedder):
    """One machine deletes X and updates Y in one sync (Y's old text becomes .versions/Y/v1.md);
    the other adds a tag to X and syncs first. X and Y are alike, so git's merge pairs X's delete
    with Y's new version file (a "rename"). The edit wins over the delete: X comes back with the
    tag on both machines, and Y's kept versions hold Y's texts only."""
    a, b = two_clones(tmp_path, embedder, "a", "b")
    text = ("The staging database is refreshed every {} night at 23:00 from the production backup; the refresh "
            "takes two hours and the staging site is down meanwhile, so nobody deploys to staging then.")
    x = a.write(text.format("Sunday"), title="Staging refresh", category="ops", force=True)
    y = a.write(text.format("Monday"), title="Staging refresh two", category="ops", force=True)
    a.sync_remote()
    b.sync_remote()
    a.delete(x.id)
    a.update(y.id, text.format("Monday") + " Since May it runs at 22:00.")
    b.update(x.id, add_tags=["database"])
    assert b.sync_remote()["pushed"]
    result = a.sync_remote()
    assert [(c["kind"], c["path"]) for c in result["conflicts"]] == [("kept_edit", x.path)], result["conflicts"]
    b.sync_remote()
    for m in (a, b):
        kept = m.read(x.id, count_access=False)
        assert "database" in kept.tags and "every Sunday night" in kept.body, m.root
        assert x.id in {e.id for e in m.list()}, m.root
        assert sorted(p.name for p in (m.root / ".versions" / y.id).iterdir()) == ["v1.md"], m.root
        assert "every Monday night" in (m.root / ".versions" / y.id / "v1.md").read_text()
        assert [h["version"] for h in m.history(y.id)] == [1, 2]
        assert m.doctor().findings == [], m.root


def test_a_pushed_gitattributes_never_changes_the_bytes_of_the_tree(tmp_path, embedder):
    """A peer pushes `*.md working-tree-encoding=UTF-16LE-BOM eol=crlf ident filter=x`: pulled entries stay
    the UTF-8 files that were committed, recall finds them, and later syncs still work."""
    from memstrata import Memory

    a, _ = two_clones(tmp_path, embedder, "laptop", "desktop")
    a.write("The backup runs at midnight.", title="Backups", category="ops")
    a.sync_remote()
    peer, git = plain_git_peer(tmp_path)
    (peer / "notes").mkdir()
    note = ("---\nid: 0123456789ab\ntitle: Key rotation\ncategory: notes\n---\n\n"
            "The signing keys of $Id$ rotate every ninety days.\n").encode()
    (peer / "notes" / "rotation.md").write_bytes(note)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "note"], check=True)
    with open(peer / ".gitattributes", "a") as f:
        f.write("*.md working-tree-encoding=UTF-16LE-BOM eol=crlf ident filter=x\n* text eol=crlf\n")
    subprocess.run([*git, "add", ".gitattributes"], check=True)
    subprocess.run([*git, "commit", "-qm", "attributes"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD"], check=True)
    a.sync_remote()
    assert (tmp_path / "a" / "notes" / "rotation.md").read_bytes() == note
    assert b"\r\n" not in (tmp_path / "a" / "INDEX.md").read_bytes()
    found = a.recall("how often do the signing keys rotate?", k=1, min_relevance=0)
    assert found.results and found.results[0].id == "0123456789ab"
    a.write("The VPN certificate expires in March.", title="VPN", category="ops")
    assert a.sync_remote()["pushed"]  # used to fail: git add failed: failed to encode 'INDEX.md'
    b = Memory(tmp_path / "b", embedder=embedder)
    b.sync_remote()
    assert (tmp_path / "b" / "notes" / "rotation.md").read_bytes() == note
    assert a.doctor().findings == [] and b.doctor().findings == []


def test_a_committed_name_too_long_for_the_file_system_never_stops_the_sync(tmp_path, embedder):
    """A peer commits a 300-byte file name (git plumbing): the sync reports it, leaves it out of this tree,
    and still pulls and pushes everything else."""
    from memstrata import Memory

    a, b = two_clones(tmp_path, embedder, "laptop", "desktop")
    a.write("The backup runs at midnight.", title="Backups", category="ops")
    a.sync_remote()
    peer, git = plain_git_peer(tmp_path)
    long = "notes/" + "n" * 300 + ".md"
    blob = subprocess.run([*git, "hash-object", "-w", "--stdin"], input="---\nid: 0123456789ab\n---\nhi\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([*git, "update-index", "--add", "--cacheinfo", f"100644,{blob},{long}"], check=True)
    (peer / "notes" / "fine.md").parent.mkdir(exist_ok=True)
    (peer / "notes" / "fine.md").write_text("---\nid: 0123456789cd\ntitle: Fine\n---\n\nThe lift is out of order.\n")
    subprocess.run([*git, "add", "notes/fine.md"], check=True)
    subprocess.run([*git, "commit", "-qm", "long name"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD"], check=True)
    local = a.write("The VPN certificate expires in March.", title="VPN", category="ops")  # a local commit to push
    result = a.sync_remote()
    assert result["pushed"] and [s["path"] for s in result["skipped"]] == [long]
    assert any("left out of this tree" in w for w in result["warnings"])
    assert a.read("0123456789cd", count_access=False).body.strip() == "The lift is out of order."
    a.update(local.id, "The VPN certificate expires in April.")
    assert a.sync_remote()["pushed"]  # every later sync works too
    b.sync_remote()
    assert b.read(local.id, count_access=False).body.strip() == "The VPN certificate expires in April."
    tree = subprocess.run(["git", "-C", str(tmp_path / "r.git"), "ls-tree", "-r", "--name-only", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.split("\n")
    assert long in tree  # nobody deleted the peer's file from the team's history
    c = Memory(tmp_path / "c", embedder=embedder)
    cloned = c.clone(str(tmp_path / "r.git"), machine="c")  # a new machine: the clone is checked out too
    assert [s["path"] for s in cloned["skipped"]] == [long]
    assert c.read(local.id, count_access=False).body.strip() == "The VPN certificate expires in April."
    done = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "sync", "--remote", "--root",
                           str(tmp_path / "a")], capture_output=True, text=True, env={**__import__("os").environ,
                                                                                      "MEMSTRATA_SERVICE": "off"})
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("scheme", ["http", "git"])
def test_a_remote_that_never_answers_gives_a_one_line_error_in_bounded_time(tmp_path, scheme):
    """A server on 127.0.0.1 accepts connections and never sends a byte: `mem sync --remote` stops after
    the idle timeout (http) or the overall one (git://) with one line on stderr."""
    import os
    import socket
    import threading
    import time

    from memstrata import Memory

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])  # accepted, never answered
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    port = server.getsockname()[1]
    try:
        m = Memory(tmp_path / "t")
        m.init()
        m.write("The backup runs at midnight.", title="Backups", category="ops")
        subprocess.run(["git", "-C", str(tmp_path / "t"), "init", "-q"], check=True)
        url = f"http://127.0.0.1:{port}/team.git" if scheme == "http" else f"git://127.0.0.1:{port}/team.git"
        subprocess.run(["git", "-C", str(tmp_path / "t"), "remote", "add", "origin", url], check=True)
        for key, value in (("git_connect_timeout", "2"), ("git_idle_timeout", "2"), ("git_timeout", "6")):
            m.config_set(key, value)
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "sync", "--remote", "--root",
                               str(tmp_path / "t")], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "MEMSTRATA_SERVICE": "off"})
        took = time.monotonic() - started
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()
    assert done.returncode != 0 and done.stderr.startswith("mem: error: git fetch") and done.stderr.count("\n") == 1, \
        done.stderr
    assert held and took < 40, took  # bounded by the settings, not by the test's own timeout


@pytest.mark.parametrize("who_moves", ["theirs", "ours"])
def test_a_move_crossing_an_edit_ends_with_one_file_per_id(tmp_path, embedder, who_moves):
    """One machine moves an entry to another category (its file to another folder), the other edits it:
    after the syncs there is one file for the id, at the new place, with the edit."""
    a, b = two_clones(tmp_path, embedder, "laptop", "desktop")
    r = a.write("The staging database is refreshed on Sundays.", title="Staging refresh", category="ops")
    a.sync_remote()
    b.sync_remote()
    mover, editor = (b, a) if who_moves == "theirs" else (a, b)
    mover.update(r.id, category="databases")
    editor.update(r.id, "The staging database is refreshed on Saturdays now.")
    (mover if who_moves == "theirs" else editor).sync_remote()
    (editor if who_moves == "theirs" else mover).sync_remote()
    mover.sync_remote()
    editor.sync_remote()
    for m in (a, b):
        files = [p for p in m.root.rglob("*.md") if ".versions" not in p.parts and ".trash" not in p.parts
                 and f"id: {r.id}" in p.read_text()]
        assert len(files) == 1, files
        current = m.read(r.id, count_access=False)
        assert current.category == "databases" and "Saturdays" in current.body
        assert m.doctor().findings == []


def test_a_clone_that_already_took_a_converting_attribute_is_repaired(tmp_path, embedder):
    """A clone protected the old way (`*.md -merge` only) pulled `*.md working-tree-encoding=UTF-16LE-BOM
    eol=crlf`: its files are UTF-16. The first sync with the full protection writes them back as committed
    and never commits the converted bytes."""
    a, b = two_clones(tmp_path, embedder, "laptop", "desktop")
    a.write("The VPN certificate expires in March.", title="VPN", category="ops")
    a.sync_remote()
    b.sync_remote()
    r = b.write("The backup runs at midnight.", title="Backups", category="ops")  # arrives with the attack
    b.sync_remote()
    committed = (tmp_path / "b" / r.path).read_bytes()
    peer, git = plain_git_peer(tmp_path)
    (peer / ".gitattributes").write_text("*.md -merge\n*.md working-tree-encoding=UTF-16LE-BOM eol=crlf\n")
    subprocess.run([*git, "add", ".gitattributes"], check=True)
    subprocess.run([*git, "commit", "-qm", "attributes"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD"], check=True)
    (tmp_path / "a" / ".git" / "info" / "attributes").write_text("*.md -merge\n")  # an older clone
    subprocess.run(["git", "-C", str(tmp_path / "a"), "pull", "-q", "origin"], check=True, capture_output=True)
    assert (tmp_path / "a" / r.path).read_bytes().startswith(b"\xff\xfe")  # the attack took effect
    result = a.sync_remote()
    assert r.path in result["unconverted"] and not result["committed"]
    assert (tmp_path / "a" / r.path).read_bytes() == committed
    assert a.read(r.id, count_access=False).body.strip() == "The backup runs at midnight."
    a.update(r.id, "The backup runs at 01:00.")
    assert a.sync_remote()["pushed"]


def test_a_pulled_copy_of_a_note_gets_a_fresh_id_at_the_sync(tmp_path, embedder):
    """A peer copies a note file (its id line with it) and pushes: the sync that pulls the copy gives it
    its own id, so `mem read` and recall agree without `mem doctor --fix`."""
    a, b = two_clones(tmp_path, embedder, "laptop", "desktop")
    original = a.write("The backup runs at midnight on the NAS.", title="Backups", category="ops")
    a.sync_remote()
    peer, git = plain_git_peer(tmp_path)
    source = peer / a.read(original.id, count_access=False).path
    copy = source.parent / "backups-weekly.md"
    copy.write_text(source.read_text().replace("runs at midnight on the NAS", "runs weekly to the tape library"))
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "copy"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD"], check=True)
    result = b.sync_remote()
    ids = [e.id for e in b.list()]
    assert len(ids) == len(set(ids)) == 2, ids
    assert b.read(original.id, count_access=False).body.startswith("The backup runs at midnight")
    hit = b.recall("tape library backups", k=1).results[0]
    assert hit.id != original.id and b.read(hit.id, count_access=False).path.endswith("backups-weekly.md")
    assert any("backups-weekly.md" in w and "fresh id" in w for w in result["warnings"]), result["warnings"]
    assert b.doctor().healthy, b.doctor().to_dict()
    a.sync_remote()  # the other machine gets the fresh id too
    assert len({e.id for e in a.list()}) == 2


def test_after_a_remote_sync_the_index_matches_the_tree_on_both_clones(tmp_path, embedder):
    """A note edited and one added by hand, then `mem sync --remote` (a real process) with nothing to pull:
    the index follows them in that round (it left 1 missing + 1 stale row until a plain `mem sync`);
    the peer that pulls them ends in step too."""
    from memstrata import Memory
    from team_scenario import mem

    a, b = two_clones(tmp_path, embedder)
    written = a.write("Staging runs in Frankfurt since March.", title="Staging", category="projects")
    a.sync_remote()
    b.sync_remote()
    a.sync_remote()  # what B's first round pushed: A's next round has nothing to pull
    edited = a.root / written.path
    edited.write_text(edited.read_text().replace("Frankfurt since March", "Dublin since May"))
    (a.root / "projects" / "boat.md").write_text("---\ntitle: Boat\n---\n\nThe boat is moored in Kiel.\n")

    def index_findings(root):
        report = Memory(root, embedder=embedder).doctor()
        return [f.detail for f in report.problems if f.kind == "vectors_rows"]

    done = mem("sync", "--remote", "--root", str(a.root), machine="A")
    assert done["pushed"] and done["pulled"] == 0
    assert index_findings(a.root) == []
    assert mem("sync", "--remote", "--root", str(b.root), machine="B")["pulled"]
    assert index_findings(b.root) == []
    hit = Memory(b.root, embedder=embedder).recall("where is the boat moored?", k=1).results[0]
    assert hit.title == "Boat"


def test_clone_takes_the_only_branch_when_the_remotes_head_names_a_missing_one(tmp_path, embedder):
    """`git init --bare` points HEAD at `master`; the team pushed `main`. The clone checks out `main`
    (git alone gave an empty tree, and the next sync pushed an unrelated `master`)."""
    from memstrata import Memory
    from memstrata.errors import InvalidInput

    bare = tmp_path / "r.git"
    subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=master", str(bare)], check=True)
    first = Memory(tmp_path / "first", embedder=embedder)
    first.init()
    first.write("The deploy key rotates every month.", category="ops")
    git = ["git", "-C", str(first.root), "-c", "user.name=u", "-c", "user.email=u@x"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "team tree"], check=True)
    subprocess.run([*git, "push", "-q", str(bare), "main"], check=True)
    second = Memory(tmp_path / "second", embedder=embedder)
    second.clone(str(bare), machine="second")
    assert [e.title for e in second.list()] and second.recall("deploy key rotation").results
    second.write("Backups run nightly.", category="ops")
    assert second.sync_remote()["branch"] == "main"
    heads = subprocess.run(["git", "ls-remote", "--heads", str(bare)], capture_output=True, text=True).stdout
    assert "refs/heads/main" in heads and "refs/heads/master" not in heads
    subprocess.run([*git, "push", "-q", str(bare), "main:dev"], check=True)  # two branches: which is the team's?
    with pytest.raises(InvalidInput, match="dev, main"):
        Memory(tmp_path / "third", embedder=embedder).clone(str(bare))
    assert not (tmp_path / "third").exists()
