"""This machine's own values of settings its team's config.md holds otherwise: kept in the clone's .git, never committed."""
from __future__ import annotations

import json
from pathlib import Path

OWN_FILE = "memstrata-own-settings.json"  # in the clone's .git folder: per machine, never pushed


def _path(root) -> Path | None:
    git_dir = Path(root) / ".git"
    return git_dir / OWN_FILE if git_dir.is_dir() else None


def read(root) -> dict:
    """{setting: value} this machine keeps for itself ({} when none, or the tree is no git clone)."""
    path = _path(root)
    if path is None or not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def keep(root, key: str, value) -> bool:
    """Keep `value` of `key` on this machine whatever config.md says; False when the tree is no git clone."""
    return _write(root, {**read(root), key: value})


def drop(root, key: str) -> None:
    """config.md decides `key` here again (the user set or unset it)."""
    own = read(root)
    if key in own:
        own.pop(key)
        _write(root, own)


def _write(root, own: dict) -> bool:
    from memstrata.storage.atomic import atomic_write_text

    path = _path(root)
    if path is None:
        return False
    atomic_write_text(path, json.dumps(own, indent=1, sort_keys=True))
    return True
