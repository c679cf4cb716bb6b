"""A session starts with what matters now, at once: the SessionStart block needs no model and no warm
service, is never empty while memories exist, and what a hook shows is never counted as a use."""
from __future__ import annotations

import atexit
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import date, timedelta
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.cli import output
from memstrata.cli.app import main
from memstrata.storage import journal

sys.path.insert(0, str(Path(__file__).parent))
from service_helpers import status, wait_for  # noqa: E402

PY = sys.executable
START = {"hook_event_name": "SessionStart", "source": "startup", "cwd": "/home/dev/alpha"}
RUN = tempfile.mkdtemp(prefix="memstrata-start-run-")  # this module's own service folder
atexit.register(shutil.rmtree, RUN, True)  # the xdist controller imports this module too and runs no teardown


@pytest.fixture(scope="module", autouse=True)
def _stop_module_service(stop_service):
    yield
    stop_service(RUN)


def hook(root, payload, *args, now=None, service="auto", test_env=True, **extra):
    """`mem autoload --hook ARGS` as a new process: with `test_env` the test run's environment (its
    client starts no service), else a user's (a cold call starts one, in this module's folder)."""
    env = {k: v for k, v in os.environ.items() if test_env or k != "PYTEST_CURRENT_TEST"}
    env.update({"MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": service, "MEMSTRATA_RUNTIME_DIR": RUN})
    if now:
        env["MEMSTRATA_NOW"] = now
    env.update(extra)
    done = subprocess.run([PY, "-m", "memstrata.cli.app", "autoload", "--hook", *args], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


NOTES = [("Staging database", "The staging database runs PostgreSQL 15 on db-stage-1.", "infra", "2026-03-02"),
         ("Deploy day", "Deploys go out on Tuesdays once the canary has been green for an hour.", "process", "2026-03-03"),
         ("Billing on-call", "Alice owns the billing service on-call rotation this quarter.", "people", "2026-03-04")]


@pytest.fixture(scope="module")
def tree(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("start") / "mem"
    m = Memory(root, embedder=embedder)
    m.init()
    for title, body, category, day in NOTES:
        m.write(body, title=title, category=category, created=f"{day}T10:00:00Z")
    return m


def test_a_cold_session_start_prints_the_block_at_once_and_starts_the_service(tree):
    """With the service stopped, the first SessionStart hook prints the block from the catalog (no
    model), starts the service in the background for the prompts that follow, and the warm service
    answers the same block."""
    assert status(RUN) is None
    cold = hook(tree.root, {**START, "session_id": "c1"}, now="2026-05-01T09:00:00Z", test_env=False)
    assert all(title in cold for title, *_ in NOTES) and cold.startswith("# Memories for this session")
    try:
        assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=240), "no service was started"
        warm = hook(tree.root, {**START, "session_id": "c2"}, now="2026-05-01T09:00:00Z", test_env=False)
        assert warm == cold
    finally:
        done = subprocess.run([PY, "-m", "memstrata.cli.app", "serve", "--stop"], capture_output=True, text=True,
                              env={**os.environ, "MEMSTRATA_RUNTIME_DIR": RUN, "MEMSTRATA_SERVICE": "off"}, timeout=120)
        assert done.returncode == 0, done.stderr
    assert wait_for(lambda: status(RUN) is None, timeout=60)


def test_while_the_service_warms_up_a_session_start_is_answered_at_once(tree):
    """A service that answers but is not warm yet (it waits for a process to end before loading the
    model, as one started by a cold hook does): a SessionStart hook gets its block from the client, a
    prompt hook nothing, at once."""
    env = {**{k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}, "MEMSTRATA_RUNTIME_DIR": RUN}
    sleeper = subprocess.Popen([PY, "-c", "import time; time.sleep(120)"])
    service = subprocess.Popen([PY, "-m", "memstrata.service", "--root", str(tree.root), "--wait-pid", str(sleeper.pid)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert wait_for(lambda: status(RUN) is not None, timeout=120)
        assert not status(RUN)["warm"]
        start = hook(tree.root, {**START, "session_id": "w1"}, now="2026-05-01T09:00:00Z", test_env=False)
        assert all(title in start for title, *_ in NOTES)
        prompt = {"session_id": "w1", "hook_event_name": "UserPromptSubmit", "prompt": "which day do deploys go out?"}
        assert hook(tree.root, prompt, now="2026-05-01T09:00:00Z", test_env=False) == ""
        assert not status(RUN)["warm"]  # both were answered by the client, not by the service
    finally:
        sleeper.kill()
        sleeper.wait()
        subprocess.run([PY, "-m", "memstrata.cli.app", "serve", "--stop"], capture_output=True, timeout=120,
                       env={**os.environ, "MEMSTRATA_RUNTIME_DIR": RUN, "MEMSTRATA_SERVICE": "off"})
        service.wait(timeout=120)


@pytest.mark.parametrize("args", [(), ("--json",), ("--budget", "120"), ("--promote", "--budget=250", "--json")])
def test_the_cold_answer_is_the_clis_answer(tree, args):
    """The block the client answers itself (service cold) is byte for byte what the CLI prints
    in-process (service off), hence what the warm service prints (test above)."""
    now = "2026-05-01T09:00:00Z"
    cold = hook(tree.root, {**START, "session_id": "x"}, *args, now=now)
    cli = hook(tree.root, {**START, "session_id": "y"}, *args, now=now, service="off")
    assert cold == cli and cold
    if "--json" in args:
        assert json.loads(cold)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert not journal.read(tree.root)  # a session start is no use of anything it shows


def test_the_shared_space_is_listed_the_same_way_cold(tree, tmp_path, embedder):
    shared = Memory(tmp_path / "shared", embedder=embedder)
    shared.init()
    shared.write("The design system's colours live in the @acme/tokens package.", title="Design tokens",
                 category="web", created="2026-04-28T10:00:00Z", extra={"agent": "alice"})
    now = "2026-05-01T09:00:00Z"
    cold = hook(tree.root, {**START, "session_id": "s1"}, now=now, MEMSTRATA_SHARED=str(shared.root))
    assert "Design tokens" in cold and "shared by alice" in cold and "Deploy day" in cold
    assert hook(tree.root, {**START, "session_id": "s2"}, now=now, service="off", MEMSTRATA_SHARED=str(shared.root)) == cold


def test_a_session_start_loads_no_model(tree):
    """`mem autoload` with no context and the MCP autoload answer count tokens with the tokenizer
    alone: no torch, onnxruntime, lancedb or numpy is imported, no model loaded."""
    code = ("import sys\nfrom memstrata.cli.app import main\nassert main(['autoload', '--budget', '300']) == 0\n"
            "from memstrata import Memory\nfrom memstrata.mcp.answers import autoload_answer\n"
            f"m = Memory({str(tree.root)!r})\n"
            "answer = autoload_answer(m.autoload(None, budget=400, form='json'), m.state.token_counter)\n"
            "assert 'Deploy day' in answer.content[0].text and m.state.loaded_embedder is None\n"
            "heavy = [n for n in ('torch', 'onnxruntime', 'lancedb', 'numpy', 'sentence_transformers')\n"
            "         if n in sys.modules]\n"
            "print('HEAVY', heavy)\n")
    env = {**os.environ, "MEMSTRATA_HOME": str(tree.root), "MEMSTRATA_NOW": "2026-05-01T09:00:00Z"}
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Staging database" in done.stdout and done.stdout.strip().endswith("HEAVY []")


def _note(root: Path, rel: str, title: str, status: str, created: str, body: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\ntitle: {title}\nstatus: {status}\ncreated: '{created}'\n---\n\n{body}\n", encoding="utf-8")


def test_never_empty_while_memories_exist(tmp_path, embedder):
    """Months after the last write every note is cold, and the block still lists them; with only
    archived notes, those; a note dropped in by hand (no id yet) appears at the next cold start,
    and one deleted by hand is gone from it."""
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    _note(m.root, "ops/archived/old-runbook.md", "Old runbook", "archived", "2025-01-10T10:00:00Z",
          "Restart the queue workers one at a time.")
    start = hook(m.root, START, now="2026-06-01T09:00:00Z")
    assert "Old runbook" in start  # only archived notes: they are what there is
    _note(m.root, "ops/vpn.md", "VPN", "active", "2025-11-02T10:00:00Z", "The office VPN needs the new client.")
    start = hook(m.root, START, now="2026-06-01T09:00:00Z")
    assert "VPN" in start and 'id="path:ops/vpn.md"' in start and "Old runbook" not in start
    (m.root / "ops" / "vpn.md").unlink()
    assert "VPN" not in hook(m.root, START, now="2026-06-01T09:00:00Z")
    empty = Memory(tmp_path / "empty", embedder=embedder)
    empty.init()
    assert hook(empty.root, START) == ""  # no memory at all: nothing to say


def test_a_session_start_again_in_the_same_session_gets_the_block_again(tree):
    """SessionStart fires again on resume, /clear and compaction, when the context lost the block:
    it is not held back as "already injected" (prompts are; docs/hooks.md)."""
    first = hook(tree.root, {**START, "session_id": "again"}, now="2026-05-01T09:00:00Z")
    assert first and hook(tree.root, {**START, "session_id": "again", "source": "compact"},
                          now="2026-05-01T09:00:00Z") == first


OLD = [("Old 0", "The staging database runs PostgreSQL 15 on db-stage-1."),
       ("Old 1", "Deploys go out on Tuesdays once the canary has been green for an hour."),
       ("Old 2", "Alice owns the billing service on-call rotation this quarter.")]
NEW = [("New 0", "The team moved the CI runners to ARM machines to halve the build bill."),
       ("New 1", "Customer exports now run nightly at 02:00 UTC from the replica."),
       ("New 2", "The design review for the mobile app happens every second Thursday.")]


def test_the_40_day_repro_what_was_written_lately_is_in_the_block(tmp_path, embedder, monkeypatch, capsys):
    """The issue's repro through the CLI: three notes on day 0, three on day 20, the SessionStart hook
    every day with --budget 300, `mem maintain` weekly. Loads used to count as reads, so the day-0
    notes stayed first for good ("Old 0/1/2 plus New 1" on day 40); now every day-20 note is there."""
    root = tmp_path / "mem"
    output.set_memory_factory(lambda r: Memory(r, embedder=embedder))
    first = date(2026, 2, 2)

    def mem(day: int, *argv, stdin: str | None = None) -> str:
        monkeypatch.setenv("MEMSTRATA_NOW", f"{first + timedelta(days=day)}T09:00:00Z")
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((stdin or "").encode())))
        capsys.readouterr()
        assert main([*argv, "--root", str(root)]) == 0
        return capsys.readouterr().out

    try:
        mem(0, "init")
        for day, notes in ((0, OLD), (20, NEW)):
            for title, body in notes:
                mem(day, "write", body, "--title", title, "--category", "work")
        for day in range(1, 40):
            block = mem(day, "autoload", "--hook", "--budget", "300", stdin=json.dumps({**START, "session_id": f"d{day}"}))
            assert "<memory id=" in block, day  # never empty
            if day % 7 == 0:
                mem(day, "maintain")
    finally:
        output.set_memory_factory(None)
    # day 40, as Claude Code runs it: a new process, the service cold
    day40 = hook(root, {**START, "session_id": "d40"}, "--budget", "300", now=f"{first + timedelta(days=40)}T09:00:00Z")
    shown = [title for title, _ in OLD + NEW if f"### {title}\n" in day40]
    assert {"New 0", "New 1", "New 2"} <= set(shown), shown
    assert embedder.count_tokens(day40) <= 300
    assert all(e.access_count == 0 for e in Memory(root, embedder=embedder).list())  # 40 blocks, no use counted
