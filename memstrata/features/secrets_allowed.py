"""`mem secrets allow|list|revoke`: the user's word that a flagged value of one note is no secret."""
from __future__ import annotations

from memstrata.engine.state import TreeState
from memstrata.errors import InvalidInput, MemstrataError
from memstrata.retrieval import in_step
from memstrata.storage import secret_allow
from memstrata.storage.clock import format_datetime
from memstrata.storage.secrets import located_in_entry


class SecretsAllowed:
    def __init__(self, state: TreeState, entries, recall):
        self.state, self.entries, self.recall = state, entries, recall

    def allow(self, ref: str) -> dict:
        """Record a fingerprint of every value the detector flags in the note `ref` names (all of
        them, as the note is now), then index the note: a value added later is flagged again."""
        entry = self.entries.resolve(ref)
        from memstrata.retrieval.table import indexed_form

        located = located_in_entry(indexed_form(self.state.root, entry))
        if not located:
            raise InvalidInput(f"{entry.path}: nothing in it is flagged as a credential; nothing to allow")
        with self.state.lock():
            records = secret_allow.allow(self.state.root, entry.path, located, format_datetime(self.state.now()))
        # indexed here, not left to a sync: its file did not change, so a watcher-driven sync (the
        # service's) would not look at it again
        indexed = self.recall.reindex_entries([entry.path]) == 1
        if indexed:
            from memstrata.retrieval.sync import allowance_applied

            from memstrata.retrieval import held_back

            with self.state.lock():
                allowance_applied(self.state.vector_index(), entry.path)
                held_back.release(self.state.vector_index(), entry.path)
        in_step.forget(self.state.root)  # the next sync compares every file again
        return {"path": entry.path, "allowed": [_shown(r) for r in records], "indexed": indexed}

    def revoke(self, ref: str) -> dict:
        """Forget what was allowed for a note (a path: the note may be gone); the next sync flags it again."""
        rel = self._rel(ref)
        with self.state.lock():
            n = secret_allow.revoke(self.state.root, rel)
            if not n:
                raise InvalidInput(f"{rel}: nothing was allowed for it (see `mem secrets list`)")
            unindexed = self._unindex_if_flagged(rel)
            if unindexed:
                from memstrata.retrieval.sync import allowance_applied

                allowance_applied(self.state.vector_index(), rel)
            in_step.forget(self.state.root)  # the next sync reads the note again: held back once more
        return {"path": rel, "revoked": n, "unindexed": unindexed}

    def _unindex_if_flagged(self, rel: str) -> bool:
        """The note's row goes when it is flagged again: its file did not change, so a sync would keep it."""
        from memstrata.retrieval.sync import flag
        from memstrata.retrieval.table import indexed_form, row_id
        from memstrata.storage.catalog import read_entry_file

        try:
            entry = indexed_form(self.state.root, read_entry_file(self.state.root, rel))
        except (MemstrataError, OSError):
            return False  # gone or unreadable: the sync removes or reports it
        index = self.state.vector_index()
        if flag(entry, self.state.root) is None or not index.exists():
            return False
        index.delete([row_id(entry)])
        return True

    def listed(self) -> dict:
        notes = secret_allow.load(self.state.root)["notes"]
        return {"count": len(notes), "notes": {rel: [_shown(r) for r in records]
                                               for rel, records in sorted(notes.items())}}

    def _rel(self, ref: str) -> str:
        if ref in secret_allow.load(self.state.root)["notes"]:
            return ref
        return self.entries.resolve(ref).path


def _shown(record: dict) -> dict:
    """A record as it is shown: kind, where and whether it is this machine's; no fingerprint."""
    return {**{k: record.get(k) for k in ("kind", "field", "line", "column", "allowed_at")},
            "here": secret_allow.is_here(record)}  # False: made on another machine, allows nothing here
