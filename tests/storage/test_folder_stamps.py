"""A cold session start's check of the tree's names (storage/folder_stamps.py, Catalog.refresh_if_moved):
unchanged folders are trusted, any file added, removed or renamed is seen, a folder just changed is not trusted."""
from __future__ import annotations

import os
import time

import pytest

from memstrata import Memory
from memstrata.storage import entry_files, folder_stamps
from memstrata.storage.catalog import Catalog

HOUR_AGO = time.time() - 3600


def note(root, rel, entry_id):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: {entry_id}\ntitle: {entry_id}\ncreated: 2026-05-01T10:00:00Z\n---\nText of {entry_id}.\n",
                    encoding="utf-8")


def age_folders(root):
    """Every folder of the tree last modified an hour ago (its ctime stays now: see `tree`)."""
    for dirpath, dirs, _ in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        os.utime(dirpath, (HOUR_AGO, HOUR_AGO))


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """Six notes in three folders, walked once. A folder's ctime cannot be set back, so the racy window
    is closed here (a test of the window opens it again) rather than waiting it out."""
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    monkeypatch.setattr(folder_stamps, "RACY_NS", 0)
    root = tmp_path / "mem"
    Memory(root).init()
    for i in range(6):
        note(root, f"notes/sub{i % 3}/n{i}.md", f"n{i}")
    age_folders(root)
    catalog = Catalog(root)
    catalog.refresh()
    return root, catalog


def listings(monkeypatch):
    """How many times the tree's names are listed (a spy on the walk; the walk itself runs)."""
    calls = []
    real = entry_files.iter_entry_files

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr("memstrata.storage.catalog.iter_entry_files", counted)
    return calls


def paths(catalog):
    return sorted(r[0] for r in catalog._conn.execute("SELECT path FROM entries"))


def test_an_unchanged_tree_is_not_listed_again(tree, monkeypatch):
    root, catalog = tree
    assert folder_stamps.unchanged(catalog._conn, root)
    calls = listings(monkeypatch)
    assert Catalog(root).refresh_if_moved() is False
    assert calls == []


@pytest.mark.parametrize("change", ["add", "remove", "rename", "new folder", "folder removed"])
def test_a_file_added_removed_or_renamed_is_seen(tree, change):
    root, catalog = tree
    if change == "add":
        note(root, "notes/sub1/added.md", "added")
    elif change == "remove":
        (root / "notes/sub2/n2.md").unlink()
    elif change == "rename":
        os.replace(root / "notes/sub0/n0.md", root / "notes/sub0/renamed.md")
    elif change == "new folder":
        note(root, "notes/sub1/deeper/added.md", "added")
    else:
        for name in os.listdir(root / "notes/sub2"):
            os.unlink(root / "notes/sub2" / name)
        os.rmdir(root / "notes/sub2")
    cold = Catalog(root)
    assert cold.refresh_if_moved() is True
    on_disk = sorted(rel for rel, _ in entry_files.iter_entry_files(root))
    assert paths(cold) == on_disk


def test_a_folder_changed_moments_ago_is_not_trusted(tree, monkeypatch):
    """A second change in the same clock tick would leave the folder's mtime as it was: a walk that
    finds a folder changed within folder_stamps.RACY_NS keeps no stamp, and the next start lists again."""
    root, catalog = tree
    monkeypatch.setattr(folder_stamps, "RACY_NS", 3_000_000_000)
    note(root, "notes/sub1/fresh.md", "fresh")  # sub1 changed now
    cold = Catalog(root)
    assert cold.refresh_if_moved() is True
    assert not folder_stamps.unchanged(cold._conn, root)
    calls = listings(monkeypatch)
    assert Catalog(root).refresh_if_moved() is False  # listed, nothing new, still nothing kept
    assert calls == [1]
    monkeypatch.setattr(folder_stamps, "RACY_NS", 0)  # as when those 3 s have passed
    assert Catalog(root).refresh_if_moved() is False
    assert folder_stamps.unchanged(Catalog(root)._conn, root)


def test_a_file_written_in_place_waits_for_the_next_refresh_as_before(tree):
    """What refresh_if_moved never promised: a file changed in place keeps its row until a refresh."""
    root, catalog = tree
    path = root / "notes/sub0/n0.md"
    path.write_text(path.read_text(encoding="utf-8").replace("title: n0", "title: changed"), encoding="utf-8")
    age_folders(root)
    cold = Catalog(root)
    assert cold.refresh_if_moved() is False
    assert cold.refresh().changed == ["notes/sub0/n0.md"]
    assert cold.get("notes/sub0/n0.md").title == "changed"


def test_a_folder_mtime_put_back_after_a_file_was_added_is_still_seen(tree):
    """`touch -d`, `rsync -a` or `tar x` can put a folder's mtime back where it was; its ctime moves all the same."""
    root, catalog = tree
    folder = root / "notes/sub1"
    before = os.stat(folder)
    note(root, "notes/sub1/slipped-in.md", "slipped")
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(folder).st_mtime_ns == before.st_mtime_ns
    cold = Catalog(root)
    assert cold.refresh_if_moved() is True
    assert "notes/sub1/slipped-in.md" in paths(cold)


def test_a_damaged_page_of_the_folders_is_rebuilt_like_any_other(tree, capsys):
    """An attacker's review: with the folders table's page garbled, every cold start raised inside the
    hook (an empty block); the catalog is derived, so it is rebuilt from the files and said once."""
    import sqlite3

    root, catalog = tree
    db = catalog.db_path
    catalog.close()
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the pages in the file, as after a process exits
    page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'folders'").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with open(db, "r+b") as f:
        f.seek((page - 1) * size)
        f.write(b"\x0d\xff" + b"\xa5" * (size - 2))
    cold = Catalog(root)
    cold.refresh_if_moved()
    assert paths(cold) == sorted(rel for rel, _ in entry_files.iter_entry_files(root))
    assert "rebuilt from the files" in capsys.readouterr().err
    assert folder_stamps.unchanged(Catalog(root)._conn, root)
