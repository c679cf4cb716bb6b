"""What `mem maintain` tells the user: the report, its change rows, and what it forgets, prominently."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from memstrata.clock import format_datetime
from memstrata.scoring.lifecycle import Action
from memstrata.storage import trash
from memstrata.storage.entry import Entry


@dataclass
class MaintenanceReport:
    """What `maintain` changed (or, with dry_run, would change)."""

    now: datetime
    dry_run: bool
    changes: list[dict] = field(default_factory=list)
    purged: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # entries an editor saved while maintain wrote them: left as saved
    accesses_folded: int = 0  # entries whose journaled accesses were written into their frontmatter
    accesses_to_fold: int = 0  # a dry run's: entries whose journaled accesses a real run would write
    reported: list[dict] = field(default_factory=list)  # trash items shown for the first time
    days_in_use: int = 0  # days the tree is known to have been used on (what archive and forget count)
    journal_compacted: dict | None = None  # a vault's journal file compacted: lines and bytes before and after
    retention_days: int = 30

    @property
    def changed(self) -> int:
        return len(self.changes) + len(self.purged)

    def counts(self) -> dict:
        out: dict[str, int] = {}
        for change in self.changes:
            for kind in change["actions"]:
                out[kind] = out.get(kind, 0) + 1
        if self.purged:
            out["purge"] = len(self.purged)
        return out

    def forgotten(self) -> list[dict]:
        """The entries this run sends (or would send) to the trash, with why and how to get them back."""
        purge_on = format_datetime(self.now + timedelta(days=self.retention_days))
        out = []
        for change in self.changes:
            kinds = change["actions"]
            if "forget" not in kinds and "expire" not in kinds:
                continue
            # the trash action is the last of an entry's actions, so its reason is the last one
            out.append({"id": change["id"], "title": change["title"], "from": change["path"],
                        "trash_path": change["new_path"], "kind": "expired" if "expire" in kinds else "forgotten",
                        "reason": change["reason"].split("; ")[-1], "restore": f"mem restore {change['id']}",
                        "purge_after": purge_on})
        return out

    def to_dict(self) -> dict:
        return {"now": format_datetime(self.now), "dry_run": self.dry_run, "changed": self.changed,
                "counts": self.counts(), "forgotten": self.forgotten(), "changes": list(self.changes),
                "purged": list(self.purged), "reported": list(self.reported), "errors": list(self.errors),
                "skipped": list(self.skipped),
                "accesses_folded": self.accesses_folded, "accesses_to_fold": self.accesses_to_fold,
                "days_in_use": self.days_in_use,
                **({"journal_compacted": self.journal_compacted} if self.journal_compacted else {})}


def change_row(before: Entry, after: Entry, actions: list[Action], new_path: str | None = None) -> dict:
    """One entry's row of the report: what changed, from what to what, and why."""
    kinds = [a.kind for a in actions]
    parts = []
    if after.tier != before.tier:
        parts.append(f"tier {before.tier}->{after.tier}")
    if after.layer != before.layer:
        parts.append(f"layer {before.layer}->{after.layer}")
    if "expire" in kinds:
        parts.append("expired -> trash")
    elif "forget" in kinds:
        parts.append("forgotten -> trash")
    elif after.status != before.status:
        parts.append(f"{after.status} -> {after.path}")
    reason = "; ".join(dict.fromkeys(a.reason for a in actions))
    return {
        "id": before.id, "title": before.title, "path": before.path,
        "new_path": new_path or (after.path if after.path != before.path else None),
        "actions": kinds,
        "tier": [before.tier, after.tier], "layer": [before.layer, after.layer],
        "status": [before.status, after.status],
        "change": ", ".join(parts) or ", ".join(kinds), "reason": reason,
    }


def purge_row(item: trash.TrashItem, now) -> dict:
    days = (now - item.trashed_at).total_seconds() / 86400 if item.trashed_at else None
    return {**item.to_dict(), "days_in_trash": None if days is None else int(days)}


def reported_row(item: trash.TrashItem, now, retention_days: int) -> dict:
    """A trash item shown to the user for the first time: purged retention_days from now at the earliest."""
    return {**item.to_dict(), "restore": f"mem restore {item.id or item.path}",
            "purge_after": format_datetime(now + timedelta(days=retention_days))}
