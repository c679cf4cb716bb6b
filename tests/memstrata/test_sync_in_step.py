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


def test_an_in_step_sync_still_says_unreadable_notes_and_sees_a_sidecar_change(tmp_path, embedder, monkeypatch):
    """An attacker's review: the in-step sync stopped saying an unreadable note, and a note held back
    only for a key in its kept version stayed held back after the key was taken out of that version."""
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    m.write("The ferry to Kiel leaves at eight.", title="Ferry", category="travel")
    (m.root / "travel" / "bad.md").write_text("---\ntitle: [unclosed\n---\nbroken\n", encoding="utf-8")
    first = m.sync()
    assert "travel/bad.md" in first["errors"]
    again = Memory(m.root, embedder=embedder).sync()
    assert "travel/bad.md" in again["errors"], again
    key = "AK" + "IA" + "Q7ZK4M2XWPLR9TBV"
    kept = m.root / ".versions" / "bakery000001" / "v1.md"  # a hand-made note at v2, its v1 holding a key
    kept.parent.mkdir(parents=True)
    kept.write_text(f"---\nid: bakery000001\ntitle: Bakery\nversion: 1\n---\nThe bakery opens at six. Key {key}.\n",
                    encoding="utf-8")
    (m.root / "travel" / "bakery.md").write_text("---\nid: bakery000001\ntitle: Bakery\nversion: 2\n---\n"
                                                 "The bakery opens at seven now.\n", encoding="utf-8")
    held = Memory(m.root, embedder=embedder).sync()
    assert "travel/bakery.md" in held.get("flagged", {}), held
    assert "travel/bakery.md" in Memory(m.root, embedder=embedder).sync().get("flagged", {})
    kept.write_text(kept.read_text(encoding="utf-8").replace(f" Key {key}.", ""), encoding="utf-8")
    after = Memory(m.root, embedder=embedder).sync()
    assert "travel/bakery.md" not in after.get("flagged", {}) and after["embedded"] == 1, after


def test_an_in_step_sync_loads_no_model_and_leaves_the_table_as_its_last_upkeep_did(tmp_path, embedder, monkeypatch):
    """bench/scale.py at 300,000 turns: a sync with nothing to do built the model (0.3 s) and opened LanceDB for
    the table's upkeep (0.8 s) that the sync which stamped the table had just done. A new setting for the upkeep,
    or a change to embed, still gets both."""
    from memstrata.models.embedder import identity
    from memstrata.retrieval import ann

    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    assert identity("bundled") == (embedder.name, embedder.dim)  # read from the export, as the model says
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    note = m.write("The ferry to Kiel leaves at eight.", title="Ferry", category="travel")
    m.sync()  # makes the scalar indexes: upkeep done this round, so the next round looks again
    Memory(m.root, embedder=embedder).sync()  # finds nothing to do: the table is upkept
    upkeep = []
    real = ann.maintain
    monkeypatch.setattr(ann, "maintain", lambda index, *a, **k: upkeep.append(1) or real(index, *a, **k))
    fresh = Memory(m.root)  # a new process's view: no model handed over
    assert fresh.sync()["embedded"] == 0
    assert fresh.state.loaded_embedder is None and upkeep == []
    m.config_set("ann_min_rows", 100)
    assert Memory(m.root).sync()["embedded"] == 0 and upkeep == [1]  # the upkeep decides by that setting
    assert Memory(m.root).sync()["embedded"] == 0 and upkeep == [1]  # (and it found nothing to do)
    path = m.root / note.path
    path.write_text(path.read_text(encoding="utf-8").replace("at eight", "at nine"), encoding="utf-8")
    changed = Memory(m.root)
    assert changed.sync()["embedded"] == 1 and changed.state.loaded_embedder is not None and upkeep == [1, 1]


def test_a_round_of_upkeep_that_did_something_is_looked_at_again(tmp_path, embedder, monkeypatch):
    """An attacker's review: a round that builds an index puts off its optimize, and an error it swallows is
    worth another try; neither may leave the table stamped as upkept."""
    from memstrata.retrieval import ann

    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    m.write("The ferry to Kiel leaves at eight.", title="Ferry", category="travel")
    rounds = []
    real = ann.maintain
    monkeypatch.setattr(ann, "maintain", lambda index, *a, **k: rounds.append(real(index, *a, **k)) or rounds[-1])
    for _ in range(3):
        Memory(m.root, embedder=embedder).sync()
    assert rounds[0]["actions"] and not rounds[1]["actions"] and len(rounds) == 2
