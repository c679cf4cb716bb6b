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
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memstrata import Memory

sys.path.insert(0, str(Path(__file__).parent))
from service_helpers import status, wait_for  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MEM = str(BIN / "mem")
RUN = tempfile.mkdtemp(prefix="memstrata-hooks-run-")  # this module's own service
SESSION = "3f9c2a71-5d0e-4b8a-9c61-0d2e7f4a8b15"
TIMES: list[tuple[str, str, float]] = []  # (where, event, seconds) of every hook run, printed at the end

NOTES = [
    ("We chose Postgres for the webshop because we need JSONB and transactions.", "Webshop database", "projects/webshop"),
    ("Deploys go out on Tuesdays and Thursdays; never on a Friday.", "Deploy days", "decisions"),
    ("Alice reviews every change to the payment code.", "Payment reviews", "people"),
]


def line(kind, n, text_or_blocks, *, at, parent=None, sidechain=False):
    """One transcript line as Claude Code writes it (`~/.claude/projects/<project>/<session>.jsonl`)."""
    message = ({"role": "user", "content": text_or_blocks} if kind == "user" else
               {"id": f"msg_{n:03d}", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
                "content": text_or_blocks, "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 20}})
    return {"parentUuid": parent, "isSidechain": sidechain, "userType": "external", "cwd": "CWD",
            "sessionId": SESSION, "version": "2.1.240", "gitBranch": "main", "type": kind, "message": message,
            "uuid": f"00000000-0000-4000-8000-{n:012d}", "timestamp": at}


def transcript(cwd: Path) -> list[dict]:
    lines = [
        line("user", 1, "Why does checkout double-charge when the user clicks pay twice?", at="2026-12-05T08:14:49.123Z"),
        line("assistant", 2, [{"type": "thinking", "thinking": "look at the idempotency key", "signature": "x"},
                              {"type": "text", "text": "The pay button posts twice and the charge has no idempotency "
                                                       "key, so the gateway books both."},
                              {"type": "tool_use", "id": "toolu_01", "name": "Edit",
                               "input": {"file_path": str(cwd / "checkout.py"), "old_string": "a", "new_string": "b"}}],
             at="2026-12-05T08:15:02.456Z"),
        line("user", 3, [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "edited"}],
             at="2026-12-05T08:15:03.001Z"),
        line("assistant", 4, [{"type": "text", "text": "I added an idempotency key derived from the cart id."}],
             at="2026-12-05T08:15:09.789Z"),
        line("user", 5, "Explore the payments module", at="2026-12-05T08:15:20.000Z", sidechain=True),
        line("user", 6, "Good. Does the refund path need the same key?", at="2026-12-05T08:16:30.000Z"),
        line("assistant", 7, [{"type": "text", "text": "Yes: refunds reuse the charge's key with a refund suffix."}],
             at="2026-12-05T08:16:41.250Z"),
    ]
    for entry in lines:
        entry["cwd"] = str(cwd)
    return lines + [{"type": "summary", "summary": "Checkout idempotency", "leafUuid": lines[-1]["uuid"]}]


def payloads(transcript_path: Path, cwd: Path) -> dict:
    """Each event's input as the hooks reference documents it, with this test's session, file and folder."""
    common = {"session_id": SESSION, "transcript_path": str(transcript_path), "cwd": str(cwd)}
    return {
        "SessionStart": {**common, "hook_event_name": "SessionStart", "source": "startup", "model": "claude-sonnet-5"},
        "UserPromptSubmit": {**common, "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
                             "prompt": "Which database does the webshop use, and why?"},
        "Stop": {**common, "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": False,
                 "last_assistant_message": "Yes: refunds reuse the charge's key with a refund suffix.",
                 "background_tasks": [], "session_crons": []},
        "PreCompact": {**common, "hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": ""},
        "SessionEnd": {**common, "hook_event_name": "SessionEnd", "reason": "other"},
    }


def env_for(home: Path, **extra) -> dict:
    """What Claude Code's hook process gets here: a bare PATH (the settings' commands name mem by path)."""
    keep = ("XDG_STATE_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM", "LANG", "TZ")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update({"HOME": str(home), "PATH": "/usr/bin:/bin", "MEMSTRATA_RUNTIME_DIR": RUN}, **extra)
    return env


def run_hook(command: str, payload: dict, env: dict, cwd: Path, timeout: float, where: str):
    """A hook as Claude Code runs it: `sh -c COMMAND` (shell form), the payload on stdin, in the session's cwd."""
    started = time.perf_counter()
    proc = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout + 30)
    elapsed = time.perf_counter() - started
    TIMES.append((where, payload["hook_event_name"], elapsed))
    return proc, elapsed


def installed(settings: Path) -> dict[str, list[tuple[str, float]]]:
    """{event: [(command, timeout)]} of the memstrata hooks in a settings.json or hooks.json."""
    from memstrata.integrations.hooks_config import is_ours

    hooks = json.loads(settings.read_text())["hooks"]
    return {event: [(h["command"], h.get("timeout", 600)) for g in groups for h in g["hooks"] if is_ours(h["command"])]
            for event, groups in hooks.items()}


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
    folder = home / ".claude" / "projects" / "-webshop"
    folder.mkdir(parents=True)
    path = folder / f"{SESSION}.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in transcript(cwd)))
    started = subprocess.run([MEM, "serve", "--detach", "--root", str(root)], capture_output=True, text=True,
                             env=env_for(home), timeout=300)
    assert started.returncode == 0, started.stderr
    assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=300)
    yield {"root": root, "home": home, "cwd": cwd, "transcript": path, "payloads": payloads(path, cwd),
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
