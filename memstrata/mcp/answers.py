"""What a tool answers: the JSON form of engine results, note text escaped, the CallToolResult sent."""
from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from typing import Any

from memstrata.errors import MemstrataError

LISTED = ("id", "title", "summary", "path", "category", "agent")  # a listing's fields taken from a note


def jsonable(value: Any) -> Any:
    """The JSON form of whatever a Memory method returns (to_dict, entries, dataclasses, lists)."""
    from memstrata.results import entry_summary
    from memstrata.storage.entry import Entry

    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Entry):
        return entry_summary(value)
    if hasattr(value, "to_dict"):
        return jsonable(value.to_dict())
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        return jsonable(asdict(value))
    if hasattr(value, "isoformat"):
        from memstrata.clock import format_datetime

        try:
            return format_datetime(value)
        except MemstrataError:
            return value.isoformat()
    return str(value)


def result(data: Any, is_error: bool = False):
    """A CallToolResult: the JSON text for any client, and structured content for those that read it."""
    from mcp.types import CallToolResult

    payload = jsonable(data)
    text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, indent=1)
    raw: dict = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if isinstance(payload, dict):
        raw["structuredContent"] = payload
    return CallToolResult.model_validate(raw)
