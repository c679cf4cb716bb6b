"""The one entry type (and the rule for its id) that storage reads and writes and everything else passes around."""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime

from memstrata.storage.errors import InvalidInput

TIERS = ("hot", "warm", "cold", "archive")
LAYERS = ("L0", "L1", "L2", "L3", "L4")
STATUSES = ("active", "archived", "expired")
REVIEW_STATUSES = ("pending_review", "reviewing", "reviewed", "mastered")
# The one rule for entry ids (the engine's writer, file names under .trash/.versions/.full).
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# Where codec.parse keeps an `id:` that breaks the rule (the entry then has no id).
INVALID_ID_KEY = "invalid_id"


def valid_id(text) -> bool:
    """Whether `text` is a str that is a valid entry id (whole string, no trailing newline)."""
    return isinstance(text, str) and ID_PATTERN.fullmatch(text) is not None


def require_id(text, what: str = "entry id") -> str:
    """`text` when it is a valid entry id, else InvalidInput (say what it was meant to be)."""
    if not valid_id(text):
        shown = repr(text if not isinstance(text, str) or len(text) <= 80 else text[:80] + "...")
        raise InvalidInput(f"{shown} is not a valid {what} (a letter or digit, then letters, digits, '_', '.', '-';"
                           " at most 64)")
    return text


def new_id() -> str:
    """A short, stable, random identifier (the LanceDB row key; survives moves). Never digits only: YAML
    would read 511853156537 as a number, so such an id is written quoted in the user's frontmatter
    (about 1 id in 280 was)."""
    while True:
        candidate = uuid.uuid4().hex[:12]
        if not candidate.isdigit():
            return candidate


@dataclass
class Entry:
    """A memory: frontmatter fields as typed attributes plus the Markdown body.

    `category` and `path` are derived from where the file lies (path relative to the root,
    POSIX separators); they are not written to frontmatter. `extra` keeps unknown
    frontmatter fields untouched, in their original order.
    """

    id: str
    title: str
    body: str = ""
    category: str = ""
    path: str | None = None
    status: str = "active"
    created: datetime | None = None
    updated: datetime | None = None
    version: int = 1
    tags: list[str] = field(default_factory=list)
    importance: float = 0.5
    important: bool = False
    related: list[str] = field(default_factory=list)
    expires: datetime | None = None
    last_access: datetime | None = None
    access_count: int = 0
    context_correlation: float = 1.0
    retention: int | str | None = None
    layer: str = "L0"
    tier: str = "hot"
    weight: float | None = None
    review_status: str | None = None
    last_reviewed: datetime | None = None
    next_review: datetime | None = None
    review_count: int = 0
    summary: str | None = None
    full_content_file: str | None = None
    agent: str | None = None
    extra: dict = field(default_factory=dict)
    # The version history (frontmatter `history:`; before 0.2 a section at the end of the file), one dict per version
    # ({"version": int, "date": "YYYY-MM-DD", "summary": str}); kept out of `body`.
    history: list[dict] = field(default_factory=list)
    # The frontmatter key that holds `id` in this entry's tree (storage/layout.py): `mem-id` in an
    # adopted vault, whose own `id:` then stays in `extra`, the user's. Not written as a field.
    id_key: str = "id"
    # (size, mtime_ns, inode) of the file as it was when this entry was read from it (storage.entry_files):
    # the index records the first two for its row (a stat taken after embedding would hide an edit made
    # meanwhile from every later sync), and the save path replaces the file only while it still has all
    # three. Not a note's field; a copy() is a new entry and drops it.
    read_stamp: tuple | None = field(default=None, compare=False, repr=False)

    def copy(self, **changes) -> "Entry":
        """A new Entry with some fields changed (lists and dicts copied, never shared)."""
        base = replace(self, tags=list(self.tags), related=list(self.related), extra=dict(self.extra),
                       history=[dict(h) for h in self.history], read_stamp=None)
        return replace(base, **changes) if changes else base

    @property
    def ref(self) -> str:
        """How a command names this entry: its id, or `path:<path>` for a hand-made file that has
        none yet (`mem read` takes both; reads never write the id into the file)."""
        return self.id or f"path:{self.path}"

    @property
    def last_touched(self) -> datetime | None:
        """The later of updated and last_access: what tiers age from."""
        stamps = [d for d in (self.updated, self.last_access, self.created) if d is not None]
        return max(stamps) if stamps else None

    @property
    def is_compressed(self) -> bool:
        return self.layer != "L0" and bool(self.full_content_file)


def holder_rank(entry: Entry) -> tuple:
    """Sort key among files that hold one id: the first is the entry (`mem read ID` shows it and
    `mem doctor --fix` lets it keep the id): the highest version, then the latest `updated`,
    then the first path. No file time counts, so a rewrite never moves the id to another file."""
    stamp = entry.updated.timestamp() if entry.updated else float("-inf")
    return (-entry.version, -stamp, entry.path or "")
