"""`mem capture` through the real command and real processes: the hook (its background capture), once
whatever fires, a transcript rewritten or resumed, kill -9 mid-capture, credentials, one-line errors."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from .transcripts import Claude, stamp

TOKEN = "ghp_" + "Zq7Xk2Lm9Pw4Rt8Vb3Nc6Hd1Jf5Gs0Ya2Ue"  # a GitHub token's shape (made up)


def run(root, *args, stdin=None, env=None):
    full = {**os.environ, "MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": "off", **(env or {})}
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args], input=stdin, capture_output=True,
                          text=True, env=full, timeout=300)


def hook(root, transcript, session, cwd="/work/shop", event="Stop"):
    payload = json.dumps({"session_id": session, "transcript_path": str(transcript), "cwd": cwd,
                          "hook_event_name": event, "stop_hook_active": False})
    done = run(root, "capture", "--hook", "--json", stdin=payload)
    assert done.returncode == 0 and done.stderr == ""
    answer = json.loads(done.stdout)
    assert answer["queued"] and not answer["running"], answer  # each hook here waits for the capture before
    _wait(answer["pid"])
    return answer


def _wait(pid: int, timeout: float = 240.0) -> None:
    """Until the background capture a hook started has exited (it is no child of ours)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().split(") ", 1)[1].startswith("Z"):
                    return
        except (OSError, IndexError):
            return
        time.sleep(0.05)
    raise AssertionError(f"the background capture {pid} did not end")


def snapshot(root) -> dict:
    """Every file of the tree (but the capture's own notices, cache and log) with its bytes and time."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if rel.startswith(os.path.join(".cache", "capture")):
                continue
            st = os.stat(path)
            with open(path, "rb") as handle:
                out[rel] = (st.st_mtime_ns, hashlib.sha1(handle.read()).hexdigest())
    return out


def session_file(root) -> str:
    found = [os.path.join(f, n) for f, _, ns in os.walk(os.path.join(root, "sessions")) for n in ns if n != "INDEX.md"]
    assert len(found) == 1, found
    with open(found[0], encoding="utf-8") as handle:
        return handle.read()


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "mem"
    assert run(r, "init").returncode == 0
    return r


def test_a_hook_fired_again_changes_nothing_and_an_appended_turn_is_captured_and_recalled(root, tmp_path):
    t = (Claude(cwd=str(tmp_path)).user("Which queue library did we pick for the billing worker?", stamp(1))
         .reply("We picked Dramatiq over Celery: simpler retries.", stamp(1, 4))
         .tool("Bash", stamp(1, 5), command="pip install dramatiq").result("Successfully installed", stamp(1, 6)))
    path = t.write(tmp_path)
    started = time.monotonic()
    answer = hook(root, path, t.session)
    assert answer["pid"] and time.monotonic() - started < 240
    text = session_file(root)
    assert text.count("\n### ") == 2 and "→ Bash: pip install dramatiq" in text and "Successfully" not in text
    before = snapshot(root)
    for event in ("Stop", "PreCompact", "SessionEnd"):
        hook(root, path, t.session, event=event)
    assert snapshot(root) == before  # three more hooks on an unchanged transcript change nothing
    t.user("And the rate limit for the Stripe webhooks?", stamp(3)).reply("Stripe retries for 3 days; we cap at 100/s.", stamp(3, 2))
    t.write(tmp_path)
    hook(root, path, t.session)
    text = session_file(root)
    assert text.count("\n### ") == 4 and f"### {stamp(3)} · user" in text and text.count("Dramatiq") == 1
    found = json.loads(run(root, "recall", "Stripe webhook rate limit", "--json").stdout)["results"]
    assert found and found[0]["path"].startswith("sessions/") and "100/s" in session_file(root)
    status = json.loads(run(root, "capture", "--status", "--json").stdout)
    assert status["pending"] == 0 and status["last"]["turns"] == 2


def test_rewritten_resumed_and_forgotten_cache_never_duplicate_a_turn(root, tmp_path):
    t = (Claude(cwd=str(tmp_path)).user("Draft the Q3 hiring plan", stamp(1)).reply("Two backend, one SRE.", stamp(1, 3))
         .user("Make it three backend", stamp(2)).reply("Done: three backend, one SRE.", stamp(2, 3)))
    path = t.write(tmp_path)
    assert run(root, "capture", path).returncode == 0
    # compaction rewrote the file: a boundary, the summary, the last turns again, and a new one
    t.lines = [{"type": "system", "subtype": "compact_boundary", "timestamp": stamp(5), "content": "compacted"}] + \
        t.lines[2:] + [t._base("user", stamp(6), message={"role": "user", "content": "Summary of earlier talk"},
                              isCompactSummary=True)]
    t.user("Add the budget line", stamp(7)).reply("Budget: 1.2M.", stamp(7, 4))
    t.write(tmp_path)
    report = json.loads(run(root, "capture", path, "--json").stdout)
    assert report["turns"] == 2 and report["skipped"]["compaction summary"] == 1
    # resumed as a new session in a new file: the old turns copied, then new ones
    resumed = Claude(session="9a9a9a9a-3333-4eee-8fff-000000000001", cwd=str(tmp_path))
    resumed.lines = [dict(line) for line in t.lines if line.get("type") in ("user", "assistant")]
    resumed.user("Who approves it?", stamp(9)).reply("The VP of engineering.", stamp(9, 2))
    report = json.loads(run(root, "capture", resumed.write(tmp_path), "--json").stdout)
    assert (report["turns"], report["new_sessions"]) == (2, 0)
    text = session_file(root)
    assert text.count("\n### ") == 8 and text.count("Two backend, one SRE.") == 1
    assert f"sessions: [{t.session}, {resumed.session}]" in text
    # a lost cache: everything read again, nothing written twice
    os.unlink(root / ".cache" / "capture" / "files.json")
    before = snapshot(root)
    report = json.loads(run(root, "capture", str(tmp_path), "--json").stdout)
    assert report["files"] == 2 and report["turns"] == 0 and snapshot(root) == before


def test_kill_9_mid_capture_then_the_next_run_finishes_it(root, tmp_path):
    t = Claude(cwd=str(tmp_path))
    for n in range(200):
        t.user(f"Question {n}: what did we decide about service {n} and its deployment window?", stamp(n // 60, n % 60, 0))
        t.reply(f"For service {n} we deploy on Tuesdays after the {n % 7} o'clock standup, never on Fridays. " * 2,
                stamp(n // 60, n % 60, 500))
    path = t.write(tmp_path)
    env = {**os.environ, "MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": "off"}
    proc = subprocess.Popen([sys.executable, "-m", "memstrata.cli.app", "capture", path], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sessions = root / "sessions"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not (sessions.exists() and any(sessions.rglob("*-claude-code-*.md"))):
        time.sleep(0.02)  # the files are written first, then embedded: it dies with its index rows unwritten
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    report = json.loads(run(root, "capture", path, "--json").stdout)
    assert report["errors"] == [] and report["turns"] == 0  # the file was written before the kill ...
    assert report["reindexed"] == 1  # ... its index rows were not: the rerun embedded them
    files = sorted(sessions.rglob("*-claude-code-*.md"))
    texts = [f.read_text(encoding="utf-8") for f in files]
    assert sum(x.count("\n### ") for x in texts) == 400  # every turn once
    assert "Question 199:" in "".join(texts) and "".join(texts).count("Question 7:") == 1
    hits = json.loads(run(root, "recall", "what did we decide about service 199", "--json", "-k", "3").stdout)["results"]
    assert hits and hits[0]["category"].startswith("sessions/")
    doctor = json.loads(run(root, "doctor", "--json").stdout)
    assert doctor["healthy"], doctor["findings"]


def test_a_token_in_a_turn_is_in_no_file_and_the_rest_is_recalled(root, tmp_path):
    t = (Claude(cwd=str(tmp_path)).user(f"The deploy bot uses {TOKEN} to push the zebrafish release tags.", stamp(1))
         .reply(f"Noted; the zebrafish token {TOKEN} should move to the vault.", stamp(1, 2)))
    report = json.loads(run(root, "capture", t.write(tmp_path), "--json").stdout)
    assert report["turns"] == 2 and report["errors"] == []
    os.unlink(t.write(tmp_path))  # the transcript is the agent's: only the tree is looked at
    assert run(root, "maintain").returncode == 0
    for folder, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                assert TOKEN.encode() not in handle.read(), os.path.join(folder, name)
    text = session_file(root)
    assert "[redacted] to push the zebrafish release tags" in text
    hits = json.loads(run(root, "recall", "zebrafish release tags deploy bot", "--json").stdout)["results"]
    assert hits and "zebrafish" in hits[0]["snippet"] and TOKEN not in json.dumps(hits)


def test_the_hook_never_fails_the_agent_and_errors_are_one_line(root, tmp_path):
    for stdin in ("not json", "{}", json.dumps({"transcript_path": str(tmp_path / "gone.jsonl"), "session_id": "x"}), ""):
        done = run(root, "capture", "--hook", stdin=stdin)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    done = run(tmp_path / "not-a-tree", "capture", "--hook", stdin=json.dumps({"transcript_path": "/x.jsonl"}))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    missing = run(root, "capture", str(tmp_path / "nope.jsonl"))
    assert missing.returncode != 0 and missing.stderr.startswith("mem: error: ") and missing.stderr.count("\n") == 1
    (tmp_path / "notes.jsonl").write_text('{"a": 1}\nplain words\n')
    odd = json.loads(run(root, "capture", str(tmp_path / "notes.jsonl"), "--json").stdout)
    assert odd["turns"] == 0 and "not a transcript" in odd["skipped_files"][0]["reason"]
    usage = run(root, "capture", "--purge")
    assert usage.returncode != 0 and usage.stderr.count("\n") == 1 and "Traceback" not in usage.stderr
