"""Transcripts written for the capture tests (our own lines, in the formats Claude Code and Codex write)."""
from __future__ import annotations

import json
import os


def stamp(minute: int, second: int = 0, ms: int = 0) -> str:
    return f"2026-11-20T09:{minute:02d}:{second:02d}.{ms:03d}Z"


class _Transcript:
    lines: list
    session: str

    def text(self) -> str:
        return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in self.lines)

    def write(self, folder, name: str | None = None) -> str:
        path = os.path.join(str(folder), name or self.file_name())
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(self.text())
        return path


class Claude(_Transcript):
    """Lines of a Claude Code session file: `user(...)`, `reply(...)` and the other line types."""

    def __init__(self, session: str = "0f3c2a9e-1111-4aaa-8bbb-123456789abc", cwd: str = "/work/shop"):
        self.session, self.cwd, self.lines, self.n = session, cwd, [], 0

    def _base(self, kind: str, ts: str, **extra) -> dict:
        self.n += 1
        return {"type": kind, "timestamp": ts, "sessionId": self.session, "cwd": self.cwd, "uuid": f"u{self.n}",
                "parentUuid": f"u{self.n - 1}" if self.n > 1 else None, "isSidechain": False, "userType": "external",
                "version": "2.1.0", **extra}

    def user(self, text, ts: str, **extra) -> "Claude":
        content = text if isinstance(text, (str, list)) else str(text)
        self.lines.append(self._base("user", ts, message={"role": "user", "content": content}, **extra))
        return self

    def reply(self, blocks, ts: str, **extra) -> "Claude":
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        message = {"id": f"msg_{self.n}", "type": "message", "role": "assistant", "model": "claude-opus-4",
                   "content": blocks, "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 9}}
        message.update(extra.pop("message", {}))
        self.lines.append(self._base("assistant", ts, message=message, **extra))
        return self

    def tool(self, name: str, ts: str, **inputs) -> "Claude":
        return self.reply([{"type": "tool_use", "id": f"toolu_{self.n}", "name": name, "input": inputs}], ts,
                          message={"stop_reason": "tool_use"})

    def result(self, output: str, ts: str) -> "Claude":
        return self.user([{"type": "tool_result", "tool_use_id": f"toolu_{self.n - 1}", "content": output}], ts,
                         toolUseResult={"stdout": output})

    def raw(self, obj) -> "Claude":
        self.lines.append(obj)
        return self

    def file_name(self) -> str:
        return f"{self.session}.jsonl"


class Codex(_Transcript):
    """Lines of a Codex CLI rollout file."""

    def __init__(self, session: str = "7d0e5b1c-2222-4ccc-8ddd-abcdefabcdef", cwd: str = "/work/api", source="cli"):
        self.session, self.lines = session, []
        self.add("session_meta", stamp(0), {"id": session, "timestamp": stamp(0), "cwd": cwd, "originator": "codex_cli_rs",
                                            "cli_version": "0.50.0", "source": source})
        self.add("turn_context", stamp(0, 1), {"cwd": cwd, "model": "gpt-5", "approval_policy": "on-request"})
        self.add("response_item", stamp(0, 2), {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/work/api</cwd>\n</environment_context>"}]})

    def add(self, kind: str, ts: str, payload: dict) -> "Codex":
        self.lines.append({"timestamp": ts, "type": kind, "payload": payload})
        return self

    def user(self, text: str, ts: str) -> "Codex":
        self.add("event_msg", ts, {"type": "user_message", "message": text, "images": []})
        return self.add("response_item", ts[:-2] + "1Z", {"type": "message", "role": "user",
                                                          "content": [{"type": "input_text", "text": text}]})

    def say(self, text: str, ts: str) -> "Codex":
        self.add("response_item", ts, {"type": "message", "role": "assistant",
                                       "content": [{"type": "output_text", "text": text}]})
        return self.add("event_msg", ts[:-2] + "1Z", {"type": "agent_message", "message": text})

    def call(self, command: str, ts: str) -> "Codex":
        self.add("response_item", ts, {"type": "function_call", "name": "shell", "call_id": "c1",
                                       "arguments": json.dumps({"command": ["bash", "-lc", command]})})
        return self.add("response_item", ts[:-2] + "5Z", {"type": "function_call_output", "call_id": "c1",
                                                          "output": "OUTPUT-NEVER-KEPT"})

    def file_name(self) -> str:
        return f"rollout-2026-11-20T09-00-00-{self.session}.jsonl"


def lines_of(text: str) -> list[tuple[int, bytes]]:
    """(offset, line) pairs of whole lines, as the capture reads a file."""
    out, offset = [], 0
    for line in text.encode("utf-8").split(b"\n")[:-1]:
        out.append((offset, line))
        offset += len(line) + 1
    return out
