"""The doctor's permission checks: what the engine keeps private (0700/0600) and what it may chmod."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from memstrata.doctor.checks import DERIVED_DIRS, VCS_DIRS, Finding
from memstrata.storage import layout


def _loose_mode(mode: int) -> bool:
    return bool(stat.S_IMODE(mode) & 0o077)


def _owner_locked_out(st: os.stat_result) -> bool:
    """A file its owner cannot read or write, or a folder its owner cannot list or enter."""
    need = (stat.S_IRWXU if stat.S_ISDIR(st.st_mode) else stat.S_IRUSR | stat.S_IWUSR)
    return (stat.S_IMODE(st.st_mode) & need) != need


def chmod_safe(st: os.stat_result, owner_uid: int) -> bool:
    """Whether the doctor may chmod this file or folder: owned by the tree's owner, a plain file or
    folder, and not a hard link (a chmod would change every name of it, some maybe outside the tree)."""
    if st.st_uid != owner_uid:
        return False
    if stat.S_ISDIR(st.st_mode):
        return True
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def mode_problems(root: Path) -> list[tuple[str, os.stat_result]]:
    """(relative path, lstat) of files and folders others can read or write, or that their owner
    cannot read (symlinks skipped; folders the walk cannot enter are reported themselves).

    Derived stores (LanceDB writes with the process umask, sqlite's -wal/-shm files) are
    protected by the root's 0700 and not checked file by file.
    """
    out = []
    base = private_base(root)
    derived = {layout.at(root, d).rsplit("/", 1)[-1] for d in DERIVED_DIRS}
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = [d for d in dirs if d not in VCS_DIRS and not (folder == str(base) and d in derived)]
        for name in dirs + files:
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except (FileNotFoundError, PermissionError):
                continue
            if not stat.S_ISLNK(st.st_mode) and (_loose_mode(st.st_mode) or _owner_locked_out(st)):
                out.append((os.path.relpath(path, root).replace(os.sep, "/"), st))
    return out


def private_base(root: Path) -> Path:
    """What the engine keeps private (0700/0600): the tree, or in an adopted vault only its
    `.memstrata/` folder (the vault's own modes are the user's: never reported nor changed)."""
    home = layout.engine_home_rel(root)
    return Path(root) / home if home else Path(root)


def check_permissions(root: Path) -> list[Finding]:
    out = []
    base = private_base(root)
    try:
        root_st = os.stat(base)
    except OSError:
        return out
    if _loose_mode(root_st.st_mode):
        rel = os.path.relpath(base, root).replace(os.sep, "/")
        out.append(Finding("permissions", f"the {'root' if rel == '.' else rel + '/ folder'} is "
                           f"{oct(stat.S_IMODE(root_st.st_mode))}, not 0700: "
                           "other users can read your memories", path=rel, action="chmod 0700"))
    loose, refused = [], []
    for rel, st in mode_problems(root):
        if not chmod_safe(st, root_st.st_uid):
            why = (f"has {st.st_nlink} hard links" if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode)
                   else f"is owned by uid {st.st_uid}, not the tree's owner" if st.st_uid != root_st.st_uid
                   else "is not a regular file or folder")
            refused.append(Finding("permissions", f"mode {oct(stat.S_IMODE(st.st_mode))} but it {why}: the doctor "
                                   "does not chmod it (that could change a file outside the tree); check it by hand",
                                   path=rel, fixable=False, action="none"))
        elif _owner_locked_out(st):
            kind = "folder" if stat.S_ISDIR(st.st_mode) else "file"
            out.append(Finding("permissions", f"{kind} mode {oct(stat.S_IMODE(st.st_mode))}: its owner cannot "
                               f"{'open' if kind == 'folder' else 'read'} it (a permission problem, not damage)",
                               path=rel, action="chmod 0700" if kind == "folder" else "chmod 0600"))
        else:
            loose.append(rel)
    if loose and _loose_mode(root_st.st_mode):  # inside a private root (0700), modes a git checkout set are no damage
        out.append(Finding("permissions", f"{len(loose)} files or folders are readable by others "
                           f"(e.g. {', '.join(sorted(loose)[:3])}); the root must be 0700 and its files 0600",
                           action="chmod files 0600, folders 0700"))
    return out + refused
