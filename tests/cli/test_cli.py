"""The `mem` command as a user runs it: JSON shapes, stdin bodies, one-line errors, exit codes."""
import json
import os
import subprocess
import sys

import pytest


def run(root, *args, stdin=None):
    env = {**os.environ, "MEMSTRATA_HOME": str(root)}
    proc = subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=120)
    return proc


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "mem"
    assert run(r, "init").returncode == 0
    return r


@pytest.fixture(scope="module")
def refusing_root(tmp_path_factory):
    """One tree for the commands that are refused (they change nothing): one `mem init`, not one per case."""
    r = tmp_path_factory.mktemp("refusing") / "mem"
    assert run(r, "init").returncode == 0
    return r


def test_write_read_list_json_shapes(root):
    w = run(root, "write", "body text", "--title", "Alpha项目", "--category", "projects/web", "--tag", "web",
            "--tag", "react", "--importance", "0.8", "--json")
    assert w.returncode == 0, w.stderr
    written = json.loads(w.stdout)
    assert {"id", "path"} <= written.keys() and written["path"] == "projects/web/alpha项目.md"
    r = json.loads(run(root, "read", written["id"], "--json").stdout)
    assert {"id", "title", "body", "frontmatter"} <= r.keys() and r["frontmatter"]["tags"] == ["web", "react"]
    listing = json.loads(run(root, "list", "--category", "projects", "--json").stdout)
    assert listing["entries"][0].keys() >= {"id", "title", "category", "status", "tier", "path"}


def test_stdin_and_file_bodies(root, tmp_path):
    w = run(root, "write", "-", "--title", "From stdin", "--category", "meetings", "--json", stdin="piped body\n")
    entry = json.loads(run(root, "read", json.loads(w.stdout)["id"], "--json").stdout)
    assert entry["body"] == "piped body\n"
    f = tmp_path / "b.md"
    f.write_text("file body")
    w2 = run(root, "write", "--file", str(f), "--category", "meetings", "--json")
    assert json.loads(run(root, "read", json.loads(w2.stdout)["id"], "--json").stdout)["body"] == "file body\n"


@pytest.mark.parametrize("args,code", [
    (("read", "0123456789ab"), 3),
    (("write", "x", "--category", "../etc"), 2),
    (("write", "x", "--category", "/abs"), 2),
    (("list", "--tier", "lukewarm"), 2),
    (("config", "set", "trash_retention_days", "soon"), 2),
    (("config", "set", "hot_days", "-5"), 2),  # a negative value reaches the range check
    (("config", "set", "hot_days", "--", "-5"), 2),
    (("delete", "nope"), 3),
    (("restore", "nope"), 3),  # not in the trash: not found
])
def test_errors_are_one_line_with_exit_codes(refusing_root, args, code):
    proc = run(refusing_root, *args)
    assert proc.returncode == code
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith("mem: error:")


@pytest.mark.parametrize("args,stdin", [
    (("write", ""), None),
    (("write", "", "--title", "A title alone"), None),
    (("write", " \n\t ", "--title", "Whitespace only"), None),
    (("write", "-", "--title", "Empty stdin"), " \n"),
])
def test_write_refuses_empty_text(root, args, stdin):
    proc = run(root, *args, stdin=stdin)
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "mem: error: the text to remember is empty; give it as an argument, '-' for stdin, or --file F")
    assert json.loads(run(root, "list", "--json").stdout)["entries"] == []


def test_json_errors_are_json(root):
    proc = run(root, "read", "0123456789ab", "--json")
    assert json.loads(proc.stdout)["error"] == "not_found"


def test_usage_errors_exit_2_with_a_reason(root):
    proc = run(root, "list", "--no-such-option")
    assert proc.returncode == 2 and "No such option: --no-such-option" in proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert proc.stderr.startswith("mem: error: ") and len(proc.stderr.strip().splitlines()) == 1
    assert "(see `mem list --help`)" in proc.stderr
    for args in (["recal", "x"], ["write", "hi", "--titel", "x"], ["config", "get"], ["promote"],
                 ["list", "--since", "2026-13-45"], ["maintain", "--dry-run", "extra"]):
        other = run(root, *args)
        assert other.returncode == 2, args
        assert other.stderr.startswith("mem: error: ") and len(other.stderr.strip().splitlines()) == 1, other.stderr
    as_json = run(root, "list", "--no-such-option", "--json")
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["error"] == "usage"


def test_delete_restore_trash_cycle(root):
    w = json.loads(run(root, "write", "to delete", "--category", "tmp", "--json").stdout)
    assert run(root, "delete", w["id"]).returncode == 0
    assert json.loads(run(root, "trash", "list", "--json").stdout)["entries"][0]["id"] == w["id"]
    assert run(root, "restore", w["id"]).returncode == 0
    assert json.loads(run(root, "trash", "list", "--json").stdout)["count"] == 0


def test_help_has_examples():
    for args in ((), ("write",), ("list",), ("trash",)):
        proc = run("/nonexistent", *args, "--help")
        assert proc.returncode == 0 and ("Example" in proc.stdout or "Commands" in proc.stdout)


def test_an_update_that_changes_nothing_writes_nothing(root):
    w = json.loads(run(root, "write", "Replication lag is 2s.", "--title", "lag", "-c", "db", "--tag", "db",
                       "--json").stdout)
    path = root / w["path"]
    before = path.read_bytes()
    done = run(root, "update", w["id"], "--untag", "nosuchtag", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["action"] == "unchanged" and answer["version"] == w["version"]
    assert path.read_bytes() == before and not (root / ".versions").exists()
    assert "nothing to change" in run(root, "update", w["id"], "--tags", "db").stdout
    # an importance equal at the stored precision (4 decimals) changes nothing either
    same = json.loads(run(root, "update", w["id"], "-i", "0.50000001", "--json").stdout)
    assert same["action"] == "unchanged" and path.read_bytes() == before
    changed = json.loads(run(root, "update", w["id"], "--untag", "db", "--json").stdout)
    assert changed["action"] == "updated" and path.read_bytes() != before
    changed = json.loads(run(root, "update", w["id"], "-i", "0.80006", "--json").stdout)
    assert changed["action"] == "updated" and "importance: 0.8001" in path.read_text()


def test_read_ends_with_a_newline_and_counts_speak_english(root, tmp_path):
    note = root / "notes" / "hand.md"
    note.parent.mkdir(exist_ok=True)
    note.write_bytes(b"---\ntitle: Hand made\n---\n\nNo newline at the end")
    listing = json.loads(run(root, "list", "--json").stdout)["entries"]
    assert listing[0]["id"] == ""  # a read never writes: the id comes at `mem sync` (issue 25)
    shown = run(root, "read", listing[0]["path"])
    assert shown.returncode == 0 and shown.stdout.endswith("No newline at the end\n")
    assert note.read_bytes().endswith(b"No newline at the end")  # the file itself is left as it was
    exported = run(root, "export", "--jsonl", str(tmp_path / "out.jsonl"))
    assert exported.returncode == 0 and "exported 1 entry " in exported.stdout + " "
    nowhere = run(root, "export", "--jsonl", str(tmp_path / "no" / "such" / "out.jsonl"))
    assert nowhere.returncode == 2 and "is not a folder" in nowhere.stderr and not (tmp_path / "no").exists()



def test_autoload_with_nothing_to_load_says_so_on_a_line_of_its_own(root):
    """A context that names no topic loads nothing: the answer is one line, ended (the prompt came back
    on the same line)."""
    out = run(root, "autoload", "--context", "hello")
    assert out.returncode == 0 and out.stdout == "(no memories to load)\n", out
