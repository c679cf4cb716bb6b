"""A Claude Code hook call: its JSON payload read, and what the hook prints (standard library only).

One reading for both ways a hook is answered: `mem autoload --hook` in the CLI (in-process or in the
warm service) and the session start the client answers itself while the service is cold
(service/client.py, features/start_block.answer_hook).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

HOOK_MAX_BYTES = 32 * 1024 * 1024  # a hook payload past this is not read further (the prompt is cut anyway)


@dataclass
class HookCall:
    """What a hook payload asks: a prompt's text (`context`, cut as autoload cuts it), or a session
    start (context None); the session's id and folder when given."""

    context: str | None
    session: str | None
    cwd: str | None
    payload: dict = field(default_factory=dict)

    @property
    def event(self) -> str:
        name = self.payload.get("hook_event_name")
        return name if isinstance(name, str) and name else ("UserPromptSubmit" if self.context else "SessionStart")


def read_raw(stream) -> bytes:
    """At most HOOK_MAX_BYTES + 1 bytes of the payload from a binary `stream` (nothing from a terminal)."""
    try:
        if stream.isatty():
            return b""
    except (AttributeError, ValueError, OSError):
        return b""
    return stream.read(HOOK_MAX_BYTES + 1)


def parse(raw: bytes) -> HookCall | None:
    """The call a payload makes, or None when it asks for nothing: a payload past HOOK_MAX_BYTES (no
    hook payload is that large: nothing, at once; the hook has 10 s), a prompt that is no text (5, a
    list, null, ""), a payload that is not a JSON object (`[]`). A payload with no prompt and no UserPromptSubmit event is a session start.
    ValueError for one that is not JSON (the hook then prints nothing)."""
    from memstrata.retrieval.query_limits import cut_prompt

    if len(raw) > HOOK_MAX_BYTES:
        return None
    payload = json.loads(raw) if raw.strip() else {}
    if not isinstance(payload, dict):
        return None  # `[]`, `5`, `"x"`: no hook's payload, no session start either: nothing is injected
    prompt = payload.get("prompt")
    context = cut_prompt(prompt)[0] if isinstance(prompt, str) and prompt.strip() else None
    if context is None and is_prompt_event(payload):
        return None  # a prompt that is no text asks about nothing: not a session start
    session = payload.get("session_id")
    cwd = payload.get("cwd")
    return HookCall(context, session if isinstance(session, str) and session.strip() else None,
                    cwd if isinstance(cwd, str) and cwd else None, payload)


def is_prompt_event(payload: dict) -> bool:
    """Whether a hook payload is a UserPromptSubmit (it has a "prompt", or says so), whatever its prompt
    holds: only a payload that is neither is a session start, which lists the recent notes."""
    return "prompt" in payload or payload.get("hook_event_name") == "UserPromptSubmit"


def output(call: HookCall, markdown: str, as_json: bool, ascii_only: bool) -> str:
    """What the hook prints: the block, or with `as_json` Claude Code's hookSpecificOutput around it."""
    if not as_json:
        return markdown
    return json.dumps({"hookSpecificOutput": {"hookEventName": call.event, "additionalContext": markdown}},
                      ensure_ascii=ascii_only) + "\n"
