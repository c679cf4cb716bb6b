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


def names_of(cwd: str | None) -> tuple[list[str], bool]:
    """(the names of a cwd's project, whether it is in a git repository): the project's name (as
    `project_of`), and the repository name of its `origin` remote when that differs (a clone in a
    folder of another name); ([], False) without a cwd. What the session start prefers (its scope)."""
    if not cwd:
        return [], False
    project = project_of(cwd)
    names = [project.name] if project.name != UNKNOWN else []
    remote = _origin_name(project.repo) if project.repo else None
    if remote and slugify(remote) not in names:
        names.append(slugify(remote))
    return names, project.repo is not None


def _origin_name(repo: str) -> str | None:
    """The repository name of the `origin` remote's URL in the repository's config (a worktree's
    `.git` file leads to its repository's), without `.git`; None when there is none."""
    git = os.path.join(repo, ".git")
    try:
        if os.path.isfile(git):
            with open(git, encoding="utf-8", errors="replace") as fh:
                line = fh.read(4096).strip()
            if not line.startswith("gitdir:"):
                return None
            git = os.path.normpath(os.path.join(repo, line[len("gitdir:"):].strip()))
            if os.path.basename(os.path.dirname(git)) == "worktrees":
                git = os.path.dirname(os.path.dirname(git))
        with open(os.path.join(git, "config"), encoding="utf-8", errors="replace") as fh:
            text = fh.read(65536)
    except (OSError, ValueError):
        return None
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line
        elif section == '[remote "origin"]' and line.split("=", 1)[0].strip() == "url" and "=" in line:
            url = line.split("=", 1)[1].strip().rstrip("/")
            name = url.replace("\\", "/").replace(":", "/").rsplit("/", 1)[-1]
            name = name[:-4] if name.endswith(".git") else name
            return name or None
    return None


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
