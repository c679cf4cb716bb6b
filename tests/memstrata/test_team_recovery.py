"""A real `mem sync --remote` killed (SIGKILL) at each step of a conflicted merge: the next sync keeps both sides' edits."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from team_scenario import env, two_clones  # noqa: E402

# A `git` first on PATH that runs the real one and then kills the calling `mem` process (its
# parent) at one step of the merge; at "commit" it dies holding the index lock, as a git killed
# while writing the commit does.
WRAPPER = """#!/bin/sh
real="{real}"
gitdir="$PWD/.git"
case "$KILL_AT:$*" in
  merge:*"merge -q --no-commit"*) "$real" "$@"; kill -9 $PPID; exit 137;;
  resolve:*"add -- "*) if [ -f "$gitdir/MERGE_HEAD" ]; then "$real" "$@"; kill -9 $PPID; exit 137; fi;;
  resolved:*"add -A"*) if [ -f "$gitdir/MERGE_HEAD" ]; then "$real" "$@"; kill -9 $PPID; exit 137; fi;;
  commit:*"commit -q"*) if [ -f "$gitdir/MERGE_HEAD" ]; then : > "$gitdir/index.lock"; kill -9 $PPID; exit 137; fi;;
esac
exec "$real" "$@"
"""


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def _mem(*args, extra=None, check=True):
    done = subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args, "--json"], capture_output=True,
                          text=True, env=env(**(extra or {})), timeout=300)
    if check:
        assert done.returncode == 0, (args, done.stderr)
    return done


def _texts(root: Path) -> str:
    """Every entry and kept version of a tree, as one text."""
    return "\n".join(p.read_text() for p in root.rglob("*.md") if ".git" not in p.parts)


@pytest.mark.parametrize("step", ["merge", "resolve", "resolved", "commit"])
def test_a_sync_killed_at_each_step_of_a_conflicted_merge_loses_no_pushed_edit(tmp_path, embedder, step):
    from memstrata import Memory

    a, b = two_clones(tmp_path, embedder)
    standup = a.write("The standup is at 09:30 in room 4.", title="Standup", category="meetings")
    other = a.write("Deploys happen on Tuesdays.", title="Deploys", category="ops")
    a.sync_remote()
    b.sync_remote()
    b.update(standup.id, "The standup moved to 10:00 in room 7 (B's edit).")
    b.update(other.id, "Deploys happen on Tuesdays and Thursdays (B's edit).")
    new = b.write("The on-call rota changes on Mondays.", title="Rota", category="ops")
    assert b.sync_remote()["pushed"]
    a.update(standup.id, "The standup is now held online at 09:45 (A's edit).")
    del a

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "git").write_text(WRAPPER.format(real=shutil.which("git")))
    (bindir / "git").chmod(0o755)
    killed = _mem("sync", "--remote", "--root", str(tmp_path / "a"), check=False,
                  extra={"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "KILL_AT": step, "MEMSTRATA_MACHINE": "A"})
    assert killed.returncode == -9, (killed.returncode, killed.stderr)
    gitdir = tmp_path / "a" / ".git"
    assert (gitdir / "MERGE_HEAD").exists()  # killed in the middle of the merge
    assert (gitdir / "index.lock").exists() == (step == "commit")

    again = json.loads(_mem("sync", "--remote", "--root", str(tmp_path / "a"), extra={"MEMSTRATA_MACHINE": "A"}).stdout)
    b.sync_remote()
    for root in (tmp_path / "a", tmp_path / "b"):
        texts = _texts(root)
        for edit in ("10:00 in room 7 (B's edit)", "online at 09:45 (A's edit)",
                     "Tuesdays and Thursdays (B's edit)", "rota changes on Mondays"):
            assert edit in texts, (root.name, edit)
    assert again["pushed"] and again["recovered"], again
    assert [c["kind"] for c in again["conflicts"]] == ["conflict"], again["conflicts"]
    assert not (gitdir / "MERGE_HEAD").exists()
    a = Memory(tmp_path / "a", embedder=embedder)
    history = a.history(standup.id)
    assert len(history) == 3  # written, B's edit kept as a version, A's edit current (or the other way round)
    assert a.read(new.id, count_access=False).body.strip() == "The on-call rota changes on Mondays."
    assert a.doctor().findings == []
    status = subprocess.run(["git", "-C", str(tmp_path / "a"), "status", "--porcelain"], capture_output=True,
                            text=True, check=True).stdout
    assert status == ""


def test_an_edit_written_after_the_kill_is_kept(tmp_path, embedder):
    """An entry updated between the killed sync and the next one is not reset with the merge."""
    a, b = two_clones(tmp_path, embedder)
    one = a.write("Lunch is at noon.", title="Lunch", category="misc")
    two = a.write("The printer is on floor 2.", title="Printer", category="misc")
    a.sync_remote()
    b.sync_remote()
    b.update(one.id, "Lunch is at 12:30 (B).")
    b.sync_remote()
    a.update(one.id, "Lunch is at 13:00 (A).")
    git = ["git", "-C", str(tmp_path / "a")]
    # what a killed sync leaves: its local commit, then `git merge --no-commit` stopped with a conflict
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "-c", "user.name=a", "-c", "user.email=a@x", "commit", "-qm", "local"], check=True)
    subprocess.run([*git, "fetch", "-q", "origin"], check=True)
    branch = subprocess.run([*git, "symbolic-ref", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    subprocess.run([*git, "merge", "-q", "--no-commit", "--no-ff", f"origin/{branch}"], capture_output=True)
    assert (tmp_path / "a" / ".git" / "MERGE_HEAD").exists()
    (tmp_path / "a" / two.path).write_text((tmp_path / "a" / two.path).read_text().replace("floor 2", "floor 3"))
    a.sync_remote()
    texts = _texts(tmp_path / "a")
    assert "floor 3" in texts and "12:30 (B)" in texts and "13:00 (A)" in texts


def test_a_rebase_stopped_by_a_conflict_is_undone_and_merged_with_the_rules(tmp_path, embedder):
    """Someone ran `git pull --rebase` by hand in the tree and it stopped on a conflict: the next sync
    aborts it and keeps both sides' texts (one current, one kept version)."""
    a, b = two_clones(tmp_path, embedder)
    one = a.write("The fire drill is in May.", title="Fire drill", category="misc")
    a.sync_remote()
    b.sync_remote()
    b.update(one.id, "The fire drill is on 3 June (B).")
    b.sync_remote()
    a.update(one.id, "The fire drill is on 10 June (A).")
    git = ["git", "-C", str(tmp_path / "a"), "-c", "user.name=a", "-c", "user.email=a@x"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "local"], check=True)
    subprocess.run([*git, "pull", "-q", "--rebase", "origin"], capture_output=True)
    gitdir = tmp_path / "a" / ".git"
    assert (gitdir / "rebase-merge").exists() or (gitdir / "rebase-apply").exists()
    result = a.sync_remote()
    assert result["recovered"] and result["recovered"][0]["interrupted"] == ["rebase"]
    b.sync_remote()
    for root in (tmp_path / "a", tmp_path / "b"):
        texts = _texts(root)
        assert "3 June (B)" in texts and "10 June (A)" in texts, root.name
    assert len(a.history(one.id)) == 3
