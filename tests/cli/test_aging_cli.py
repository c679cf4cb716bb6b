"""`mem weight / maintain / compress / decompress / review` as a user runs them: JSON shapes, exit codes."""
import json
import os
import subprocess
import sys

import pytest

BODY = ("We chose Postgres for alpha. Transactions matter most to us. MySQL lost because of replication. "
        "Alice owns the schema. Backups run nightly. We revisit it if costs grow. "
        "The staging cluster in eu-west runs the same major version as production does. "
        "Bob moves the billing data over in March, after the quarterly release has shipped. "
        "The NAS keeps thirty days of nightly backups and a monthly copy goes off site. "
        "Finance reviews the hosting costs every quarter against the budget agreed in January. "
        "Read replicas are added only when the dashboard shows lag above two seconds.\n")
# (long enough that its five key points and the note are smaller than it: a compression that
# would make an entry larger is skipped)


def run(root, *args, now="2026-01-01T09:00:00Z"):
    env = {**os.environ, "MEMSTRATA_HOME": str(root), "MEMSTRATA_NOW": now}
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args], capture_output=True, text=True,
                          env=env, timeout=180)


def js(proc):
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("aging") / "mem"
    assert run(root, "init").returncode == 0
    entry_id = js(run(root, "write", BODY, "--title", "DB choice", "--category", "projects", "--tag", "db",
                      "--json"))["id"]
    return root, entry_id


def test_weight_json(tree):
    root, entry_id = tree
    for outside in ("5", "0.2", "nan"):  # the help says 0.5-1.5: refused, not clamped
        refused = run(root, "weight", entry_id, "--context-correlation", outside, "--update", now="2026-01-08T09:00:00Z")
        assert refused.returncode == 2 and "outside 0.5-1.5" in refused.stderr, refused.stderr
    data = js(run(root, "weight", entry_id, "--context-correlation", "1.2", "--json", now="2026-01-08T09:00:00Z"))
    assert {"weight", "importance_factor", "importance_label", "days", "decay", "access_count", "access_term",
            "context_correlation", "updated"} <= data.keys()
    assert data["days"] == 7 and data["context_correlation"] == 1.2 and data["updated"] is False
    human = run(root, "weight", entry_id, now="2026-01-08T09:00:00Z").stdout  # never read: ln(2), said why
    assert "(0 accesses, the write counts as 1)" in human


def test_maintain_dry_run_compress_and_decompress(tree):
    root, entry_id = tree
    later = "2026-01-20T09:00:00Z"
    dry = js(run(root, "maintain", "--dry-run", "--json", now=later))
    assert dry["dry_run"] is True and dry["counts"] == {"retier": 1, "compress": 1}
    change = dry["changes"][0]
    assert {"id", "title", "path", "new_path", "actions", "tier", "layer", "status", "change", "reason"} <= change.keys()
    assert change["tier"] == ["hot", "warm"] and change["layer"] == ["L0", "L1"]
    real = js(run(root, "compress", "--json", now=later))  # the alias
    assert real["dry_run"] is False and [c["actions"] for c in real["changes"]] == [["retier", "compress"]]
    again = run(root, "maintain", now=later)
    assert again.returncode == 0 and "nothing" in again.stdout
    shown = js(run(root, "decompress", entry_id, "--show", "--json", now=later))
    assert shown["body"] == BODY and shown["layer"] == "L1" and shown["compressed"] is True
    plain = run(root, "decompress", entry_id, "--show", now=later)
    assert plain.stdout == BODY
    bad = run(root, "decompress", entry_id, now=later)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("mem: error:") and len(bad.stderr.splitlines()) == 1
    restored = js(run(root, "decompress", entry_id, "--restore", "--json", now=later))
    assert restored["restored"] is True and restored["layer"] == "L0" and restored["tier"] == "hot"
    text = (root / restored["path"]).read_text(encoding="utf-8")
    assert text.split("\n---\n", 1)[1].lstrip("\n") == BODY


def test_review_commands(tree):
    root, entry_id = tree
    marked = js(run(root, "review", "mark", entry_id, "reviewed", "--json"))
    assert marked["review_status"] == "reviewed" and marked["next_review"] == "2026-01-02T09:00:00Z"
    due = js(run(root, "review", "due", "--json", now="2026-01-03T09:00:00Z"))
    assert due["count"] == 1 and due["entries"][0]["id"] == entry_id and "next_review" in due["entries"][0]
    listed = js(run(root, "review", "list", "reviewed", "--json"))
    assert [e["id"] for e in listed["entries"]] == [entry_id]
    stats = js(run(root, "review", "stats", "--json"))
    assert stats["statuses"]["reviewed"] == 1 and {"tracked", "due"} <= stats.keys()
    bad = run(root, "review", "mark", entry_id, "finished", "--json")
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"] == "invalid_input"
    missing = run(root, "weight", "nosuchid0000")
    assert missing.returncode == 3 and missing.stderr.startswith("mem: error:")


def test_maintain_says_it_wrote_the_reads_into_entries(tmp_path):
    root = tmp_path / "mem"
    assert run(root, "init").returncode == 0
    entry_id = js(run(root, "write", "Postgres for billing", "--category", "projects", "--json"))["id"]
    assert run(root, "read", entry_id).returncode == 0  # an access: a journal line, not yet in the file
    before = (root / "projects" / "postgres-for-billing.md").read_text()
    dry = run(root, "maintain", "--dry-run")
    assert dry.stdout.strip().splitlines()[-1] == (
        "would change: reads and loads to write into the frontmatter of 1 entry "
        "(last_access, access_count, weight; from the access journal) (dry run: nothing written)")
    out = run(root, "maintain")
    assert out.returncode == 0 and "nothing" not in out.stdout and "(nothing)" not in out.stdout
    assert out.stdout.strip().splitlines()[-1] == (
        "changed: reads and loads written into the frontmatter of 1 entry "
        "(last_access, access_count, weight; from the access journal)")
    assert (root / "projects" / "postgres-for-billing.md").read_text() != before  # it did write
    assert run(root, "maintain").stdout.strip() == "changed: nothing"
