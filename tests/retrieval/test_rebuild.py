"""A reindex stopped half-way (its caller gone, Ctrl-C) leaves the index exactly as it was before it started."""
from __future__ import annotations

import threading

import lancedb
import pytest

from memstrata import Memory
from memstrata.errors import Interrupted
from memstrata.storage import cancel


def _rows(root):
    table = lancedb.connect(str(root / ".vectors")).open_table("chunks")
    data = table.to_arrow().sort_by([("id", "ascending"), ("chunk", "ascending")]).to_pydict()
    return data["id"], data["text"], [list(v) for v in data["vector"]]


def test_a_stopped_reindex_restores_the_index_from_before(tmp_path, embedder):
    root = tmp_path / "mem"
    m = Memory(root, embedder=embedder)
    m.init()
    for i in range(70):
        m.write(f"Build {i} listens on port {30000 + i}.", title=f"build {i}", category="ops")
    m.write("Staging runs in Frankfurt since March.", title="staging region", category="ops")
    before = _rows(root)
    meta = (root / ".vectors" / "meta.json").read_text()
    gone = threading.Event()
    cancel.set_event(gone)
    try:
        with pytest.raises(Interrupted, match="as it was before"):
            m.reindex(progress=lambda done, total: gone.set())  # the caller leaves after the first model run
    finally:
        cancel.set_event(None)
    assert _rows(root) == before
    assert (root / ".vectors" / "meta.json").read_text() == meta
    assert Memory(root, embedder=embedder).sync()["embedded"] == 0
    assert m.recall("where does staging run?", k=1).results[0].title == "staging region"
    assert m.reindex()["embedded"] == 71  # not stopped: rebuilt whole
