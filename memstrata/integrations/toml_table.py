"""memstrata's `[mcp_servers.memstrata]` table in Codex's config.toml, edited as text.

The rest of the file stays byte for byte (comments, order, spacing): the table is found by its header
line and ends at the next header that is not one of its own sub-tables. Every edit is checked by
parsing both texts (tomllib): apart from that table they must hold the same settings, else nothing is
written and the user is asked to edit the file by hand.
"""
from __future__ import annotations

import json
import re

from memstrata.errors import InvalidInput

_OURS = re.compile(r"""^\s*\[\s*mcp_servers\s*\.\s*(?:memstrata|"memstrata"|'memstrata')\s*(?:\.[^\]]*)?\]\s*(?:#.*)?$""")
_HEADER = re.compile(r"^\s*\[")


def parse(text: str, where: str):
    """The TOML text parsed (None when no TOML reader is installed: Python 3.10 without tomli)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: tomli when it is there, else no check
        try:
            import tomli as tomllib
        except ImportError:
            return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{where} is not valid TOML ({exc}): left as it is") from exc


def block(values: dict) -> str:
    """The table's text: `[mcp_servers.memstrata]` and one `key = value` line per value (strings and
    lists of strings, written as TOML basic strings)."""
    lines = ["[mcp_servers.memstrata]"]
    for key, value in values.items():
        lines.append(f"{key} = {_value(value)}")
    return "\n".join(lines) + "\n"


def _value(value) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(value)


def _span(lines: list[str]) -> tuple[int, int] | None:
    """(first, end) line numbers of memstrata's table and its sub-tables, or None."""
    start = next((n for n, line in enumerate(lines) if _OURS.match(line)), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and not (_HEADER.match(lines[end]) and not _OURS.match(lines[end])):
        end += 1
    return start, end


def with_table(text: str | None, values: dict, where: str) -> str:
    """`text` with memstrata's table set to `values` (replaced where it is, else appended)."""
    text = text or ""
    lines = text.splitlines(keepends=True)
    span = _span(lines)
    if span is None:
        new = (text if not text or text.endswith("\n") else text + "\n") + ("\n" if text.strip() else "") + block(values)
    else:
        first, end = span
        tail = "".join(lines[end:])
        new = "".join(lines[:first]) + block(values) + ("\n" + tail.lstrip("\n") if tail.strip() else "")
    _check(text, new, values, where)
    return new


def without_table(text: str | None, where: str) -> str | None:
    """`text` without memstrata's table (None when there was no file)."""
    if text is None:
        return None
    lines = text.splitlines(keepends=True)
    span = _span(lines)
    if span is None:
        _check(text, text, None, where)
        return text
    first, end = span
    head, tail = "".join(lines[:first]), "".join(lines[end:])
    new = (head.rstrip("\n") + "\n" if head.strip() else "") + tail if tail.strip() else \
        (head.rstrip("\n") + "\n" if head.strip() else "")
    _check(text, new, None, where)
    return new


def _check(before: str, after: str, values: dict | None, where: str) -> None:
    """Both texts parse; apart from memstrata's table they hold the same; the table holds `values`."""
    old = parse(before, where)
    if old is None:
        return
    refusal = InvalidInput(f"{where}: memstrata's [mcp_servers.memstrata] is not written as a table of its own "
                           f"there; edit it by hand (docs/agents.md, Codex): left as it is")
    try:
        new = parse(after, where)
    except InvalidInput as exc:  # the file parsed; the edit did not (the server is defined another way)
        raise refusal from exc
    ours = (new.get("mcp_servers") or {}).get("memstrata")
    if ours != values or _others(old) != _others(new):
        raise refusal


def _others(data: dict) -> dict:
    rest = {k: v for k, v in data.items() if k != "mcp_servers"}
    servers = {k: v for k, v in (data.get("mcp_servers") or {}).items() if k != "memstrata"}
    return {**rest, "mcp_servers": servers} if servers else rest
