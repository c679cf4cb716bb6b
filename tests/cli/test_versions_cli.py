"""`mem write` conflicts, `mem history/revert/split/merge/import-builtin` as a user runs them."""
import json
import os
import subprocess
import sys

import pytest


def run(root, *args, now="2026-06-01T09:00:00Z"):
    env = {**os.environ, "MEMSTRATA_HOME": str(root), "MEMSTRATA_NOW": now, "MEMSTRATA_SERVICE": "off"}
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "mem"
    assert run(r, "init").returncode == 0
    return r


def test_conflict_history_show_and_revert(root):
    first = json.loads(run(root, "write", "User prefers dark mode", "--title", "UI preference",
                           "--category", "preferences", "--json").stdout)
    second = run(root, "write", "User prefers light mode", "--title", "UI preference", "--category", "preferences",
                 now="2026-07-18T10:00:00Z")
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == [
        f'conflict detected with "UI preference" (same title): both versions kept, current is v2 [{first["id"]}]',
        f"  v1 is kept: mem history {first['id']} --show 1; if v1 is still right: mem revert {first['id']} --to 1"]

    hist = json.loads(run(root, "history", first["id"], "--json").stdout)
    assert [(v["version"], v["date"], v["current"]) for v in hist["versions"]] == [
        (1, "2026-06-01", False), (2, "2026-07-18", True)]
    human = run(root, "history", first["id"]).stdout
    assert "v1  2026-06-01  User prefers dark mode" in human and "* v2" in human
    assert run(root, "history", first["id"], "--show", "1").stdout == "User prefers dark mode\n"
    shown = json.loads(run(root, "history", first["id"], "--show", "1", "--json").stdout)
    assert shown["body"] == "User prefers dark mode\n" and shown["version"] == 1

    reverted = json.loads(run(root, "revert", first["id"], "--to", "1", "--json").stdout)
    assert reverted["version"] == 3 and reverted["id"] == first["id"]
    assert run(root, "history", first["id"], "--show", "3").stdout == "User prefers dark mode\n"
    missing = run(root, "history", first["id"], "--show", "7", "--json")
    assert missing.returncode == 3 and json.loads(missing.stdout)["error"] == "not_found"
    assert f"{first['id']} has no version 7: it is at v3" in json.loads(missing.stdout)["message"]
    for args in (("history", first["id"], "--show", "-1"), ("revert", first["id"], "--to", "0")):
        wrong = run(root, *args)  # no version is numbered below 1: a wrong number (exit 2), not a missing one
        assert wrong.returncode == 2 and "versions count from 1" in wrong.stderr and "Traceback" not in wrong.stderr
    # --json: the same subject by its title, however spelt; which version it replaced; not a refinement
    again = json.loads(run(root, "write", "The user wants light mode again", "--title", "ui  PREFERENCE!",
                           "--category", "preferences", "--json").stdout)
    assert {k: again[k] for k in ("id", "action", "version", "previous_version", "rule", "refines")} == {
        "id": first["id"], "action": "conflict", "version": 4, "previous_version": 3, "rule": "title",
        "refines": False}
    assert again["message"] == ('conflict detected with "UI preference" (same title): both versions kept, '
                                'current is v4')



def test_a_merge_under_another_title_says_how_to_keep_it_apart(root):
    first = json.loads(run(root, "write", "The user prefers dark mode (Dracula) in VS Code.", "--title", "Editor theme",
                           "--category", "preferences", "--tag", "editor", "--json").stdout)
    second = run(root, "write", "The user moved from Dracula to Solarized Light because of the glare.", "--title",
                 "Colour scheme", "--category", "preferences", "--tag", "editor")
    assert second.returncode == 0, second.stderr
    lines = second.stdout.splitlines()
    assert lines[0].startswith('conflict detected with "Editor theme"') and first["id"] in lines[0]
    assert lines[2] == "  another subject: revert, then write it again with --force (a separate entry under its own title)"

def test_duplicate_write_reports_the_existing_id(root):
    first = json.loads(run(root, "write", "We deploy on Fridays", "--title", "Deploy day", "--category", "ops",
                           "--json").stdout)
    again = json.loads(run(root, "write", "we deploy on fridays.", "--title", "Deploy day", "--category", "ops",
                           "--json").stdout)
    assert again["action"] == "duplicate" and again["id"] == first["id"]
    assert len(list((root / "ops").glob("*.md"))) == 2  # the entry and INDEX.md


def test_split_dry_run_split_and_merge(root):
    for n, created in enumerate(("2024-05-01", "2025-05-01")):
        w = run(root, "write", f"Entry {n} for the split", "--title", f"entry {n}", "--category", "projects",
                "--force", now=f"{created}T09:00:00Z")
        assert w.returncode == 0, w.stderr
    before = sorted(p.relative_to(root).as_posix() for p in (root / "projects").rglob("*.md"))
    dry = json.loads(run(root, "split", "projects", "--by", "year", "--dry-run", "--json").stdout)
    assert dry["moved"] == 2 and dry["dry_run"] is True
    assert sorted(p.relative_to(root).as_posix() for p in (root / "projects").rglob("*.md")) == before
    done = run(root, "split", "projects", "--by", "year")
    assert done.returncode == 0 and "moved 2 entries" in done.stdout
    assert (root / "projects" / "2024" / "entry-0.md").exists()
    merged = json.loads(run(root, "merge", "projects", "--json").stdout)
    assert merged["moved"] == 2
    assert sorted(p.relative_to(root).as_posix() for p in (root / "projects").rglob("*.md")) == before
    bad = run(root, "split", "projects", "--by", "colour")
    assert bad.returncode == 2 and "mem: error:" in bad.stderr


def test_import_builtin_twice(root, tmp_path):
    source = tmp_path / "MEMORY.md"
    source.write_text("# Memory\n\n## Editor\n\nUse vim.\n\n## Shell\n\nUse zsh.\n", encoding="utf-8")
    raw = source.read_bytes()
    first = json.loads(run(root, "import-builtin", str(source), "--json").stdout)
    assert len(first["created"]) == 2 and first["category"] == "imported/memory"
    second = run(root, "import-builtin", str(source))
    assert second.returncode == 0 and "0 new" in second.stdout and "2 unchanged" in second.stdout
    assert source.read_bytes() == raw
