"""Session entries: their ids, files, frontmatter and parts, built from turns (no IO)."""
from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone

from memstrata.storage.session_body import BodyTurn, render, size
from memstrata.capture.model import USER, one_line
from memstrata.capture.project import Project
from memstrata.storage.entry import Entry
from memstrata.storage.turns import SESSION_KIND, is_session, parse_timestamp, sessions_of  # noqa: F401 - one reader

KIND = SESSION_KIND         # frontmatter `kind:` of a captured session
ID_PREFIX = "ses-"          # a session entry's id: ses-<12 hex of agent and session id>[-<part>]
TITLE_PROMPT_CHARS = 80
FRONTMATTER_ROOM = 4096     # bytes kept free under max_entry_bytes for the frontmatter
_ID8 = re.compile(r"[^A-Za-z0-9_-]+")


def base_id(agent: str, session: str) -> str:
    """The id of a session's entry (its first part): the same on every run, so a lost cache finds it."""
    return ID_PREFIX + hashlib.sha1(f"{agent}\0{session}".encode("utf-8")).hexdigest()[:12]


def part_id(base: str, part: int) -> str:
    return base if part <= 1 else f"{base}-{part}"


def file_name(first_turn: str | None, agent: str, session: str, part: int = 1) -> str:
    """`<YYYY-MM-DD>-<agent>-<first 8 of the session id>.md` (the first turn's date, UTC)."""
    day = (moment(first_turn) or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y-%m-%d")
    short = _ID8.sub("", session)[:8] or hashlib.sha1(session.encode("utf-8")).hexdigest()[:8]
    return f"{day}-{agent}-{short}" + (f"-part{part}" if part > 1 else "") + ".md"


moment = parse_timestamp  # a turn's timestamp as a datetime (UTC when it names no zone); None when it is no date


def title(project: str, turns: list[BodyTurn], part: int = 1) -> str:
    first = next((t for t in turns if t.role == USER), turns[0] if turns else None)
    prompt = one_line(first.text, TITLE_PROMPT_CHARS) if first is not None else "session"
    return f"{project}: {prompt}" + (f" (part {part})" if part > 1 else "")


def split_parts(held: list[list[BodyTurn]], turns: list[BodyTurn], limit: int) -> list[list[BodyTurn]]:
    """The turns laid out in parts: the parts held so far keep their turns (their texts may have
    grown), the new turns go to the last part while it stays under `limit` bytes, then to new parts."""
    count = sum(len(p) for p in held)
    parts = [list(turns[sum(len(p) for p in held[:i]):sum(len(p) for p in held[:i + 1])]) for i in range(len(held))]
    if not parts:
        parts = [[]]
    used = sum(size(t) for t in parts[-1])
    for turn in turns[count:]:
        need = size(turn)
        if parts[-1] and limit > 0 and used + need > max(limit - FRONTMATTER_ROOM, 1):
            parts.append([])
            used = 0
        parts[-1].append(turn)
        used += need
    return parts


def session_entry(base: Entry | None, *, entry_id: str, agent: str, session: str, sessions: list[str],
                  project: Project, category: str, turns: list[BodyTurn], part: int, preamble: str = "",
                  now: datetime) -> Entry:
    """The entry of one part of a session: `base` (the entry as held, None for a new one) with its
    body, frontmatter facts and title made from `turns`. A person's own changes to the entry
    (tags added, importance, text before the first turn) stay."""
    started = turns[0].timestamp if turns else None
    ended = turns[-1].timestamp if turns else None
    facts = {"kind": KIND, "session": session}
    if len(sessions) > 1:
        facts["sessions"] = list(sessions)
    facts.update({"project": project.name, "cwd": project.cwd, "repo": project.repo,
                  "started": started, "ended": ended, "turns": len(turns)})
    if part > 1:
        facts["part"] = part
    tags = ["session", agent, project.name]
    body = render(turns, preamble)
    created, updated = moment(started) or now, moment(ended) or now
    if base is None:
        return Entry(id=entry_id, title=title(project.name, turns, part), body=body, category=category,
                     created=created, updated=max(created, updated), tags=tags, agent=agent, extra=facts)
    extra = {k: v for k, v in base.extra.items() if k not in ("sessions", "part")}
    extra.update({k: v for k, v in facts.items() if k not in ("project", "cwd", "repo")})
    for key in ("project", "cwd", "repo"):  # where the session began stays what it was
        extra.setdefault(key, facts[key])
    tags = ["session", agent, str(extra.get("project") or project.name)]
    return base.copy(body=body, extra=extra, updated=max(base.updated or updated, updated),
                     tags=list(dict.fromkeys(list(base.tags) + tags)), agent=base.agent or agent)
