"""`mem sync --remote` ends with every note given its id and the index matching the tree: after a run killed
(SIGKILL) at any step, and after hand edits committed with plain `git commit` (real git, real processes)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from team_scenario import env, plain_git_peer, two_clones  # noqa: E402

# A `git` first on PATH that runs the real one and then kills the calling `mem` process (its parent):
# after the sync's first local commit, right after its push, or after the fetch that follows the push.
WRAPPER = """#!/bin/sh
real="{real}"
case "$KILL_AT:$*" in
  commit:*"commit -q --no-verify -m memstrata: "*) "$real" "$@"; kill -9 $PPID; exit 137;;
  push:*"push -q"*) "$real" "$@"; kill -9 $PPID; exit 137;;
  fetched:*"push -q"*) "$real" "$@"; rc=$?; : > "$KILL_FLAG"; exit $rc;;
  fetched:*"fetch -q"*) if [ -f "$KILL_FLAG" ]; then "$real" "$@"; kill -9 $PPID; exit 137; fi;;
esac
exec "$real" "$@"
"""


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def _mem(*args, extra=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args, "--json"], capture_output=True,
                          text=True, env=env(**(extra or {})), timeout=300)


def _index_findings(root: Path, embedder) -> list[str]:
    from memstrata import Memory

    report = Memory(root, embedder=embedder).doctor()
    return [f.detail for f in report.problems if f.kind in ("vectors_rows", "vectors_missing")]


def _without_id(root: Path) -> list[str]:
    from memstrata.storage.codec import parse

    out = []
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".") or "/." in rel or path.name in ("INDEX.md", "config.md"):
            continue
        if not parse(path.read_text(encoding="utf-8")).id:
            out.append(rel)
    return out


@pytest.mark.parametrize("step", ["commit", "push", "fetched"])
def test_a_sync_killed_after_any_step_ends_in_step_at_the_next_run(tmp_path, embedder, step):
    """B has a new note and an edit made by hand; a peer without memstrata pushed a note without an id.
    B's `mem sync --remote` is killed after its first commit, right after its push, or after the fetch
    that follows the push: the next run gives every note its id and leaves the index matching the tree
    (a run that had nothing left to commit or pull indexed nothing: the hand-made note stayed unindexed)."""
    from memstrata import Memory

    a, b = two_clones(tmp_path, embedder)
    staging = a.write("Staging runs in Frankfurt since March.", title="Staging", category="projects")
    a.sync_remote()
    b.sync_remote()
    peer, git = plain_git_peer(tmp_path)
    (peer / "projects" / "ferry.md").write_text("---\ntitle: Ferry\n---\n\nThe ferry leaves Kiel at 07:15.\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "from a plain git clone"], check=True)
    subprocess.run([*git, "push", "-q", "origin", "HEAD"], check=True)
    edited = b.root / staging.path
    edited.write_text(edited.read_text().replace("Frankfurt since March", "Dublin since May"))
    (b.root / "projects" / "boat.md").write_text("---\ntitle: Boat\n---\n\nThe boat is moored in Stralsund.\n")
    del b

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "git").write_text(WRAPPER.format(real=shutil.which("git")))
    (bindir / "git").chmod(0o755)
    killed = _mem("sync", "--remote", "--root", str(tmp_path / "b"),
                  extra={"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "KILL_AT": step,
                         "KILL_FLAG": str(tmp_path / "pushed"), "MEMSTRATA_MACHINE": "B"})
    assert killed.returncode == -9, (killed.returncode, killed.stderr)

    again = _mem("sync", "--remote", "--root", str(tmp_path / "b"), extra={"MEMSTRATA_MACHINE": "B"})
    assert again.returncode == 0, again.stderr
    assert "index" in json.loads(again.stdout)  # the run that finds the index behind brings it in step
    root = tmp_path / "b"
    assert _without_id(root) == []
    assert _index_findings(root, embedder) == []
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True,
                            check=True).stdout
    assert status == ""
    m = Memory(root, embedder=embedder)
    for question, title in (("where is the boat moored?", "Boat"), ("when does the ferry leave Kiel?", "Ferry"),
                            ("where does staging run now?", "Staging")):
        hit = m.recall(question, k=1).results[0]
        assert hit.title == title, (question, hit.title)
    assert "Dublin since May" in m.recall("where does staging run now?", k=1).results[0].snippet


def test_hand_edits_committed_with_plain_git_are_indexed_by_the_remote_sync(tmp_path, embedder):
    """Edits committed by hand (`git commit` in the tree) before `mem sync --remote`: the sync has nothing
    to commit and nothing to pull, and still leaves the index matching the tree (recall finds the new text)."""
    from memstrata import Memory

    a, b = two_clones(tmp_path, embedder)
    lunch = a.write("Lunch is served at noon in the canteen.", title="Lunch", category="office")
    a.sync_remote()
    b.sync_remote()
    a.sync_remote()  # nothing left to pull at A's next round
    root = a.root
    path = root / lunch.path
    path.write_text(path.read_text().replace("at noon in the canteen", "at 13:30 on the roof terrace"))
    git = ["git", "-C", str(root), "-c", "user.name=a", "-c", "user.email=a@x"]
    subprocess.run([*git, "commit", "-qam", "lunch moved"], check=True)
    del a

    done = _mem("sync", "--remote", "--root", str(root), extra={"MEMSTRATA_MACHINE": "A"})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["pushed"] and result["committed"] == [] and result["pulled"] == 0
    assert _index_findings(root, embedder) == []
    hit = Memory(root, embedder=embedder).recall("where is lunch served?", k=1).results[0]
    assert "roof terrace" in hit.snippet
