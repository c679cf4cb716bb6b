"""A captured session's body, turn by turn (docs/capture.md): the one reader of its turn headings.

A session entry (frontmatter `kind: session`) holds one block per turn in transcript order:

    ### 2026-12-05T08:14:49.123Z · user
    Can you fix the login redirect?

A line matching `^### <timestamp> · (user|assistant)$` starts a turn and nothing else does (a
text line that would match is written escaped, `\\### ...`). Pure functions of the text: the
index (one row key per turn), recall's turn hits and `mem read --turn` all read turns here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

SESSION_KIND = "session"  # frontmatter `kind:` of a captured session
TURN_HEADING = re.compile(r"^### (\S+) · (user|assistant)$")
# a text line that would read as a heading is written with one more leading backslash (capture/body.escape)
ESCAPED_HEADING = re.compile(r"^(\\*)### \S+ · (?:user|assistant)$")


@dataclass(frozen=True)
class Turn:
    """One turn of a session: `number` is 1-based in file order; `timestamp` as the heading wrote it;
    `text` the block under the heading (escaped heading lines given back their text); `start`/`end`
    the lines (0-based, end excluded) the block spans in the body, heading included."""

    number: int
    timestamp: str
    role: str
    text: str
    start: int
    end: int

    @property
    def when(self) -> datetime | None:
        """The timestamp as an aware datetime (UTC when it names no zone); None when it is no date."""
        return parse_timestamp(self.timestamp)


def is_session(entry) -> bool:
    """Whether an entry is a captured session (frontmatter `kind: session`)."""
    return entry.extra.get("kind") == SESSION_KIND


def sessions_of(entry) -> list[str]:
    """The session ids an entry holds turns of (a resumed session's new id is added to the first one's)."""
    ids = [str(entry.extra.get("session") or "")]
    more = entry.extra.get("sessions")
    if isinstance(more, list):
        ids += [str(s) for s in more]
    return [s for s in dict.fromkeys(ids) if s]


def parse(body: str) -> tuple[str, list[Turn]]:
    """(the text before the first turn heading, the turns in file order)."""
    lines = (body or "").replace("\r\n", "\n").split("\n")
    heads = [(n, m) for n, line in enumerate(lines) if line.startswith("### ") and (m := TURN_HEADING.match(line))]
    preamble = "\n".join(lines[:heads[0][0]] if heads else lines).strip()
    turns = []
    for i, (n, m) in enumerate(heads):
        end = heads[i + 1][0] if i + 1 < len(heads) else len(lines)
        text = unescape("\n".join(lines[n + 1:end]).strip())
        while end > n + 1 and not lines[end - 1].strip():
            end -= 1  # the blank lines between blocks belong to no turn
        turns.append(Turn(i + 1, m.group(1), m.group(2), text, n, end))
    return preamble, turns


def unescape(text: str) -> str:
    """A turn's text as written before its heading-like lines were escaped (one backslash less)."""
    if "### " not in text:
        return text
    return "\n".join(line[1:] if line.startswith("\\") and ESCAPED_HEADING.match(line) else line
                     for line in text.split("\n"))


def around(body: str, number: int, k: int) -> list[Turn]:
    """Turn `number` (1-based) with up to `k` turns either side; [] when there is no such turn."""
    _, turns = parse(body)
    if not 1 <= number <= len(turns):
        return []
    return turns[max(0, number - 1 - max(0, k)):number + max(0, k)]


def block(body: str, turn: Turn) -> str:
    """The turn as the file holds it: its heading line and text, verbatim."""
    return "\n".join((body or "").split("\n")[turn.start:turn.end])


def parse_timestamp(text: str | None) -> datetime | None:
    """A turn's timestamp as an aware datetime (ISO 8601; UTC when it names no zone), None when it is none."""
    from memstrata.storage.clock import parse_datetime

    if not text:
        return None
    try:
        return parse_datetime(text)
    except Exception:  # noqa: BLE001 - InvalidInput, or whatever a date parser raises on odd text
        return None
