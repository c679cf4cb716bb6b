"""Capture through the Python API (the shared model): Codex folders and notify, plain JSONL, forget and
purge, the opt-out, adopted vaults, team sync keeping sessions on this machine, aged sessions going on."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.errors import InvalidInput
from memstrata.retrieval import ann

from .transcripts import Claude, Codex, stamp


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


@pytest.fixture
def mem(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    return m


def _holding(root: Path, word: bytes) -> list[str]:
    """The files under `root` whose bytes hold `word`."""
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and word in p.read_bytes()]


def test_codex_folder_scan_since_and_the_notify_hook(mem, tmp_path, monkeypatch):
    home = tmp_path / "codex"
    old_day, new_day = home / "sessions/2026/10/01", home / "sessions/2026/11/20"
    old_day.mkdir(parents=True)
    new_day.mkdir(parents=True)
    old = Codex(session="11111111-aaaa-4aaa-8aaa-000000000001").user("Old question about kafka", stamp(1)).say("Old answer.", stamp(1, 2))
    old_path = old.write(old_day)
    os.utime(old_path, (1759300000, 1759300000))  # 2025-10-01
    new = Codex(session="22222222-bbbb-4bbb-8bbb-000000000002").user("Rename the orders table", stamp(1)).call(
        "psql -c 'ALTER TABLE orders RENAME TO purchases'", stamp(1, 3)).say("Renamed to purchases.", stamp(1, 6))
    new_path = new.write(new_day)
    sub = Codex(session="33333333-cccc-4ccc-8ccc-000000000003",
                source={"subagent": {"thread_spawn": {"parent_thread_id": new.session}}}).user("Inspect", stamp(2))
    sub.write(new_day)
    monkeypatch.setenv("CODEX_HOME", str(home))
    report = mem.capture_agent("codex", since="2026-01-01")
    assert (report["files"], report["new_sessions"], report["turns"]) == (2, 1, 2)
    assert "sub-agent" in report["skipped_files"][0]["reason"]
    entry = mem.read(report["entries"][0]["id"], count_access=False)
    assert entry.category == "sessions/api" and entry.agent == "codex" and entry.extra["session"] == new.session
    assert "→ shell: bash -lc psql -c 'ALTER TABLE orders RENAME TO purchases'" in entry.body
    assert "OUTPUT-NEVER-KEPT" not in entry.body and "environment_context" not in entry.body
    # Codex's notify program: the thread id names the rollout; only the new turn is written
    new.user("Now add an index on customer_id", stamp(4)).say("Index added.", stamp(4, 2))
    new.write(new_day)
    from memstrata.capture.hook import notice_of

    notice = notice_of({"type": "agent-turn-complete", "thread-id": new.session, "turn-id": "t9", "cwd": "/work/api",
                        "input-messages": ["Now add an index"], "last-assistant-message": "Index added."})
    mem.capture_queue(notice)
    report = mem.capture_drain()
    assert report["turns"] == 2 and report["sessions"] == 1
    assert mem.capture_status()["pending"] == 0


def test_plain_jsonl_one_file_many_sessions_coarse_times(mem, tmp_path):
    rows = [{"role": "user", "text": f"Caroline: line {i} about the adoption agency", "timestamp": "2023-05-08T13:56:00Z",
             "session": "conv-26-s1" if i < 4 else "conv-26-s2"} for i in range(6)]
    path = tmp_path / "talk.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = mem.capture([path])
    assert (report["new_sessions"], report["turns"]) == (2, 6)
    with path.open("a") as handle:
        handle.write(json.dumps({**rows[0], "text": "Caroline: a seventh line"}) + "\n")
    report = mem.capture([path])
    assert report["turns"] == 1  # the same time and role again, but a new line: a new turn
    texts = [mem.read(e.id, count_access=False).body for e in mem.list("sessions")]
    assert sum(t.count("\n### ") + t.startswith("### ") for t in texts) == 7


def test_forget_through_the_trash_and_purge_leaves_no_trace(mem, tmp_path):
    keep = Claude(session="aaaaaaaa-0000-4000-8000-00000000000a", cwd=str(tmp_path)).user(
        "Remember the quokkaberry deadline", stamp(1)).reply("The quokkaberry launch is May 3.", stamp(1, 1))
    gone = Claude(session="bbbbbbbb-0000-4000-8000-00000000000b", cwd=str(tmp_path)).user(
        "My private note on the zyxwarbler diagnosis", stamp(2)).reply("Noted the zyxwarbler diagnosis.", stamp(2, 1))
    trashed = Claude(session="cccccccc-0000-4000-8000-00000000000c", cwd=str(tmp_path)).user(
        "Budget talk about the plinkmoth contract", stamp(3)).reply("The plinkmoth contract is 40k.", stamp(3, 1))
    paths = [t.write(tmp_path) for t in (keep, gone, trashed)]
    mem.config_set("ann_min_rows", 2)
    mem.capture(paths)
    mem.sync()
    assert ann.has_vector_index(mem.state.vector_index())  # its base holds a quantized copy of each row
    result = mem.capture_forget("cccccccc")
    assert not result["purged"] and len(mem.trash_list(report=False)) == 1
    assert not [h for h in mem.recall("plinkmoth contract").results if h.category.startswith("sessions")]
    result = mem.capture_forget(gone.session, purge=True)
    assert result["purged"] and result["entries"][0]["id"].startswith("ses-")
    report = mem.capture(paths)  # the transcripts are still there: forgotten sessions are not captured again
    assert report["turns"] == 0 and sum("forgotten" in s["reason"] for s in report["skipped_files"]) == 2
    root = Path(mem.root)
    assert _holding(root, b"zyxwarbler") == []  # files, trash, catalog, LanceDB versions, caches
    assert not ann.has_vector_index(mem.state.vector_index())  # dropped: built again from the rows left
    mem.sync()
    assert ann.has_vector_index(mem.state.vector_index())
    assert _holding(root / ".trash", b"plinkmoth")  # the trash keeps it until purged
    assert mem.recall("quokkaberry deadline").results[0].category.startswith("sessions/")
    with pytest.raises(Exception, match="no captured session"):
        mem.capture_forget("dddddddd-nothing")
    result = mem.capture_forget("cccccccc", purge=True)  # forgotten before: purged now (an attacker's list)
    assert result["purged"] and len(result["entries"]) == 1 and mem.trash_list(report=False) == []
    assert _holding(root, b"plinkmoth") == []


def test_opting_a_project_out(mem, tmp_path):
    project = tmp_path / "secret-project"
    (project / "src").mkdir(parents=True)
    (project / ".mem-no-capture").write_text("")
    t = Claude(cwd=str(project / "src")).user("Anything", stamp(1))
    report = mem.capture([t.write(tmp_path)])
    assert report["turns"] == 0 and ".mem-no-capture" in report["skipped_files"][0]["reason"]
    other = tmp_path / "client-x"
    other.mkdir()
    mem.config_set("capture_exclude", f"/nowhere, {other}")
    t2 = Claude(session="eeeeeeee-0000-4000-8000-00000000000e", cwd=str(other)).user("Anything else", stamp(1))
    report = mem.capture([t2.write(tmp_path)])
    assert report["turns"] == 0 and "capture_exclude" in report["skipped_files"][0]["reason"]


def test_an_adopted_vault_refuses_unless_allowed(tmp_path, embedder):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Ideas.md").write_text("# Ideas\nA note of mine.\n")
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    t = Claude(cwd=str(tmp_path)).user("Hello", stamp(1)).reply("Hi.", stamp(1, 1))
    with pytest.raises(InvalidInput, match="adopted vault"):
        m.capture([t.write(tmp_path)])
    m.config_set("capture_in_vault", "true")
    assert m.capture([t.write(tmp_path)])["turns"] == 2
    assert (vault / "Ideas.md").read_text() .startswith("---\nmem-id:") or "A note of mine." in (vault / "Ideas.md").read_text()


def test_team_sync_keeps_captured_sessions_on_this_machine(tmp_path, embedder):
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True)
    a = Memory(tmp_path / "a", embedder=embedder)
    a.clone(str(tmp_path / "r.git"), machine="laptop")
    a.write("The team note.", title="Team note", category="ops")
    t = Claude(cwd=str(tmp_path)).user("My own session", stamp(1)).reply("Private reply.", stamp(1, 1))
    a.capture([t.write(tmp_path)])
    a.sync_remote()
    pushed = subprocess.run(["git", "--git-dir", str(tmp_path / "r.git"), "ls-tree", "-r", "--name-only", "HEAD"],
                            capture_output=True, text=True, check=True).stdout
    assert "ops/team-note.md" in pushed and "sessions/" not in pushed
    a.config_set("capture_team_sync", "true")
    a.sync_remote()
    pushed = subprocess.run(["git", "--git-dir", str(tmp_path / "r.git"), "ls-tree", "-r", "--name-only", "HEAD"],
                            capture_output=True, text=True, check=True).stdout
    assert "sessions/" in pushed
    a.config_set("capture_team_sync", "false")
    a.sync_remote()
    pushed = subprocess.run(["git", "--git-dir", str(tmp_path / "r.git"), "ls-tree", "-r", "--name-only", "HEAD"],
                            capture_output=True, text=True, check=True).stdout
    assert "sessions/" not in pushed and (Path(a.root) / "sessions").is_dir()


def test_a_compressed_archived_session_takes_its_full_text_back_when_it_goes_on(mem, tmp_path, monkeypatch):
    t = Claude(cwd=str(tmp_path))
    for n in range(12):
        t.user(f"Step {n} of the data migration: which tables move first and why?", stamp(1, n * 2))
        t.reply(f"In step {n} the ledger tables move first because the invoices depend on them. " * 4, stamp(1, n * 2 + 1))
    path = t.write(tmp_path)
    mem.capture([path])
    monkeypatch.setenv("MEMSTRATA_NOW", "2027-09-01T08:00:00Z")  # months later: aged out
    mem.maintain()
    aged = mem.list("sessions")[0]
    assert aged.layer != "L0" or aged.status == "archived"
    t.user("Resuming: did step 11 finish?", "2027-09-01T08:30:00.000Z").reply("Yes, step 11 finished.", "2027-09-01T08:31:00.000Z")
    t.write(tmp_path)
    report = mem.capture([path])
    assert report["turns"] == 2
    entry = mem.read(report["entries"][0]["id"], count_access=False)
    assert entry.layer == "L0" and entry.status == "active" and "/archived/" not in entry.path
    assert entry.body.count("\n### ") + entry.body.startswith("### ") == 26 and "Step 0 of the data migration" in entry.body


class _Counting:
    """The shared model, counting the texts it is asked to embed."""

    def __init__(self, embedder):
        self._embedder, self.texts = embedder, 0

    def embed(self, texts, *args, **kwargs):
        self.texts += len(texts)
        return self._embedder.embed(texts, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._embedder, name)


def test_a_turn_appended_embeds_its_own_chunks_not_the_whole_session_again(tmp_path, embedder):
    counting = _Counting(embedder)
    m = Memory(tmp_path / "mem", embedder=counting)
    m.init()
    t = Claude(cwd=str(tmp_path))
    for n in range(40):
        t.user(f"Question {n}: how do we rotate the signing keys of service {n}?", stamp(n, 0))
        t.reply(f"Service {n} rotates its keys every {n + 7} days through the vault agent; the old key stays "
                f"valid for one more day. " * 2, stamp(n, 30))
    path = t.write(tmp_path)
    m.capture([path])
    first = counting.texts
    t.user("And who owns the rotation runbook?", stamp(50)).reply("The platform team owns it.", stamp(50, 20))
    t.write(tmp_path)
    counting.texts = 0
    assert m.capture([path])["turns"] == 2
    assert first >= 40 and counting.texts <= max(6, first // 8), (first, counting.texts)
    hits = m.recall("how often does service 23 rotate its keys").results
    assert hits and hits[0].category.startswith("sessions/")


def test_a_session_goes_on_where_it_is_when_capture_category_changed(mem, tmp_path):
    t = Claude(cwd=str(tmp_path)).user("Where do the backups go?", stamp(1)).reply("To the cold bucket.", stamp(1, 1))
    path = t.write(tmp_path)
    mem.capture([path])
    mem.config_set("capture_category", "agents/sessions")
    t.user("And how long are they kept?", stamp(2)).reply("Ninety days.", stamp(2, 1))
    t.write(tmp_path)
    report = mem.capture([path])
    assert report["turns"] == 2 and report["new_sessions"] == 0
    assert report["entries"][0]["path"].startswith("sessions/") and len(mem.list()) == 1
    with pytest.raises(InvalidInput, match="--agent"):
        mem.capture([path], agent="gemini")


def test_a_hook_during_a_capture_is_taken_by_that_capture(mem, tmp_path):
    import threading
    import time

    from memstrata.capture import hook, spool

    big = Claude(cwd=str(tmp_path))
    for n in range(120):
        big.user(f"Point {n}: how is shard {n} rebalanced after a node leaves?", stamp(n // 60, n % 60))
        big.reply(f"Shard {n} moves to the least loaded node within {n % 9 + 1} minutes. " * 3, stamp(n // 60, n % 60, 500))
    small = Claude(session="ffffffff-0000-4000-8000-00000000000f", cwd=str(tmp_path)).user(
        "A question asked while the capture ran", stamp(7)).reply("Its answer.", stamp(7, 1))
    small_path = small.write(tmp_path)
    worker = threading.Thread(target=mem.capture, args=([big.write(tmp_path)],))
    worker.start()
    deadline = time.monotonic() + 120
    while spool.CaptureLock(mem.root).acquire(release=True) and time.monotonic() < deadline:
        time.sleep(0.005)
    notice = hook.notice_of({"transcript_path": small_path, "session_id": small.session, "cwd": str(tmp_path)})
    spool.put(mem.root, notice)  # what the hook does; it starts no process: a capture holds the lock
    assert not spool.CaptureLock(mem.root).acquire(release=True)
    worker.join()
    assert spool.pending(mem.root) == []
    assert any(small.session == e.extra.get("session") for e in mem.list("sessions"))


def test_a_finished_transcript_without_a_final_newline_keeps_its_last_turn(mem, tmp_path):
    """A last line with no newline is left while the file may still be written; once the file has been
    quiet a minute and the line is a whole JSON object, the turn is captured (a new user's review: the
    last turn of such a file was never taken)."""
    talk = Claude(session="5a1e0000-1111-4aaa-8bbb-00000000abcd", cwd=str(tmp_path))
    talk.user("where do the nightly backups go?", "2026-05-10T10:00:00.000Z")
    talk.reply("Nightly to the NAS, kept for thirty days.", "2026-05-10T10:00:20.000Z")
    path = tmp_path / "session.jsonl"
    path.write_text(talk.text().rstrip("\n"), encoding="utf-8")
    first = mem.capture([str(path)])
    assert first["turns"] == 1  # the reply may still be growing
    minute_ago = path.stat().st_mtime - 120
    os.utime(path, (minute_ago, minute_ago))
    again = mem.capture([str(path)])
    assert again["turns"] == 1 and again["unchanged"] == 0
    body = mem.read(first["entries"][0]["id"], count_access=False).body
    assert "Nightly to the NAS" in body and "where do the nightly backups go?" in body
    assert mem.capture([str(path)])["unchanged"] == 1  # taken once: the file is done
