"""`mem sync` with nothing to do, in a process with no watcher (no service): a tree and table found in step
since (retrieval/in_step.py, same model) are not compared row by row (bench/scale.py: 4.6 s at 300,000 captured
turns, the whole frame loaded), and a change made since is still indexed."""
from __future__ import annotations

from memstrata import Memory
from memstrata.retrieval.table import VectorIndex


def test_an_in_step_sync_loads_no_frame_and_a_hand_edit_is_still_indexed(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    note = m.write("The ferry to Kiel leaves at eight.", title="Ferry", category="travel")
    m.write("The bakery opens at six.", title="Bakery", category="travel")
    m.sync()
    frames = []
    real = VectorIndex.frame
    monkeypatch.setattr(VectorIndex, "frame", lambda self, *a, **k: frames.append(1) or real(self, *a, **k))
    fresh = Memory(m.root, embedder=embedder)  # a new process's view: no watcher, nothing kept
    assert fresh.sync()["embedded"] == 0 and frames == []
    path = m.root / note.path
    path.write_text(path.read_text(encoding="utf-8").replace("at eight", "at half past nine"), encoding="utf-8")
    again = Memory(m.root, embedder=embedder).sync()
    assert again["embedded"] == 1 and frames, again
    hits = Memory(m.root, embedder=embedder).recall("when does the Kiel ferry leave?", count_access=False).results
    assert "half past nine" in hits[0].snippet
