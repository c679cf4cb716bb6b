"""A team sync that was killed half-way: its interrupted merge, rebase or commit found and undone, so the sync starts over."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from memstrata.features.gitrepo import TRAILER_MACHINE, Git
from memstrata.storage.atomic import atomic_write_bytes
from memstrata.storage.modes import vault_file_mode

SAVED_REF = "refs/memstrata/interrupted"  # the working tree as it was found, kept reachable for the user
LOCK_STALE_SECONDS = 5.0  # a git lock file this old with no git running is a killed git's
_OPERATIONS = {"MERGE_HEAD": "merge", "CHERRY_PICK_HEAD": "cherry-pick", "REVERT_HEAD": "revert",
               "rebase-merge": "rebase", "rebase-apply": "rebase"}


def interrupted(git: Git) -> list[str]:
    """What a killed git left in this clone: 'merge', 'rebase', 'cherry-pick', 'revert', 'conflicts'."""
    gitdir = git.git_dir()
    found = [name for marker, name in _OPERATIONS.items() if (gitdir / marker).exists()]
    if not found and git.unmerged():
        found.append("conflicts")
    return sorted(set(found))


def clear_stale_locks(git: Git) -> list[str]:
    """Remove the lock files a killed git left (index, HEAD, the branch ref), once they are
    LOCK_STALE_SECONDS old: a live git holds them for far less. Returns what was removed."""
    gitdir = git.git_dir()
    branch = git.branch()
    removed = []
    for rel in ("index.lock", "HEAD.lock", "ORIG_HEAD.lock", "MERGE_HEAD.lock", f"refs/heads/{branch}.lock"):
        lock = gitdir / rel
        deadline = time.monotonic() + LOCK_STALE_SECONDS
        while lock.exists():
            try:
                age = time.time() - lock.stat().st_mtime
            except FileNotFoundError:
                break
            if age >= LOCK_STALE_SECONDS or time.monotonic() >= deadline:
                lock.unlink(missing_ok=True)
                removed.append(rel)
                break
            time.sleep(0.1)
    return removed


def recover(git: Git, root: Path, machine: str) -> dict | None:
    """Undo an interrupted merge, rebase, cherry-pick or conflicted index so the sync starts over.

    A killed sync's merge is never completed as it stands (that would commit this side's text of
    every conflicted entry and make the other side's commit an ancestor: its edit gone). Instead:
    the working tree is saved as a commit under refs/memstrata/interrupted (with HEAD and the
    other side as parents), the operation is aborted, and what was written into the working tree
    but not staged by the operation (an edit made after the kill) is put back. The caller then
    commits, fetches and merges again with the team rules."""
    found = interrupted(git)
    if not found:
        return None
    root = Path(root)
    gitdir = git.git_dir()
    others = [h for h in ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD") if (gitdir / h).exists()]
    staged = _index_blobs(git)
    unmerged = set(git.unmerged())  # the operation's own paths: their texts are in the commits
    saved_tree = _working_tree(git)
    parents = [rev for rev in ("HEAD", *others) if git.ref_exists(rev)]
    message = f"memstrata: working tree of an interrupted {', '.join(found)}\n\n{TRAILER_MACHINE}: {machine}\n"
    args = [a for rev in parents for a in ("-p", git.out("rev-parse", rev))]
    saved = git.out("commit-tree", saved_tree, *args, "-m", message)
    git.run("update-ref", "--create-reflog", "-m", "interrupted sync", SAVED_REF, saved)  # earlier ones: its reflog
    if "rebase" in found:
        git.run("rebase", "--abort", check=False)
    for op in ("cherry-pick", "revert"):
        if op in found:
            git.run(op, "--abort", check=False)
    git.run("reset", "-q", "--hard", "HEAD")  # the merge (and whatever an abort left) is undone
    for name in ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE"):
        (gitdir / name).unlink(missing_ok=True)
    restored = _put_back_local_edits(git, root, saved_tree, staged, unmerged)
    return {"interrupted": found, "saved": saved, "restored": restored}


def _index_blobs(git: Git) -> dict[str, str]:
    """path -> blob of every stage-0 entry of the index (what the interrupted operation staged)."""
    out = {}
    for item in git.run("ls-files", "-s", "-z").stdout.split("\0"):
        if not item or "\t" not in item:
            continue
        info, path = item.split("\t", 1)
        _, blob, stage = info.split()
        if stage == "0":
            out[path] = blob
    return out


def _tree_blobs(git: Git, rev: str) -> dict[str, str]:
    out = {}
    for item in git.run("ls-tree", "-r", "-z", rev, check=False).stdout.split("\0"):
        if not item or "\t" not in item:
            continue
        info, path = item.split("\t", 1)
        out[path] = info.split()[2]
    return out


def _working_tree(git: Git) -> str:
    """The working tree (what .gitignore keeps out excepted) as a tree object, through a private index."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if git.head():
            git.run("read-tree", "HEAD", env=env)
        git.run("add", "-A", env=env)
        return git.out("write-tree", env=env)


def _put_back_local_edits(git: Git, root: Path, saved_tree: str, staged: dict[str, str],
                          unmerged: set[str]) -> list[str]:
    """Files of the saved tree that differ from HEAD and that the interrupted operation neither
    staged nor left unmerged (a rebase leaves the other side's text in a conflicted file):
    written by someone after it stopped, so they are kept."""
    head = _tree_blobs(git, "HEAD") if git.head() else {}
    restored = []
    for path, blob in _tree_blobs(git, saved_tree).items():
        if head.get(path) == blob or staged.get(path) == blob or path in unmerged:
            continue
        target = root / path
        data = git.run_bytes("cat-file", "blob", blob)
        if target.is_file() and target.read_bytes() == data:
            continue  # untracked: the reset left it as it was
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, data, root=root, mode=vault_file_mode(root, path))  # a vault's: the user's mode
        restored.append(path)
    return restored

