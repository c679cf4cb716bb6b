"""`mem doctor`: each kind of damage inflicted on purpose is found, and --fix repairs it without losing content."""
from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from memstrata import Memory
from memstrata.doctor.checks import duplicate_plan, temp_is_stale
from memstrata.doctor.derived import compare_rows
from memstrata.errors import NotFound
from memstrata.storage import codec
from memstrata.storage.catalog import read_entry_file
from memstrata.storage.entry import Entry


@pytest.fixture
def tree(tmp_path, embedder):
    root = tmp_path / "mem"
    m = Memory(root, embedder=embedder)
    m.init()
    ids = [m.write(text, title=title, category=cat, tags=["t"]).id for text, title, cat in (
        ("Postgres was chosen for alpha because of JSONB support.", "DB choice", "projects/alpha"),
        ("The standup moved to 9:30 on Mondays.", "Standup time", "meetings"),
        ("Rotate the backup disks every first Sunday.", "Backups", "ops"),
    )]
    assert m.doctor().healthy
    return root, ids


def fresh(root, embedder):
    return Memory(root, embedder=embedder)


def kinds(report):
    return {f.kind for f in report.findings}


def fix_and_check(root, embedder, kind):
    report = fresh(root, embedder).doctor()
    assert kind in kinds(report) and not report.healthy, report.findings
    fixed = fresh(root, embedder).doctor(fix=True)
    assert fixed.healthy, fixed.problems
    assert all(f.fixed for f in fixed.findings if f.kind == kind)
    assert fresh(root, embedder).doctor().healthy
    return fixed


def test_unparseable_file_goes_to_quarantine_and_nothing_else_breaks(tree, embedder):
    root, ids = tree
    bad = root / "projects" / "alpha" / "broken.md"
    bad.write_text("---\ntitle: [unclosed\nid: x\n---\nbody\n")
    bad.chmod(0o644)  # as a pull or an editor leaves it
    binary = root / "ops" / "image.md"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    original = bad.read_bytes()
    m = fresh(root, embedder)
    assert {e.id for e in m.list()} == set(ids)  # the rest keeps working while it is broken
    m.write("Still writable.", title="After damage", category="ops")
    fixed = fix_and_check(root, embedder, "unparseable")
    moved = [f for f in fixed.findings if f.kind == "unparseable"]
    assert len(moved) == 2 and not bad.exists() and not binary.exists()
    kept = list((root / ".quarantine").glob("*broken.md"))
    assert kept and kept[0].read_bytes() == original  # never deleted, byte for byte
    assert kept[0].stat().st_mode & 0o777 == 0o600  # private, like every file of the tree
    index = (root / ".quarantine" / "INDEX.md").read_text()
    assert "projects/alpha/broken.md" in index and "malformed YAML" in index and "ops/image.md" in index
    # an entry whose hand edit broke its file: asking for it by id says where its file went
    note = root / "meetings" / "standup-time.md"
    note.write_text(note.read_text().replace("title: Standup time", 'title: "Standup time'))
    assert fresh(root, embedder).doctor(fix=True).healthy and not note.exists()
    with pytest.raises(NotFound, match=r"set its file aside as \.quarantine/.*standup-time\.md"):
        fresh(root, embedder).read(ids[1])


def _copy_with(root, src_rel, dst_rel, **changes):
    entry = read_entry_file(root, src_rel)
    (root / dst_rel).write_text(codec.render(entry.copy(path=dst_rel, **changes)))


def test_duplicate_ids_never_lose_content(tree, embedder):
    root, ids = tree
    src = fresh(root, embedder).resolve(ids[0]).path
    shutil.copy(root / src, root / "projects" / "alpha" / "copy.md")                  # identical copy
    _copy_with(root, src, "projects/alpha/edited.md", body="A different decision.")  # copied by hand and edited
    older = read_entry_file(root, src)
    m = fresh(root, embedder)
    m.update(ids[0], "Postgres, and Redis for the cache.")                            # now version 2
    (root / "projects" / "alpha" / "older.md").write_text(codec.render(older.copy(path="projects/alpha/older.md")))
    report = fresh(root, embedder).doctor()
    dups = [f for f in report.findings if f.kind == "duplicate_id"]
    assert {f.path for f in dups} == {"projects/alpha/copy.md", "projects/alpha/edited.md", "projects/alpha/older.md"}
    fix_and_check(root, embedder, "duplicate_id")
    m = fresh(root, embedder)
    assert m.read(ids[0], count_access=False).body.startswith("Postgres, and Redis")  # the latest edit keeps the id
    bodies = sorted(m.read(e.id, count_access=False).body for e in m.list())
    assert "A different decision." in bodies  # an edited copy stays an entry (its bytes as written), with a fresh id
    assert "Postgres was chosen for alpha because of JSONB support.\n" in bodies  # the old text too, once
    assert len(bodies) == len(set(bodies)) == 5
    quarantined = [p.name for p in (root / ".quarantine").glob("*.md") if p.name != "INDEX.md"]
    assert len(quarantined) == 1  # the second copy of the same text: kept aside, not deleted


def test_duplicate_plan_is_pure():
    def e(path, version, body="b"):
        return Entry(id="x", title="t", body=body, path=path, version=version)

    keeper, plan = duplicate_plan([(e("a.md", 1), "h1", 5), (e("b.md", 2, "new"), "h2", 9), (e("c.md", 1), "h1", 7)])
    assert keeper.path == "b.md" and {p.path: what for p, what in plan} == {"a.md": "new_id",
                                                                            "c.md": "quarantine:copy"}
    for times in ((9, 5), (5, 9)):  # a rewrite (a newer mtime) never moves the id to the other file
        keeper, plan = duplicate_plan([(e("orig.md", 1), "h1", times[0]), (e("late.md", 1, "x"), "h2", times[1])])
        assert keeper.path == "late.md" and plan[0][0].path == "orig.md" and plan[0][1] == "new_id"


def test_stale_temp_files_removed_young_ones_left(tree, embedder):
    root, _ = tree
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = root / "ops" / f".backups.md.{dead.stdout.strip()}.deadbeef.tmp"
    stale.write_text("---\nid: half")
    old = root / "meetings" / ".x.md.1.cafe0000.tmp"
    old.write_text("half")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    young = root / "meetings" / f".y.md.{os.getpid()}.cafe0001.tmp"
    young.write_text("in flight")
    assert all(not e.path.endswith(".tmp") for e in fresh(root, embedder).list())
    fix_and_check(root, embedder, "temp_file")
    assert not stale.exists() and not old.exists() and young.exists()
    assert temp_is_stale(".a.md.123.ab.tmp", 5, pid_alive=lambda pid: False)
    assert not temp_is_stale(".a.md.123.ab.tmp", 5, pid_alive=lambda pid: True)
    assert temp_is_stale(".a.md.123.ab.tmp", 120, pid_alive=lambda pid: True)


def test_orphan_sidecars_and_versions_are_quarantined(tree, embedder):
    root, ids = tree
    (root / ".full").mkdir(mode=0o700, exist_ok=True)
    (root / ".full" / "ghost0000001.md").write_text("full text of a vanished entry")
    (root / ".full" / f"{ids[1]}.md").write_text("sidecar of a live entry")
    (root / ".versions" / "ghost0000002").mkdir(parents=True, mode=0o700)
    (root / ".versions" / "ghost0000002" / "v1.md").write_text("an old version")
    m = fresh(root, embedder)
    trashed = m.delete(ids[2]).id
    (root / ".versions" / trashed).mkdir(mode=0o700)
    (root / ".versions" / trashed / "v1.md").write_text("old version of a trashed entry: not an orphan")
    report = fresh(root, embedder).doctor()
    orphans = {f.path for f in report.findings if f.kind.startswith("orphan")}
    assert orphans == {".full/ghost0000001.md", ".versions/ghost0000002"}
    fix_and_check(root, embedder, "orphan_sidecar")
    assert (root / ".full" / f"{ids[1]}.md").exists() and (root / ".versions" / trashed / "v1.md").exists()
    q = root / ".quarantine"
    assert any(p.name.endswith("ghost0000001.md") for p in q.iterdir())
    assert any(p.is_dir() and (p / "v1.md").read_text() == "an old version" for p in q.iterdir())


def test_missing_sidecar_is_reported_not_fixable(tree, embedder):
    root, ids = tree
    m = fresh(root, embedder)
    entry = m.resolve(ids[0])
    compressed = entry.copy(layer="L2", tier="cold", full_content_file=f".full/{entry.id}.md", body="short")
    (root / entry.path).write_text(codec.render(compressed))
    report = fresh(root, embedder).doctor(fix=True)
    missing = [f for f in report.findings if f.kind == "missing_sidecar"]
    assert missing and not missing[0].fixable and not missing[0].fixed and not report.healthy


def test_corrupt_catalog_is_rebuilt(tree, embedder):
    root, ids = tree
    gc.collect()  # the fixture's Memory closes its catalog first (a closing connection writes to the file)
    db = root / ".cache" / "catalog.db"
    for extra in ("-wal", "-shm"):
        (root / ".cache" / f"catalog.db{extra}").unlink(missing_ok=True)
    db.write_bytes(b"this is not sqlite" * 100)
    fix_and_check(root, embedder, "catalog")
    assert {e.id for e in fresh(root, embedder).list()} == set(ids)


def test_index_md_damage_is_regenerated(tree, embedder):
    root, ids = tree
    (root / "meetings" / "INDEX.md").unlink()
    ops = root / "ops" / "INDEX.md"
    ops.write_text(ops.read_text().replace(ids[2], "000000000000"))
    (root / "INDEX.md").write_text("# nothing here\n")
    fixed = fix_and_check(root, embedder, "index_md")
    assert {f.path for f in fixed.findings if f.kind == "index_md"} >= {"meetings/INDEX.md", "ops/INDEX.md",
                                                                        "INDEX.md"}
    assert ids[2] in ops.read_text() and ids[1] in (root / "meetings" / "INDEX.md").read_text()


def _index(root):
    from memstrata.retrieval.table import VectorIndex
    from memstrata.storage.config import load_settings

    return VectorIndex(root, load_settings(root))


def test_vector_rows_missing_extra_and_duplicated(tree, embedder):
    root, ids = tree
    index = _index(root)
    index.delete([ids[0]])                                   # a missing row
    stray = Entry(id="ffffffffffff", title="gone", body="a file that is no longer there", category="ops",
                  path="ops/gone.md")
    index.upsert([stray], lambda: embedder)                  # an extra row
    table = index.table()
    rows = table.search().where(f"id = '{ids[1]}'").limit(None).to_arrow()
    table.add(rows)                                          # duplicated rows (two writers merging one id)
    report = fresh(root, embedder).doctor()
    detail = next(f.detail for f in report.findings if f.kind == "vectors_rows")
    assert "missing" in detail and "extra" in detail and "duplicated" in detail
    fix_and_check(root, embedder, "vectors_rows")
    frame = _index(root).frame()
    assert sorted(frame.ids) == sorted(ids)


def test_stale_vector_rows_after_hand_edit(tree, embedder):
    root, ids = tree
    m = fresh(root, embedder)
    path = root / m.resolve(ids[1]).path
    path.write_text(path.read_text().replace("9:30", "10:00"))
    fix_and_check(root, embedder, "vectors_rows")


def test_compressed_entries_are_in_line_with_their_vector_rows(tree, embedder, monkeypatch):
    root, ids = tree
    from datetime import timedelta

    from memstrata.clock import format_datetime, now

    long = fresh(root, embedder).write(  # long enough that its summary is smaller than it (maintain's rule)
        "We moved the nightly backups to object storage in March. The old tape drive kept failing on "
        "Sundays. Restores are tested on the first Monday of each month by the on-call engineer. "
        "Backups older than ninety days are deleted unless a legal hold applies.",
        title="Backups moved", category="ops").id
    monkeypatch.setenv("MEMSTRATA_NOW", format_datetime(now() + timedelta(days=100)))  # archived and compressed
    m = fresh(root, embedder)
    m.maintain()
    assert m.resolve(long).is_compressed
    report = fresh(root, embedder).doctor()
    assert "vectors_rows" not in kinds(report), report.findings
    m.sync()
    assert "vectors_rows" not in kinds(fresh(root, embedder).doctor())


def test_model_mismatch_reembeds(tree, embedder):
    root, _ = tree
    meta = root / ".vectors" / "meta.json"
    data = json.loads(meta.read_text())
    data["model"] = "some-other-model"
    meta.write_text(json.dumps(data))
    fix_and_check(root, embedder, "model_mismatch")
    assert json.loads(meta.read_text())["model"] == embedder.name


def test_unreadable_vector_table_is_rebuilt(tree, embedder):
    root, ids = tree
    for data in (root / ".vectors" / "chunks.lance" / "data").iterdir():
        data.write_bytes(b"garbage")
    fix_and_check(root, embedder, "vectors_unreadable")
    assert sorted(_index(root).frame().ids) == sorted(ids)


def test_missing_vector_index_is_built(tree, embedder):
    root, ids = tree
    shutil.rmtree(root / ".vectors")
    fix_and_check(root, embedder, "vectors_missing")


def test_loose_permissions_are_tightened(tree, embedder):
    root, ids = tree
    entry_file = root / fresh(root, embedder).resolve(ids[0]).path
    os.chmod(entry_file, 0o644)
    os.chmod(root / "meetings", 0o755)
    os.chmod(root, 0o755)
    fix_and_check(root, embedder, "permissions")
    assert (os.stat(root).st_mode & 0o777) == 0o700
    assert (os.stat(entry_file).st_mode & 0o777) == 0o600
    assert (os.stat(root / "meetings").st_mode & 0o777) == 0o700


def test_symlinks_leading_out_are_quarantined_targets_untouched(tree, embedder, tmp_path):
    root, ids = tree
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text("---\nid: stolen000001\ntitle: not yours\n---\nprivate\n")
    os.symlink(secret, root / "ops" / "link.md")
    os.symlink(outside, root / "evil")
    m = fresh(root, embedder)
    assert all(e.id != "stolen000001" for e in m.list())
    fix_and_check(root, embedder, "symlink_outside")
    assert secret.read_text().startswith("---") and outside.is_dir()
    assert not os.path.lexists(root / "evil") and not os.path.lexists(root / "ops" / "link.md")


HOLDER = textwrap.dedent("""
    import sys, time
    from memstrata.storage.lock import TreeLock
    with TreeLock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(600)
""")


def test_held_lock_and_stale_lock_file(tree, embedder):
    root, _ = tree
    env = {**os.environ, "MEMSTRATA_SERVICE": "off"}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(root)], stdout=subprocess.PIPE, text=True, env=env)
    assert holder.stdout.readline().strip() == "held"
    from memstrata.errors import Locked

    with pytest.raises(Locked):
        fresh(root, embedder).doctor(lock_timeout=0.5)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (root / ".lock").exists()
    assert fresh(root, embedder).doctor(lock_timeout=2).healthy  # the dead holder's lock file blocks nothing


def test_compare_rows_is_pure():
    a = Entry(id="a", title="A", body="x", path="c/a.md")
    b = Entry(id="b", title="B", body="y", path="c/b.md")
    from memstrata.doctor.checks import entry_hash
    from memstrata.doctor.flagged import row_key

    diff = compare_rows([row_key(a), row_key(b)], ["a", "a", "z"], [entry_hash(a), entry_hash(a), "h"],
                        ["c/a.md"] * 2 + ["z"])
    assert diff == {"missing": ["b"], "extra": ["z"], "duplicated": ["a"], "stale": [], "moved": []}


def run_cli(root, *args):
    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args, "--root", str(root)],
                          capture_output=True, text=True, env=env, timeout=300)


def test_cli_doctor_exit_codes_and_json(tree):
    root, _ = tree
    (root / "ops" / "broken.md").write_text("---\ntags: [a\n---\n")
    check = run_cli(root, "doctor", "--json")
    assert check.returncode == 9, check.stderr
    data = json.loads(check.stdout)
    assert data["healthy"] is False and data["findings"][0]["kind"] == "unparseable"
    fixed = run_cli(root, "doctor", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "[fixed] unparseable ops/broken.md" in fixed.stdout and "healthy" in fixed.stdout
    assert run_cli(root, "doctor").returncode == 0
    assert "mem doctor --fix --json" in run_cli(root, "doctor", "--help").stdout


def test_the_file_read_shows_is_the_one_that_keeps_a_duplicated_id(tree, embedder):
    root, ids = tree
    m = fresh(root, embedder)
    src = m.resolve(ids[0]).path
    _copy_with(root, src, "projects/alpha/aaa-copy.md", body="A hand-edited copy.")
    report = fresh(root, embedder).doctor()
    (finding,) = [f for f in report.findings if f.kind == "duplicate_id"]
    # same version and date, a path that sorts first: the copy; the catalog saw the original hold the id first
    assert finding.path == "projects/alpha/aaa-copy.md" and finding.detail.endswith(src)
    assert fresh(root, embedder).resolve(ids[0]).path == src  # `mem read` agrees before the fix
    fix_and_check(root, embedder, "duplicate_id")
    assert fresh(root, embedder).resolve(ids[0]).path == src  # what the report said


def test_a_symlink_at_the_lock_file_is_one_clear_error_and_the_doctor_removes_it(tree, embedder, tmp_path):
    from memstrata.errors import Locked

    root, ids = tree
    outside = tmp_path / "outside-lock"
    (root / ".lock").unlink(missing_ok=True)
    (root / ".lock").symlink_to(outside)  # as a peer's commit checks it out
    with pytest.raises(Locked, match="mem doctor --fix"):
        fresh(root, embedder).write("The VPN needs a token.", title="VPN", category="ops")
    report = fresh(root, embedder).doctor()
    assert any(f.kind == "lock_file" and f.path == ".lock" for f in report.findings)
    fixed = fresh(root, embedder).doctor(fix=True)
    assert any(f.kind == "lock_file" and f.fixed for f in fixed.findings)
    assert not outside.exists() and not (root / ".lock").is_symlink()
    assert fresh(root, embedder).write("The VPN needs a token.", title="VPN", category="ops").action == "created"


def test_a_quarantined_file_is_named_for_its_own_id_only_and_shown_escaped(tree, embedder):
    """A third attack: a quarantined note whose body mentioned another id ("parent id: X") was named as
    X's file, and a file name with terminal escapes reached the terminal raw."""
    root, ids = tree
    aside = root / ".quarantine"
    aside.mkdir(exist_ok=True)
    (aside / "20261206T000000Z--ops__note\x1b]0;pwned\x07.md").write_text(f"---\ntitle: [x\n---\nFollow-up of parent id: {ids[2]}\n")
    note = root / "ops" / "backups.md"
    note.unlink()
    with pytest.raises(NotFound) as missing:
        fresh(root, embedder).read(ids[2])
    assert ".quarantine" not in str(missing.value)
    (aside / "20261206T000000Z--ops__note\x1b]0;pwned\x07.md").write_text(f"---\nid: {ids[2]}\ntitle: [x\n---\nbody\n")
    with pytest.raises(NotFound) as named:
        fresh(root, embedder).read(ids[2])
    assert "\\x1b]0;pwned\\x07" in str(named.value) and "\x1b" not in str(named.value)
