"""Category split and merge: by status, year, month or tag, recorded so a merge can undo a split."""
from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.errors import InvalidInput, NotFound
from memstrata.storage import versions
from memstrata.storage.catalog import read_entry_file
from memstrata.storage.entry import Entry
from memstrata.storage.paths import (
    entry_dir,
    is_archived_path,
    slugify,
    validate_category,
)

SPLIT_MODES = ("status", "year", "month", "tag")
STATUS_SUBCATEGORY = {"active": "active", "archived": "archive", "expired": "expired"}
# README: the engine never moves or renames an adopted vault's notes (its folders are the user's order)
ADOPTED_REFUSAL = "an adopted vault's notes are never moved: its folders are yours to arrange (split is for `mem init` trees)"


class Split:
    """split / merge of a category; every move is one all-or-nothing save."""

    def __init__(self, state: TreeState, save: SavePath):
        self.state = state
        self.save = save
        self.root = state.root

    def _refuse_in_adopted(self) -> None:
        from memstrata.storage import layout

        if layout.is_adopted(self.root):
            raise InvalidInput(ADOPTED_REFUSAL)

    def split(self, category: str, by: str = "year", dry_run: bool = False) -> dict:
        """Move a category's own entries into subcategories by status, year, month or (first) tag."""
        from memstrata import clock

        self._refuse_in_adopted()
        category = validate_category(category)
        if by not in SPLIT_MODES:
            raise InvalidInput(f"--by must be one of {', '.join(SPLIT_MODES)}, not {by!r}")
        with self.state.lock():
            self.state.catalog.refresh()
            own = [e for e in self.state.catalog.entries(category) if e.category == category]
            if not own and not (self.root / category).is_dir():
                raise NotFound(f"no category {category}")
            existing = {p.name for p in (self.root / category).iterdir() if p.is_dir()} \
                if (self.root / category).is_dir() else set()
            taken: set[str] = set()
            moves = []
            for e in sorted(own, key=lambda x: x.path):
                sub = _split_key(e, by, category)
                target = _free_path(self.root, entry_dir(f"{category}/{sub}", is_archived_path(e.path)),
                                    PurePosixPath(e.path).name, taken)
                moves.append({"id": e.id, "title": e.title, "from": e.path, "to": target, "subcategory": sub})
            counts: dict[str, int] = {}
            for m in moves:
                counts[m["subcategory"]] = counts.get(m["subcategory"], 0) + 1
            result = {"category": category, "by": by, "dry_run": dry_run, "moved": len(moves),
                      "subcategories": dict(sorted(counts.items())), "moves": moves}
            if dry_run or not moves:
                return result
            record = versions.read_split_record(self.root, category) or {"splits": []}
            record["splits"].append({"by": by, "at": clock.format_datetime(self.state.now()),
                                     "created": sorted(s for s in counts if s not in existing),
                                     "moves": [{"id": m["id"], "from": m["from"], "to": m["to"]} for m in moves]})
            self._apply_moves(moves)
            versions.write_split_record(self.root, category, record)
            self.save.write_indexes([category] + [f"{category}/{s}" for s in counts])
        return result

    def merge(self, category: str, dry_run: bool = False) -> dict:
        """Undo a split: move the entries of the split's subcategories (every subcategory when
        there is no split record) back into the category, with their former file names."""
        self._refuse_in_adopted()
        category = validate_category(category)
        with self.state.lock():
            self.state.catalog.refresh()
            if not (self.root / category).is_dir():
                raise NotFound(f"no category {category}")
            record = versions.read_split_record(self.root, category)
            origin: dict[str, str] = {}
            if record:
                subs = sorted({s for sp in record.get("splits", []) for s in sp.get("created", [])})
                recorded = {}
                for sp in record.get("splits", []):
                    for m in sp.get("moves", []):
                        origin.setdefault(m["id"], m["from"])
                        recorded[m["id"]] = m["to"]
            else:
                subs = sorted(p.name for p in (self.root / category).iterdir()
                              if p.is_dir() and not p.name.startswith(".") and p.name != "archived")
                recorded = {}
            scopes = [f"{category}/{s}" for s in subs]
            candidates = [e for e in self.state.catalog.entries(category) if e.category != category]
            picked = [e for e in candidates
                      if any(e.category == s or e.category.startswith(s + "/") for s in scopes)
                      or (e.id in recorded and e.path == recorded[e.id])]
            taken: set[str] = set()
            moves = []
            for e in sorted(picked, key=lambda x: (x.id not in origin, x.path)):
                name = PurePosixPath(origin.get(e.id) or e.path).name
                target = _free_path(self.root, entry_dir(category, is_archived_path(e.path)), name, taken)
                moves.append({"id": e.id, "title": e.title, "from": e.path, "to": target})
            result = {"category": category, "dry_run": dry_run, "moved": len(moves),
                      "subcategories": [f"{category}/{s}" for s in subs], "moves": moves}
            if dry_run:
                return result
            self._apply_moves(moves)
            versions.remove_split_record(self.root, category)
            removed = []
            for scope in sorted(scopes, key=lambda s: -s.count("/")):
                removed += _remove_if_empty(self.root, scope)
            result["removed"] = removed
            self.save.write_indexes([category])
        return result

    def _apply_moves(self, moves: list[dict]) -> None:
        """Move entry files as one save (all or nothing): catalog, vector index and INDEX.md follow."""
        from memstrata.storage.paths import category_of

        changes = []
        for m in moves:
            entry = read_entry_file(self.root, m["from"])
            changes.append((entry.copy(path=m["to"], category=category_of(m["to"])), entry))
        if changes:
            self.save.save_many(changes)


# ========================================================================== helpers
def _split_key(entry: Entry, by: str, category: str) -> str:
    if by == "status":
        sub = STATUS_SUBCATEGORY.get(entry.status, entry.status)
    elif by in ("year", "month"):
        stamp = entry.created or entry.updated
        sub = "undated" if stamp is None else (f"{stamp.year:04d}" if by == "year" else f"{stamp.year:04d}-{stamp.month:02d}")
    else:
        sub = slugify(entry.tags[0]) if entry.tags else "untagged"
    try:
        validate_category(f"{category}/{sub}")
    except InvalidInput:
        sub = f"{by}-{sub}"
    return sub


def _free_path(root: Path, folder: str, name: str, taken: set[str]) -> str:
    stem, suffix = (name[:-3], ".md") if name.endswith(".md") else (name, "")
    candidate = f"{folder}/{name}"
    n = 2
    while candidate in taken or (Path(root) / candidate).exists():
        candidate = f"{folder}/{stem}-{n}{suffix}"
        n += 1
    taken.add(candidate)
    return candidate


def _remove_if_empty(root: Path, category: str) -> list[str]:
    """Remove a category folder left with nothing but its INDEX.md (and empty subfolders)."""
    from memstrata.storage.indexes import INDEX_FILE

    folder = Path(root) / category
    if not folder.is_dir():
        return []
    for dirpath, dirnames, filenames in os.walk(folder):
        if any(f != INDEX_FILE for f in filenames):
            return []
    for dirpath, dirnames, filenames in sorted(os.walk(folder), key=lambda t: -len(t[0])):
        for f in filenames:
            os.unlink(os.path.join(dirpath, f))
        os.rmdir(dirpath)
    return [category]
