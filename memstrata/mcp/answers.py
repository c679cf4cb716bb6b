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


def result(data: Any, is_error: bool = False, text: str | None = None):
    """A CallToolResult: the JSON text for any client (`text` when it is given: what was measured),
    and structured content for those that read it. A CallToolResult passes as it is."""
    from mcp.types import CallToolResult

    if isinstance(data, CallToolResult):
        return data
    payload = error_line(str(data)) if is_error else jsonable(data)
    if text is None:
        text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, indent=1)
    raw: dict = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if isinstance(payload, dict):
        raw["structuredContent"] = payload
    return CallToolResult.model_validate(raw)


def autoload_answer(loaded, counter):
    """MCP autoload's answer: its JSON text, as sent, within the budget. The engine counted the
    answer (form "json": the block JSON-escaped, each memory's entry, the answer's own fields) as an
    upper bound; this measures the text itself and, should it still be over, leaves out the last
    memories, so the budget bounds what reaches the model whatever the tokenizer's edge cases."""
    from memstrata.features.autoload_block import Costs

    costs = Costs(counter, "json")
    while True:
        payload = jsonable(loaded)
        text = json.dumps(payload, ensure_ascii=False)  # compact: indentation is tokens to a model too
        if not loaded.items or costs.whole(text) <= loaded.budget:
            return result(payload, text=text)
        loaded.items.pop()


def read_answer(entry, root, raw: bool = False) -> dict:
    """MCP read: the entry with every string taken from the note escaped, as recall and autoload show
    them (a body `</memory><system>...` reached the model as tags), a title or summary also redacted
    as listings are, the body fenced as autoload fences a memory and redacted as snippets are unless
    the user allowed what is flagged in it (`mem secrets allow`). With `raw`, `raw_body` holds the
    body as stored, unescaped and unredacted, for an edit (`update` takes the new text as is)."""
    from memstrata.results import entry_full
    from memstrata.retrieval.fence import fence, quoted
    from memstrata.retrieval.sync import flag
    from memstrata.retrieval.table import indexed_form
    from memstrata.storage.secrets import redact, redact_value

    full = entry_full(entry)
    # a flagged note (hand-made or pulled: the guard never saw it) is neither indexed nor shown in a
    # snippet; its body, tags and frontmatter values (`deploy_token: ghp_...`) reached the agent whole here
    if flag(indexed_form(root, entry), root) is not None:
        body, tags, frontmatter = redact(entry.body), redact_value("tags", full["tags"]), redact_value("", full["frontmatter"])
    else:
        body, tags, frontmatter = entry.body, full["tags"], full["frontmatter"]
    answer = {**quoted(full, LISTED), "tags": escaped(tags), "frontmatter": escaped(frontmatter),
              "body": fence(body, entry.ref)}
    if raw:
        answer["raw_body"] = entry.body
    return answer


def turns_answer(entry, view, root) -> dict:
    """MCP read of a session's turns (features/turns.py): the entry as `read_answer` gives it, its
    `body` the turns asked for (fenced, redacted as snippets are), and `turns` one by one."""
    from memstrata.retrieval.fence import fence

    data = view.to_dict()
    turns = [{**escaped({k: v for k, v in t.items() if k != "text"}), "text": fence(t["text"], data["id"])}
             for t in data["turns"]]
    return {**read_answer(entry, root), "body": fence("\n\n".join(view.blocks), entry.ref), "turn": data["turn"],
            "turns": turns, **escaped({k: data[k] for k in ("session", "agent", "project")})}


def listed(entry) -> dict:
    """MCP list's row for `entry`: its summary quoted (title redacted, LISTED escaped) and each tag
    redacted and escaped as well (a tag `ghp_...` of a flagged note was listed verbatim)."""
    from memstrata.results import entry_summary
    from memstrata.retrieval.fence import escape, quoted
    from memstrata.storage.secrets import redact

    row = quoted(entry_summary(entry), LISTED)
    return {**row, "tags": [escape(redact(t)) for t in row["tags"]]}


def escaped(value, key: str = ""):
    """`value` with every string in it (keys too) escaped as fenced text is; one under a key of
    SHOWN_TEXT (a title, a version's summary) redacted first, as `quoted` does. For the answers
    whose strings are partly a note's (a write's message and warnings, a trashed title, what maintain
    changed): `delete` showed a title `x </memory><system>...` as is."""
    from memstrata.retrieval.fence import SHOWN_TEXT, escape
    from memstrata.storage.secrets import redact

    if isinstance(value, str):
        return escape(redact(value) if key in SHOWN_TEXT else value)
    if isinstance(value, dict):
        return {escape(str(k)): escaped(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [escaped(v, key) for v in value]
    return value


WORD_CHARS = 80  # an error shows at most this much of one word: a 100 KB argument is not echoed whole
ERROR_CHARS = 600


def error_line(message: str) -> str:
    """A tool error's text: one line, each overlong word cut (an error quoting a 100 KB argument
    answered 100 KB), at most ERROR_CHARS, escaped (it may quote a path or a title)."""
    from memstrata.retrieval.fence import escape

    words = [w if len(w) <= WORD_CHARS else f"{w[:WORD_CHARS - 20]}… ({len(w):,} characters)" for w in message.split()]
    line = " ".join(words)
    return escape(line if len(line) <= ERROR_CHARS else line[:ERROR_CHARS - 1] + "…")
