"""Promotion and autoload on a real tree, the real model and LanceDB, aged with MEMSTRATA_NOW."""
import json
import os
import subprocess
import sys
from datetime import date, timedelta

import pytest

from memstrata import Memory

DB = ("The alpha project stores its data in PostgreSQL 16, replicated to the analytics cluster with "
      "logical replication. Failover is manual and documented in the runbook. The primary runs in the "
      "Frankfurt region on a dedicated host with local NVMe disks. Backups are taken every night and "
      "restored into a scratch instance once a week to prove they work. Schema changes go through a "
      "review with the data team before they are applied. The connection pool allows two hundred clients "
      "at most, and the application keeps twenty of them open.")
# (long enough that its archive summary is smaller than it: a shorter note is never compressed)
NOTES = [
    ("Alpha database", DB, "projects/alpha"),
    ("Cat food", "Milo the cat only eats salmon-flavoured dry food, twice a day.", "home"),
    ("Guitar strings", "Changed the guitar strings to 10-46 nickel wound last spring.", "hobbies"),
    ("Alpha deploys", "Alpha deploys go out on Tuesdays after the canary has been green for an hour.", "projects/alpha"),
]


def _files(root):
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".vectors" not in p.parts
            and ".cache" not in p.parts and p.name != ".lock"}


@pytest.fixture
def aged(tmp_path, embedder, monkeypatch, use_daily):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-01-01T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    ids = {title: m.write(body, title=title, category=cat).id for title, body, cat in NOTES}
    diary = m.write("What happened today.", title="Diary", category="journal")
    use_daily(m, "2026-01-02", "2026-05-01", diary.id)  # the tree is in use daily: archive counts days in use
    m.delete(diary.id)  # (its reads still count as days in use)
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-05-01T09:00:00Z")  # 120 days later: archive tier
    report = m.maintain()
    assert report.changed
    return m, ids


def test_promote_brings_back_relevant_archived_entries_with_full_text(aged):
    m, ids = aged
    before = m.read(ids["Alpha database"], count_access=False)
    assert before.status == "archived" and "/archived/" in before.path and before.is_compressed
    untouched = {t: m.read(i, count_access=False) for t, i in ids.items() if t not in ("Alpha database",)}
    result = m.promote("which database does the alpha project use, and how is it replicated?", threshold=0.45)
    promoted = {row["id"] for row in result["promoted"]}
    assert ids["Alpha database"] in promoted
    assert ids["Cat food"] not in promoted and ids["Guitar strings"] not in promoted
    after = m.read(ids["Alpha database"], count_access=False)
    assert (after.tier, after.status, after.layer) == ("hot", "active", "L0")
    assert "/archived/" not in after.path and after.body.strip() == DB
    assert after.access_count == before.access_count and 0.5 <= after.context_correlation <= 1.5
    for title in ("Cat food", "Guitar strings"):
        assert m.read(ids[title], count_access=False) == untouched[title]
    assert m.recall("PostgreSQL replication runbook", k=1).results[0].id == ids["Alpha database"]


def test_promotion_search_agrees_with_comparing_every_entry(aged):
    """One vector search finds the candidates; it must choose what comparing every entry chooses,
    including an entry the index does not have yet (written by hand, embedded on the fly)."""
    m, ids = aged
    (m.root / "projects" / "alpha" / "replica-lag.md").write_text(
        "---\nid: 0123456789ab\ntitle: Replica lag\ncreated: 2025-12-01T09:00:00Z\n---\n"
        "The alpha database replica lags behind the primary by about two seconds.\n")
    context = "alpha database replication lag"
    for threshold in (0.1, 0.3, 0.45, 0.6):
        fast = m.promote(context, threshold=threshold, dry_run=True)
        m._promotion._similar_in_index = lambda _context, _threshold: None  # force the entry-by-entry comparison
        try:
            slow = m.promote(context, threshold=threshold, dry_run=True)
        finally:
            del m._promotion._similar_in_index
        as_pairs = lambda r: [(p["id"], round(p["similarity"], 3)) for p in r["promoted"]]  # noqa: E731
        assert as_pairs(fast) == as_pairs(slow) and fast["candidates"] == slow["candidates"]
        if threshold == 0.3:
            assert {"0123456789ab", ids["Alpha database"]} <= {p["id"] for p in fast["promoted"]}


def test_dry_run_changes_nothing_and_max_holds(aged):
    m, ids = aged
    before = _files(m.root)
    # a context every note is somewhat like (cosine > 0.1 each): "alpha project" alone is ~0.00 to
    # the cat food note, positive or negative by the model's rounding (the int8 model: -0.006)
    context = "alpha project data, food and strings"
    dry = m.promote(context, threshold=0.0, dry_run=True)
    assert {ids["Alpha database"], ids["Alpha deploys"]} <= {p["id"] for p in dry["promoted"]} and dry["dry_run"]
    assert len(dry["promoted"]) >= 3
    assert _files(m.root) == before
    limited = m.promote(context, threshold=0.0, max_count=2)
    assert len(limited["promoted"]) == 2
    assert sum(1 for e in m.list() if e.status == "active") == 2


def test_important_entries_keep_their_place(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-01-01T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    r = m.write(DB, title="Alpha database", category="p", importance="high")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-03-01T09:00:00Z")  # 59 days: cold by age
    assert m.promote("alpha database replication", threshold=0.0)["promoted"] == []
    assert m.promote("alpha database replication", threshold=0.0, layers="cold,archive", max_count=5)["candidates"] == 1
    assert m.read(r.id, count_access=False).access_count == 0


def test_autoload_budget_and_relevance(aged, monkeypatch):
    m, ids = aged
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-05-01T10:00:00Z")
    fresh = m.write("Sprint review moved to Friday 3pm.", title="Sprint review", category="meetings")
    task = m.autoload("how is the alpha database replicated?", budget=400)  # a task: what it asks about
    assert [item.section for item in task.items] == ["relevant"] * len(task.items) and task.items
    result = m.autoload("how is the alpha database replicated?", promote=True, budget=400, hot=True)
    listed = [item.entry.id for item in result.items]
    assert listed[0] == ids["Alpha database"] and fresh.id in listed
    assert result.tokens <= 400 and result.markdown().startswith("# Memories for this session")
    assert m.read(fresh.id, count_access=False).access_count == 0  # loading is no use (docs/aging.md)
    # the budget holds the whole block: its preamble and heading take 45 tokens, a memory's fence,
    # title and path line about 45 more
    small = m.autoload("alpha database", budget=120)
    assert small.tokens <= 120 and len(small.items) >= 1
    assert m.embedder.count_tokens(small.markdown()) <= 120


def test_autoload_hook_reads_claude_code_json(aged):
    m, ids = aged
    env = {**os.environ, "MEMSTRATA_HOME": str(m.root), "MEMSTRATA_SERVICE": "off"}
    payload = {"session_id": "abc", "cwd": str(m.root), "hook_event_name": "UserPromptSubmit",
               "prompt": "remind me how alpha's PostgreSQL replication works"}
    proc = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "autoload", "--hook", "--promote",
                           "--budget", "300"], input=json.dumps(payload), capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0 and proc.stderr == ""
    assert "logical replication" in proc.stdout
    assert m.embedder.count_tokens(proc.stdout) <= 300 + 40  # headings of the block itself
    broken = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "autoload", "--hook", "--root",
                             "/nonexistent/../x"], input="not json", capture_output=True, text=True, env=env,
                            timeout=300)
    assert (broken.returncode, broken.stdout, broken.stderr) == (0, "", "")


def test_autoload_budget_bounds_characters_of_one_huge_word(tmp_path, embedder, monkeypatch):
    """A single 2 MB word is a few tokens to WordPiece: the budget bounds characters as well
    (CHARS_PER_TOKEN a token), for the hot list and a relevant hit, title included, with a marker."""
    from memstrata.features.autoload_block import CHARS_PER_TOKEN

    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    (m.root / "notes").mkdir()
    (m.root / "notes" / "big.md").write_text(f"---\ntitle: big {'t' * 100_000}\n---\n\nbig word {'w' * 2_000_000}\n")
    m.sync()
    for context in (None, "big word"):
        result = m.autoload(context, budget=500)
        text = result.markdown()
        assert "big word" in text and " …" in text and result.tokens <= 500
        assert len(text) <= 500 * CHARS_PER_TOKEN + 200, len(text)
        assert all(i.truncated for i in result.items)


RUNBOOK = ("To fail over the orders database, promote the Patroni replica with `patronictl failover orders-pg "
           "--candidate orders-pg-2`, then check that the HAProxy backend points at the new primary. Pause the outbox "
           "relay before the switch and resume it afterwards: it sends events twice otherwise. Expect 30 to 40 seconds "
           "of write errors during the switch. "
           + " ".join(f"Step {n}: check replica orders-pg-{n} with `patronictl list` and confirm its lag is under one "
                      f"megabyte before you go on; write the result in the incident channel." for n in range(3, 15))
           + " When it is done, tell #incidents and open a ticket to rebuild the old primary as a replica.")


def test_the_hook_brings_the_archived_runbook_back_hot_and_whole(tmp_path, embedder, monkeypatch):
    """The issue's case: an archived runbook stayed cold for "the orders db primary is down, how do we fail
    over to the replica?" (cosine 0.585 < 0.65). The calibrated rule brings it back: the prompt hook with
    --promote moves it out of archived/ (the hook rewrites that entry file: docs/hooks.md), full text, hot,
    and injects it whole; the promotion is no use of it (access_count stays 0)."""
    from memstrata.storage import usage

    monkeypatch.setenv("MEMSTRATA_NOW", "2025-11-01T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    runbook = m.write(RUNBOOK, title="Orders database failover", category="runbooks")
    m.write("Deploys go out on Tuesdays once the canary has been green for an hour.", title="Deploy day", category="process")
    m.write("The staging database is refreshed from an anonymised snapshot every Sunday.", title="Staging", category="infra")
    now = "2026-06-01T09:00:00Z"
    monkeypatch.setenv("MEMSTRATA_NOW", now)
    usage.record(m.root, {date(2026, 6, 1) - timedelta(days=d) for d in range(1, 120)})  # a tree in daily use
    m.maintain()
    before = m.read(runbook.id, count_access=False)
    assert before.status == "archived" and "/archived/" in before.path and before.is_compressed
    env = {**os.environ, "MEMSTRATA_HOME": str(m.root), "MEMSTRATA_SERVICE": "off", "MEMSTRATA_NOW": now}
    cli = [sys.executable, "-m", "memstrata.cli.app"]
    dry = subprocess.run(cli + ["promote", "--context", "how do I fail over the database? patroni replica promotion",
                                "--dry-run", "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert dry.returncode == 0, dry.stderr
    assert [p["id"] for p in json.loads(dry.stdout)["promoted"]] == [runbook.id]
    payload = {"session_id": "s", "hook_event_name": "UserPromptSubmit",
               "prompt": "the orders db primary is down, how do we fail over to the replica?"}
    hook = subprocess.run(cli + ["autoload", "--hook", "--promote", "--budget", "1500"], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=300)
    assert hook.returncode == 0 and hook.stderr == "", hook.stderr
    assert f"_Brought back to hot for this task: {runbook.id}_" in hook.stdout
    assert "rebuild the old primary as a replica" in hook.stdout and "Step 14" in hook.stdout  # the whole runbook
    after = m.read(runbook.id, count_access=False)
    assert (after.status, after.tier, after.layer) == ("active", "hot", "L0") and "/archived/" not in after.path
    assert after.body.strip() == RUNBOOK and after.access_count == 0
