"""The modes of the user's files in an adopted vault: what their umask gives, and a file's mode kept across a rewrite."""
from __future__ import annotations

import os
import stat
from pathlib import Path


# `mem` runs with umask 077 (the engine's files are private); the umask the user ran it with is kept
# here, in the environment the warm service gives each call too
USER_UMASK_ENV = "MEMSTRATA_USER_UMASK"


def current_umask() -> int:
    """The user's umask: the one `mem` was started with, else this thread's (the warm service gives
    each call its caller's), read without changing it where Linux shows it; else set and set back."""
    try:
        return int(os.environ[USER_UMASK_ENV], 8) & 0o777
    except (KeyError, ValueError):
        pass
    try:
        with open("/proc/thread-self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def new_file_mode(umask: int | None = None) -> int:
    """The mode git (or any editor) gives a new file under `umask`: 0644 under 022."""
    return 0o666 & ~(current_umask() if umask is None else umask)


def new_folder_mode(umask: int | None = None) -> int:
    return 0o777 & ~(current_umask() if umask is None else umask)


def mode_of(path: Path) -> int | None:
    """A regular file's permission bits (None: missing, or not a plain file)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def vault_file_mode(root: Path, rel: str) -> int | None:
    """The mode for an engine rewrite of `rel`: in an adopted vault, outside `.memstrata/`, the file's
    own mode, or for a new file the umask's; None (the engine's private default) anywhere else."""
    from memstrata.storage import layout

    if not layout.is_adopted(root) or rel == layout.ENGINE_HOME or rel.startswith(layout.ENGINE_HOME + "/"):
        return None
    found = mode_of(Path(root) / rel)
    return new_file_mode() if found is None else found


def make_user_folders(root: Path, rel_folder: str) -> None:
    """The missing folders of `rel_folder` (a vault's, outside `.memstrata/`) made with the umask's
    mode, as the user's editor would make them (atomic.ensure_dir makes the engine's 0700)."""
    from memstrata.storage import layout

    if not layout.is_adopted(root) or rel_folder.split("/")[0] == layout.ENGINE_HOME:
        return
    level = Path(root)
    for part in [p for p in rel_folder.split("/") if p]:
        level = level / part
        try:
            level.mkdir()
        except FileExistsError:
            continue
        os.chmod(level, new_folder_mode())  # mkdir's mode passes through the process umask (077 in `mem`)


def modes_of(root: Path, rels) -> dict[str, int]:
    """{relative path: mode} of those of `rels` that are plain files now (before git rewrites them)."""
    out = {}
    for rel in rels:
        found = mode_of(Path(root) / rel)
        if found is not None:
            out[rel] = found
    return out


def to_put_back(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The files whose mode a rewrite changed: {path: the mode to give back}. A file git or the engine
    replaced (new inode, the umask's mode) gets back the mode its owner gave it. Git tracks only the
    owner's execute bit: a pulled `chmod +x` (or -x) is the team's, given to whoever may read it."""
    out = {}
    for rel, was in before.items():
        if rel not in after:
            continue
        now = after[rel]
        if (was & 0o100) == (now & 0o100):
            wanted = was
        elif now & 0o100:
            wanted = was | ((was & 0o444) >> 2)  # made executable: x where r
        else:
            wanted = was & ~0o111
        if wanted != now:
            out[rel] = wanted
    return out


def put_back(root: Path, before: dict[str, int]) -> list[str]:
    """chmod back every file of `before` whose mode changed meanwhile (never a link: lstat'ed plain
    files only, and not one hard-linked elsewhere); the paths changed."""
    changed = to_put_back(before, modes_of(root, before))
    done = []
    for rel, was in sorted(changed.items()):
        path = Path(root) / rel
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and st.st_uid == os.getuid():
                os.chmod(path, was)
                done.append(rel)
        except OSError:
            continue
    return done


def follow_umask(folder: Path, umask: int | None = None) -> list[str]:
    """A tree git made under `mem`'s umask 077 (a clone's `.git/`, before the engine knew it was a
    user's vault) given the modes the user's umask gives, as their own `git clone` would: each
    file's and folder's owner bits for everyone, less the umask (objects 0444, config 0644, folders
    0755 under 022). Only plain files and folders of ours, never a link; the paths changed."""
    mask = current_umask() if umask is None else umask
    changed = _spread(Path(folder), mask)
    for top, folders, files in os.walk(folder):  # never into a linked folder
        for name in folders + files:
            changed += _spread(Path(top) / name, mask)
    return changed


def _spread(path: Path, mask: int) -> list[str]:
    try:
        st = os.lstat(path)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)) or st.st_uid != os.getuid():
            return []
        owner = stat.S_IMODE(st.st_mode) & 0o700
        wanted = (owner | owner >> 3 | owner >> 6) & ~mask & 0o777
        if wanted == stat.S_IMODE(st.st_mode):
            return []
        os.chmod(path, wanted)
        return [str(path)]
    except OSError:
        return []
