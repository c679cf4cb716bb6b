"""The plain reader: a JSONL of `{"role", "text", "timestamp", "session"}`, one turn a line (pure).

`role`: user (or human) / assistant (or ai, bot, model); other roles are skipped. `text` (or
`content`): the turn. `timestamp` (or `ts`, `time`): kept as written when it is one word (ISO 8601);
a time written with spaces ("2023-05-08 13:56") is written in ISO 8601 (a turn's heading holds one
word), and a number is read as Unix seconds (milliseconds past 10^11). `session` (or `session_id`):
which session the line belongs to (one file may hold several); lines without one belong to the
file's (`hints["session"]`, the file name's stem). Each line is its own turn: two lines are never joined.
"""
from __future__ import annotations

from datetime import datetime, timezone

from memstrata.capture import model
from memstrata.capture.model import ReadResult, Turn

AGENT = "jsonl"
_USER = frozenset({"user", "human"})
_ASSISTANT = frozenset({"assistant", "ai", "bot", "model", "agent"})


def read(lines, hints: dict | None = None) -> ReadResult:
    result = ReadResult(agent=AGENT)
    default = (hints or {}).get("session")
    for offset, obj in model.parse_lines(lines, result):
        role = str(obj.get("role") or obj.get("speaker_role") or "").strip().lower()
        role = model.USER if role in _USER else model.ASSISTANT if role in _ASSISTANT else None
        if role is None:
            result.skip(model.META if obj.get("role") in ("system", "developer", "tool") else model.UNKNOWN)
            continue
        text = next((obj[k] for k in ("text", "content", "message") if isinstance(obj.get(k), str)), None)
        stamp = timestamp(next((obj[k] for k in ("timestamp", "ts", "time") if obj.get(k) is not None), None))
        if stamp is None:
            result.skip(model.NO_TIME)
            continue
        text = model.without_base64(text or "").strip()
        if not text:
            result.skip(model.NO_TEXT)
            continue
        session = next((str(obj[k]) for k in ("session", "session_id", "sessionId")
                        if isinstance(obj.get(k), (str, int)) and str(obj[k]).strip()), default)
        result.session = result.session or session
        if isinstance(obj.get("cwd"), str) and not result.cwd:
            result.cwd = obj["cwd"]
        result.turns.append(Turn(role, stamp, text, offset, session))
    return result


def timestamp(value) -> str | None:
    """A line's time as a heading holds it: one word, as written when it is one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 1e11 else value
        try:
            moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if len(text.split()) == 1:
        return text
    from memstrata.storage.clock import parse_datetime

    try:
        moment = parse_datetime(text)
    except Exception:  # noqa: BLE001 - InvalidInput or anything a date parser raises on odd text
        try:
            moment = datetime.fromisoformat(text.replace(" ", "T", 1))
        except ValueError:
            return None
    return moment.isoformat() if moment is not None else None
