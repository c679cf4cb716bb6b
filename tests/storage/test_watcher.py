"""The inotify tree watcher names changed files, and says when only a walk can tell."""
import os

from memstrata.storage.catalog import Catalog
from memstrata.storage.watcher import TreeWatcher


def test_changes_since_names_files_and_asks_for_a_walk_on_folder_changes(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("a")
    w = TreeWatcher(tmp_path)
    assert w.ok
    start, changed = w.changes_since(None)
    assert changed is None  # no reference point: walk
    assert w.changes_since(start) == (start, set())
    (tmp_path / "notes" / "a.md").write_text("a2")
    (tmp_path / "notes" / "b.md").write_text("b")
    os.rename(tmp_path / "notes" / "b.md", tmp_path / "notes" / "c.md")
    (tmp_path / ".cache").mkdir()  # hidden: never an entry
    gen, changed = w.changes_since(start)
    assert gen > start and changed == {"notes/a.md", "notes/b.md", "notes/c.md"}
    (tmp_path / "notes" / "a.md").unlink()
    assert w.changes_since(gen)[1] == {"notes/a.md"}
    gen2, _ = w.changes_since(gen)
    (tmp_path / "people").mkdir()  # a new folder: watched from now on, but a walk is needed once
    gen3, changed = w.changes_since(gen2)
    assert changed is None
    (tmp_path / "people" / "d.md").write_text("d")
    assert w.changes_since(gen3)[1] == {"people/d.md"}
    w.close()
    assert w.changes_since(gen3) == (None, None)


def test_catalog_follows_hand_changes_without_a_walk(tmp_path, monkeypatch):
    from memstrata.storage import catalog as catalog_module

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("---\nid: aaaaaaaaaaaa\ntitle: A\n---\nfirst\n")
    w = TreeWatcher(tmp_path)
    cat = Catalog(tmp_path, watcher=w)
    cat.refresh()  # the first refresh walks
    walks = []
    real = catalog_module.iter_entry_files
    monkeypatch.setattr(catalog_module, "iter_entry_files", lambda root: walks.append(1) or real(root))
    (tmp_path / "notes" / "b.md").write_text("---\nid: bbbbbbbbbbbb\ntitle: B\n---\nsecond\n")
    (tmp_path / "notes" / "a.md").write_text("---\nid: aaaaaaaaaaaa\ntitle: A renamed\n---\nfirst\n")
    (tmp_path / "notes" / "INDEX.md").write_text("not an entry")
    report = cat.refresh()
    assert sorted(report.changed) == ["notes/a.md", "notes/b.md"]
    assert {e.title for e in cat.entries()} == {"A renamed", "B"}
    (tmp_path / "notes" / "b.md").unlink()
    assert cat.refresh().removed == ["notes/b.md"] and [e.id for e in cat.entries()] == ["aaaaaaaaaaaa"]
    assert walks == []
    given = cat.entries()[0]
    given.title, given.tags = "changed by a caller", given.tags + ["x"]  # callers get copies
    assert cat.entries()[0].title == "A renamed" and cat.entries()[0].tags == []
    w.close()
