"""A captured reply that used a memory the session was shown counts as a use and brings it back hot, whole
(features/reply_use.py): the real tree, model, hooks' session record and capture."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Memory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capture"))
from transcripts import Claude  # noqa: E402

RUNBOOK = ("To fail over the orders database, promote the Patroni replica with `patronictl failover orders`, "
           "check replication lag is zero first, then repoint PgBouncer and announce in #incidents. Once the old "
           "primary is back, rebuild it as a replica with patronictl reinit before anyone writes to it, and "
           "keep the incident channel posted until the application error rate is back to normal. The whole "
           "procedure takes about ten minutes; the orders service retries its writes meanwhile.\n\n"
           "Afterwards, write a short incident note: when the primary failed, who ran the failover, how long "
           "the orders service saw errors, and what the monitoring showed before the failure. Check the "
           "backups of the new primary the next morning, and schedule a review of the alerts that fired "
           "with the data team in the following week.")
ASKED = "the orders db primary is down, how do we fail over to the replica?"
USED = "Run `patronictl failover orders` once replication lag is zero, then repoint PgBouncer and tell #incidents."
SESSION = "0f3c2a9e-1111-4aaa-8bbb-123456789abc"


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


@pytest.fixture
def archived(tmp_path, embedder, monkeypatch, use_daily):
    """A tree whose runbook went to the archive: 120 days in use since it was written."""
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-01-01T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    runbook = m.write(RUNBOOK, title="Orders database failover", category="runbooks").id
    other = m.write("Alpha deploys go out on Tuesdays after the canary has been green for an hour.",
                    title="Alpha deploys", category="projects/alpha").id
    diary = m.write("What happened today.", title="Diary", category="journal").id
    use_daily(m, "2026-01-02", "2026-05-01", diary)
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-05-01T09:00:00Z")
    m.maintain()
    before = m.read(runbook, count_access=False)
    assert before.status == "archived" and "/archived/" in before.path and before.is_compressed
    return m, runbook, other


def _session(m, tmp_path, reply: str, shown: bool = True) -> dict:
    """A session whose prompt was shown the runbook (the prompt hook's autoload, no promotion), then
    answered with `reply`, captured as a Stop hook does."""
    if shown:
        loaded = m.autoload(context=ASKED, session_id=SESSION, promote=False)
        assert "Orders database failover" in [item.entry.title for item in loaded.items]
    talk = Claude(session=SESSION).user(ASKED, "2026-05-01T09:00:01.000Z").reply(reply, "2026-05-01T09:00:09.000Z")
    return m.capture([talk.write(tmp_path)])


def test_a_reply_that_used_the_archived_runbook_brings_it_back_hot_and_whole(archived, tmp_path):
    m, runbook, _ = archived
    report = _session(m, tmp_path, USED)
    assert report["used"] == [{"id": runbook, "title": "Orders database failover", "promoted_from": "archive"}]
    after = m.read(runbook, count_access=False)
    assert (after.status, after.tier, after.layer) == ("active", "hot", "L0") and "/archived/" not in after.path
    assert " ".join(after.body.split()) == " ".join(RUNBOOK.split())
    assert after.access_count == 1  # the use, counted once
    # the same transcript read again adds no turn, and no second use
    assert m.capture([str(tmp_path / f"{SESSION}.jsonl")])["used"] == []
    assert m.read(runbook, count_access=False).access_count == 1


def test_a_reply_that_did_not_draw_on_it_leaves_it_archived(archived, tmp_path):
    m, runbook, _ = archived
    before = m.read(runbook, count_access=False)
    report = _session(m, tmp_path, "Let me look at the database logs and the monitoring first; I will report back.")
    assert report["used"] == [] and report["turns"] == 2
    after = m.read(runbook, count_access=False)
    assert (after.status, after.path, after.access_count) == ("archived", before.path, 0)


def test_a_memory_the_session_was_never_shown_is_not_counted(archived, tmp_path):
    """The reply holds the runbook's words, but no hook showed it in this session: they came from elsewhere."""
    m, runbook, _ = archived
    report = _session(m, tmp_path, USED, shown=False)
    assert report["used"] == []
    assert m.read(runbook, count_access=False).status == "archived"


def test_a_hot_memory_used_is_one_read_in_the_journal_its_file_untouched(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-05-01T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    runbook = m.write(RUNBOOK, title="Orders database failover", category="runbooks")
    held = (m.root / runbook.path).read_bytes()
    report = _session(m, tmp_path, USED)
    assert [row["id"] for row in report["used"]] == [runbook.id] and report["used"][0]["promoted_from"] is None
    assert (m.root / runbook.path).read_bytes() == held
    assert m.read(runbook.id, count_access=False).access_count == 1


def test_the_cli_says_what_the_replies_used(archived, tmp_path):
    m, runbook, _ = archived
    m.autoload(context=ASKED, session_id=SESSION, promote=False)
    talk = Claude(session=SESSION).user(ASKED, "2026-05-01T09:00:01.000Z").reply(USED, "2026-05-01T09:00:09.000Z")
    done = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "capture", talk.write(tmp_path), "--root",
                           str(m.root)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MEMSTRATA_SERVICE": "off"})
    assert done.returncode == 0, done.stderr
    assert "the replies used 1 memory the session was shown" in done.stdout
    assert f"{runbook}  Orders database failover  (back hot and whole from archive)" in done.stdout
    assert m.read(runbook, count_access=False).status == "active"
    # a later capture with nothing used (a SessionEnd's) leaves it in the status's recent uses
    talk.user("thanks", "2026-05-01T09:01:00.000Z").reply("You're welcome.", "2026-05-01T09:01:02.000Z")
    talk.write(tmp_path)
    assert m.capture([str(tmp_path / f"{SESSION}.jsonl")])["used"] == []
    status = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "capture", "--status", "--root", str(m.root)],
                            capture_output=True, text=True, timeout=300, env={**os.environ, "MEMSTRATA_SERVICE": "off"})
    assert "memories the captured replies used lately" in status.stdout
    assert f"{runbook}  Orders database failover, back hot from archive" in status.stdout


def test_a_reply_captured_in_two_pieces_counts_once_and_the_question_never_counts(tmp_path, embedder, monkeypatch):
    """A capture in the middle of a turn (PreCompact) and the Stop after it: the grown reply is judged
    again, against the question held from the first capture, and the memory counted once a session."""
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-05-01T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    runbook = m.write(RUNBOOK, title="Orders database failover", category="runbooks")
    tls = m.write("Rotate the shop certificate by deleting the secret shop-tls; cert-manager issues a new one, "
                  "then run kubectl rollout restart deploy/ingress-nginx -n ingress.", title="TLS rotation",
                  category="runbooks")
    m.autoload(context=ASKED, session_id=SESSION, promote=False)
    m.autoload(context="how do we rotate the shop certificate?", session_id=SESSION, promote=False)
    asked = "does kubectl rollout restart deploy/ingress-nginx -n ingress drop live connections?"
    talk = Claude(session=SESSION).user(asked, "2026-05-01T09:00:01.000Z").reply(
        "Let me check that.", "2026-05-01T09:00:05.000Z")
    path = talk.write(tmp_path)
    assert m.capture([path])["used"] == []
    talk.lines[-1]["message"]["content"][0]["text"] = (
        "Let me check that. Yes: kubectl rollout restart deploy/ingress-nginx -n ingress replaces the pods one "
        "by one. Separately, for the database: run `patronictl failover orders` once replication lag is zero.")
    talk.write(tmp_path)
    report = m.capture([path])
    assert report["extended"] == 1 and [row["id"] for row in report["used"]] == [runbook.id]  # not the TLS note
    talk.user("and then?", "2026-05-01T09:01:00.000Z").reply(
        "Then repoint PgBouncer and announce in #incidents, as the failover runbook says.", "2026-05-01T09:01:05.000Z")
    talk.write(tmp_path)
    assert m.capture([path])["used"] == []  # the runbook was counted in this session already
    assert m.read(runbook.id, count_access=False).access_count == 1
    assert m.read(tls.id, count_access=False).access_count == 0


def test_a_warm_compressed_memory_used_comes_back_whole(tmp_path, embedder, monkeypatch, use_daily):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-01-01T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    longer = RUNBOOK + ("\n\nThe replica lives in the second zone. Its disks are the same size as the primary's. "
                        "The failover was last rehearsed in March. The rehearsal took twelve minutes. Nobody lost "
                        "an order during it.")  # more than five sentences: warm keeps five key points (L1)
    runbook = m.write(longer, title="Orders database failover", category="runbooks").id
    diary = m.write("What happened today.", title="Diary", category="journal").id
    use_daily(m, "2026-01-02", "2026-01-20", diary)
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-01-20T09:00:00Z")
    m.maintain()
    before = m.read(runbook, count_access=False)
    assert before.tier == "warm" and before.is_compressed
    talk = Claude(session=SESSION).user(ASKED, "2026-01-20T09:00:01.000Z").reply(USED, "2026-01-20T09:00:09.000Z")
    m.autoload(context=ASKED, session_id=SESSION, promote=False)
    report = m.capture([talk.write(tmp_path)])
    assert report["used"][0]["promoted_from"] == "warm"
    after = m.read(runbook, count_access=False)
    assert (after.tier, after.layer) == ("hot", "L0") and " ".join(after.body.split()) == " ".join(longer.split())


def _vault_with_archived_folder(tmp_path, embedder, properties: str = ""):
    """An adopted vault holding the runbook in a folder of the user's named archived/: (memory, note)."""
    vault = tmp_path / "vault"
    (vault / "projects" / "archived").mkdir(parents=True)
    note = vault / "projects" / "archived" / "orders-failover.md"
    note.write_text(properties + "# Orders database failover\n\n" + RUNBOOK + "\n")
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    return m, note


def test_a_vault_note_used_is_one_read_never_moved_nor_written(tmp_path, embedder, monkeypatch):
    """An attacker's review: a cold note in a folder of the user's named archived/ was moved out of it
    (and counted twice) by the capture's promotion. A vault's note is only read."""
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-01-01T09:00:00Z")
    m, note = _vault_with_archived_folder(tmp_path, embedder)
    m.config_set("capture_in_vault", "true")
    os.utime(note, (1767258000, 1767258000))  # last edited 2026-01-01, as the clock
    held = note.read_bytes()
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-02-20T09:00:00Z")  # cold by then
    entry_id = m.list()[0].id
    assert m.read(entry_id, count_access=False).tier == "cold"
    report = _session(m, tmp_path, USED)
    assert [(row["id"], row["promoted_from"]) for row in report["used"]] == [(entry_id, None)]
    assert note.read_bytes() == held
    after = m.read(entry_id, count_access=False)
    assert (after.tier, after.access_count, after.path) == ("hot", 1, "projects/archived/orders-failover.md")


def test_a_record_this_step_cannot_read_costs_the_uses_never_the_capture(tmp_path, embedder, monkeypatch):
    from memstrata.features import hook_sessions

    monkeypatch.setenv("MEMSTRATA_NOW", "2026-05-01T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    m.write(RUNBOOK, title="Orders database failover", category="runbooks")
    record = hook_sessions._path(m.root, SESSION)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text('{"ids": ["\\\\ud800/y.md", "../../etc/passwd", 7, null]}')
    report = _session(m, tmp_path, USED, shown=False)
    assert report["used"] == [] and report["turns"] == 2 and not report["errors"]


def test_promotion_never_moves_a_vault_note_whatever_its_status_property_says(tmp_path, embedder, monkeypatch):
    """A second review: a vault note under the user's own archived/ folder with `status: archived` (an
    Obsidian property of the user's) was moved and renamed by a promotion."""
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-02-20T09:00:00Z")
    m, note = _vault_with_archived_folder(tmp_path, embedder, properties="---\nstatus: archived\n---\n")
    vault = m.root
    held = note.read_bytes()
    report = m.promote(ASKED, threshold=0.0)
    assert [row["path"] for row in report["promoted"]] == ["projects/archived/orders-failover.md"]
    assert note.read_bytes() == held and [p.name for p in (vault / "projects").rglob("*.md")] == ["orders-failover.md"]


def test_a_capture_killed_before_it_noted_the_read_counts_the_use_when_read_again(archived, tmp_path):
    """An attacker's review: a capture killed after its session file was saved (before it noted the read
    and counted the uses) left the runbook archived for good: the rerun found nothing new. A rerun now
    judges the replies it reads again; the use still counts once."""
    m, runbook, _ = archived
    m.autoload(context=ASKED, session_id=SESSION, promote=False)
    talk = Claude(session=SESSION).user(ASKED, "2026-05-01T09:00:01.000Z").reply(USED, "2026-05-01T09:00:09.000Z")
    path = talk.write(tmp_path)
    killed = ("import os, signal, sys\nfrom memstrata import Memory\nfrom memstrata.capture import state\n"
              "state.CaptureState.save = lambda self: os.kill(os.getpid(), signal.SIGKILL)\n"
              "Memory(sys.argv[1]).capture([sys.argv[2]])\n")
    done = subprocess.run([sys.executable, "-c", killed, str(m.root), path], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "MEMSTRATA_SERVICE": "off"})
    assert done.returncode == -9, done.stderr
    assert m.read(runbook, count_access=False).status == "archived"  # killed before the uses were counted
    again = m.capture([path])
    assert again["turns"] == 0 and [u["id"] for u in again["used"]] == [runbook]
    after = m.read(runbook, count_access=False)
    assert (after.status, after.tier, after.access_count) == ("active", "hot", 1)
    assert m.capture([path])["used"] == [] and m.read(runbook, count_access=False).access_count == 1


def test_a_reply_written_before_the_memory_was_shown_never_counts(archived, tmp_path):
    """An attacker's review: a reply captured before any memory was shown, read again (a copy of the
    transcript) after the hook showed the runbook, counted it. The hook now keeps when it first showed
    each memory, and a reply before that moment did not use it."""
    m, runbook, _ = archived
    talk = Claude(session=SESSION).user(ASKED, "2026-05-01T08:00:01.000Z").reply(USED, "2026-05-01T08:00:09.000Z")
    path = talk.write(tmp_path)
    assert m.capture([path])["used"] == []  # nothing shown yet
    m.autoload(context=ASKED, session_id=SESSION, promote=False)  # shown at 09:00 (MEMSTRATA_NOW)
    copy = tmp_path / "copy.jsonl"
    copy.write_text(Path(path).read_text())
    assert m.capture([str(copy)])["used"] == []
    assert m.read(runbook, count_access=False).status == "archived"
    # a reply after the show counts
    talk.user("and after that?", "2026-05-01T09:00:20.000Z").reply(USED + " Then watch the error rate.",
                                                                     "2026-05-01T09:00:30.000Z")
    assert [u["id"] for u in m.capture([talk.write(tmp_path)])["used"]] == [runbook]
