"""Forgetting a user notices (issue 16): idleness counts days the tree was in use, `mem maintain` lists
what it forgets, and the trash is purged only after it was reported."""
import json

import pytest

from memstrata import Memory
from memstrata.cli import output
from memstrata.cli.app import main
from memstrata.storage import codec, usage

TOPICS = ["postgres replication", "the office wifi password rotation", "Alice's birthday party", "the CI cache",
          "a flaky integration test", "the March release", "the billing service", "Bob's onboarding",
          "the NAS backups", "the staging cluster", "the design review", "the hiring plan"]


def _at(monkeypatch, day: str) -> None:
    monkeypatch.setenv("MEMSTRATA_NOW", f"{day}T09:00:00Z")


@pytest.fixture
def mem(tmp_path, embedder, monkeypatch):
    _at(monkeypatch, "2026-01-01")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    return m


@pytest.fixture
def cli(mem, embedder, capsys):
    """run(*argv) -> (exit code, stdout) of `mem` in this process on the same tree, with the session model."""
    output.set_memory_factory(lambda root: Memory(root, embedder=embedder))

    def run(*argv):
        capsys.readouterr()
        code = main([*argv, "--root", str(mem.root)])
        out, err = capsys.readouterr()
        assert "Traceback" not in err, err
        return code, out

    yield run
    output.set_memory_factory(None)


def _trash_ids(mem) -> set:
    return {i.id for i in mem.trash_list(report=False)}


def test_a_32_entry_tree_nobody_opened_for_300_days_loses_nothing(mem, monkeypatch, cli):
    entries = [mem.write(f"Note {n} about {TOPICS[n % len(TOPICS)]}: detail number {n * 7} matters here. "
                         f"We agreed on step {n} after a long talk.", title=f"Note {n}",
                         category=f"projects/p{n % 4}", force=True) for n in range(32)]
    for day in ("2026-10-28", "2027-06-01"):  # 300 days later, then again from cron after another 7 months
        _at(monkeypatch, day)
        code, out = cli("maintain", "--json")
        data = json.loads(out)
        assert code == 0 and data["errors"] == []
        assert data["forgotten"] == [] and "forget" not in data["counts"] and "archive" not in data["counts"]
        assert data["days_in_use"] == 1, "maintenance is not use: the tree was used on one day only"
    assert _trash_ids(mem) == set()
    for entry in entries:
        now = mem.read(entry.id, count_access=False)
        assert now.status == "active" and "/archived/" not in now.path
    # what did change is lossless: compressed in place, the original one command away
    first = mem.read(entries[0].id, count_access=False)
    assert first.tier == "cold" and mem.decompress(first.id, show=True)["body"].startswith("Note 0 about")


def test_a_tree_used_daily_forgets_the_idle_entry_keeps_the_read_recalled_and_linked(
        mem, monkeypatch, cli, use_daily):
    idle = mem.write("The printer on floor 3 needs the blue toner cartridge.", title="Printer toner",
                     category="office")
    read = mem.write("The parking garage closes at 22:00 on weekdays.", title="Parking hours", category="office")
    recalled = mem.write("Project Kestrel's deploy key is rotated every quarter by Dana.",
                         title="Kestrel deploy key", category="projects/kestrel")
    linked = mem.write("The old VPN gateway address is vpn-old.example.org.", title="Old VPN", category="infra")
    diary = mem.write("What I do every day.", title="Diary", category="journal", important=True)
    use_daily(mem, "2026-01-02", "2026-06-01", diary.id)
    _at(monkeypatch, "2026-06-01")
    mem.write("Migration notes: the new VPN replaced the old gateway.", title="VPN migration",
              category="infra", related=[linked.id])  # links the old note
    use_daily(mem, "2026-06-02", "2026-07-15", diary.id)
    mem.read(read.id)  # read on 2026-07-15
    hits = mem.recall("Who rotates the Kestrel deploy key?", k=3)
    assert recalled.id in [h.id for h in hits.results]
    _at(monkeypatch, "2026-07-20")

    code, out = cli("maintain", "--dry-run", "--json")
    dry = json.loads(out)
    assert code == 0 and [f["id"] for f in dry["forgotten"]] == [idle.id]
    code, out = cli("maintain")
    assert code == 0
    assert "FORGOTTEN 1 entry" in out and "Printer toner" in out and idle.id in out
    assert f"mem restore {idle.id}" in out
    assert "why: forgotten: archived, untouched for 195 days of use (200 calendar days) and not referenced" in out
    assert _trash_ids(mem) == {idle.id}
    for kept in (read, recalled, linked):
        assert mem.read(kept.id, count_access=False).status in ("active", "archived"), kept.title
    assert mem.read(read.id, count_access=False).tier == "hot"
    assert mem.read(recalled.id, count_access=False).tier == "hot"
    item = mem.trash_list(report=False)[0]
    assert item.reported_at is not None, "maintain listed it: reported"
    mem.restore(idle.id)  # and it comes back whole
    assert mem.read(idle.id, count_access=False).body.strip().startswith("The printer on floor 3")
    assert "reported_at" not in (mem.root / mem.resolve(idle.id).path).read_text()


def test_days_in_use_are_kept_from_one_maintain_to_the_next(mem, monkeypatch, use_daily):
    diary = mem.write("Every day.", title="Diary", category="journal", important=True)
    use_daily(mem, "2026-01-02", "2026-01-10", diary.id)
    _at(monkeypatch, "2026-01-10")
    assert mem.maintain(dry_run=True).days_in_use == 10
    assert usage.read(mem.root) == set(), "a dry run writes nothing"
    mem.maintain()
    assert len(usage.read(mem.root)) == 10  # the journal is folded away; the days stay
    use_daily(mem, "2026-01-11", "2026-01-12", diary.id)
    _at(monkeypatch, "2026-01-12")
    assert mem.maintain().days_in_use == 12


def test_purge_waits_until_an_item_was_reported(mem, monkeypatch, cli, use_daily):
    kept = mem.write("The tree is in use every day.", title="Diary", category="daily")
    x = mem.write("Scratch x.", title="Scratch x", category="scratch")
    y = mem.write("Scratch y is about lunch.", title="Scratch y", category="scratch")
    z = mem.write("Scratch z is about the weather.", title="Scratch z", category="scratch")
    mem.delete(x.id)
    code, out = cli("trash", "list")  # shows x: from now on it can be purged after retention
    assert code == 0 and "Scratch x" in out
    mem.delete(y.id)
    mem.delete(z.id)  # an agent deleted these; nobody has seen them in the trash yet
    assert {i.id for i in mem.trash_list(report=False) if i.reported_at} == {x.id}

    use_daily(mem, "2026-01-02", "2026-02-10", kept.id)  # the retention counts days in use
    _at(monkeypatch, "2026-02-10")
    code, out = cli("trash", "purge", "--json")
    assert [e["id"] for e in json.loads(out)["entries"]] == [x.id], "y and z were never reported"
    report = mem.maintain().to_dict()
    assert report["purged"] == [] and {r["id"] for r in report["reported"]} == {y.id, z.id}
    assert all(r["restore"] == f"mem restore {r['id']}" for r in report["reported"])
    assert "reported_at: " in (mem.root / mem.trash_list(report=False)[0].path).read_text()

    mem.restore(z.id)
    assert "reported_at" not in codec.render(mem.resolve(z.id))
    use_daily(mem, "2026-02-11", "2026-03-12", kept.id)
    _at(monkeypatch, "2026-03-12")  # exactly 30 days after the report: not yet
    assert mem.maintain().to_dict()["purged"] == []
    use_daily(mem, "2026-03-13", "2026-03-13", kept.id)
    _at(monkeypatch, "2026-03-13")
    assert [p["id"] for p in mem.maintain().to_dict()["purged"]] == [y.id]
    assert _trash_ids(mem) == set()


def test_a_purge_that_purges_nothing_says_why(mem, monkeypatch, cli, use_daily):
    x = mem.write("Scratch x is about parking.", title="Scratch x", category="scratch")
    y = mem.write("Scratch y is about lunch.", title="Scratch y", category="scratch")
    keep = mem.write("The tree is in use every day.", title="Diary", category="daily")
    mem.delete(x.id)
    mem.trash_list()  # shown to the user now: purgeable 30 days (of use) from now
    mem.delete(y.id)  # nobody has seen it in the trash
    code, out = cli("trash", "purge")
    assert code == 0 and out.count("\n") == 1
    assert out.startswith("purged 0 entries; 2 left: 1 reported less than 30 days of use ago")
    assert "the first purgeable after 2026-01-31" in out and "1 not reported yet" in out
    code, out = cli("trash", "purge", "--json")
    data = json.loads(out)
    assert (data["purged"], data["left"], data["waiting"], data["unreported"]) == (0, 2, 1, 1)
    assert data["purgeable_after"] == "2026-01-31T09:00:00Z"
    _at(monkeypatch, "2026-02-01")
    code, out = cli("trash", "purge")  # 31 calendar days, none of them in use
    assert out.startswith("purged 0 entries; 2 left: 1 reported less than 30 days of use ago"), out
    assert "the first purgeable after 2026-03-03" in out  # were the tree used every day from tomorrow
    use_daily(mem, "2026-01-02", "2026-02-01", keep.id)
    code, out = cli("trash", "purge")
    assert out.startswith("purged 1 entry; 1 left: 1 not reported yet")
    assert mem.trash_purge(everything=True) and cli("trash", "purge")[1] == "purged 0 entries\n"


def test_an_archived_entry_brought_back_from_the_trash_leaves_the_archive_folder(mem):
    """A new user's review: entries forgotten from `archived/` came back active and hot, still in
    `preferences/archived/`."""
    entry = mem.write("Answers are short, with the command first.", title="Answer style", category="preferences")
    note = mem.root / entry.path
    archived = mem.root / "preferences" / "archived" / note.name
    archived.parent.mkdir()
    archived.write_text(note.read_text(encoding="utf-8").replace("status: active", "status: archived"), encoding="utf-8")
    note.unlink()
    mem.delete(entry.id)
    assert mem.trash_list(report=False)[0].trashed_from == "preferences/archived/answer-style.md"
    back = mem.restore(entry.id)
    assert (back.status, back.tier, back.path) == ("active", "hot", "preferences/answer-style.md")
    assert mem.read(entry.id, count_access=False).path == "preferences/answer-style.md"
