"""Captured sessions turn by turn: what a recall hit on a turn tells of it, and `mem read ID --turn N`.

The index ranks each turn of a captured session on its own (retrieval/units.py); a hit on a turn
names the session entry (`id`) and the turn (`turn`, 1-based in the file). What the file says of the
turn (its heading's timestamp verbatim, the session id, agent and project of the frontmatter) is read
here from the session file, the truth, rather than copied into the index.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from memstrata.engine.entries import Entries
from memstrata.engine.state import TreeState
from memstrata.errors import InvalidInput, NotFound
from memstrata.storage import turns as session_turns


@dataclass
class TurnsView:
    """Turns of one captured session (`mem read ID --turn N --around K`)."""

    id: str
    title: str
    path: str | None
    session: str | None
    agent: str | None
    project: str | None
    turn: int
    turns: list[dict] = field(default_factory=list)  # {"turn", "timestamp", "role", "text"} in file order
    blocks: list[str] = field(default_factory=list)  # each turn as the file holds it

    def to_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "path": self.path, "session": self.session,
                "agent": self.agent, "project": self.project, "turn": self.turn, "turns": list(self.turns)}

    def render(self) -> str:
        head = f"{self.title}  [{self.path}]  turn {self.turn}"
        return head + "\n\n" + "\n\n".join(self.blocks) + "\n"


class Turns:
    """`read`: turns of a captured session around one."""

    def __init__(self, state: TreeState, entries: Entries):
        self.state = state
        self.entries = entries
        self.root = state.root

    def read(self, ref: str, turn: int, around: int = 0, count_access: bool = True) -> TurnsView:
        """Turn `turn` (1-based) of the session `ref` with `around` turns either side (a compressed
        session: from its full text). Counts as a read of the session unless told not to."""
        from memstrata.storage.secrets import redact
        from memstrata.storage.sidecars import with_full_body

        if int(around) < 0:
            raise InvalidInput("around must be 0 or more")
        entry = self.entries.read(ref, count_access=count_access)
        if not session_turns.is_session(entry):
            raise InvalidInput(f"{ref} is not a captured session: it has no turns (`mem read {ref}` shows it)")
        body = with_full_body(self.root, entry).body
        picked = session_turns.around(body, int(turn), int(around))
        if not picked:
            count = len(session_turns.parse(body)[1])
            raise NotFound(f"{ref} has no turn {turn} (it has {count})")
        extra = entry.extra
        # what is shown is redacted as recall's snippets are (a file the guard never saw)
        return TurnsView(id=entry.ref, title=redact(entry.title), path=entry.path,
                         session=_text(extra.get("session")), agent=_text(entry.agent or extra.get("agent")),
                         project=_text(extra.get("project")), turn=int(turn),
                         turns=[{"turn": t.number, "timestamp": t.timestamp, "role": t.role, "text": redact(t.text)}
                                for t in picked],
                         blocks=[redact(session_turns.block(body, t)) for t in picked])


def turns_around(root, entry, turn: int, k: int = 1) -> str:
    """Turn `turn` of a session entry with `k` turns either side, as the file holds them ('' if none)."""
    from memstrata.storage.sidecars import with_full_body

    body = with_full_body(root, entry).body
    return "\n\n".join(session_turns.block(body, t) for t in session_turns.around(body, turn, k))


def annotate(root, hits: list) -> None:
    """Fill what the session file says of each hit on a turn (timestamp, session, agent, project,
    the session's title); a file read once for all its hits. A file that changed since it was
    indexed so that the turn is gone leaves the hit as the index had it."""
    from memstrata.storage.catalog import read_entry_file
    from memstrata.storage.errors import CorruptEntry
    from memstrata.storage.secrets import redact
    from memstrata.storage.sidecars import with_full_body

    by_path: dict[str, list] = {}
    for hit in hits:
        if hit.turn is not None and hit.path and hit.shared_root is None:
            by_path.setdefault(hit.path, []).append(hit)
    for path, group in by_path.items():
        try:
            entry = read_entry_file(root, path)
            found = session_turns.parse(with_full_body(root, entry).body)[1]
        except (CorruptEntry, OSError, NotFound, InvalidInput):
            continue
        for hit in group:
            if entry.ref != hit.id or not 1 <= hit.turn <= len(found):
                continue
            extra = entry.extra
            hit.timestamp = found[hit.turn - 1].timestamp
            hit.session, hit.session_agent = _text(extra.get("session")), _text(entry.agent or extra.get("agent"))
            hit.project, hit.title = _text(extra.get("project")), redact(entry.title)


def _text(value) -> str | None:
    return None if value is None else str(value)
