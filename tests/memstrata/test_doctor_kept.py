"""Damage the doctor used to miss or could not fix, made on disk for real: a garbled index file of the
LanceDB table, a file where the index's folders belong, a truncated trash file, a truncated `.full/`
original (the only copy of a compressed entry's text, now checked against the hash kept beside it)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memstrata import Memory
from memstrata.errors import CorruptEntry

LONG = " ".join(f"Sentence {i} explains how service {i} is deployed to the eu-west region and why latency "
                f"matters for customer {i}." for i in range(14))
OTHER = " ".join(f"Recipe step {i}: knead the dough for {i} minutes, then let it rest while the oven heats to "
                 f"{200 + i} degrees." for i in range(14))


@pytest.fixture
def tree(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    ids = [m.write(text, title=title, category="ops").id for text, title in (
        ("Postgres was chosen for alpha because of JSONB support.", "DB choice"),
        ("The standup moved to 9:30 on Mondays.", "Standup time"),
        ("Rotate the backup disks every first Sunday.", "Backups"),
    )]
    m.sync()  # the scalar indexes (id, category) come with the first sync
    return m.root, ids


def fresh(root, embedder):
    return Memory(root, embedder=embedder)


def kinds(report):
    return {f.kind for f in report.findings if not f.fixed}


def garble(path):
    size = path.stat().st_size
    path.write_bytes(os.urandom(max(64, size // 2)))


def test_a_garbled_index_file_is_found_and_rebuilt(tree, embedder):
    """A garbled id B-tree under `_indices/`: every recall fell back to grep and advised `doctor
    --fix`, which found nothing. Now the doctor names the index and --fix rebuilds it."""
    root, ids = tree
    import lancedb

    table = lancedb.connect(str(root / ".vectors")).open_table("chunks")
    uuid = next(c.index_uuid for c in table.list_indices() if c.name == "id_idx")
    files = list((root / ".vectors" / "chunks.lance" / "_indices" / uuid).iterdir())
    assert files
    for f in files:
        garble(f)
    broken = fresh(root, embedder).recall("which database for alpha?", count_access=False)
    assert broken.strategy == "grep" and "doctor --fix" in " ".join(broken.notes)
    report = fresh(root, embedder).doctor()
    assert "vectors_index" in kinds(report) and not report.healthy, report.findings
    assert "id_idx" in next(f.detail for f in report.findings if f.kind == "vectors_index")
    fixed = fresh(root, embedder).doctor(fix=True)
    assert fixed.healthy, fixed.problems
    m = fresh(root, embedder)
    again = m.recall("which database for alpha?", count_access=False)
    assert again.strategy == "hybrid" and again.ids[0] == ids[0]
    assert m.doctor().healthy
    assert m.write("Deploys go out on Tuesdays.", title="Deploy day", category="ops").action == "created"
    assert fresh(root, embedder).doctor().healthy  # the write reached the index


@pytest.mark.parametrize("where", [".vectors", ".vectors/chunks.lance"])
def test_a_file_where_the_index_folder_belongs_is_set_aside_and_the_index_rebuilt(tree, embedder, where):
    """`.vectors` or its table replaced by a file: `doctor --fix` failed ("File exists"). Now the file
    goes to .quarantine/ (never deleted) and the index is built again."""
    root, ids = tree
    import shutil

    shutil.rmtree(root / where)
    (root / where).write_text("not an index\n")
    report = fresh(root, embedder).doctor()
    assert "vectors_unreadable" in kinds(report), report.findings
    fixed = fresh(root, embedder).doctor(fix=True)
    assert fixed.healthy, fixed.problems
    assert (root / where).is_dir()
    kept = [p for p in (root / ".quarantine").iterdir() if p.name != "INDEX.md"]
    assert [p.read_text() for p in kept] == ["not an index\n"]
    hit = fresh(root, embedder).recall("which database for alpha?", count_access=False)
    assert hit.strategy == "hybrid" and hit.ids[0] == ids[0]


def test_a_truncated_trash_file_stays_listed_and_is_reported(tree, embedder):
    """A truncated trash file vanished from `mem trash` (the deleted note gone without a word) while
    the doctor said healthy. Now it is listed as damaged (from its name and the audit), restore
    refuses it with the reason, nothing purges it unasked, and the doctor reports it."""
    root, ids = tree
    m = fresh(root, embedder)
    item = m.delete(ids[1])
    path = root / item.path
    path.write_bytes(path.read_bytes()[:40])  # cut inside the frontmatter
    listed = fresh(root, embedder).trash_list()
    assert [(i.id, i.title, i.trashed_from) for i in listed] == [(ids[1], "Standup time", "ops/standup-time.md")]
    assert listed[0].damaged and listed[0].trashed_at is not None
    assert fresh(root, embedder).stats()["trash"] == 1
    with pytest.raises(CorruptEntry, match="cannot be restored"):
        fresh(root, embedder).restore(ids[1])
    assert fresh(root, embedder).trash_purge() == []  # never purged unasked
    assert path.exists()
    report = fresh(root, embedder).doctor(fix=True)
    damaged = [f for f in report.findings if f.kind == "trash_damaged"]
    assert damaged and not damaged[0].fixed and not report.healthy
    assert path.read_bytes()[:3] == b"---"  # kept as it was
    out = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "trash", "--json", "--root", str(root)],
                         capture_output=True, text=True, env={**os.environ, "MEMSTRATA_SERVICE": "off"})
    assert json.loads(out.stdout)["entries"][0]["damaged"]


def test_a_truncated_original_is_refused_by_restore_and_reported(tmp_path, embedder, monkeypatch):
    """The `.full/` original is the only copy of a compressed entry's text. Truncated, it had no hash to
    be checked against: `decompress --restore` wrote the truncated text back and deleted it. Now its
    hash is kept beside it: restore refuses (the compressed entry and the original stay), the doctor
    reports it; an intact original still restores byte for byte."""
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-01T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    ids = [m.write(text, title=title, category="ops").id for text, title in ((LONG, "Deploys"), (OTHER, "Bread"))]
    assert len(set(ids)) == 2
    before = {i: (m.root / m.read(i, count_access=False).path).read_bytes() for i in ids}
    monkeypatch.setenv("MEMSTRATA_NOW", "2027-01-20T09:00:00Z")
    m.maintain()
    first, second = (m.read(i, count_access=False) for i in ids)
    assert first.is_compressed and second.is_compressed
    original = m.root / first.full_content_file
    assert (m.root / ".full" / f"{first.id}.sha256").is_file()
    original.write_bytes(original.read_bytes()[:200])  # truncated on disk
    compressed = (m.root / first.path).read_bytes()
    with pytest.raises(CorruptEntry, match="does not match the hash"):
        m.decompress(first.id, restore=True)
    assert (m.root / first.path).read_bytes() == compressed and len(original.read_bytes()) == 200
    report = fresh(m.root, embedder).doctor(fix=True)
    damaged = [f for f in report.findings if f.kind == "full_damaged"]
    assert [f.id for f in damaged] == [first.id] and not damaged[0].fixed and not report.healthy
    assert len(original.read_bytes()) == 200  # the doctor keeps it as it is
    restored = m.decompress(second.id, restore=True)
    assert restored["restored"] and m.read(second.id, count_access=False).body == \
        Memory(tmp_path / "mem", embedder=embedder).read(second.id, count_access=False).body
    assert OTHER in m.read(second.id, count_access=False).body
    assert not (m.root / ".full" / f"{second.id}.sha256").exists()  # the hash goes with its original
    assert before[second.id].split(b"\n---\n", 1)[1] == (m.root / m.read(second.id, count_access=False).path)\
        .read_bytes().split(b"\n---\n", 1)[1]
