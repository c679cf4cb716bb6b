"""A session's project (the git repository its cwd is in, else the cwd's last folder) and the
per-project opt-out (the capture_exclude setting, a `.mem-no-capture` file in the project)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from memstrata.storage.paths import slugify

OPT_OUT_FILE = ".mem-no-capture"  # a file of this name in the cwd or a folder above it: nothing there is captured
UNKNOWN = "unknown"


@dataclass
class Project:
    name: str                # the category level: a slug
    cwd: str | None
    repo: str | None         # the git repository's top folder, when the cwd is (was) in one


def project_of(cwd: str | None) -> Project:
    """The project of a cwd: the slug of its git repository's top folder, else of its last folder."""
    if not cwd:
        return Project(UNKNOWN, None, None)
    repo = git_top(cwd)
    base = os.path.basename((repo or cwd).rstrip("/\\").replace("\\", "/")) if (repo or cwd).strip("/\\") else ""
    name = slugify(base) if base else UNKNOWN
    return Project(name[:60].strip("-_") or UNKNOWN, cwd, repo)


def git_top(cwd: str) -> str | None:
    """The folder holding `.git` (a folder, or a worktree's file) at or above `cwd`; None when there is
    none or the cwd is gone (a transcript captured on another machine or after the folder went)."""
    return next((folder for folder in _upwards(os.path.abspath(cwd)) if _exists(os.path.join(folder, ".git"))), None)


def _upwards(path: str):
    """`path` and the folders above it (at most 64)."""
    for _ in range(64):
        yield path
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def _exists(path: str, file_only: bool = False) -> bool:
    try:
        return os.path.isfile(path) if file_only else os.path.lexists(path)
    except (OSError, ValueError):
        return False


def excluded_paths(setting: str | None) -> list[str]:
    """The capture_exclude setting: paths separated by commas (or the OS path separator), ~ expanded."""
    if not setting:
        return []
    items = []
    for part in str(setting).replace(os.pathsep, ",").split(","):
        part = part.strip()
        if part:
            items.append(os.path.normpath(os.path.expanduser(part)))
    return items


def opted_out(cwd: str | None, setting: str | None) -> str | None:
    """Why a session in `cwd` is not captured (a path of capture_exclude, or the opt-out file), else None."""
    if not cwd:
        return None
    path = os.path.normpath(os.path.abspath(os.path.expanduser(cwd)))
    for excluded in excluded_paths(setting):
        if path == excluded or path.startswith(excluded.rstrip(os.sep) + os.sep):
            return f"{excluded} is in capture_exclude"
    for folder in _upwards(path):
        if _exists(os.path.join(folder, OPT_OUT_FILE), file_only=True):
            return f"{os.path.join(folder, OPT_OUT_FILE)} opts the project out"
    return None
