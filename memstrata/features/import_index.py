"""What an import does for the vector index beside its files: rows a killed run left missing, native libraries warmed early."""
from __future__ import annotations

from memstrata.engine.state import TreeState
from memstrata.errors import MemstrataError
from memstrata.storage.entry import Entry


def index_missing(state: TreeState, present: list[Entry]) -> int:
    """Index the entries an earlier run left without their rows, or with stale ones (a run killed
    between its files and its index rows): the plan a sync makes, over their files only.
    Caller holds the tree lock. Returns how many were embedded (0 when the model cannot load)."""
    from memstrata.retrieval import sync

    if not present:
        return 0
    try:
        embedder = state.model()
    except MemstrataError:
        return 0  # the entries stand; the next sync indexes them
    index = state.vector_index()
    index.refresh()
    todo = sync.plan(index, embedder.name, embedder.dim, {e.path for e in present if e.path})
    if not (todo.embed or todo.remove or todo.missing or todo.model_changed):
        return 0
    sync.apply(index, todo, embedder)
    return len(todo.embed)


def warm_imports() -> None:
    """Import lancedb and onnxruntime in a background thread while the first batch's files are
    read, checked and written: the index needs both, and a fresh `mem import` otherwise waits
    for their imports (~2 s of wall time, lancedb's mostly) only after the files. The main
    thread's own import of the same module waits for this one (Python's per-module import
    locks), so the work is done once either way."""
    import sys
    import threading

    wanted = [m for m in ("lancedb", "onnxruntime") if m not in sys.modules]
    if not wanted:
        return

    def run() -> None:
        import importlib

        from memstrata.retrieval.lance_import import import_lancedb

        for name in wanted:
            try:
                import_lancedb() if name == "lancedb" else importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the main thread's own import reports it
                return

    threading.Thread(target=run, name="memstrata-warm-imports", daemon=True).start()
