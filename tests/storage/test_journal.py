"""The access journal with real processes: appends while a fold or a publish takes the pending
file, a publish stopped half-way, planted symlinks; nothing lost, nothing counted twice."""
import os
import subprocess
import sys
from datetime import datetime, timezone

import pytest

from memstrata.storage import journal

PY = sys.executable
ID = "abcdef123456"

_APPENDER = """
import sys
from datetime import datetime, timezone
from memstrata.storage import journal
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    assert journal.append(root, [("abcdef123456", datetime.now(timezone.utc), None)])
"""


def _count(root) -> int:
    return sum(a.count for a in journal.read(root).values())


def _tracked_lines(root, machine="m") -> list[str]:
    path = root / journal.JOURNAL_DIR / f"{machine}.log"
    return [line for line in path.read_text().splitlines() if "\t" in line] if path.exists() else []


@pytest.mark.parametrize("taker", ["fold", "publish", "both"])
def test_every_access_survives_a_fold_or_a_publish_taking_the_pending_file(tmp_path, taker):
    """Real processes append while the pending file is taken: every access is folded, published or pending."""
    root = tmp_path / "r"
    root.mkdir()
    procs = [subprocess.Popen([PY, "-c", _APPENDER, str(root), "400"]) for _ in range(3)]
    folded = rounds = 0
    while any(p.poll() is None for p in procs):
        rounds += 1
        if taker == "fold" or (taker == "both" and rounds % 2):
            accesses, taken = journal.take(root, "m")
            folded += sum(a.count for a in accesses.values())
            journal.release(taken)
        else:
            journal.publish(root, "m")
    assert all(p.wait() == 0 for p in procs)
    assert folded + _count(root) == 1200
    if taker == "publish":
        journal.publish(root, "m")
        assert len(_tracked_lines(root)) == 1200 and _count(root) == 1200
        assert not list((root / journal.PENDING_DIR).iterdir())  # every pending line moved


_STOPPED_PUBLISH = """
import os, sys
from memstrata.storage import journal
if sys.argv[2] == "after_append":
    journal.release = lambda taken: os._exit(3)  # stops between the append and the removal
else:
    journal._append_to = lambda *a, **k: os._exit(3)  # stops before the append
journal.publish(sys.argv[1], "m")
"""


@pytest.mark.parametrize("stop", ["after_append", "before_append"])
@pytest.mark.parametrize("then", ["publish", "fold"])
def test_a_publish_stopped_half_way_neither_loses_nor_doubles_a_line(tmp_path, stop, then):
    root = tmp_path / "r"
    root.mkdir()
    now = datetime(2026, 11, 30, 10, tzinfo=timezone.utc)
    journal.append(root, [(ID, now, None)] * 5)
    assert subprocess.run([PY, "-c", _STOPPED_PUBLISH, str(root), stop]).returncode == 3
    assert [p.name.endswith(".moving") for p in (root / journal.PENDING_DIR).iterdir()] == [True]
    assert len(_tracked_lines(root)) == (5 if stop == "after_append" else 0)
    assert _count(root) == 5  # counted once either way
    journal.append(root, [(ID, now, None)])
    if then == "publish":
        assert journal.publish(root, "m") == (1 if stop == "after_append" else 6)
        assert len(_tracked_lines(root)) == 6 and _count(root) == 6
        assert not list((root / journal.PENDING_DIR).iterdir())
    else:
        accesses, taken = journal.take(root, "m")  # the machine that published them folds them
        assert accesses[ID].count == 6
        journal.release(taken)
        assert _count(root) == 0


def test_a_publish_copies_whole_lines_only(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    journal.append(root, [(ID, datetime(2026, 11, 30, 10, tzinfo=timezone.utc), 0.5)])
    with open(root / journal.PENDING_DIR / f"{journal.machine_name()}.log", "a") as handle:
        handle.write("2026-11-30T10:00:01Z\tabcdef1")  # a crash mid-append
    assert journal.publish(root, "laptop one") == 1
    text = (root / journal.JOURNAL_DIR / "laptop-one.log").read_text()
    assert text.splitlines()[0] == f"2026-11-30T10:00:00Z\t{ID}\t0.5000"
    assert text.splitlines()[1].startswith("# moved ") and len(text.splitlines()) == 2
    assert journal.read(root)[ID].count == 1


@pytest.mark.parametrize("inside", [False, True])
def test_a_planted_symlink_at_the_pending_folder_is_never_followed(tmp_path, inside):
    root = tmp_path / "r"
    (root / ".cache").mkdir(parents=True)
    target = root / "notes" if inside else tmp_path / "outside"
    target.mkdir()
    planted = {"x.log": f"2026-11-30T10:00:00Z\t{ID}\t-\n", "y.log.1.taken": f"2026-11-30T10:00:00Z\t{ID}\t-\n",
               "z.log.1-a.moving": f"2026-11-30T10:00:00Z\t{ID}\t-\n"}
    for name, text in planted.items():
        (target / name).write_text(text)
    os.symlink(target, root / journal.PENDING_DIR)
    assert not journal.append(root, [(ID, datetime.now(timezone.utc), None)])  # best effort: not counted
    assert journal.read(root) == {} and journal.signature(root) == ()
    assert journal.publish(root, "m") == 0
    accesses, taken = journal.take(root)
    assert accesses == {} and taken == []
    assert {p.name: p.read_text() for p in target.iterdir()} == planted
    assert not (root / journal.JOURNAL_DIR).exists()


def test_a_fold_takes_this_machines_files_only_and_leaves_nothing_in_the_tracked_folder(tmp_path):
    """Another machine's shared lines are its own to fold (folding them on two clones would count
    them twice once the folds merge); they are counted until then. A fold's taken files live in
    the git-ignored pending folder, so a fold that stops leaves nothing for a sync to commit."""
    root = tmp_path / "r"
    root.mkdir()
    now = datetime(2026, 11, 30, 10, tzinfo=timezone.utc)
    journal.append(root, [(ID, now, None)] * 2)
    assert journal.publish(root, "laptop") == 2
    (root / journal.JOURNAL_DIR / "desktop.log").write_text(f"2026-11-30T09:00:00Z\t{ID}\t-\n" * 3)
    journal.append(root, [(ID, now, None)])
    assert _count(root) == 6
    accesses, taken = journal.take(root, "laptop")
    assert accesses[ID].count == 3  # the pending one and the two laptop published
    assert all(p.parent == root / journal.PENDING_DIR for p in taken)
    assert sorted(p.name for p in (root / journal.JOURNAL_DIR).iterdir()) == ["desktop.log"]
    assert _count(root) == 6  # taken, not yet released: still counted once
    journal.release(taken)
    assert _count(root) == 3  # the desktop's, until the desktop folds them


def test_planted_files_of_many_machines_count_for_at_most_so_many_machines_a_day(tmp_path):
    """Issue 28: the per machine and day cap did not bound the number of machines: 200 planted
    machine files each added a day's worth of reads. Now at most MAX_MACHINES_PER_DAY machines
    count per entry and day, and this copy's own reads always do."""
    from memstrata.scoring.access import MAX_READS_PER_DAY

    root = tmp_path / "r"
    root.mkdir()
    own = datetime(2026, 11, 29, 9, tzinfo=timezone.utc)
    assert journal.append(root, [(ID, own, None)] * 3)
    planted = root / journal.JOURNAL_DIR
    planted.mkdir()
    day = "".join(f"2026-11-29T{h:02d}:00:00Z\t{ID}\t-\n" for h in range(24)) * 3  # 72 reads a machine
    for n in range(200):
        (planted / f"a{n:03d}.log").write_text(day)
    (planted / "a000.log").write_text(day + f"2026-11-28T10:00:00Z\t{ID}\t-\n")  # another day counts apart
    access = journal.read(root)[ID]
    cap = journal.MAX_MACHINES_PER_DAY
    assert access.counted == 3 + (cap - 1) * MAX_READS_PER_DAY + 1
    assert sum(1 for (machine, d) in access.per_day if d == own.date()) == cap
    assert any(machine == journal.machine_name() for machine, _ in access.per_day)  # this copy's reads count
