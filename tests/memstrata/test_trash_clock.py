"""`MEMSTRATA_NOW=+90d mem maintain` right after a delete purged today's trash: the README offers
MEMSTRATA_NOW for "what happens in 90 days". The purge now counts trash_retention_days in days the
tree was in use, as archive and forgetting do: a clock moved ahead adds no day of use, so the
trash of a tree nobody used since stays; 30 days of use purge it (issue 39, item 8). Real processes."""
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from team_scenario import env, mem  # noqa: E402


def at(days: int) -> str:
    moment = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=days)
    return moment.isoformat().replace("+00:00", "Z")


def mem_at(days: int, *args) -> dict:
    import json

    done = subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args, "--json"], capture_output=True,
                          text=True, env=env(MEMSTRATA_NOW=at(days)), timeout=300)
    assert done.returncode == 0, (args, done.stderr)
    return json.loads(done.stdout)


def test_a_clock_ahead_never_purges_a_trash_nobody_used_the_tree_since(tmp_path, embedder):
    root = str(tmp_path / "t")
    mem("init", "--root", root, machine="laptop")
    keep = mem("write", "The boiler was serviced in October.", "--title", "Boiler", "-c", "home", "--root", root,
               machine="laptop")
    gone = mem("write", "Draft: buy a new kettle.", "--title", "Kettle", "-c", "home", "--root", root,
               machine="laptop")
    mem("delete", gone["id"], "--root", root, machine="laptop")
    assert [i["id"] for i in mem("trash", "list", "--root", root, machine="laptop")["entries"]] == [gone["id"]]
    for days in (90, 400):  # "what happens in 90 days": the tree was not used meanwhile
        report = mem_at(days, "maintain", "--root", root)
        assert report["purged"] == [], (days, report["purged"])
        purge = mem_at(days, "trash", "purge", "--root", root)
        assert purge["purged"] == 0 and purge["waiting"] == 1, purge
    assert [i["id"] for i in mem("trash", "list", "--root", root, machine="laptop")["entries"]] == [gone["id"]]
    for day in range(1, 30):  # 29 days of use: one read a day
        mem_at(day, "read", keep["id"], "--root", root)
    assert mem_at(420, "maintain", "--root", root)["purged"] == [], "29 days of use, 420 calendar days"
    mem_at(30, "read", keep["id"], "--root", root)  # the 30th
    report = mem_at(420, "maintain", "--root", root)
    assert [p["id"] for p in report["purged"]] == [gone["id"]], report
