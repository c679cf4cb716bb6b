"""Folding the access journal into the entries' frontmatter (the first step of every `mem maintain`).

Reads append to the journal (storage/journal.py) and never rewrite an entry; a fold, at the
start of every `mem maintain`, writes what they counted into the entries and removes the
journal files it took, recording a plan first (storage/fold_plan.py) so a fold that stops
half-way never counts a read twice. An adopted vault is never folded: its notes are the user's
and hold none of the engine's keys (storage/vault_note.py), so its reads stay in the journal,
which reads count as ever.
"""
from __future__ import annotations

from memstrata.engine.entries import Entries
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.errors import MemstrataError
from memstrata.scoring.access import fold_record, fold_saved, folded
from memstrata.storage import codec, fold_plan, journal, journal_compact

FOLD_BATCH = 256  # entries whose accesses are folded per save


class AccessFold:
    """accesses_to_fold / fold_accesses (features/aging.py's Aging is given one)."""

    def __init__(self, state: TreeState, entries: Entries, save: SavePath):
        self.state = state
        self.entries = entries
        self.save = save

    def machine(self) -> str | None:
        """This copy's machine name as team sync names its journal file (None: the host name)."""
        from memstrata.features.gitrepo import Git

        try:
            return Git(self.state.root).machine()
        except OSError:  # no git installed: no team sync either, the host name it is
            return None

    def accesses_to_fold(self) -> int:
        """How many entries `fold_accesses` would write now (this copy's journal, live entries only)."""
        if self.state.vault:
            return 0
        self.state.catalog.refresh()
        live = set(self.state.catalog.ids())
        return sum(1 for entry_id in journal.to_fold(self.state.root, self.machine()) if entry_id in live)

    def fold_accesses(self) -> int:
        """Write the access journal into the entries' frontmatter (last_access, access_count,
        correlation, tier, weight) in batched saves, then remove the journal files taken (the
        pending `.cache/access/` ones and this machine's tracked `.access/<machine>.log`; other
        machines fold their own).
        A plan of what it saves is written first (storage/fold_plan.py): when a fold stops half-way
        (a failure, a kill), the taken files stay and the next run folds them, less the lines of
        the entries the plan shows saved, so no read is counted twice."""
        if self.state.vault:  # a vault's reads live in the journal, never in the user's notes
            return 0
        now, settings = self.state.now(), self.state.settings
        with self.state.lock():
            self._settle_stopped_folds()
            accesses, taken = journal.take(self.state.root, self.machine(), now)
            changes, records = [], {}
            for entry_id, access in accesses.items():
                try:
                    current = self.entries.resolve(entry_id)
                    before = (self.state.root / current.path).read_bytes().decode("utf-8", "replace")
                except (MemstrataError, OSError):
                    continue  # deleted or unreadable since: its accesses no longer matter
                new = folded(current, access, now, settings)
                changes.append((new, current))
                records[entry_id] = fold_record(before, codec.render(new), new)
            plan = fold_plan.write_plan(self.state.root, taken, records)
            for start in range(0, len(changes), FOLD_BATCH):
                self.save.save_many(changes[start:start + FOLD_BATCH])
            journal.release(taken)
            fold_plan.remove_plan(plan)
        return len(changes)

    def compact_journal(self) -> dict | None:
        """An adopted vault's reads stay in the journal: its pending lines go into this machine's
        tracked file and that file's past days become one line per entry (storage/journal_compact.py).
        Other trees fold their own journal into the entries (`fold_accesses`) and need no compaction."""
        if not self.state.vault:
            return None
        machine = self.machine()
        with self.state.lock():
            journal.publish(self.state.root, machine or journal.machine_name())
            return journal_compact.compact(self.state.root, machine, self.state.now())

    def _settle_stopped_folds(self) -> None:
        """Each plan a stopped fold left: drop from its taken files the lines of the entries it
        had saved (caller holds the lock)."""
        for path, plan in fold_plan.plans(self.state.root):
            saved = set()
            for entry_id, record in plan["entries"].items():
                try:
                    current = self.entries.resolve(entry_id)
                    digest, count = fold_plan.file_hash(self.state.root / current.path), current.access_count
                except (MemstrataError, OSError):
                    digest, count = None, None
                if isinstance(record, dict) and fold_saved(record, digest, count):
                    saved.add(entry_id)
            fold_plan.settle(self.state.root, path, plan, saved)
