"""What a new user meets first: adopt refusals, bare command groups, checked filters, named unreadable
files, the tree never chosen by the cwd, a talking setup script and the demo run twice."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def mem(*args, cwd=None, env=None, root=None):
    full = {**os.environ, **(env or {})}
    if root is not None:
        full["MEMSTRATA_HOME"] = str(root)
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args], capture_output=True, text=True,
                          env=full, cwd=cwd, timeout=180)


def one_line_error(proc, code):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.startswith("mem: error: ") and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    """An adopted vault of three notes, one in a subfolder."""
    v = tmp_path_factory.mktemp("vault") / "notes"
    (v / "git").mkdir(parents=True)
    (v / "Welcome.md").write_text("# Welcome\n\nThis vault keeps what I learn.\n")
    (v / "git" / "rebase.md").write_text("# Interactive rebase\n\nUse git rebase -i to squash commits before a merge.\n")
    (v / "git" / "bisect.md").write_text("# Bisect\n\ngit bisect finds the commit that broke the build.\n")
    done = mem("init", "--adopt", "--root", str(v))
    assert done.returncode == 0, done.stderr
    return v


def test_adopt_refuses_a_missing_folder_or_one_without_notes(tmp_path):
    missing = tmp_path / "does-not-exist"
    proc = mem("init", "--adopt", "--root", str(missing))
    one_line_error(proc, 3)
    assert "does not exist" in proc.stderr and not missing.exists()
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "sub" / "a.txt").write_text("not a note")
    proc = mem("init", "--adopt", "--root", str(empty), "--json")
    one_line_error(proc, 2)
    assert "holds no Markdown notes" in json.loads(proc.stdout)["message"]
    assert sorted(p.name for p in empty.iterdir()) == ["sub"]  # nothing created
    assert mem("init", "--root", str(empty)).returncode == 0  # without --adopt: an empty tree, as the error says


@pytest.mark.parametrize("group", [(), ("config",), ("review",), ("index",)])
def test_a_bare_group_prints_its_help(group):
    proc = mem(*group, root="/nonexistent")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("Usage: mem") and "Commands:" in proc.stdout and len(proc.stdout.splitlines()) > 5


def test_a_bare_trash_lists_it(tmp_path):
    root = tmp_path / "mem"
    assert mem("init", root=root).returncode == 0
    written = json.loads(mem("write", "to forget", "--category", "tmp", "--json", root=root).stdout)
    assert mem("delete", written["id"], root=root).returncode == 0
    listed = mem("trash", root=root)
    assert listed.returncode == 0 and written["id"] in listed.stdout, listed.stderr
    assert json.loads(mem("trash", "--json", root=root).stdout)["entries"][0]["id"] == written["id"]


def test_tier_and_category_filters_are_checked(vault):
    for args in (("recall", "rebase", "--tier", "lukewarm"), ("list", "--tier", "lukewarm"),
                 ("recall", "rebase", "--status", "asleep")):
        one_line_error(mem(*args, root=vault), 2)
    for args in (("recall", "rebase", "--category", "nosuchcat"), ("list", "--category", "nosuchcat")):
        proc = mem(*args, root=vault)
        one_line_error(proc, 3)
        assert "no category 'nosuchcat'" in proc.stderr
    found = mem("recall", "squash commits", "--category", "git", "--json", root=vault)
    assert found.returncode == 0 and json.loads(found.stdout)["results"][0]["path"] == "git/rebase.md"


def test_a_category_only_this_tree_has_is_recalled_with_the_shared_root(tmp_path, vault):
    shared = tmp_path / "shared"
    assert mem("init", root=shared).returncode == 0
    proc = mem("recall", "squash commits", "--category", "git", "--include-shared", "--json", root=vault,
               env={"MEMSTRATA_SHARED": str(shared)})
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert answer["results"][0]["path"] == "git/rebase.md"
    assert f"the shared root {shared} has no category 'git'" in answer["notes"]


def test_a_starter_category_without_entries_exists(tmp_path):
    root = tmp_path / "mem"
    assert mem("init", root=root).returncode == 0
    proc = mem("list", "--category", "meetings", "--json", root=root)
    assert proc.returncode == 0 and json.loads(proc.stdout)["count"] == 0


def test_sync_names_unreadable_files_and_doctor_hints_per_cause(tmp_path, vault):
    v = tmp_path / "v"
    shutil.copytree(vault, v)
    (v / "git" / "latin.md").write_bytes("---\ntitle: café\n---\nLatin-1 café\n".encode("latin-1"))
    (v / "git" / "badyaml.md").write_text("---\ntitle: [broken\n---\nbody\n")
    proc = mem("sync", root=v)
    assert proc.returncode == 0, proc.stderr
    assert "2 unreadable" in proc.stdout and "git/badyaml.md, git/latin.md" in proc.stdout
    assert "git/latin.md: not UTF-8 text; save it as UTF-8" in proc.stderr
    assert "git/badyaml.md: malformed YAML frontmatter" in proc.stderr and "fix its frontmatter" in proc.stderr
    doctor = mem("doctor", "--json", root=v)
    said = {f["path"]: f["detail"] for f in json.loads(doctor.stdout)["findings"] if f["kind"] == "unparseable"}
    assert "save it as UTF-8" in said["git/latin.md"] and "YAML" not in said["git/latin.md"]
    assert "fix its frontmatter" in said["git/badyaml.md"]


def test_the_current_directory_never_chooses_the_tree(tmp_path, vault):
    """Run inside an adopted vault (or a cloned repository holding a .memstrata/) without --root, a
    command still uses ~/memory: a tree found from the cwd took a user's memories into a stranger's repo."""
    env = {k: v for k, v in os.environ.items() if k != "MEMSTRATA_HOME"}
    env["HOME"] = str(tmp_path / "home")
    inside = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "write", "my private plan", "--title", "plan"],
                            capture_output=True, text=True, env=env, cwd=vault / "git", timeout=180)
    one_line_error(inside, 3)
    assert f"no memory tree at {tmp_path / 'home' / 'memory'}" in inside.stderr
    assert not any("plan" in p.name for p in vault.rglob("*.md"))
    named = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "list", "--json", "--root", str(vault)],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180)
    assert named.returncode == 0 and {e["path"] for e in json.loads(named.stdout)["entries"]} >= {"git/rebase.md"}


def test_setup_script_says_when_it_installs_and_only_then(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    # pip stands in for itself here (the real one downloads torch): it records what it was asked
    for name in ("python", "pip"):
        (bin_dir / name).write_text(f"#!/bin/sh\necho {name} \"$@\" >> \"$(dirname \"$0\")/calls\"\n")
        (bin_dir / name).chmod(0o755)
    first = subprocess.run(["bash", "scripts/setup.sh"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == ["setting up .venv (torch CPU build and dependencies; a few minutes the "
                                         "first time)", ".venv is ready"]
    assert "torch==" in (bin_dir / "calls").read_text()
    again = subprocess.run(["bash", "scripts/setup.sh"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stdout == "" and again.stderr == ""


def test_the_demo_run_twice_says_so_and_what_to_try(tmp_path):
    env = {**os.environ, "MEMSTRATA_HOME": str(tmp_path / "demo-memory")}
    runs = [subprocess.run([sys.executable, "-m", "memstrata.demo"], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=180) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr + runs[1].stderr
    first, second = (r.stdout for r in runs)
    assert first.count("\nwrote ") == 4 and "wrote " not in second
    assert "sample memories are already there" in second
    assert ". .venv/bin/activate" in second and "mem recall" in second and "--root ./demo-memory" in second
    answer = second.split("recall  'which database did we pick for alpha?'")[1].split("\n\n")[0]
    assert "Alpha database choice" in answer and "部署流程" not in answer  # the deployment note is no answer
    assert "nothing relevant" in second.split("capital of France")[1]
