"""An adopted vault's reads live in its journal, never in the notes: `mem maintain` compacts this machine's
journal file (it grew with every recall and every `mem sync --remote` committed it), and two machines that
each compact and read merge through git without a conflict, every read counted once (real git, real clones)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from team_scenario import MARKERS  # noqa: E402
from test_vault_team_ids import adopted_and_cloned, git, mem_id  # noqa: E402


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def test_two_machines_compact_their_journals_and_every_read_counts_once(tmp_path, embedder, monkeypatch):
    from memstrata import Memory

    bare, vault, vault2 = adopted_and_cloned(tmp_path)
    paxos = mem_id((vault / "Main Notes" / "Paxos.md").read_text())
    note = (vault / "Main Notes" / "Paxos.md").read_text()
    desk, lap = Memory(vault, embedder=embedder), Memory(vault2, embedder=embedder)

    def on(day: int, machine: str) -> None:
        monkeypatch.setenv("MEMSTRATA_NOW", f"2026-12-{day:02d}T08:{day:02d}:00Z")
        monkeypatch.setenv("MEMSTRATA_MACHINE", machine)

    def sync_all(day: int) -> None:
        for machine, m in (("desktop", desk), ("laptop", lap), ("desktop", desk)):
            on(day, machine)
            m.sync_remote()

    for day in range(10, 15):
        on(day, "desktop")
        for _ in range(3):
            desk.read(paxos)
        on(day, "laptop")
        for _ in range(2):
            lap.read(paxos)
        sync_all(day)
    journal_file = vault / ".memstrata" / "access" / "desktop.log"
    assert len(journal_file.read_text().splitlines()) >= 15  # one line a read, and the publishes' markers

    on(16, "desktop")
    compacted = desk.maintain().to_dict()["journal_compacted"]
    assert compacted["lines_after"] <= 2 < compacted["lines_before"], compacted
    on(16, "laptop")
    lap.read(paxos)
    lap.read(paxos)
    assert lap.maintain().to_dict()["journal_compacted"]["lines_after"] <= 3  # its pending reads of today stay
    on(16, "desktop")
    desk.read(paxos)
    sync_all(16)

    for root in (vault, vault2):
        for path in root.rglob("*"):
            if path.is_file() and ".git" not in path.parts:
                assert not MARKERS.search(path.read_text(errors="replace")), path
        assert git(root, "status", "--porcelain") == ""
        seen = Memory(root, embedder=embedder).read(paxos, count_access=False)
        assert seen.access_count == 5 * 3 + 5 * 2 + 2 + 1, root.name
        assert seen.last_access.isoformat().startswith("2026-12-16"), seen.last_access
    assert len(git(bare, "show", "HEAD:.memstrata/access/desktop.log").splitlines()) <= 3
    assert (vault / "Main Notes" / "Paxos.md").read_text() == note  # the note itself never written
