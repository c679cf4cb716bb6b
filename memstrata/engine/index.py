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

    def prepare(self) -> None:
        """Load the model before the tree lock is taken, so other writers never wait for it."""
        try:
            self.state.model()
        except _model_unavailable():
            pass

    def upsert(self, entries: list[Entry], progress=None) -> dict:
        """Replace the index rows of `entries` (embedding only what changed); counts."""
        if not entries:
            return {"embedded": 0}
        try:
            return self.state.vector_index().upsert(entries, self.state.model, progress=progress)
        except _model_unavailable():
            return {"embedded": 0, "skipped": len(entries)}

    def remove(self, ids: list[str]) -> None:
        index = self.state.vector_index()
        if index.table() is not None:
            index.delete(list(ids))
