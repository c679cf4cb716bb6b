"""The changes a read asks of the session entries: which entry holds a session (or the session a
resumed one continues), the turns merged in, the parts laid out. Reads the tree, writes nothing."""
from __future__ import annotations

from dataclasses import dataclass, field

from memstrata.capture import sessions
from memstrata.storage import session_body as body
from memstrata.capture.model import Turn, cut
from memstrata.capture.project import Project
from memstrata.errors import MemstrataError
from memstrata.storage.entry import Entry


@dataclass
class SessionChange:
    """The new state of one session's entries (one per part) and what it added."""

    agent: str
    session: str
    changes: list = field(default_factory=list)   # (entry, entry as on disk or None)
    added: int = 0
    extended: int = 0
    created: bool = False
    continued: str | None = None                  # the session this one continues (a resumed session)
    unchanged: list = field(default_factory=list)  # entries held as they were (their index rows are checked)
    replies: list = field(default_factory=list)    # the user's turns and each reply added, grown or read again (replies_of)


class SessionIndex:
    """The tree's session entries, by session id, for one capture run (planned changes included)."""

    def __init__(self, root, catalog, category: str):
        self.root = root
        self.catalog = catalog
        self.category = category
        self.entries: dict[str, Entry] = {}      # id -> entry (metadata; planned ones with their body)
        self.planned: dict[str, Entry] = {}       # id -> entry with its body, planned in this run
        self.by_session: dict[tuple[str, str], list[str]] = {}
        catalog.refresh()
        for entry in catalog.entries(category):
            if entry.id and sessions.is_session(entry):
                self._note(entry)

    def _note(self, entry: Entry) -> None:
        self.entries[entry.id] = entry
        for session in sessions.sessions_of(entry):
            ids = self.by_session.setdefault((entry.agent or "", session), [])
            if entry.id not in ids:
                ids.append(entry.id)

    def note_planned(self, entry: Entry) -> None:
        self.planned[entry.id] = entry
        self._note(entry)

    def parts(self, agent: str, session: str) -> list[Entry]:
        """The entries of a session with their full text, first part first ([] when none)."""
        if (agent, session) not in self.by_session:
            self._elsewhere(agent, session)
        ids = self.by_session.get((agent, session), [])
        found = [self.full(i) for i in ids]
        found = [e for e in found if e is not None]
        first = [e for e in found if e.extra.get("session") == session] or found
        if not first:
            return []
        owner = str(first[0].extra.get("session"))
        same = [e for e in found if str(e.extra.get("session")) == owner]
        return sorted(same, key=lambda e: int(e.extra.get("part") or 1))

    def _elsewhere(self, agent: str, session: str) -> None:
        """A session captured under another capture_category (or moved by hand): found by its id."""
        base = sessions.base_id(agent, session)
        for n in range(1, 1000):
            paths = self.catalog.paths_of(sessions.part_id(base, n))
            entry = self.catalog.get(paths[0]) if paths else None
            if entry is None or not sessions.is_session(entry):
                return
            self._note(entry)

    def full(self, entry_id: str) -> Entry | None:
        """An entry as its file holds it, with the full text of a compressed one (planned: as planned)."""
        if entry_id in self.planned:
            return self.planned[entry_id]
        meta = self.entries.get(entry_id)
        if meta is None or not meta.path:
            return None
        from memstrata.storage.entry_files import read_entry_file
        from memstrata.storage.sidecars import with_full_body

        try:
            entry = read_entry_file(self.root, meta.path)
            full = with_full_body(self.root, entry)
        except (MemstrataError, OSError):
            return None
        entry.extra["__full_body__"] = full.body
        return entry

    def continued(self, agent: str, first: body.BodyTurn) -> list[Entry]:
        """The parts of the session a new transcript continues: the one whose turns hold its first
        turn, same time, role and text (a resumed session's file starts with the turns of the session
        it resumes)."""
        when = sessions.moment(first.timestamp)
        for entry_id, meta in list(self.entries.items()):
            if meta.agent != agent or not sessions.is_session(meta):
                continue
            start, end = (sessions.moment(str(meta.extra.get(k) or "")) for k in ("started", "ended"))
            if when is not None and start is not None and end is not None and not start <= when <= end:
                continue
            entry = self.full(entry_id)
            if entry is None:
                continue
            _, turns = body.parse(held_body(entry))
            if any(t.key == first.key and t.text.strip() == first.text.strip() for t in turns):
                return self.parts(agent, str(entry.extra.get("session")))
        return []


def held_body(entry: Entry) -> str:
    return entry.extra.get("__full_body__", entry.body)


def replies_of(turns: list, new: list) -> list[tuple[str, str, str]]:
    """The session's turns as ("user", text, time) and ("reply", text, time) in order, up to its last
    assistant turn in `new` (added or grown by this read): every user turn before a reply, held or new,
    is what the user wrote (a procedure pasted earlier is the user's words, not a memory's). Empty
    without one."""
    fresh = {id(t) for t in new}
    out, last_reply = [], 0
    for turn in turns:
        if turn.role == "user":
            out.append(("user", turn.text, turn.timestamp))
        elif turn.role == "assistant" and id(turn) in fresh and turn.text.strip():
            out.append(("reply", turn.text, turn.timestamp))
            last_reply = len(out)
    return out[:last_reply]


def plan(index: SessionIndex, *, agent: str, session: str, turns: list[Turn], project: Project, full: bool,
         unique: bool, clean, limit: int, category: str, now) -> SessionChange:
    """The change that merges `turns` (read from a transcript of `session`) into its entries."""
    change = SessionChange(agent, session)
    read = [body.BodyTurn(t.timestamp, t.role, clean(t.text)) for t in turns]
    parts = index.parts(agent, session)
    if not parts and read:
        parts = index.continued(agent, read[0])
        if parts:
            change.continued = str(parts[0].extra.get("session"))
    held_parts, preamble = [], ""
    for n, entry in enumerate(parts):
        text, held = body.parse(held_body(entry))
        preamble = text if n == 0 else preamble
        held_parts.append(held)
    held = [t for part in held_parts for t in part]
    merged = body.merge(held, read, unique=unique, before=None if full else held)
    change.added, change.extended = merged.added, merged.extended
    change.replies = replies_of(merged.turns, merged.new)
    owner = str(parts[0].extra.get("session")) if parts else session
    known = sessions.sessions_of(parts[0]) if parts else [session]
    all_sessions = list(dict.fromkeys(known + [session]))
    if not merged.added and not merged.extended and all_sessions == known:
        change.unchanged = [e for e in parts]
        # read again and found in (a capture killed before it noted the read): its replies are judged
        # again, since what they used may not have been counted (a use counts once a session anyway)
        again = {(t.key, t.text.strip()) for t in read}
        change.replies = replies_of(merged.turns, [t for t in merged.turns if (t.key, t.text.strip()) in again])
        return change
    change.created = not parts
    layout = sessions.split_parts(held_parts, merged.turns, limit)
    base = sessions.base_id(agent, owner)
    if parts:  # a session goes on where it is: its project and folder stay what they were
        project, category = _held_project(parts[0], project), parts[0].category
    for n, part_turns in enumerate(layout, 1):
        current = parts[n - 1] if n <= len(parts) else None
        before = held_parts[n - 1] if n <= len(held_parts) else None
        if current is not None and before == part_turns and sessions.sessions_of(current) == all_sessions:
            change.unchanged.append(current)
            continue
        entry = sessions.session_entry(_clean(current), entry_id=sessions.part_id(base, n), agent=agent,
                                       session=owner, sessions=all_sessions, project=project,
                                       category=category, turns=part_turns, part=n,
                                       preamble=preamble if n == 1 else "", now=now)
        if current is None:
            entry.title = sessions.title(project.name, layout[0], n)
        change.changes.append((entry, _clean(current)))
        index.note_planned(entry)
    return change


def _clean(entry: Entry | None) -> Entry | None:
    if entry is None:
        return None
    copy = entry.copy()
    copy.extra.pop("__full_body__", None)
    return copy


def _held_project(entry: Entry, read: Project) -> Project:
    """A session keeps the project it was first captured under."""
    return Project(str(entry.extra.get("project") or read.name), entry.extra.get("cwd") or read.cwd,
                   entry.extra.get("repo") if "repo" in entry.extra else read.repo)


def cleaner(turn_max: int):
    """What a turn's text goes through before it is kept: credentials redacted in place, cut to
    capture_turn_max_chars."""
    from memstrata.storage.secrets import redact

    def clean(text: str) -> str:
        return cut(redact(text), turn_max).strip()

    return clean
