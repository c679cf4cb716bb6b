"""Lone surrogates in a JSON-RPC line from the client: turned into a tool error instead of a lost request."""
from __future__ import annotations

import json
import re

# A tools/call whose arguments held a lone surrogate gets this one argument instead; the server's
# call_tool answers it with a tool error (the SDK's JSON parser would drop the whole line unanswered).
INVALID_ARGUMENTS = "__memstrata_invalid_arguments__"
_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def guard_line(line: str) -> str:
    """The line unchanged, unless a string in it holds a lone surrogate (which pydantic refuses):
    then a tools/call's arguments become {INVALID_ARGUMENTS: reason}, and in any other message
    the surrogates become U+FFFD, so every request still gets an answer."""
    if not _ESCAPE.search(line):
        return line
    try:
        message = json.loads(line)
    except ValueError:
        return line
    where = _find(message.get("params") if isinstance(message, dict) else None, "")
    if where is None:
        return line  # escapes that pair up into real characters
    params = message.get("params")
    if message.get("method") == "tools/call" and isinstance(params, dict):
        path, char = where
        params["arguments"] = {INVALID_ARGUMENTS: f"argument {path.removeprefix('.arguments.') or 'value'} holds a lone surrogate "
                                                  f"(U+{ord(char):04X}), which is not valid Unicode text"}
        params["name"] = _replace(params.get("name"))
        return json.dumps(message, ensure_ascii=False)
    return json.dumps(_replace(message), ensure_ascii=False)


def _find(value, path: str):
    """(path, character) of the first lone surrogate in `value`, None when there is none."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        return (path, found.group()) if found else None
    if isinstance(value, dict):
        for key, item in value.items():
            hit = _find(key, path) or _find(item, f"{path}.{key}")
            if hit:
                return hit
    if isinstance(value, list):
        for n, item in enumerate(value):
            hit = _find(item, f"{path}[{n}]")
            if hit:
                return hit
    return None


def _replace(value):
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_replace(k): _replace(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v) for v in value]
    return value


class GuardedLines:
    """An async line source (what the SDK's stdio_server iterates) passing each line through guard_line."""

    def __init__(self, lines):
        self._lines = lines

    def __aiter__(self):
        return self._iterate()

    async def _iterate(self):
        async for line in self._lines:
            yield guard_line(line)
