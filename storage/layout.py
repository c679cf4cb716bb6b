"""Where the engine's own files live: beside the entries (a tree made by `mem init`) or, in an
adopted vault, all in one hidden `.memstrata/` folder (storage paths go through `at`).

A vault is the user's: its `.trash/`, `.obsidian/` and other dot-folders are theirs, and its
notes may carry their own `id:`. So an adopted tree keeps settings, trash, versions, full texts,
journal, cache, vectors, quarantine and lock under `.memstrata/`, and the engine's key in a
note is `mem-id:`. A tree made by `mem init` keeps the layout it always had (`config.md`,
`.trash/`, ... at the root, key `id:`): no tree is migrated. The marker is the settings file:
`.memstrata/config.md` makes a tree adopted.
"""
from __future__ import annotations

import os
from pathlib import Path

ENGINE_HOME = ".memstrata"  # the one hidden folder of an adopted tree
ID_KEY = "id"               # the engine's key in a tree made by `mem init`
ADOPTED_ID_KEY = "mem-id"   # ... and in an adopted vault (a user's `id:` stays theirs)
_MARK = f"{ENGINE_HOME}/config.md"
# Kept out of git inside `.memstrata/` (the vault's own .gitignore is never touched).
ADOPTED_GITIGNORE = "vectors/\ntrash/\ncache/\nquarantine/\n.lock\n*.lock\n*.sock\n.*.tmp\n.*.kept\nsecrets-allowed.json\n"


def is_adopted(root) -> bool:
    """Whether `root` keeps the engine's files in `.memstrata/` (its settings file is there)."""
    return os.path.isfile(os.path.join(str(root), _MARK))


def at(root, legacy: str) -> str:
    """The path (relative to the root) of the engine file or folder that a tree made by `mem init`
    keeps at `legacy` (".trash", ".cache/catalog.db", "config.md", ".lock" ...)."""
    if legacy == ENGINE_HOME or legacy.startswith(ENGINE_HOME + "/") or not is_adopted(root):
        return legacy  # already placed (callers may map a path twice)
    return f"{ENGINE_HOME}/{legacy[1:] if legacy.startswith('.') and legacy != '.lock' else legacy}"


def path(root, legacy: str) -> Path:
    """`at` as an absolute path."""
    return Path(root) / at(root, legacy)


def id_key(root) -> str:
    """The frontmatter key that holds the engine's id in this tree's notes."""
    return ADOPTED_ID_KEY if is_adopted(root) else ID_KEY


def engine_home_rel(root) -> str | None:
    """`.memstrata` for an adopted tree, else None."""
    return ENGINE_HOME if is_adopted(root) else None
