"""The bulk paths (import, adopt) write the same rows as one entry at a time, and batched writes stay atomic."""
import json
import os

import numpy as np
import pytest

from memstrata import Memory
from memstrata.storage.atomic import SYNCFS_FROM, ChangedMeanwhile, atomic_write_text, is_temp_file, one_sync

LONG = ("# Deploy notes\n\nThe deploy runs every Tuesday from the release branch after the tests pass.\n\n"
        "## Rollback\n\nA rollback takes the previous image and replays the migrations backwards; "
        "it has been needed twice, both times because a migration locked the orders table.\n\n"
        "## Owners\n\nMarta owns the pipeline and Kenji the database side; either can stop a deploy.\n")
NOTES = {
    "ops/deploy.md": LONG,
    "ops/pager.md": "The pager rotates weekly; handover is Monday at ten.",
    "ops/same.md": "The pager rotates weekly; handover is Monday at ten.",  # the same text twice: embedded once
    "home/garden.md": "Tomatoes go in after the last frost. " * 30 + "\n\nBasil beside them keeps the pests off.",
}
TURNS = [{"id": f"t{i}", "body": body, "category": "chat", "created": f"2026-03-01T10:0{i}:00+00:00"}
         for i, body in enumerate(["Ana: I moved to Porto last spring.", "Ben: How is the weather there?",
                                   "Ana: Rainy in winter, but the light is lovely.",
                                   "Ben: I adopted a dog called Pico.", "Ana: Pico! What breed?"])]


def rows_of(m: Memory, key: str) -> dict:
    table = m.state.vector_index().table().to_arrow().to_pylist()
    return {(r[key], r["chunk"]): r for r in table}


def same_rows(a: dict, b: dict) -> None:
    assert a.keys() == b.keys() and a
    for k in a:
        assert (a[k]["kind"], a[k]["text"]) == (b[k]["kind"], b[k]["text"]), k
        assert float(np.dot(a[k]["vector"], b[k]["vector"])) > 0.9999, k  # float noise of another batch


def test_import_in_one_batch_writes_the_rows_of_one_import_per_entry(tmp_path, embedder):
    bulk = Memory(tmp_path / "bulk", embedder=embedder)
    bulk.init()
    src = tmp_path / "all.jsonl"
    src.write_text("\n".join(json.dumps(t) for t in TURNS) + "\n")
    assert bulk.import_path(str(src))["imported"] == len(TURNS)
    single = Memory(tmp_path / "single", embedder=embedder)
    single.init()
    for n, turn in enumerate(TURNS):
        one = tmp_path / f"{n}.jsonl"
        one.write_text(json.dumps(turn) + "\n")
        assert single.import_path(str(one))["imported"] == 1
    a, b = rows_of(bulk, "id"), rows_of(single, "id")
    assert any(r["kind"] == "context" for r in a.values())  # turns carry their neighbour: the batch saw it too
    same_rows(a, b)
    assert not [p for p in (tmp_path / "bulk").rglob("*") if is_temp_file(p.name)]


def test_adopt_of_a_folder_writes_the_rows_of_notes_synced_one_by_one(tmp_path, embedder):
    def vault(where, names):
        for rel in names:
            (where / rel).parent.mkdir(parents=True, exist_ok=True)
            (where / rel).write_text(NOTES[rel])
            # a note's time is its file's: fixed, so which note follows which within a sitting (its
            # context chunk) cannot depend on how long the syncs between the writes took
            stamp = 1_770_000_000 + 60 * list(NOTES).index(rel)
            os.utime(where / rel, (stamp, stamp))

    bulk_root = tmp_path / "bulk"
    vault(bulk_root, NOTES)
    bulk = Memory(bulk_root, embedder=embedder)
    assert bulk.init(adopt=True)["index"]["embedded"] == len(NOTES)
    one_root = tmp_path / "one"
    first, *rest = NOTES
    vault(one_root, [first])
    single = Memory(one_root, embedder=embedder)
    single.init(adopt=True)
    for rel in rest:
        vault(one_root, [rel])
        single.sync()
    a, b = rows_of(bulk, "path"), rows_of(single, "path")
    assert sum(1 for k in a if k[0] == "ops/deploy.md") > 1  # a note of sections is several rows
    same_rows(a, b)


def test_one_sync_renames_together_at_the_end_and_discards_on_error(tmp_path):
    target, other = tmp_path / "a.md", tmp_path / "sub" / "b.md"
    target.write_text("old")
    with one_sync():
        atomic_write_text(target, "new")
        atomic_write_text(other, "b")
        with one_sync():  # nested: commits with the outer block
            atomic_write_text(tmp_path / "c.md", "c")
        assert target.read_text() == "old" and not other.exists()  # nothing visible before the flush
    assert (target.read_text(), other.read_text(), (tmp_path / "c.md").read_text()) == ("new", "b", "c")
    assert oct(os.stat(other).st_mode & 0o777) == "0o600"
    with pytest.raises(RuntimeError):
        with one_sync():
            atomic_write_text(target, "lost")
            raise RuntimeError("boom")
    assert target.read_text() == "new"
    assert not [p for p in tmp_path.rglob("*") if is_temp_file(p.name)]
    with pytest.raises(ChangedMeanwhile):
        with one_sync():
            atomic_write_text(target, "kept?", unchanged=lambda: False)
            atomic_write_text(other, "b2")
    assert (target.read_text(), other.read_text()) == ("new", "b2")
    many = [tmp_path / "many" / f"{n}.md" for n in range(SYNCFS_FROM + 2)]  # flushed with one syncfs
    with one_sync():
        for n, path in enumerate(many):
            atomic_write_text(path, f"note {n}")
        assert not any(path.exists() for path in many)
    assert [path.read_text() for path in many] == [f"note {n}" for n in range(len(many))]
    assert not [p for p in tmp_path.rglob("*") if is_temp_file(p.name)]


def test_adopt_gives_ids_in_one_flush_and_keeps_a_note_an_editor_saved_meanwhile(tmp_path, embedder, monkeypatch):
    from memstrata.storage import adopt

    root = tmp_path / "vault"
    (root / "a").mkdir(parents=True)
    for name in ("one", "two"):
        (root / "a" / f"{name}.md").write_text(f"# {name}\n\nA note called {name}.\n")
        os.chmod(root / "a" / f"{name}.md", 0o644)
    real = adopt.give_id

    def and_an_editor(where, rel, fresh):
        done = real(where, rel, fresh)
        if rel == "a/one.md":  # saved by hand after the engine read it, before the batch's flush
            (where / rel).write_text("# one\n\nEdited by hand.\n")
        return done

    monkeypatch.setattr(adopt, "give_id", and_an_editor)
    Memory(root, embedder=embedder).init(adopt=True)
    assert (root / "a" / "one.md").read_text() == "# one\n\nEdited by hand.\n"  # the editor's save is kept
    two = (root / "a" / "two.md").read_text()
    assert "mem-id:" in two and two.endswith("# two\n\nA note called two.\n")
    assert oct(os.stat(root / "a" / "two.md").st_mode & 0o777) == "0o644"  # its permissions stay
    assert not [p for p in root.rglob("*") if is_temp_file(p.name)]


def test_reindex_progress_counts_entries_never_past_the_total(mem):
    """Entries of many chunks: the embedder counts texts, reindex's progress counts entries, so
    it never showed more done than the total (was 163/160 on a vault, 101%)."""
    sentence = "The {} service of the platform team restarts its workers every night at two for the backup job."
    for n in range(6):
        mem.write(" ".join(sentence.format(f"{w}-{n}") for w in ("alpha", "beta", "gamma", "delta", "epsilon")),
                  title=f"Service {n}", category="ops", force=True)
    calls = []
    mem.reindex(progress=lambda done, total: calls.append((done, total)))
    assert calls and all(0 <= done <= total == 6 for done, total in calls), calls
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and calls[-1] == (6, 6), calls
