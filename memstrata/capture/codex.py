"""The Codex CLI reader: rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) into turns (pure).

A rollout line is `{"timestamp", "type", "payload"}`: `session_meta` (id, cwd, source), `turn_context`,
`event_msg` (user_message, agent_message and many events), `response_item` (message, function_call,
custom_tool_call, local_shell_call, web_search_call, reasoning, and their outputs), `compacted`.
Codex writes each message twice, as an event and as an item; where the events are there they are
the prompts and prose (the items then only give the tool calls), else the items are. The legacy
format (before the typed lines) is a first line `{"id", "timestamp"}` and then bare items, with no
time of their own: each turn takes the session's start time. A sub-agent's rollout (session_meta's
source names a parent thread) repeats its parent's history and is not captured (`parent` is set).
"""
from __future__ import annotations

import re

from memstrata.capture import model
from memstrata.capture.claude import relative
from memstrata.capture.model import ReadResult, TurnBuilder

AGENT = "codex"
EVENTS = "codex_events"  # hint: the file carries its prompts and prose as events

_INJECTED = ("<environment_context>", "<user_instructions>", "<INSTRUCTIONS>", "# AGENTS.md instructions",
             "<user_shell_command>", "<turn_aborted>", "<permissions instructions>")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
_EVENT_KNOWN = frozenset({"token_count", "agent_reasoning", "agent_reasoning_raw_content", "exec_command_begin",
                          "exec_command_end", "task_started", "task_complete", "turn_aborted", "patch_apply_begin",
                          "patch_apply_end", "mcp_tool_call_begin", "mcp_tool_call_end", "web_search_begin",
                          "web_search_end", "collab_tool_call", "turn_diff", "entered_review_mode",
                          "exited_review_mode", "context_compacted", "error", "stream_error", "background_event",
                          "plan_update", "user_message_images", "view_image_tool_call", "item_completed"})


def read(lines, hints: dict | None = None) -> ReadResult:
    """Turns of a Codex rollout from `lines`, (byte offset, line) pairs of whole lines. `hints`: what
    an earlier read of the same file found (the event mode, the legacy start time)."""
    result = ReadResult(agent=AGENT)
    result.hints = dict(hints or {})
    parsed = model.parse_lines(lines, result)
    if EVENTS not in result.hints:  # (a capture tells it from the raw lines first: the file is not held parsed)
        parsed = list(parsed)
        result.hints[EVENTS] = any(obj.get("type") == "event_msg" and isinstance(obj.get("payload"), dict)
                                   and obj["payload"].get("type") in ("user_message", "agent_message")
                                   for _, obj in parsed)
    events = result.hints[EVENTS]
    build = TurnBuilder(result)
    for offset, obj in parsed:
        kind, payload = obj.get("type"), obj.get("payload")
        if kind is None or (kind in ("message", "function_call", "reasoning", "function_call_output",
                                     "local_shell_call", "custom_tool_call") and payload is None):
            _legacy(offset, obj, result, build)
            continue
        stamp = model.timestamp_of(obj.get("timestamp"))
        if not isinstance(payload, dict):
            result.skip(model.MALFORMED if kind in _TYPES else model.UNKNOWN)
            continue
        if kind == "session_meta":
            _meta(payload, result, stamp)
        elif kind == "turn_context":
            result.cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else result.cwd
            result.skip(model.NOT_A_TURN)
        elif kind == "compacted":
            result.skip(model.COMPACTION)
        elif stamp is None:
            result.skip(model.NO_TIME)
        elif kind == "event_msg":
            _event(offset, payload, stamp, result, build)
        elif kind == "response_item":
            _item(offset, payload, stamp, result, build, events)
        else:
            result.skip(model.UNKNOWN)
    build.close()
    return result


_TYPES = frozenset({"session_meta", "turn_context", "event_msg", "response_item", "compacted"})


def _meta(payload: dict, result: ReadResult, stamp: str | None) -> None:
    result.skip(model.NOT_A_TURN)
    if isinstance(payload.get("id"), str) and not result.session:
        result.session = payload["id"]
    if isinstance(payload.get("cwd"), str) and not result.cwd:
        result.cwd = payload["cwd"]
    result.started = result.started or model.timestamp_of(payload.get("timestamp")) or stamp
    source = payload.get("source")
    if isinstance(source, dict) and "subagent" in source:
        spawn = source.get("subagent")
        parent = None
        if isinstance(spawn, dict):
            for value in spawn.values():
                if isinstance(value, dict) and isinstance(value.get("parent_thread_id"), str):
                    parent = value["parent_thread_id"]
        result.parent = parent or "unknown"


def _event(offset: int, payload: dict, stamp: str, result: ReadResult, build: TurnBuilder) -> None:
    kind = payload.get("type")
    message = payload.get("message")
    if kind == "user_message" and isinstance(message, str):
        text, reason = _prompt(message)
        if reason:
            result.skip(reason)
        else:
            build.user(text, stamp, offset, result.session)
    elif kind == "agent_message" and isinstance(message, str):
        text = model.without_base64(message).strip()
        if text:
            build.assistant([("text", text)], stamp, offset, result.session)
        else:
            result.skip(model.NO_TEXT)
    elif kind in ("agent_reasoning", "agent_reasoning_raw_content"):
        result.skip(model.REASONING)
    elif kind in ("exec_command_end", "patch_apply_end", "mcp_tool_call_end"):
        result.skip(model.TOOL_OUTPUT)
    else:
        result.skip(model.NOT_A_TURN if kind in _EVENT_KNOWN else model.UNKNOWN)


def _item(offset: int, payload: dict, stamp: str, result: ReadResult, build: TurnBuilder, events: bool) -> None:
    kind = payload.get("type")
    if kind == "message":
        if events:
            result.skip(model.DUPLICATE)  # the event of the same message is the one kept
            return
        _message(offset, payload, stamp, result, build)
    elif kind in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
        build.assistant([("tool", _tool(payload, result.cwd))], stamp, offset, result.session)
    elif kind == "reasoning":
        result.skip(model.REASONING)
    elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        result.skip(model.TOOL_OUTPUT)
    else:
        result.skip(model.UNKNOWN)


def _message(offset: int, payload: dict, stamp: str, result: ReadResult, build: TurnBuilder) -> None:
    role = payload.get("role")
    text = _content_text(payload.get("content"))
    if role == "user":
        text, reason = _prompt(text)
        if reason:
            result.skip(reason)
        else:
            build.user(text, stamp, offset, result.session)
    elif role == "assistant":
        text = model.without_base64(text).strip()
        if text:
            build.assistant([("text", text)], stamp, offset, result.session)
        else:
            result.skip(model.NO_TEXT)
    else:  # developer / system instructions
        result.skip(model.META)


def _legacy(offset: int, obj: dict, result: ReadResult, build: TurnBuilder) -> None:
    """A line of the legacy format: the header `{"id", "timestamp"}`, state records, bare items."""
    kind = obj.get("type")
    if kind is None:
        if isinstance(obj.get("id"), str) and "timestamp" in obj and not result.session:
            result.session = obj["id"]
            result.started = model.timestamp_of(obj.get("timestamp"))
            result.hints["legacy_started"] = result.started
            result.skip(model.NOT_A_TURN)
        else:
            result.skip(model.NOT_A_TURN if "record_type" in obj else model.UNKNOWN)
        return
    stamp = model.timestamp_of(obj.get("timestamp")) or result.started or result.hints.get("legacy_started")
    if stamp is None:
        result.skip(model.NO_TIME)
    elif kind == "message":
        _message(offset, obj, stamp, result, build)
    else:
        _item(offset, obj, stamp, result, build, events=False)


def _content_text(content) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n\n".join(block["text"] for block in content if isinstance(block, dict)
                       and block.get("type") in ("input_text", "output_text", "text")
                       and isinstance(block.get("text"), str) and block["text"].strip())


def _prompt(text: str) -> tuple[str, str | None]:
    stripped = text.strip()
    if not stripped:
        return "", model.NO_TEXT
    if stripped.startswith(_INJECTED):
        return "", model.META
    return model.without_base64(stripped), None


def _tool(payload: dict, cwd: str | None) -> str:
    """A tool call as one line: the tool and its command, files or query."""
    kind = payload.get("type")
    if kind == "local_shell_call":
        action = payload.get("action") if isinstance(payload.get("action"), dict) else {}
        return model.tool_line("shell", relative(model.tool_argument({"command": action.get("command")}), cwd))
    if kind == "web_search_call":
        action = payload.get("action") if isinstance(payload.get("action"), dict) else {}
        return model.tool_line("web_search", model.tool_argument(action))
    name = str(payload.get("name") or "tool")
    raw = payload.get("input") if kind == "custom_tool_call" else payload.get("arguments")
    if isinstance(raw, str) and "*** Begin Patch" in raw:
        return model.tool_line(name, ", ".join(relative(f.strip(), cwd) or f for f in _PATCH_FILE.findall(raw)))
    argument = model.tool_argument(raw)
    if isinstance(argument, str) and "*** Begin Patch" in argument:
        argument = ", ".join(f.strip() for f in _PATCH_FILE.findall(argument))
    return model.tool_line(name, relative(argument, cwd))
