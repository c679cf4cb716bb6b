"""What the hooks did in a session: a small derived record under .cache/hook-sessions/ (an adopted
vault's `.memstrata/cache/hook-sessions/`: the engine never writes among the user's folders).

`ids`: the entries already injected in the session (a prompt never injects them again); `followup`:
the session start's background promotion for the project's last session ("spawned", "done");
`brought`: the entries it brought back, to be injected at the session's next prompt; `used`: the entries
the session's captured replies used, each counted once (features/reply_use.py)."""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

FOLDER = ".cache/hook-sessions"  # placed by storage.layout (git-ignored in both layouts)
KEEP_SECONDS = 7 * 86400  # records untouched this long are removed (sessions end; the record is derived)
MAX_IDS = 2000
LOCK_WAIT = 2.0  # seconds a hook waits for another process's change of the same record


def _path(root: Path, session_id: str) -> Path:
    digest = hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:32]
    from memstrata.storage import layout

    return layout.path(root, FOLDER) / f"{digest}.json"


def read(root: Path, session_id: str | None) -> dict:
    """The session's record ({} without a session or record)."""
    if not session_id:
        return {}
    try:
        from memstrata.storage.safe_io import read_regular_text

        data = json.loads(read_regular_text(_path(root, session_id), 1024 * 1024))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _ids(data: dict, key: str) -> list[str]:
    value = data.get(key)
    return [str(i) for i in value] if isinstance(value, list) else []


def injected(root: Path, session_id: str | None) -> set[str]:
    """Ids of the entries already injected in this session (empty without a session or record)."""
    return set(_ids(read(root, session_id), "ids"))


def brought(root: Path, session_id: str | None) -> list[str]:
    """Ids the session start brought back for the project's last session, not injected yet."""
    data = read(root, session_id)
    done = set(_ids(data, "ids"))
    return [i for i in _ids(data, "brought") if i not in done]


def followup(root: Path, session_id: str | None) -> str | None:
    """The state of the session start's background promotion ("spawned", "done"), or None."""
    value = read(root, session_id).get("followup")
    return value if isinstance(value, str) else None


def record(root: Path, session_id: str | None, ids: list[str]) -> None:
    """Add `ids` to the session's injected ones (atomically), each with the moment it was first shown
    (`shown`: a reply written before it cannot have used it); old records of ended sessions are pruned."""
    if not ids:
        return
    from memstrata import clock

    at = clock.format_datetime(clock.now())

    def change(data: dict) -> dict:
        kept = _ids(data, "ids")
        times = data.get("shown") if isinstance(data.get("shown"), dict) else {}
        listed = _appended(kept, ids)
        # only the ids shown now get this moment: one listed before it (by an older release) keeps none
        fresh = set(listed) - set(kept)
        return {**data, "ids": listed, "shown": {i: times.get(i, at) for i in listed if i in times or i in fresh}}

    _update(root, session_id, change)


def shown_at(root: Path, session_id: str | None) -> dict[str, str]:
    """{id: when the session was first shown it} (ISO; ids recorded before the moment was kept have none)."""
    times = read(root, session_id).get("shown")
    return {str(k): str(v) for k, v in times.items() if isinstance(v, str)} if isinstance(times, dict) else {}


def _appended(kept: list[str], more: list[str]) -> list[str]:
    """`kept` then those of `more` it lacks, in the order shown: past MAX_IDS the oldest go."""
    have = set(kept)
    return (kept + [i for i in dict.fromkeys(more) if i not in have])[-MAX_IDS:]


def counted_uses(root: Path, session_id: str | None) -> set[str]:
    """Ids the session's captured replies were found to use (features/reply_use.py): counted once a session."""
    return set(_ids(read(root, session_id), "used"))


def note_uses(root: Path, session_id: str | None, ids: list[str]) -> None:
    """Add `ids` to the session's counted uses."""
    if ids:
        _update(root, session_id, lambda data: {**data, "used": _appended(_ids(data, "used"), ids)})


def note_followup(root: Path, session_id: str | None, state: str, brought_ids: list[str] | None = None) -> None:
    """Set the background promotion's state, adding what it brought back (`brought_ids`)."""
    def change(data: dict) -> dict:
        return {**data, "followup": state, "brought": _appended(_ids(data, "brought"), brought_ids or [])}

    _update(root, session_id, change)


def _update(root: Path, session_id: str | None, change) -> None:
    """Change the session's record; when it cannot be written (a file where its folder should be, a
    full disk, its lock held past LOCK_WAIT seconds) it is left as it was: the record is derived, and a
    hook must print its block within the agent's timeout whatever happens here."""
    if not session_id:
        return
    try:
        _write(root, session_id, change)
    except OSError:
        return


def _write(root: Path, session_id: str, change) -> None:
    import os

    from memstrata.storage.atomic import atomic_write_text
    from memstrata.storage.lock import acquire_within

    path = _path(root, session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    # the prompt hook and the session start's background promotion may change one record at once
    fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    if not acquire_within(fd, LOCK_WAIT):
        return  # held far longer than a record takes to write: not waited for (the fd is the waiter's now)
    try:
        atomic_write_text(path, json.dumps(change(read(root, session_id))), root=root)
    finally:
        os.close(fd)
    now = time.time()
    for old in path.parent.glob("*.json"):
        try:
            if now - old.stat().st_mtime > KEEP_SECONDS:
                old.unlink()
                old.with_suffix(".lock").unlink(missing_ok=True)
        except OSError:
            continue
