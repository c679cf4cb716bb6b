"""The counts `mem stats` shows: per category, tier and status, the strategy advised, the last 30 days."""
from __future__ import annotations

from memstrata.engine.split_advice import split_advised, split_warning
from memstrata.engine.state import TreeState
from memstrata.storage import layout, trash
from memstrata.storage.entry import Entry


def tree_stats(state: TreeState, entries: list[Entry]) -> dict:
    """Counts per category, tier and status, and the retrieval strategy advised per category."""
    s, adopted = state.settings, layout.is_adopted(state.root)
    per_category: dict[str, dict] = {}
    for e in entries:
        row = per_category.setdefault(e.category, {"entries": 0, "active": 0, "archived": 0, "expired": 0})
        row["entries"] += 1
        row[e.status] = row.get(e.status, 0) + 1
    for category, row in per_category.items():
        subtree = sum(r["entries"] for c, r in per_category.items() if c == category or c.startswith(category + "/"))
        row["subtree"] = subtree
        row["strategy"] = ("grep" if subtree < s.grep_max_entries else
                           "index" if subtree <= s.index_max_entries else "vector")
        row["split_advised"] = split_advised(row["entries"], s.split_threshold, adopted)
    tiers: dict[str, int] = {}
    statuses: dict[str, int] = {}
    for e in entries:
        tiers[e.tier] = tiers.get(e.tier, 0) + 1
        statuses[e.status] = statuses.get(e.status, 0) + 1
    warnings = [split_warning(c, row["entries"], s.split_threshold)
                for c, row in sorted(per_category.items()) if row["split_advised"]]
    trashed = trash.list_trash(state.root)
    since = state.now().timestamp() - 30 * 86400
    recent = {"written": sum(1 for e in entries if e.created and e.created.timestamp() >= since),
              "updated": sum(1 for e in entries if e.updated and e.created and e.updated > e.created
                             and e.updated.timestamp() >= since)}
    for item in trashed:
        if item.trashed_at and item.trashed_at.timestamp() >= since:
            kind = {"expired": "expired", "forgotten": "forgotten"}.get(item.reason.split(":")[0], "deleted")
            recent[kind] = recent.get(kind, 0) + 1
    return {"root": str(state.root), "entries": len(entries), "tiers": tiers, "statuses": statuses,
            "categories": dict(sorted(per_category.items())), "trash": len(trashed),
            "unreadable": sorted(state.catalog.errors()), "recent": recent, "warnings": warnings + [
                f"{folder}/ cannot be opened (permissions); its entries are listed as last seen" for folder in
                state.catalog.skipped_folders] + [
                f"{name}: not read (a name that is not UTF-8 or holds a line break; rename it)" for name in
                state.catalog.bad_names]}
