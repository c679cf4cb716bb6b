"""What the prompt hook already injected in a session: a small derived record under .cache/hook-sessions/
(an adopted vault's `.memstrata/cache/hook-sessions/`: the engine never writes among the user's folders)."""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

FOLDER = ".cache/hook-sessions"  # placed by storage.layout (git-ignored in both layouts)
KEEP_SECONDS = 7 * 86400  # records untouched this long are removed (sessions end; the record is derived)
MAX_IDS = 2000


def _path(root: Path, session_id: str) -> Path:
    digest = hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:32]
    from memstrata.storage import layout

    return layout.path(root, FOLDER) / f"{digest}.json"


def injected(root: Path, session_id: str | None) -> set[str]:
    """Ids of the entries already injected in this session (empty without a session or record)."""
    if not session_id:
        return set()
    try:
        from memstrata.storage.safe_io import read_regular_text

        data = json.loads(read_regular_text(_path(root, session_id), 1024 * 1024))
        return {str(i) for i in data.get("ids", [])} if isinstance(data, dict) else set()
    except (OSError, ValueError):
        return set()


def record(root: Path, session_id: str | None, ids: list[str]) -> None:
    """Add `ids` to the session's record (atomically); old records of ended sessions are pruned."""
    from memstrata.storage.atomic import atomic_write_text

    if not session_id or not ids:
        return
    path = _path(root, session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    known = sorted(injected(root, session_id) | set(ids))[-MAX_IDS:]
    atomic_write_text(path, json.dumps({"ids": known}), root=root)
    now = time.time()
    for old in path.parent.glob("*.json"):
        try:
            if now - old.stat().st_mtime > KEEP_SECONDS:
                old.unlink()
        except OSError:
            continue
