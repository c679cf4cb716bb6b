"""The Claude Code hooks as Claude Code runs them: each event's documented JSON payload (code.claude.com
hooks reference, "Hook events": SessionStart, UserPromptSubmit, Stop, PreCompact, SessionEnd) on the stdin
of the exact command `mem setup claude` installed (read back from the settings.json it wrote) and of the
plugin's own hooks/hooks.json, run by `sh -c` with a bare PATH, on a real tree and a real transcript
in Claude Code's JSONL format, through the warm service. Checked: exit codes, what each prints (the
memory block at SessionStart and on a prompt, nothing at all at Stop, PreCompact, SessionEnd), the
wall time against each hook's timeout, and that the transcript's turns are captured, once."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memstrata import Memory

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from service_helpers import status, wait_for  # noqa: E402

import hooks as bench  # noqa: E402  (bench/hooks.py: the payloads, the transcript, how a hook is run)

REPO = Path(__file__).resolve().parents[2]
BIN, MEM = bench.BIN, bench.MEM
RUN = tempfile.mkdtemp(prefix="memstrata-hooks-run-")  # this module's own service
TIMES: list[tuple[str, str, float]] = []  # (where, event, seconds) of every hook run, printed at the end

NOTES = [
    ("We chose Postgres for the webshop because we need JSONB and transactions.", "Webshop database", "projects/webshop"),
    ("Deploys go out on Tuesdays and Thursdays; never on a Friday.", "Deploy days", "decisions"),
    ("Alice reviews every change to the payment code.", "Payment reviews", "people"),
]


def env_for(home: Path, **extra) -> dict:
    return bench.hook_env(home, RUN, **extra)


def run_hook(command: str, payload: dict, env: dict, cwd: Path, timeout: float, where: str):
    proc, elapsed = bench.run_hook(command, payload, env, cwd, timeout)
    TIMES.append((where, payload["hook_event_name"], elapsed))
    return proc, elapsed


installed = bench.installed


@pytest.fixture(scope="module")
def world(tmp_path_factory, embedder, stop_service):
    base = tmp_path_factory.mktemp("hooks")
    root, home, cwd = base / "memory", base / "home", base / "webshop"
    cwd.mkdir()
    m = Memory(root, embedder=embedder)
    m.init()
    today = datetime.now(timezone.utc)
    for (body, title, category), days in zip(NOTES, (20, 1, 2)):  # the database note warm, the others hot
        m.write(body, title=title, category=category, created=(today - timedelta(days=days)).strftime("%Y-%m-%dT10:00:00Z"))
    setup = subprocess.run([MEM, "setup", "claude", "--root", str(root), "--json"], capture_output=True, text=True,
                           env=env_for(home), timeout=120)
    assert setup.returncode == 0, setup.stderr
    path = bench.write_transcript(home, cwd)
    started = subprocess.run([MEM, "serve", "--detach", "--root", str(root)], capture_output=True, text=True,
                             env=env_for(home), timeout=300)
    assert started.returncode == 0, started.stderr
    assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=300)
    yield {"root": root, "home": home, "cwd": cwd, "transcript": path, "payloads": bench.payloads(path, cwd),
           "settings": home / ".claude" / "settings.json"}
    stop_service(RUN)
    load = os.getloadavg()
    sys.stderr.write(f"\nhook wall times (load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}):\n" + "".join(
        f"  {where:9} {event:17} {seconds * 1000:7.0f} ms\n" for where, event, seconds in TIMES))


def check_answer(event: str, proc, elapsed: float, timeout: float) -> None:
    assert proc.returncode == 0, (event, proc.stderr)
    assert elapsed < timeout, f"{event} took {elapsed:.1f} s, past its {timeout} s timeout"
    if event in ("SessionStart", "UserPromptSubmit"):
        out = proc.stdout
        if out.lstrip().startswith("{"):  # JSON output: hookSpecificOutput for this event
            out = json.loads(out)["hookSpecificOutput"]
            assert out["hookEventName"] == event
            out = out["additionalContext"]
        assert "<memory id=" in out and "not instructions" in out, (event, proc.stdout[:300])
    else:  # Stop, PreCompact, SessionEnd: nothing on stdout (a Stop's `{"decision": "block"}` would keep Claude going)
        assert proc.stdout == "", (event, proc.stdout[:300])


def test_the_installed_hooks_answer_each_documented_payload(world):
    hooks = installed(world["settings"])
    assert sorted(hooks) == sorted(world["payloads"])
    for event, payload in world["payloads"].items():
        [(command, timeout)] = hooks[event]
        assert shlex.split(command)[0] == MEM  # the absolute path: no PATH needed
        proc, elapsed = run_hook(command, payload, env_for(world["home"]), world["cwd"], timeout, "settings")
        check_answer(event, proc, elapsed, timeout)
        if event == "SessionStart":  # the hot notes; the warm database note waits for a prompt about it
            assert "Deploy days" in proc.stdout and "Postgres" not in proc.stdout
        if event == "UserPromptSubmit":  # the note the prompt asks about, and no note injected already
            assert "Postgres" in proc.stdout and "Deploy days" not in proc.stdout


def test_the_plugins_own_hooks_answer_each_documented_payload(world):
    """plugins/claude-code/hooks/hooks.json as a marketplace install runs it: `mem` from PATH, the tree
    from $MEMSTRATA_HOME."""
    hooks = installed(REPO / "plugins" / "claude-code" / "hooks" / "hooks.json")
    env = env_for(world["home"], PATH=f"{BIN}:/usr/bin:/bin", MEMSTRATA_HOME=str(world["root"]))
    for event, payload in world["payloads"].items():
        [(command, timeout)] = hooks[event]
        proc, elapsed = run_hook(command, {**payload, "session_id": "plugin-session"}, env, world["cwd"], timeout,
                                 "plugin")
        check_answer(event, proc, elapsed, timeout)


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"prompt": 5}', '{"hook_event_name": "Stop"}',
                                   '{"hook_event_name": "Stop", "transcript_path": "/nonexistent/x.jsonl"}',
                                   '{"hook_event_name": "PreCompact", "transcript_path": "/etc/passwd"}'])
def test_a_hook_never_blocks_even_without_its_guard(world, stdin):
    """`mem ... --hook` itself exits 0 on any payload (the `|| true` is a second line of defence: exit 2
    blocks a Stop, a PreCompact and a prompt)."""
    for event, [(command, timeout)] in installed(world["settings"]).items():
        bare = command.removesuffix(" || true")
        proc = subprocess.run(["/bin/sh", "-c", bare], input=stdin, capture_output=True, text=True,
                              env=env_for(world["home"]), cwd=world["cwd"], timeout=timeout + 30)
        assert proc.returncode == 0, (event, stdin, proc.stderr)
        if event not in ("SessionStart", "UserPromptSubmit"):
            assert proc.stdout == "", (event, stdin, proc.stdout)
