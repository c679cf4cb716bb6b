"""Access counts never too high: a fold killed with SIGKILL at random points, a journal file over
64 MB, a pulled line dated in the future, a pulled `.access` symlink, `mem weight`'s count."""
import os
import random
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone

import pytest

from memstrata import Memory
from memstrata.storage import journal

PY = sys.executable
NOW = "2026-11-30T12:00:00Z"

# A fold in its own process, saving two entries per batch so a kill lands between batches
# (or inside one); it says "ready" right before it takes the tree lock.
_FOLD = """
import sys
from memstrata import Memory
from memstrata.features import access_fold
access_fold.FOLD_BATCH = 2
m = Memory(sys.argv[1])
m.list()
print("ready", flush=True)
m._aging.folds.fold_accesses()
"""


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    monkeypatch.setenv("MEMSTRATA_NOW", NOW)


def _fold_process(root):
    return subprocess.Popen([PY, "-c", _FOLD, str(root)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "MEMSTRATA_SERVICE": "off"})


def test_a_fold_killed_at_random_points_never_counts_a_read_twice(tmp_path, embedder):
    m = Memory(tmp_path / "r", embedder=embedder)
    m.init()
    ids = [m.write(f"Fact number {n}: the build cache is kept for {n} days.", title=f"Cache {n}",
                   category="ops").id for n in range(12)]
    rng = random.Random(5)
    reads = dict.fromkeys(ids, 0)

    def read_some(k):
        for entry_id in rng.choices(ids, k=k):
            m.read(entry_id)
            reads[entry_id] += 1

    read_some(60)
    proc = _fold_process(m.root)  # a whole fold, to learn how long one takes here from "ready" on
    assert proc.stdout.readline().strip() == "ready"
    ready = time.monotonic()
    assert proc.wait(timeout=120) == 0
    span = max(0.05, time.monotonic() - ready)
    killed = 0
    for round_ in range(10):
        read_some(30)
        proc = _fold_process(m.root)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0, span))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait(timeout=120)
        shown = {e.id: e.access_count for e in m.list()}
        assert all(shown[i] >= reads[i] for i in ids), round_  # never fewer, even right after a kill
    assert killed >= 5
    m.maintain()
    assert {i: m.resolve(i).access_count for i in ids} == reads
    assert not [p for p in (m.root / journal.PENDING_DIR).iterdir()]  # nothing left to count again


def test_a_journal_file_over_64_mb_is_read_not_dropped(tmp_path, embedder):
    m = Memory(tmp_path / "r", embedder=embedder)
    m.init()
    r = m.write("The office opens at eight.", title="Office hours", category="ops")
    folder = m.root / journal.PENDING_DIR
    folder.mkdir(parents=True, exist_ok=True)
    big = folder / "big.log"
    with open(big, "wb") as handle:  # sparse: 64 MB and more of one foreign line, then three reads
        handle.truncate(64 * 1024 * 1024 + 1)
        handle.seek(0, os.SEEK_END)
        handle.write((f"\n2026-11-29T10:00:00Z\t{r.id}\t-" * 3 + "\n").encode())
    assert m.read(r.id, count_access=False).access_count == 3
    assert m.maintain().accesses_folded == 1
    assert m.resolve(r.id).access_count == 3 and not big.exists()


def test_a_journal_line_dated_in_the_future_counts_as_now(tmp_path, embedder):
    m = Memory(tmp_path / "r", embedder=embedder)
    m.init()
    r = m.write("The printer is on the second floor.", title="Printer", category="ops")
    (m.root / journal.JOURNAL_DIR).mkdir()
    (m.root / journal.JOURNAL_DIR / "peer.log").write_text(f"9999-12-31T00:00:00Z\t{r.id}\t-\n")
    now = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)
    assert journal.read(m.root, now)[r.id].last == now
    assert m.read(r.id, count_access=False).last_access == now
    assert m.weight(r.id)["last_access"] == NOW
    (m.root / journal.JOURNAL_DIR / f"{journal.machine_name()}.log").write_text(f"9999-01-01T00:00:00Z\t{r.id}\t-\n")
    report = m.maintain()
    assert m.resolve(r.id).last_access == now  # folded as now, never pinned in 9999
    assert report.days_in_use == 1  # no day in 9999 either


def test_weight_counts_the_reads_still_in_the_journal(tmp_path, embedder):
    m = Memory(tmp_path / "r", embedder=embedder)
    m.init()
    r = m.write("Lunch is at noon.", title="Lunch", category="misc")
    before = m.weight(r.id)
    for _ in range(3):
        m.read(r.id)
    info = m.weight(r.id)
    assert info["access_count"] == 3 and info["weight"] > before["weight"] and info["last_access"] == NOW
    assert info["stored_weight"] is None
    stored = m.weight(r.id, update=True)
    assert stored["weight"] == info["weight"] == m.resolve(r.id).weight
    m.maintain()
    assert m.weight(r.id)["access_count"] == 3  # folded: counted once
    done = subprocess.run([PY, "-m", "memstrata.cli.app", "weight", r.id, "--json", "--root", str(m.root)],
                          capture_output=True, text=True, env={**os.environ, "MEMSTRATA_SERVICE": "off"})
    assert done.returncode == 0 and '"access_count": 3' in done.stdout


def test_a_pulled_symlinked_access_folder_is_reported_at_every_sync_and_by_doctor(tmp_path, embedder):
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True)
    b = Memory(tmp_path / "b", embedder=embedder)
    b.clone(str(tmp_path / "r.git"), machine="desktop")
    r = b.write("The wifi password rotates monthly.", title="Wifi", category="ops")
    b.sync_remote()
    peer = tmp_path / "peer"  # a peer with plain git plants `.access -> elsewhere`
    subprocess.run(["git", "clone", "-q", str(tmp_path / "r.git"), str(peer)], check=True)
    (peer / ".access").symlink_to(tmp_path)
    git = ["git", "-C", str(peer), "-c", "user.name=p", "-c", "user.email=p@x"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "plant"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD"], check=True)
    first = b.sync_remote()
    assert any("reads are not shared: .access is a symlink" in w for w in first["warnings"]), first
    b.read(r.id)
    for _ in range(2):  # every later sync says it again, while reads wait unshared
        again = b.sync_remote()
        assert again["accesses_shared"] == 0
        assert [w for w in again["warnings"] if ".access" in w], again
    done = subprocess.run([PY, "-m", "memstrata.cli.app", "sync", "--remote", "--root", str(b.root)],
                          capture_output=True, text=True, env={**os.environ, "MEMSTRATA_SERVICE": "off"})
    assert done.returncode == 0, done.stderr
    assert [ln for ln in done.stdout.splitlines() if "warning: reads are not shared: .access is a symlink" in ln]
    findings = [f for f in b.doctor().findings if f.path == ".access"]
    assert findings and "reads are not shared" in findings[0].detail
    assert b.read(r.id, count_access=False).access_count == 1  # still counted here


def test_a_planted_journal_counts_at_most_so_many_reads_per_day_and_machine(tmp_path, embedder):
    """Issue 27: 1.5 million planted reads raised an entry's weight from 0.52 to 21.3; now a machine's
    reads of an entry count up to scoring.access.MAX_READS_PER_DAY per UTC day."""
    from memstrata.scoring.access import MAX_READS_PER_DAY

    m = Memory(tmp_path / "r", embedder=embedder)
    m.init()
    entry = m.write("The build cache is kept for 7 days.", title="Build cache", category="ops")
    before = m.weight(entry.id)["weight"]
    for _ in range(3):
        m.read(entry.id)  # three honest reads on this machine
    planted = tmp_path / "r" / journal.JOURNAL_DIR
    planted.mkdir(exist_ok=True)
    day = "".join(f"2026-11-30T{h:02d}:00:00Z\t{entry.id}\t-\n" for h in range(12))
    older = "".join(f"2026-11-29T{h:02d}:00:00Z\t{entry.id}\t-\n" for h in range(12))
    (planted / "evil.log").write_text(day * 12_500 + older * 100)  # 151,200 planted reads over two days
    assert m.weight(entry.id)["access_count"] == 3 + 2 * MAX_READS_PER_DAY  # what a reader sees
    m.maintain()  # folds this machine's reads; evil.log is another machine's, counted by readers
    assert m.resolve(entry.id).access_count == 3
    after = m.weight(entry.id)
    assert after["access_count"] == 3 + 2 * MAX_READS_PER_DAY and after["weight"] < 8 * before  # uncapped: ln(151,204) / ln(2) = 17 times


def test_a_recall_counts_the_hits_the_prompt_hook_would_inject_not_the_weak_ones_under_them(tmp_path, embedder):
    """A new user's review: a 0.01-0.03 hit listed under a 0.9 answer counted as a use and kept an
    unrelated note alive. A hit counts when its relevance reaches the cut-off and autoload_min_relevance
    (0.3) x the best hit's."""
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    for body, title, category in [
            ("We chose Postgres 16 for the alpha project because of JSONB support.", "DB choice", "projects/alpha"),
            ("Standup is at 9:30 every day in the small room.", "Standup time", "meetings"),
            ("The user prefers dark mode (Dracula) in VS Code.", "Editor theme", "preferences"),
            ("To fail over the orders database, run patronictl failover orders and repoint PgBouncer.",
             "Orders failover", "runbooks"),
            ("Deploys go out on Tuesdays and Thursdays after the QA sign-off.", "Deploy days", "process")]:
        m.write(body, title=title, category=category)
    hits = m.recall("alpha database replica", count_access=True).results
    best = hits[0].relevance
    weak = [h.title for h in hits if m.state.settings.recall_min_relevance <= h.relevance < 0.3 * best]
    assert weak, [(h.title, h.relevance) for h in hits]  # the case the rule is about is there
    counted = {m.read(i, count_access=False).title for i in journal.read(m.root)}
    assert counted == {h.title for h in hits if h.relevance >= max(0.01, 0.3 * best)} and not counted & set(weak)
