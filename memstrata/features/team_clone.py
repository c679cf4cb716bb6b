"""`mem init --clone`: a tree made from the team's remote, with the modes its kind of tree has, and the paths it leaves out."""
from __future__ import annotations

from pathlib import Path

from memstrata.errors import InvalidInput
from memstrata.features.gitrepo import Git
from memstrata.storage import layout, modes


def clone(git: Git, url: str, machine: str | None = None) -> dict:
    """Make `git.root` from a remote (`git clone URL root`); the caller then runs init and sync."""
    root = Path(git.root)
    if root.exists() and any(root.iterdir()):
        raise InvalidInput(f"{root} exists and is not empty; --clone needs a new folder")
    root.parent.mkdir(parents=True, exist_ok=True)  # the network limits: their defaults (no config.md yet)
    listed = git.run("ls-remote", "--symref", url, cwd=root.parent).stdout
    branch = branch_to_clone(listed)  # git's own choice follows the remote's HEAD, even to a missing branch
    git.run("clone", "-q", "--no-checkout", *(["--branch", branch] if branch else []), url, str(root),
            cwd=root.parent)
    # an adopted vault's files are the user's: checked out with their umask, as `git clone` would;
    # only its `.memstrata/` is private. The engine's own tree is private from the root down.
    vault = git.run("cat-file", "-e", f"HEAD:{layout.ENGINE_HOME}/config.md", check=False).returncode == 0
    git.users_modes = vault
    root.chmod(modes.new_folder_mode() if vault else 0o700)
    if machine:
        git.run("config", "memstrata.machine", machine)
    result = {"cloned": url, "root": str(root), "head": git.head(), "skipped": [], "warnings": []}
    if result["head"]:  # checked out here, without the names this file system cannot hold
        git.protect_merges()  # and with no pushed attribute changing the bytes written
        leave_out(git, git.unwritable([p for _, p in git.changed(None, "HEAD")]),
                  "name too long for this file system", result)
        git.run("read-tree", "-mu", "HEAD")
    if vault:
        # git cloned under the engine's umask 077 before the marker told a vault: its `.git/` is the
        # user's too, as their own clone's would be (objects 0444, folders 0755 under umask 022)
        modes.follow_umask(git.git_dir())
        if (root / layout.ENGINE_HOME).is_dir():
            (root / layout.ENGINE_HOME).chmod(0o700)
    return result


def leave_out(git: Git, paths: list[str], why: str, result: dict) -> None:
    """Paths of the remote this clone cannot write: left out of its working tree (still in git,
    pushed on unchanged), reported; one bad name never stops the clone or a sync."""
    if not paths:
        return
    git.skip_paths(paths)
    for path in paths:
        result["skipped"].append({"path": path, "why": why})
        result["warnings"].append(f"{path[:80]}{'...' if len(path) > 80 else ''}: {why}; left out of this tree")


def branch_to_clone(ls_remote: str) -> str | None:
    """The branch `mem init --clone` takes, from `git ls-remote --symref`: None (git's choice) when the
    remote's HEAD names a branch it has, or it has none; its only branch when HEAD names a missing one
    (`git init --bare` points HEAD at `master`, the team pushed `main`: git would give an empty tree and
    a later push an unrelated `master`); InvalidInput naming them when it has several."""
    refs = {name for sha, _, name in (line.partition("\t") for line in ls_remote.splitlines())
            if name and not sha.startswith("ref:")}
    if "HEAD" in refs:
        return None
    heads = sorted(name[len("refs/heads/"):] for name in refs if name.startswith("refs/heads/"))
    if len(heads) > 1:
        raise InvalidInput(f"the remote's HEAD names no branch it has, and it has several ({', '.join(heads)}); "
                           f"point its HEAD at the team's (git symbolic-ref HEAD refs/heads/NAME in the remote)")
    return heads[0] if heads else None
