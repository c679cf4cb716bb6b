"""Plain-data results of API calls, and the one JSON form of an entry used by CLI and MCP."""
from __future__ import annotations

from dataclasses import dataclass, field

from memstrata.clock import format_datetime
from memstrata.storage import codec
from memstrata.storage.entry import Entry


def entry_summary(entry: Entry) -> dict:
    """The short JSON form of an entry (lists and search results)."""
    return {
        "id": entry.id,
        "title": entry.title,
        "category": entry.category,
        "status": entry.status,
        "tier": entry.tier,
        "layer": entry.layer,
        "tags": list(entry.tags),
        "importance": entry.importance,
        "important": entry.important,
        "updated": format_datetime(entry.updated),
        "path": entry.path,
    }


def entry_full(entry: Entry) -> dict:
    """The full JSON form of an entry (read)."""
    return {**entry_summary(entry), "body": entry.body, "frontmatter": codec.entry_to_frontmatter(entry)}


@dataclass
class WriteResult:
    """What a write or update did. `action`: created, updated, duplicate, near_duplicate, conflict, merged.

    A write that became the next version of an entry on the same subject (conflict, merged) also says
    which version it replaced (`previous_version`), why it is the same subject (`rule`: title, alias,
    tags or departed) and, for a conflict, whether the new text only adds to the old one (`refines`)."""

    id: str
    path: str
    action: str
    version: int = 1
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    related_id: str | None = None
    similarity: float | None = None
    previous_version: int | None = None
    rule: str | None = None
    refines: bool | None = None

    def to_dict(self) -> dict:
        data = {"id": self.id, "path": self.path, "action": self.action, "version": self.version,
                "message": self.message, "warnings": list(self.warnings)}
        if self.related_id:
            data["related_id"] = self.related_id
        if self.similarity is not None:
            data["similarity"] = round(self.similarity, 4)
        for name in ("previous_version", "rule", "refines"):
            if getattr(self, name) is not None:
                data[name] = getattr(self, name)
        return data
