"""Which project a memory belongs to, and what the session start of a project lists (pure)."""
# A session runs in a folder (the hook's `cwd`): its project is the git repository that folder is in,
# by its top folder's name (and the name of its `origin` remote's repository), else the folder's own
# name: the names capture files sessions under (`sessions/<project>/`, capture/project.py). The edge
# (features/start_work.py scope_at) reads the folder and the catalog; here only names and entries are compared.
#
# A memory belongs to
# - **its own project** ("own") when its frontmatter `project:` names the session's project, or, without
#   one, a level of its category or one of its tags does (`projects/alpha/...`, `alpha/decisions`, tag
#   `alpha`);
# - **another project** ("other") when its `project:` names another one, or a category level or tag names
#   a project the tree knows (a sub-folder of a `project_folders` category, `projects/` by default, or
#   of the captured sessions' folder: every project a session was captured in);
# - **no project** ("general"): preferences, conventions, the team, runbooks: relevant anywhere;
# - a captured **session** ("session"): raw turns, recalled turn by turn for a prompt, never listed.
#
# The session start lists own and general memories (own ones first by `autoload_project_boost`), never
# another project's or a captured session (those only when nothing else is there: the block is never
# empty while a memory exists). A folder in no git repository whose name no memory names is no project:
# the start lists every project's memories as before, sessions still left out.
from __future__ import annotations

from dataclasses import dataclass

from memstrata.storage.entry import Entry
from memstrata.storage.paths import slugify
from memstrata.storage.turns import is_session

OWN, OTHER, GENERAL, SESSION = "own", "other", "general", "session"


@dataclass(frozen=True)
class Scope:
    """The session's project: its names (slugs) and every project name the tree knows."""

    names: frozenset
    known: frozenset


def slug(text) -> str:
    return slugify(str(text)) if str(text or "").strip() else ""


def known_projects(categories, project_folders, capture_category: str) -> frozenset:
    """The project names the tree knows: each category's level right under a `project_folders` folder
    (comma-separated, `projects` by default) or under the captured sessions' folder."""
    parents = {p.strip().strip("/") for p in str(project_folders or "").split(",") if p.strip().strip("/")}
    parents.add(str(capture_category or "").strip("/"))
    found = set()
    for category in categories:
        levels = [lv for lv in str(category or "").split("/") if lv]
        for i, level in enumerate(levels[:-1]):
            if "/".join(levels[:i + 1]) in parents or level in parents:
                found.add(slug(levels[i + 1]))
    return frozenset(n for n in found if n)


def scope_of(names, in_repository: bool, known) -> Scope | None:
    """The session's scope, or None when the folder is no project: not in a git repository and named by
    no memory of the tree."""
    names = frozenset(n for n in (slug(x) for x in names) if n)
    if not names or (not in_repository and not names & frozenset(known)):
        return None
    return Scope(names, frozenset(known) | names)


def _declared(entry: Entry) -> set:
    """The slugs of the entry's `project:` key (a name or a list of names)."""
    value = entry.extra.get("project")
    values = value if isinstance(value, (list, tuple)) else [value]
    return {s for s in (slug(v) for v in values if isinstance(v, (str, int))) if s}


def _named(entry: Entry) -> set:
    """The slugs of its category's levels and of its tags."""
    levels = [lv for lv in str(entry.category or "").split("/") if lv]
    return {s for s in (slug(x) for x in levels + [str(t) for t in entry.tags or []]) if s}


def membership(entry: Entry, scope: Scope | None) -> str:
    """OWN, OTHER, GENERAL or SESSION (without a scope: SESSION or GENERAL)."""
    if is_session(entry):
        return SESSION
    if scope is None:
        return GENERAL
    declared = _declared(entry)
    if declared:
        return OWN if declared & scope.names else OTHER
    named = _named(entry)
    if named & scope.names:
        return OWN
    return OTHER if named & scope.known else GENERAL


def start_factor(entry: Entry, scope: Scope | None, boost: float, everything: bool = False):
    """What the entry's start score is multiplied by in the session-start list: `boost` for its own
    project, 1 for a general one, 0 (left out) for another project's and a captured session, unless
    `everything` (the fallback when nothing else is there: all count 1)."""
    if everything:
        return 1.0
    kind = membership(entry, scope)
    return boost if kind == OWN else 1.0 if kind == GENERAL else 0.0


def start_factor_max(scope: Scope | None, boost: float, everything: bool = False) -> float:
    """The most start_factor can give an entry: `boost` only where an entry can be the project's own."""
    return 1.0 if everything or scope is None else max(1.0, boost)


def may_promote(entry: Entry, scope: Scope | None) -> bool:
    """Whether the session start may bring the entry back for its project's last session: its own
    project's or a general memory, never another project's or a captured session."""
    return membership(entry, scope) in (OWN, GENERAL)
