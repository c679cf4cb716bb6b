"""The save path's index step: keep the LanceDB table in step with every saved or removed entry."""
from __future__ import annotations

from memstrata.engine.state import TreeState
from memstrata.storage.entry import Entry


def _model_unavailable():
    from memstrata.models.embedder import ModelUnavailable

    return ModelUnavailable


class IndexStep:
    """Embeds what a save changed; a write stands without the model (the next sync embeds it).

    Compressed entries are indexed by their full original text: `VectorIndex.upsert` applies
    that rule (retrieval.table.indexed_form) to whatever it is given.
    """

    def __init__(self, state: TreeState):
        self.state = state
        # Why the last upsert/remove could not reach the index (None when it did). The index is
        # derived: the files are written anyway, and the next sync or `mem doctor --fix` catches up.
        self.last_error: str | None = None

    def prepare(self) -> None:
        """Load the model before the tree lock is taken, so other writers never wait for it."""
        try:
            self.state.model()
        except _model_unavailable():
            pass

    def upsert(self, entries: list[Entry], progress=None) -> dict:
        """Replace the index rows of `entries` (embedding only what changed); counts."""
        self.last_error = None
        if not entries:
            return {"embedded": 0}
        for attempt in (1, 2):
            try:
                index = self.state.vector_index()
                index.refresh()  # other processes wrote since this one last looked: work on the latest version
                return index.upsert(entries, self.state.model, progress=progress)
            except _model_unavailable():
                return {"embedded": 0, "skipped": len(entries)}
            except INDEX_FAILURES as exc:
                if attempt == 1:
                    self.state.forget_vector_index()  # reopen and try once more: a stale handle, a passing fault
                    continue
                self._failed(exc)
        return {"embedded": 0, "skipped": len(entries), "index_error": self.last_error}

    def remove(self, ids: list[str]) -> None:
        self.last_error = None
        try:
            index = self.state.vector_index()
            index.refresh()
            if index.table() is not None:
                index.delete(list(ids))
        except INDEX_FAILURES as exc:
            self._failed(exc)

    def _failed(self, exc: BaseException) -> None:
        first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ""
        self.last_error = (f"the vector index could not be updated ({type(exc).__name__}: {first}); "
                           "the file is saved; `mem doctor --fix` rebuilds the index")
        self.state.forget_vector_index()


# What a damaged LanceDB table raises (lance reports broken files as RuntimeError, ValueError or
# OSError; pyarrow's errors derive from these): the derived index failing, never the entry files.
INDEX_FAILURES = (RuntimeError, ValueError, OSError)
