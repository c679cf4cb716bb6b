"""The current task at a session start: the project's last captured session and what it asked (pure)."""
# At a session start the session knows its project (the hook's `cwd`, scoring/project_scope.py) and,
# once sessions are captured, that project's last session: what the user was doing. Its prompts are
# the task the new session most likely goes on with. The session start brings back (promotes) the cold
# and archived memories those prompts need, with the rule calibrated on prompts (scoring/promotion.py):
# each prompt is a context of its own, as it was when it was typed. Only the user's prompts are taken:
# they say the task; the replies are the agent's (long, and about whatever it did).
from __future__ import annotations

from typing import Callable

from memstrata.scoring.project_scope import Scope, slug
from memstrata.storage.entry import Entry
from memstrata.storage.turns import is_session, parse, sessions_of

PROMPT_CHARS = 2000  # a prompt is cut to this many characters as a context (a pasted log is no task)


def of_project(entry: Entry, scope: Scope) -> bool:
    """Whether a captured session ran in the scope's project (its `project:`, else its folder)."""
    project = entry.extra.get("project")
    if isinstance(project, str) and project.strip():
        return slug(project) in scope.names
    return any(slug(level) in scope.names for level in str(entry.category or "").split("/") if level)


def last_session(entries, scope: Scope | None, current: str | None = None) -> Entry | None:
    """The project's latest captured session (by its last turn, `updated`) that is not the session
    starting now (`current`: a resumed session holds the turns of the one it resumes); None when none."""
    if scope is None:
        return None
    best, best_key = None, None
    for entry in entries:
        if not is_session(entry) or entry.status == "expired" or not of_project(entry, scope):
            continue
        if current and current in sessions_of(entry):
            continue
        stamp = entry.updated or entry.created
        key = (stamp.timestamp() if stamp else 0.0, entry.path or "")
        if best_key is None or key > best_key:
            best, best_key = entry, key
    return best


def task_prompts(body: str, limit: int, has_topic: Callable[[str], bool]) -> list[str]:
    """The session's last `limit` prompts that name a topic (`has_topic`: retrieval.prompts.has_topic;
    "continue" and "thanks" say no task), latest first, each once, whitespace folded and cut to PROMPT_CHARS."""
    out: list[str] = []
    for turn in reversed(parse(body)[1]):
        if len(out) >= max(0, int(limit)):
            break
        if turn.role != "user":
            continue
        text = " ".join(turn.text.split())[:PROMPT_CHARS]
        if text and text not in out and has_topic(text):
            out.append(text)
    return out
