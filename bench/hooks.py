"""The Claude Code hooks' wall time, each event's documented payload through the command `mem setup
claude` installs, as Claude Code runs it (`sh -c`, the payload on stdin, a bare PATH), warm service.

    python bench/hooks.py [--runs 10]        # prints per event: median and max ms, and the load

A throwaway HOME, tree and service of its own (removed at the end). The payloads, the transcript and
the way a hook is run are shared with tests/memstrata/test_plugin_hooks.py.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
MEM = str(BIN / "mem")
SESSION = "3f9c2a71-5d0e-4b8a-9c61-0d2e7f4a8b15"
PROMPT = "Which database does the webshop use, and why?"


def line(kind, n, text_or_blocks, *, at, cwd, sidechain=False):
    """One transcript line as Claude Code writes it (`~/.claude/projects/<project>/<session>.jsonl`)."""
    message = ({"role": "user", "content": text_or_blocks} if kind == "user" else
               {"id": f"msg_{n:03d}", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
                "content": text_or_blocks, "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 20}})
    return {"parentUuid": None if n == 1 else f"00000000-0000-4000-8000-{n - 1:012d}", "isSidechain": sidechain,
            "userType": "external", "cwd": str(cwd), "sessionId": SESSION, "version": "2.1.240", "gitBranch": "main",
            "type": kind, "message": message, "uuid": f"00000000-0000-4000-8000-{n:012d}", "timestamp": at}


def transcript(cwd: Path) -> list[dict]:
    """A short session: prompts as a string and as blocks, thinking, a tool call and its result, a
    sub-agent's line, a summary line."""
    return [
        line("user", 1, "Why does checkout double-charge when the user clicks pay twice?", at="2026-12-05T08:14:49.123Z",
             cwd=cwd),
        line("assistant", 2, [{"type": "thinking", "thinking": "look at the idempotency key", "signature": "x"},
                              {"type": "text", "text": "The pay button posts twice and the charge has no idempotency "
                                                       "key, so the gateway books both."},
                              {"type": "tool_use", "id": "toolu_01", "name": "Edit",
                               "input": {"file_path": str(cwd / "checkout.py"), "old_string": "a", "new_string": "b"}}],
             at="2026-12-05T08:15:02.456Z", cwd=cwd),
        line("user", 3, [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "edited"}],
             at="2026-12-05T08:15:03.001Z", cwd=cwd),
        line("assistant", 4, [{"type": "text", "text": "I added an idempotency key derived from the cart id."}],
             at="2026-12-05T08:15:09.789Z", cwd=cwd),
        line("user", 5, "Explore the payments module", at="2026-12-05T08:15:20.000Z", cwd=cwd, sidechain=True),
        line("user", 6, "Good. Does the refund path need the same key?", at="2026-12-05T08:16:30.000Z", cwd=cwd),
        line("assistant", 7, [{"type": "text", "text": "Yes: refunds reuse the charge's key with a refund suffix."}],
             at="2026-12-05T08:16:41.250Z", cwd=cwd),
        {"type": "summary", "summary": "Checkout idempotency", "leafUuid": "00000000-0000-4000-8000-000000000007"},
    ]


def write_transcript(home: Path, cwd: Path) -> Path:
    folder = home / ".claude" / "projects" / str(cwd).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{SESSION}.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in transcript(cwd)))
    return path


def payloads(transcript_path: Path, cwd: Path, session: str = SESSION) -> dict:
    """Each event's input as the hooks reference documents it (code.claude.com/docs/en/hooks, "Hook
    events"), with this session, transcript and folder."""
    common = {"session_id": session, "transcript_path": str(transcript_path), "cwd": str(cwd)}
    return {
        "SessionStart": {**common, "hook_event_name": "SessionStart", "source": "startup", "model": "claude-sonnet-5"},
        "UserPromptSubmit": {**common, "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
                             "prompt": PROMPT},
        "Stop": {**common, "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": False,
                 "last_assistant_message": "Yes: refunds reuse the charge's key with a refund suffix.",
                 "background_tasks": [], "session_crons": []},
        "PreCompact": {**common, "hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": ""},
        "SessionEnd": {**common, "hook_event_name": "SessionEnd", "reason": "other"},
    }


def hook_env(home: Path, runtime: str, **extra) -> dict:
    """What Claude Code's hook process gets here: a bare PATH (the settings' commands name mem by path)."""
    keep = ("XDG_STATE_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM", "LANG", "TZ",
            "MEMSTRATA_CACHE")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update({"HOME": str(home), "PATH": "/usr/bin:/bin", "MEMSTRATA_RUNTIME_DIR": runtime}, **extra)
    return env


def run_hook(command: str, payload, env: dict, cwd: Path, timeout: float):
    """A hook as Claude Code runs it: `sh -c COMMAND` (shell form), the payload on stdin, in the session's
    cwd. Returns (the finished process, seconds)."""
    started = time.perf_counter()
    proc = subprocess.run(["/bin/sh", "-c", command], input=payload if isinstance(payload, str) else json.dumps(payload),
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout + 30)
    return proc, time.perf_counter() - started


def installed(settings: Path) -> dict[str, list[tuple[str, float]]]:
    """{event: [(command, timeout)]} of the memstrata hooks in a settings.json or hooks.json."""
    from memstrata.integrations.hooks_config import is_ours

    hooks = json.loads(settings.read_text())["hooks"]
    return {event: [(h["command"], h.get("timeout", 600)) for g in groups for h in g["hooks"] if is_ours(h["command"])]
            for event, groups in hooks.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="memstrata-hook-times-"))
    home, root, cwd, runtime = base / "home", base / "memory", base / "webshop", str(base / "run")
    cwd.mkdir()
    env = hook_env(home, runtime)
    try:
        for argv in (["init", "--root", str(root)],
                     ["write", "We chose Postgres for the webshop: JSONB and transactions.", "--title", "Webshop database",
                      "--category", "projects/webshop", "--root", str(root)],
                     ["setup", "claude", "--root", str(root)], ["serve", "--detach", "--root", str(root)]):
            subprocess.run([MEM, *argv], env=env, check=True, capture_output=True, timeout=600)
        hooks = installed(home / ".claude" / "settings.json")
        path = write_transcript(home, cwd)
        times = {event: [] for event in hooks}
        for n in range(args.runs):
            for event, payload in payloads(path, cwd, session=f"bench-{n}").items():
                [(command, timeout)] = hooks[event]
                times[event].append(run_hook(command, payload, env, cwd, timeout)[1])
        load = os.getloadavg()
        print(f"hook wall time, {args.runs} runs each, warm service, load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
        for event, seconds in times.items():
            print(f"  {event:17} median {statistics.median(seconds) * 1000:6.0f} ms   max {max(seconds) * 1000:6.0f} ms")
    finally:
        subprocess.run([MEM, "serve", "--stop"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
