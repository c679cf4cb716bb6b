"""A captured session entry's body (docs/capture.md): one `### <timestamp> · <role>` block per turn (pure),
and the merge of the turns a read found into the turns an entry holds, so no turn is written twice.
Its reading (the turn headings, the escapes, each turn's number and lines) is storage/turns.py, which
the index, recall's turn hits and `mem read --turn` share."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from memstrata.storage import turns as reader  # the one reader of a session body
from memstrata.storage.turns import ESCAPED_HEADING as _ESCAPED


@dataclass
class BodyTurn:
    timestamp: str
    role: str
    text: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.timestamp, self.role)


def heading(timestamp: str, role: str) -> str:
    return f"### {timestamp} · {role}"


def escape(text: str) -> str:
    """A line of a turn's text that would read as a turn's heading gets one more leading backslash."""
    if "### " not in text:
        return text
    return "\n".join("\\" + line if _ESCAPED.match(line) else line for line in text.split("\n"))


def render(turns: list[BodyTurn], preamble: str = "") -> str:
    blocks = [preamble.strip()] if preamble.strip() else []
    blocks += [f"{heading(t.timestamp, t.role)}\n{escape(t.text.strip())}" for t in turns]
    return "\n\n".join(blocks) + "\n"


def parse(body: str) -> tuple[str, list[BodyTurn]]:
    """(the text before the first turn, the turns) of a session body (storage/turns.py reads it)."""
    preamble, found = reader.parse(body)
    return preamble, [BodyTurn(t.timestamp, t.role, t.text) for t in found]


def size(turn: BodyTurn) -> int:
    """The bytes a turn takes in a body (its heading, text and the blank line after it)."""
    return len(heading(turn.timestamp, turn.role).encode("utf-8")) + len(escape(turn.text).encode("utf-8")) + 3


@dataclass
class Merged:
    turns: list[BodyTurn]
    added: int = 0
    extended: int = 0
    new: list[BodyTurn] = field(default_factory=list)  # the turns added or extended, in the order read


def merge(held: list[BodyTurn], read: list[BodyTurn], unique: bool = True, before: list[BodyTurn] | None = None) -> Merged:
    """The turns `held` (in an entry) with the turns `read` (from a transcript) merged in.

    A read turn whose key (timestamp, role) the entry holds is that turn: its text replaces the held
    text only when it extends it (a reply captured while still being written), else the held text
    stays (the user may have edited it). Any other read turn is new and is appended.
    `unique`: keys are unique in a session (Claude Code and Codex stamp each line to the
    millisecond: a repeated key is the same turn written twice). Otherwise (a plain JSONL with coarse
    times) the n-th read turn with a key is the n-th held one, counting from the held turns
    `before` the read started (None: the read started at the transcript's first line).
    """
    turns = [BodyTurn(t.timestamp, t.role, t.text) for t in held]
    out = Merged(turns)
    if unique:
        where = {t.key: t for t in turns}
        for turn in read:
            found = where.get(turn.key)
            if found is None:
                new = BodyTurn(turn.timestamp, turn.role, turn.text)
                turns.append(new)
                where[new.key] = new
                out.added += 1
                out.new.append(new)
            elif _extends(turn.text, found.text):
                found.text = turn.text
                out.extended += 1
                out.new.append(found)
        return out
    positions: dict[tuple, list[BodyTurn]] = {}
    for t in turns:
        positions.setdefault(t.key, []).append(t)
    seen = Counter(t.key for t in (before or []))
    for turn in read:
        seen[turn.key] += 1
        same = positions.get(turn.key, [])
        if seen[turn.key] <= len(same):
            found = same[seen[turn.key] - 1]
            if _extends(turn.text, found.text):
                found.text = turn.text
                out.extended += 1
                out.new.append(found)
        else:
            new = BodyTurn(turn.timestamp, turn.role, turn.text)
            turns.append(new)
            positions.setdefault(new.key, []).append(new)
            out.added += 1
            out.new.append(new)
    return out


def _extends(new: str, old: str) -> bool:
    new, old = new.strip(), old.strip()
    return new != old and len(new) > len(old) and new.startswith(old)
