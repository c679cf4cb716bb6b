"""The session start knows its project and what that project was doing (issue 37, item 5): the block
prefers the memories of the hook's `cwd` (its git repository) and leaves other projects' notes and
captured sessions out, with no model; the project's last captured session brings back, in the
background, the cold memories its prompts need, injected at the next prompt."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.features import hook_sessions

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capture"))
from transcripts import Claude  # noqa: E402

PY = sys.executable
NOW = "2026-06-01T09:00:00Z"
RUN = tempfile.mkdtemp(prefix="memstrata-startwork-run-")  # this module's own service folder (none is started)
atexit.register(shutil.rmtree, RUN, True)  # the xdist controller imports this module too and runs no teardown
NOTES = [("Shop database", "The shop keeps its orders in PostgreSQL 16 with logical replication.", "projects/shop"),
         ("Blog theme", "The blog uses the Hugo PaperMod theme with a dark palette.", "projects/blog"),
         ("Commit style", "Commit messages use the imperative mood and say why.", "preferences")]
RUNBOOK = ("Orders database failover", "runbooks/archived/orders-database-failover.md",
           "To fail over the orders database, promote the Patroni replica with patronictl failover orders, check "
           "that replication lag is zero first, then repoint PgBouncer and announce it in #incidents."
           + "".join(f"\n\nStep {n}: on the orders replica number {n}, run patronictl list, confirm the member is "
                     f"streaming with zero lag, pause the orders consumers for shard {n}, and note the timeline "
                     f"in the incident channel before touching PgBouncer." for n in range(1, 13))
           + "\n\nLast of all, write the post-mortem in the wiki under Orders incidents.")
BLOG_RUNBOOK = ("Blog database failover", "projects/blog/archived/blog-database-failover.md",
                "To fail over the blog database, promote the MySQL replica with orchestrator and repoint the blog's "
                "primary endpoint; the blog's replica lags a few seconds.")
PROMPT = "the orders db primary is down, how do we fail over to the replica?"
AGENT_SESSION = "5a1e0000-1111-4aaa-8bbb-000000000001"  # the captured session's id as the agent names it


@pytest.fixture(scope="module", autouse=True)
def _stop_module_service(stop_service):
    yield
    stop_service(RUN)


def _archived(root: Path, title: str, rel: str, body: str) -> None:
    """An archived memory with an id, as `mem write` and aging leave it."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: {Path(rel).stem[:12]}\ntitle: {title}\nstatus: archived\ncreated: '2025-08-01T10:00:00Z'\n---\n\n{body}\n",
                    encoding="utf-8")


def _repo(folder: Path) -> Path:
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


@pytest.fixture
def shop(tmp_path, embedder, monkeypatch):
    """A tree with notes of two projects and the team, two archived failover runbooks (the team's and the
    blog's), the `shop` repository, and one captured session in it that asked how to fail over."""
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    monkeypatch.setenv("MEMSTRATA_NOW", NOW)
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    for title, body, category in NOTES:
        m.write(body, title=title, category=category, created="2026-05-28T10:00:00Z")
    _archived(m.root, *RUNBOOK)
    _archived(m.root, *BLOG_RUNBOOK)
    repo = _repo(tmp_path / "src" / "shop")
    talk = Claude(session=AGENT_SESSION, cwd=str(repo))
    talk.user(PROMPT, "2026-05-30T15:00:00.000Z").reply("Let me look at how we did it last time.", "2026-05-30T15:00:20.000Z")
    talk.user("thanks", "2026-05-30T15:02:00.000Z")
    report = m.capture([talk.write(tmp_path)])
    assert report["new_sessions"] == 1 and report["entries"][0]["path"].startswith("sessions/shop/")
    return m, repo, report["entries"][0]["id"]


def hook(root: Path, payload: dict, *args: str) -> str:
    """The SessionStart/UserPromptSubmit hook as Claude Code runs it (a new process; the test run's
    environment: no service is started, a session start is answered by the cold path)."""
    env = {**os.environ, "MEMSTRATA_HOME": str(root), "MEMSTRATA_RUNTIME_DIR": RUN, "MEMSTRATA_NOW": NOW,
           "MEMSTRATA_SERVICE": "auto"}
    done = subprocess.run([PY, "-m", "memstrata.cli.app", "autoload", "--hook", *args], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def start(cwd, session="new-1"):
    return {"hook_event_name": "SessionStart", "source": "startup", "session_id": session, "cwd": str(cwd)}


def titles(block: str) -> list[str]:
    return [line[4:] for line in block.splitlines() if line.startswith("### ")]


def test_the_block_prefers_the_project_of_the_hooks_cwd(shop, tmp_path):
    """Through the real hook command: in the shop repository (or a folder inside it) the block holds the
    shop's note first and the team's, never the blog's nor the captured session; in a folder that is no
    project, every note as before (sessions still left out)."""
    m, repo, session_id = shop
    in_shop = hook(m.root, start(repo))
    assert titles(in_shop) == ["Shop database", "Commit style"], in_shop
    assert session_id not in in_shop and "Blog" not in in_shop
    (repo / "src" / "api").mkdir(parents=True)
    assert hook(m.root, start(repo / "src" / "api")) == in_shop  # the repository's top folder names it
    elsewhere = _repo(tmp_path / "work" / "blog-clone")  # another folder name, the blog's remote
    subprocess.run(["git", "-C", str(elsewhere), "remote", "add", "origin", "git@example.org:me/blog.git"], check=True)
    assert titles(hook(m.root, start(elsewhere)))[0] == "Blog theme"
    nowhere = tmp_path / "downloads"
    nowhere.mkdir()
    assert set(titles(hook(m.root, start(nowhere)))) == {"Shop database", "Blog theme", "Commit style"}
    assert "Orders database failover" not in in_shop  # archived: listed only when nothing active is there


def test_the_last_session_brings_back_what_it_needed_at_the_next_prompt(shop):
    """In process (the code path of the warm service): the shop's last session asked how to fail over
    the orders database; the team's archived runbook comes back, the blog's look-alike does not, and
    the session's next prompt gets it, whatever it says, once."""
    m, repo, session_id = shop
    own = m.promote_last_session(str(repo), session_id=AGENT_SESSION)  # the only session is the one starting
    assert own["last_session"] is None and own["promoted"] == []
    dry = m.promote_last_session(str(repo), session_id="new-1", dry_run=True)
    assert dry["last_session"]["id"] == session_id and dry["prompts"] == [PROMPT]
    assert [r["title"] for r in dry["promoted"]] == ["Orders database failover"]
    assert hook_sessions.brought(m.root, "new-1") == []  # a dry run notes nothing
    done = m.promote_last_session(str(repo), session_id="new-1")
    runbook = m.read(done["promoted"][0]["id"], count_access=False)
    assert runbook.status == "active" and not runbook.path.startswith("runbooks/archived/")
    assert [e.title for e in m.list() if e.status == "archived"] == ["Blog database failover"]
    first = m.autoload("ok", session_id="new-1").markdown()
    assert "## Brought back for this project's last session" in first and "patronictl failover orders" in first
    assert "write the post-mortem in the wiki" in first  # whole, past the 300 tokens of a hit
    assert m.autoload("ok", session_id="new-1").markdown() == ""  # given once
    asked = m.autoload("which theme does the blog use?", session_id="new-2").markdown()
    assert "Brought back" not in asked  # another session: nothing was brought back for it


def test_the_hook_starts_it_in_the_background_and_loads_no_model(shop):
    """The SessionStart hook prints its block from the catalog (no torch, onnxruntime, lancedb or numpy
    in the hook's process), starts the promotion in a process of its own and returns without waiting
    for it; once that is done the runbook is hot, and a second start of the session starts nothing."""
    m, repo, _ = shop
    code = ("import sys, io\nfrom memstrata.cli.app import main\n"
            "sys.argv = ['mem', 'autoload', '--hook', '--promote']\ncode = main()\n"
            "heavy = [n for n in ('torch', 'onnxruntime', 'lancedb', 'numpy', 'sentence_transformers') if n in sys.modules]\n"
            "sys.stderr.write(f'HEAVY {heavy} {code}')\n")
    env = {**os.environ, "MEMSTRATA_HOME": str(m.root), "MEMSTRATA_RUNTIME_DIR": RUN, "MEMSTRATA_NOW": NOW,
           "MEMSTRATA_SERVICE": "auto"}
    done = subprocess.run([PY, "-c", code], input=json.dumps(start(repo, "bg-1")), capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.stderr.endswith("HEAVY [] 0"), done.stderr
    assert titles(done.stdout) == ["Shop database", "Commit style"]
    assert hook_sessions.followup(m.root, "bg-1") == "spawned"  # the hook did not wait (the model takes seconds)
    deadline = time.monotonic() + 300
    while hook_sessions.followup(m.root, "bg-1") != "done" and time.monotonic() < deadline:
        time.sleep(0.5)
    assert hook_sessions.followup(m.root, "bg-1") == "done", (m.root / ".cache/hook-sessions/start-followup.log").read_text()
    assert [m.read(i, count_access=False).title for i in hook_sessions.brought(m.root, "bg-1")] == ["Orders database failover"]
    again = hook(m.root, start(repo, "bg-1") | {"source": "compact"}, "--promote")
    assert titles(again)[0] in ("Shop database", "Orders database failover")
    assert hook_sessions.followup(m.root, "bg-1") == "done"  # not started twice for one session


def test_promote_last_session_on_the_command_line_refuses_a_context_and_says_when_there_is_nothing(tmp_path):
    """`mem promote --last-session` takes its task from the last session: --context with it is a one-line
    error; in a project with no captured session it says so and changes nothing."""
    env = {**os.environ, "MEMSTRATA_HOME": str(tmp_path / "mem"), "MEMSTRATA_RUNTIME_DIR": RUN, "MEMSTRATA_SERVICE": "off"}
    mem = [PY, "-m", "memstrata.cli.app"]
    assert subprocess.run(mem + ["init"], capture_output=True, text=True, env=env, timeout=120).returncode == 0
    bad = subprocess.run(mem + ["promote", "--last-session", "--context", "fail over"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert bad.returncode != 0 and bad.stderr.startswith("mem: error: --last-session") and "Traceback" not in bad.stderr
    alone = subprocess.run(mem + ["promote", "--session", "abc", "--context", "fail over"], capture_output=True,
                           text=True, env=env, timeout=120)  # --session means nothing without --last-session
    assert alone.returncode == 2 and "go with --last-session" in alone.stderr, alone.stderr
    repo = _repo(tmp_path / "src" / "shop")
    done = subprocess.run(mem + ["promote", "--last-session", "--cwd", str(repo), "--dry-run"], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "shop: no captured session to go on from", done.stderr
