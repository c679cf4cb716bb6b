"""bench/life.py's sessions as Claude Code has them: the hook commands `mem setup claude` installs, and
a transcript per session (the day's prompts and the assistant's short replies, written for this
benchmark) captured through its Stop and SessionEnd hooks, as in real use.
"""
from __future__ import annotations

import json
import re
import subprocess
import time
from datetime import datetime
from pathlib import Path

import capture_transcripts as ct
import perf_cli

OPENERS = ("From our notes: ", "We wrote this down earlier: ", "According to the memory, ", "Here is what we have: ")


def installed_hooks() -> dict[str, str]:
    """{event: command} as `mem setup claude` installs them (the plugin's hooks.json, this `mem`)."""
    from memstrata.integrations import hooks_config

    template = hooks_config.template("claude-code/hooks/hooks.json")["hooks"]
    return {event: hooks_config.command_for(groups[0]["hooks"][0]["command"], perf_cli.mem_bin(), None)
            for event, groups in template.items()}


def fire(command: str, payload: dict, root: Path, now: str) -> tuple[float, subprocess.CompletedProcess]:
    """Run a hook command as Claude Code does (a shell, the payload on stdin); (seconds, process)."""
    env = perf_cli.env_for(root)
    env["MEMSTRATA_NOW"] = now
    t0 = time.perf_counter()
    done = subprocess.run(["sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True, env=env,
                          timeout=900)
    return time.perf_counter() - t0, done


def reply(memory_text: str, n: int) -> str:
    """The assistant's short answer to a prompt that needed a memory: it says what the memory says."""
    return OPENERS[n % len(OPENERS)] + memory_text


class Transcript:
    """One session's Claude Code JSONL file, written as the session goes (bench/capture_transcripts.py)."""

    def __init__(self, folder: Path, project: str, cwd: str, day: int):
        self.sid = ct.session_id("life", "claude-code", day)
        self.path = folder / "claude" / "projects" / f"-home-dev-src-{project}" / f"{self.sid}.jsonl"
        self.cwd, self.day, self.turns, self.lines = cwd, day, [], 0

    def add(self, role: str, text: str, at: str) -> None:
        self.turns.append((f"t{len(self.turns)}", role, text, datetime.fromisoformat(at)))
        _, lines, _ = ct.claude_code("life", self.day, self.turns, self.cwd)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in lines[self.lines:]))
        self.lines = len(lines)

    def payload(self, event: str, **extra) -> dict:
        return {"session_id": self.sid, "transcript_path": str(self.path), "cwd": self.cwd,
                "hook_event_name": event, **extra}


def wait_followup(root: Path, sid: str, timeout: float = 180.0) -> float:
    """Until the session start's background promotion of session `sid` is done (or was never started):
    the user reads the block before typing. The seconds waited."""
    from memstrata.features import hook_sessions

    t0 = time.monotonic()
    while hook_sessions.followup(root, sid) == "spawned" and time.monotonic() - t0 < timeout:
        time.sleep(0.25)
    return time.monotonic() - t0


def captured(root: Path, category: str = "sessions") -> tuple[int, int]:
    """(session entries, turns) the tree holds (each part's frontmatter `turns:`)."""
    sessions = turns = 0
    for path in (root / category).rglob("*.md"):
        if path.name == "INDEX.md":
            continue
        head = path.read_text(encoding="utf-8", errors="replace").split("\n---", 1)[0]
        if re.search(r"^kind: session$", head, re.M):
            sessions += 1
            found = re.search(r"^turns: (\d+)$", head, re.M)
            turns += int(found.group(1)) if found else 0
    return sessions, turns
