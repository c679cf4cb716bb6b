"""Compressing an entry to a layer (its full original to `.full/` first) and back, for aging; the bodies one maintain batch needs are computed once."""
from __future__ import annotations

from memstrata.clock import format_datetime
from memstrata.engine.entries import Entries
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.errors import ChangedOnDisk, InvalidInput, MemstrataError, NotFound
from memstrata.features.compression import compressed_body, may_shrink, shrinks, surely_shrinks
from memstrata.scoring.access import touched
from memstrata.storage import sidecars, tree
from memstrata.storage.entry import Entry
from memstrata.storage.paths import is_archived_path
from memstrata.storage.entry_files import file_stamp
from memstrata.storage.safe_io import read_regular_stamped


class Compressor:
    """compress (maintain's step), may_shrink (its dry run), decompress (show or restore), full_text_again."""

    def __init__(self, state: TreeState, entries: Entries, save: SavePath):
        self.state = state
        self.entries = entries
        self.save = save
        self.root = state.root
        self._summaries: dict = {}  # compressed bodies computed for the current maintain batch

    def forget_summaries(self) -> None:
        """The end of a maintain batch: its bodies are not kept past it."""
        self._summaries.clear()

    def compressed(self, original: str, layer: str, entry: Entry, rel: str) -> tuple[str, str | None]:
        """compressed_body, remembered until forget_summaries (one maintain batch)."""
        key = (layer, original, tuple(entry.tags), entry.id, rel)
        if key not in self._summaries:
            self._summaries[key] = compressed_body(original, layer, entry, rel, self.state.embedder,
                                                   self.state.settings)
        return self._summaries[key]

    def may_shrink(self, entry: Entry, layer: str) -> bool:
        """may_shrink for an entry as its file (or its full original) holds it; True when unreadable."""
        try:
            current = self.entries.resolve(entry.path)
            rel = current.full_content_file if current.layer != "L0" else sidecars.relative_path(current.id, self.root)
            original = current.body if current.layer == "L0" else sidecars.original_body(self.root, rel)
        except (MemstrataError, OSError):
            return True
        if not may_shrink(original, layer, current, rel, self.state.settings):
            return False
        if surely_shrinks(original, layer, current, rel, self.state.settings):
            return True
        try:  # a borderline entry: only the model's choice tells, as in the real run (which then skips it)
            return shrinks(original, self.compressed(original, layer, current, rel)[0])
        except (MemstrataError, OSError):
            return True

    def compress(self, current: Entry, new: Entry, layer: str) -> bool:
        """Set `new`'s body, layer, sidecar and summary for `layer`; the original goes to `.full/` first.
        False, and `new` untouched, when the compressed body would not be smaller than the full
        original (a one-sentence entry: its summary is itself plus the note on the full text)."""
        if current.layer == "L0":
            original, rel = current.body, sidecars.relative_path(current.id, self.root)
        else:
            rel = current.full_content_file
            if not rel or not sidecars.exists(self.root, rel):
                raise NotFound(f"{current.path} is compressed ({current.layer}) but its full content "
                               f"{rel or '(no full_content_file)'} is missing: not compressing it further")
            original = sidecars.original_body(self.root, rel)
        if not may_shrink(original, layer, new, rel, self.state.settings):
            return False
        body, summary = self.compressed(original, layer, new, rel)
        if not shrinks(original, body):
            return False
        compressed = new.copy(body=body, layer=layer, full_content_file=rel,
                              summary=summary if summary is not None else new.summary)
        if current.layer == "L0":  # the original as read: a file an editor saved since is left be
            data, seen = read_regular_stamped(self.root / current.path)
            if current.read_stamp is not None and file_stamp(seen) != tuple(current.read_stamp):
                raise ChangedOnDisk([current.path], "its compression")
            sidecars.write(self.root, current.id, data)
        new.body, new.layer, new.full_content_file, new.summary = (
            compressed.body, compressed.layer, compressed.full_content_file, compressed.summary)
        return True

    def decompress(self, ref: str, show: bool = False, restore: bool = False, use: bool = True) -> dict:
        """The full original of a compressed entry (`show`, not an access), or put it back (`restore`).

        Restore writes the original body back byte for byte, layer L0, status active, tier
        hot (out of archived/ if it was there), removes the sidecar and counts as an access
        (`use` false: a promotion's restore, which is no use of the entry: docs/aging.md).
        An entry that is not compressed is returned as it is (restored: false).
        """
        if show and restore:
            raise InvalidInput("say --show or --restore, not both")
        entry = self.entries.resolve(ref)
        if not restore:
            # NotFound when a compressed entry's sidecar is missing: say so rather than show the summary.
            full = sidecars.original_body(self.root, entry.full_content_file) if entry.is_compressed else entry.body
            return {"id": entry.id, "title": entry.title, "path": entry.path, "layer": entry.layer,
                    "compressed": entry.is_compressed, "full_content_file": entry.full_content_file,
                    "summary": entry.summary, "body": full}
        with self.state.lock():
            current = self.entries.resolve(entry.path)
            if not current.is_compressed:
                return {"id": current.id, "title": current.title, "path": current.path, "layer": current.layer,
                        "restored": False, "message": f"{current.path} is not compressed (L0)"}
            rel = current.full_content_file
            original = sidecars.original_body(self.root, rel)
            now = self.state.now()
            new = current.copy(body=original, layer="L0", full_content_file=None, summary=None, status="active")
            new = touched(new, now, self.state.settings) if use else new.copy(last_access=now)
            new.tier = "hot"
            if is_archived_path(current.path or ""):
                new.path = tree.unique_entry_path(self.root, current.category, current.title)
            self.save.save(new, previous=current)
            sidecars.remove(self.root, rel)
        return {"id": new.id, "title": new.title, "path": new.path, "layer": new.layer, "restored": True,
                "from_layer": current.layer, "from_path": current.path, "tier": new.tier, "status": new.status,
                "message": f"restored the full text of {new.path} ({current.layer} -> L0, hot)"}

    def full_text_again(self, current: Entry, changed: Entry, note: str | None, undo: list) -> None:
        """The update step: a new body for a compressed entry is its full content from now on
        (the old original is kept aside)."""
        if current.is_compressed and changed.body != current.body:
            sidecars.supersede(self.root, current.full_content_file, format_datetime(self.state.now()) or "now")
            changed.layer = "L0"
            changed.full_content_file = None
            changed.summary = None
