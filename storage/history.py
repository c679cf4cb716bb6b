"""An entry's version history: its frontmatter form, and the trailing section of files written before 0.2."""
from __future__ import annotations

import re

# Where an entry's version history is kept: the `history:` list of its frontmatter, one
# {version, date, summary} mapping per version (see storage/versions.py). Files written before
# 0.2 kept it as a trailing "## Version history" section of the body; parse still reads those
# (legacy_history), and the next write moves it into the frontmatter.
HISTORY_KEY = "history"
HISTORY_HEADING = "## Version history"
_HISTORY_SECTION = re.compile(r"(?:\A|\n\n)## Version history\n\n((?:- v\d+ \([^()\n]*\): [^\n]*\n)+)\Z")
_HISTORY_LINE = re.compile(r"- v(\d+) \(([^()\n]*)\): ([^\n]*)")


def history_from_frontmatter(value) -> list[dict] | None:
    """The `history:` frontmatter value as [{version, date, summary}] ([] when absent, None when
    it is not a list of such mappings)."""
    if value is None or value == []:
        return []
    if not isinstance(value, list):
        return None
    out = []
    for item in value:
        if not isinstance(item, dict) or "version" not in item:
            return None
        try:
            version = int(item["version"])
        except (TypeError, ValueError):
            return None
        date_value = item.get("date")
        out.append(history_item_dict(version, "" if date_value is None else str(date_value)[:10],
                                     str(item.get("summary") or "")))
    return out


def history_item_dict(version: int, date_text: str, summary: str) -> dict:
    return {"version": int(version), "date": date_text, "summary": " ".join(summary.split())}


def render_history(history: list[dict]) -> str:
    """The pre-0.2 "Version history" section: one line per version, "- vN (date): summary"."""
    lines = [HISTORY_HEADING, ""]
    for item in history:
        summary = " ".join(str(item.get("summary") or "").split())
        date_text = str(item.get("date") or "").replace("(", "").replace(")", "").replace("\n", " ")
        lines.append(f"- v{int(item.get('version', 1))} ({date_text}): {summary}")
    return "\n".join(lines) + "\n"


def _body_with_history(body: str, history: list[dict]) -> str:
    if body and not body.endswith("\n"):
        body += "\n"
    if history:
        body = (body + "\n" if body else "") + render_history(history)
    return body


def legacy_history(text: str, version) -> tuple[str, list[dict]]:
    """Split a pre-0.2 trailing "## Version history" section off a body, but only one the engine
    wrote: it renders back exactly, and its last line is the entry's own `version` (2 or more).
    Anything else is body text (a body may itself end in such a section)."""
    match = _HISTORY_SECTION.search(text) if HISTORY_HEADING in text else None
    if match is None:
        return text, []
    body = text[:match.start() + 1] if match.start() > 0 else ""
    history = []
    for line in match.group(1).splitlines():
        m = _HISTORY_LINE.fullmatch(line)
        if m is None:
            return text, []
        history.append({"version": int(m.group(1)), "date": m.group(2), "summary": m.group(3)})
    try:
        current = int(version)
    except (TypeError, ValueError):
        return text, []
    if current < 2 or history[-1]["version"] != current or _body_with_history(body, history) != text:
        return text, []
    return body, history
