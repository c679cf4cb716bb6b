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


@pytest.mark.parametrize("step", ["reindex", "sync"])
def test_an_edit_made_while_the_index_embeds_is_seen_by_the_next_sync(tmp_path, embedder, step):
    # the row records the file's stamp as it was read, not as it is once embedded: the edit stays late
    root = tmp_path / "mem"
    m = Memory(root, embedder=embedder)
    m.init()
    for i in range(5):
        m.write(f"Service {i} restarts nightly.", title=f"service {i}", category="ops")
    path = root / "ops" / next(p for p in sorted(p.name for p in (root / "ops").iterdir()) if p != "INDEX.md")
    if step == "sync":
        path.write_text(path.read_text() + "\nchanged so that sync reads it\n")
    edited = []

    def edit(done, total):
        if not edited:
            edited.append(path.stat().st_mtime_ns)
            path.write_text(path.read_text() + "\nwombatzeppelin edited during the embedding\n")
    getattr(Memory(root, embedder=embedder), step)(progress=edit)
    assert edited
    again = Memory(root, embedder=embedder).sync()
    assert again["embedded"] == 1
    assert m.recall("wombatzeppelin", strategy="text", k=1).results
