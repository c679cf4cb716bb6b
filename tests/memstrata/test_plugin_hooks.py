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
RUN = ""  # this module's own service's runtime folder, made by the `world` fixture
TIMES: list[tuple[str, str, float]] = []  # (where, event, seconds) of every hook run, printed at the end

NOTES = [
    ("We chose Postgres for the webshop because we need JSONB and transactions.", "Webshop database", "projects/webshop"),
    ("Deploys go out on Tuesdays and Thursdays; never on a Friday.", "Deploy days", "decisions"),
    ("Alice reviews every change to the payment code.", "Payment reviews", "people"),
    ("The blog is built with Hugo and the PaperMod theme.", "Blog engine", "projects/blog"),
]
# The session runs in the webshop folder: its start lists the webshop's note first with the team's, never
# the blog's (another project, docs/hooks.md); a prompt about the blog brings that note, not one shown.
PROMPT = "Which static site generator does the blog use?"


def env_for(home: Path, **extra) -> dict:
    return bench.hook_env(home, RUN, **extra)


def run_hook(command: str, payload: dict, env: dict, cwd: Path, timeout: float, where: str):
    proc, elapsed = bench.run_hook(command, payload, env, cwd, timeout)
    TIMES.append((where, payload["hook_event_name"], elapsed))
    return proc, elapsed


installed = bench.installed


@pytest.fixture(scope="module")
def world(tmp_path_factory, embedder, stop_service):
    global RUN
    RUN = tempfile.mkdtemp(prefix="memstrata-hooks-run-")
    base = tmp_path_factory.mktemp("hooks")
    root, home, cwd = base / "memory", base / "home", base / "webshop"
    cwd.mkdir()
    m = Memory(root, embedder=embedder)
    m.init()
    today = datetime.now(timezone.utc)
    for (body, title, category), days in zip(NOTES, (20, 1, 2, 3)):  # the database note warm, the others hot
        m.write(body, title=title, category=category, created=(today - timedelta(days=days)).strftime("%Y-%m-%dT10:00:00Z"))
    setup = subprocess.run([MEM, "setup", "claude", "--root", str(root), "--json"], capture_output=True, text=True,
                           env=env_for(home), timeout=120)
    assert setup.returncode == 0, setup.stderr
    path = bench.write_transcript(home, cwd)
    started = subprocess.run([MEM, "serve", "--detach", "--root", str(root)], capture_output=True, text=True,
                             env=env_for(home), timeout=300)
    assert started.returncode == 0, started.stderr
    assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=300)
    payloads = bench.payloads(path, cwd)
    payloads["UserPromptSubmit"]["prompt"] = PROMPT
    yield {"root": root, "home": home, "cwd": cwd, "transcript": path, "payloads": payloads,
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
        if event == "SessionStart":  # the webshop's note (its cwd, 20 days old: warm) and the team's; never the blog's
            titles = [line.split("\n")[0] for line in proc.stdout.split("### ")[1:]]
            assert {"Webshop database", "Deploy days"} <= set(titles) and "Hugo" not in proc.stdout
        if event == "UserPromptSubmit":  # the note the prompt asks about, and no note injected already
            assert "Hugo" in proc.stdout and "Deploy days" not in proc.stdout and "Postgres" not in proc.stdout


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


def captured(root: Path) -> list[Path]:
    """The session entries captured from the test's transcript (sessions/<project>/...-claude-code-<id8>*.md)."""
    return sorted((root / "sessions").rglob(f"*-claude-code-{bench.SESSION[:8]}*.md"))


def settled(world) -> bool:
    """No capture notice left waiting: every hook's capture is done."""
    proc = subprocess.run([MEM, "capture", "--status", "--json", "--root", str(world["root"])], capture_output=True,
                          text=True, env=env_for(world["home"]), timeout=120)
    return proc.returncode == 0 and json.loads(proc.stdout)["pending"] == 0


def test_the_stop_hooks_capture_the_transcripts_turns_once_and_the_next_turn_too(world):
    hooks, env = installed(world["settings"]), env_for(world["home"])
    for event in ("Stop", "PreCompact", "SessionEnd"):
        [(command, timeout)] = hooks[event]
        check_answer(event, *run_hook(command, world["payloads"][event], env, world["cwd"], timeout, "settings"),
                     timeout)
    assert wait_for(lambda: captured(world["root"]) and settled(world), timeout=240)
    [entry] = captured(world["root"])
    text = entry.read_text()
    assert entry.parent == world["root"] / "sessions" / "webshop"
    headings = [line for line in text.splitlines() if line.startswith("### ")]
    assert headings == ["### 2026-12-05T08:14:49.123Z · user", "### 2026-12-05T08:15:02.456Z · assistant",
                        "### 2026-12-05T08:16:30.000Z · user", "### 2026-12-05T08:16:41.250Z · assistant"]
    assert "→ Edit: checkout.py" in text and "idempotency key derived from the cart id" in text
    assert "look at the idempotency key" not in text and "Explore the payments module" not in text  # thinking, sidechain
    assert f"session: {bench.SESSION}" in text

    before = entry.read_bytes()
    for event in ("Stop", "PreCompact", "SessionEnd"):  # fired again on an unchanged transcript: nothing changes
        [(command, timeout)] = hooks[event]
        run_hook(command, world["payloads"][event], env, world["cwd"], timeout, "settings")
    assert wait_for(lambda: settled(world), timeout=240)
    assert entry.read_bytes() == before and captured(world["root"]) == [entry]

    with world["transcript"].open("a") as out:  # the session goes on: a prompt and a reply
        for n, kind, words, at in ((8, "user", "Also log every refund with the ledger id, please.", "08:20:05.000Z"),
                                   (9, "assistant", [{"type": "text", "text": "Done: each refund now writes its "
                                                                              "ledger id to the audit log."}],
                                    "08:20:19.500Z")):
            out.write(json.dumps(bench.line(kind, n, words, at=f"2026-12-05T{at}", cwd=world["cwd"])) + "\n")
    [(command, timeout)] = hooks["SessionEnd"]
    run_hook(command, world["payloads"]["SessionEnd"], env, world["cwd"], timeout, "settings")
    assert wait_for(lambda: "08:20:19.500Z · assistant" in entry.read_text() and settled(world), timeout=240)
    assert entry.read_text().count("### ") == 6
    found = subprocess.run([MEM, "recall", "where do refunds record the ledger id?", "--json", "--root",
                            str(world["root"])], capture_output=True, text=True, env=env, timeout=300)
    assert found.returncode == 0, found.stderr
    assert any("ledger id" in (hit.get("snippet") or "") for hit in json.loads(found.stdout)["results"])


CODEX_SESSION = "019d036d-c7fa-72d2-b6fd-78878bfe34e4"


def rollout(cwd: Path) -> list[dict]:
    """A Codex rollout file's lines (session_meta, turn_context, event_msg, response_item), written here."""
    def at(second):
        return f"2026-12-05T09:00:{second:02d}.000Z"
    return [
        {"timestamp": at(0), "type": "session_meta", "payload": {"id": CODEX_SESSION, "timestamp": at(0), "cwd": str(cwd),
                                                                 "originator": "codex_cli_rs", "cli_version": "0.170.0"}},
        {"timestamp": at(1), "type": "turn_context", "payload": {"cwd": str(cwd), "model": "gpt-5"}},
        {"timestamp": at(2), "type": "event_msg", "payload": {"type": "user_message",
                                                             "message": "Make the cart total round half to even."}},
        {"timestamp": at(2), "type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Make the cart total round half to even."}]}},
        {"timestamp": at(5), "type": "response_item", "payload": {"type": "function_call", "name": "exec_command",
                                                                 "arguments": json.dumps({"cmd": "grep -n round cart.py"}),
                                                                 "call_id": "call-1"}},
        {"timestamp": at(6), "type": "response_item", "payload": {"type": "function_call_output", "call_id": "call-1",
                                                                 "output": "12: total = round(total, 2)"}},
        {"timestamp": at(9), "type": "event_msg", "payload": {"type": "agent_message",
                                                             "message": "The cart now rounds with banker's rounding "
                                                                        "through Decimal.quantize."}},
        {"timestamp": at(9), "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "The cart now rounds with banker's rounding through Decimal.quantize."}]}},
    ]


def test_the_codex_hooks_answer_codexs_payloads_and_capture_the_rollout(world):
    """`mem setup codex`'s hooks.json commands on the inputs of Codex's hook schemas (openai/codex
    codex-rs/hooks/schema/generated): JSON out at SessionStart and on a prompt, nothing at Stop and
    PreCompact, and the rollout named by `transcript_path` captured."""
    home, env = world["home"], env_for(world["home"])
    done = subprocess.run([MEM, "setup", "codex", "--root", str(world["root"])], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    path = home / ".codex" / "sessions" / "2026" / "12" / "05" / f"rollout-2026-12-05T09-00-00-{CODEX_SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(entry) + "\n" for entry in rollout(world["cwd"])))
    common = {"session_id": CODEX_SESSION, "transcript_path": str(path), "cwd": str(world["cwd"]), "model": "gpt-5"}
    turn = {"turn_id": "019d036d-c7fa-72d2-b6fd-000000000001", "permission_mode": "default"}
    codex_payloads = {
        "SessionStart": {**common, "hook_event_name": "SessionStart", "permission_mode": "default", "source": "startup"},
        "UserPromptSubmit": {**common, **turn, "hook_event_name": "UserPromptSubmit",
                             "prompt": PROMPT},
        "Stop": {**common, **turn, "hook_event_name": "Stop", "stop_hook_active": False,
                 "last_assistant_message": "The cart now rounds with banker's rounding through Decimal.quantize."},
        "PreCompact": {**common, "turn_id": turn["turn_id"], "hook_event_name": "PreCompact", "trigger": "auto"},
    }
    hooks = installed(home / ".codex" / "hooks.json")
    assert sorted(hooks) == sorted(codex_payloads)
    for event, payload in codex_payloads.items():
        [(command, timeout)] = hooks[event]
        proc, elapsed = run_hook(command, payload, env, world["cwd"], timeout, "codex")
        assert proc.returncode == 0 and elapsed < timeout, (event, proc.stderr)
        if event in ("SessionStart", "UserPromptSubmit"):  # Codex's output schema: only these two fields
            answer = json.loads(proc.stdout)
            assert set(answer) == {"hookSpecificOutput"} and set(answer["hookSpecificOutput"]) == {
                "hookEventName", "additionalContext"} and answer["hookSpecificOutput"]["hookEventName"] == event
            assert "<memory id=" in answer["hookSpecificOutput"]["additionalContext"]
        else:
            assert proc.stdout == ""
    assert "Postgres" in json.loads(run_hook(hooks["UserPromptSubmit"][0][0], codex_payloads["UserPromptSubmit"] | {
        "session_id": "codex-2", "prompt": "Which database does the webshop use?"}, env, world["cwd"], 10, "codex")[0].stdout)["hookSpecificOutput"]["additionalContext"]
    found = wait_for(lambda: sorted((world["root"] / "sessions").rglob(f"*-codex-{CODEX_SESSION[:8]}*.md"))
                     and settled(world), timeout=240)
    assert found
    [entry] = sorted((world["root"] / "sessions").rglob(f"*-codex-{CODEX_SESSION[:8]}*.md"))
    text = entry.read_text()
    assert "### 2026-12-05T09:00:02.000Z · user" in text and "banker's rounding" in text
    assert "→ exec_command: grep -n round cart.py" in text and "12: total" not in text  # a call, never its output
