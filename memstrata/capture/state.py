"""What was read of each transcript, and the sessions forgotten on purpose (`.cache/capture/`).

Derived data, machine-local, git-ignored: a lost `files.json` only makes the next capture read each
transcript from its first line again (the turns the entries hold keep a turn from being written
twice). `forgotten.json` lists the sessions `mem capture --forget` removed, so that the next hook of
a still running session does not bring them back (delete the transcript too for good).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from memstrata.capture.spool import folder
from memstrata.storage.atomic import atomic_write_text

FILES = "files.json"
FORGOTTEN = "forgotten.json"
LAST = "last.json"
RECENT_USES = 20  # the memories the captured replies used lately, kept with the last report
HEAD_BYTES = 4096  # the start of a transcript, hashed: another start means the file was rewritten
MAX_BYTES = 64 * 1024 * 1024


def _read_json(path: str, default):
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
        value = json.loads(data) if len(data) <= MAX_BYTES else default
        return value if isinstance(value, type(default)) else default
    except (OSError, ValueError):
        return default


class CaptureState:
    """The cache of one tree: files read (offsets), sessions forgotten, the last capture's report."""

    def __init__(self, root):
        self.root = root
        self.folder = folder(root)
        self.files: dict = _read_json(os.path.join(self.folder, FILES), {})
        self._forgotten: dict | None = None
        self.changed = False

    # -- files ----------------------------------------------------------------------------
    def get(self, path: str) -> dict | None:
        found = self.files.get(path)
        return found if isinstance(found, dict) else None

    def put(self, path: str, record: dict) -> None:
        self.files[path] = record
        self.changed = True

    def drop(self, path: str) -> None:
        if self.files.pop(path, None) is not None:
            self.changed = True

    def save(self) -> None:
        if self.changed:
            os.makedirs(self.folder, mode=0o700, exist_ok=True)
            atomic_write_text(Path(os.path.join(self.folder, FILES)), json.dumps(self.files, ensure_ascii=False))
            self.changed = False

    # -- forgotten sessions -----------------------------------------------------------------
    @property
    def forgotten(self) -> dict:
        if self._forgotten is None:
            self._forgotten = _read_json(os.path.join(self.folder, FORGOTTEN), {})
        return self._forgotten

    def is_forgotten(self, agent: str, session: str) -> bool:
        return f"{agent}:{session}" in self.forgotten

    def forget(self, agent: str, sessions: list[str], when: str) -> None:
        for session in sessions:
            self.forgotten[f"{agent}:{session}"] = when
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        atomic_write_text(Path(os.path.join(self.folder, FORGOTTEN)), json.dumps(self.forgotten, ensure_ascii=False))
        # what was read of its transcripts goes too: nothing of the session is kept in the cache
        for path, record in list(self.files.items()):
            if isinstance(record, dict) and record.get("agent") == agent and set(record.get("sessions") or []) & set(sessions):
                self.drop(path)
        self.save()

    # -- the last capture ----------------------------------------------------------------------
    def write_last(self, report: dict, new_uses: list = ()) -> None:
        """The capture's report, with the memories the replies used lately (`recent_uses`: the earlier
        ones' and `new_uses`, RECENT_USES at most): a SessionEnd's capture after a Stop's finds none."""
        from memstrata.storage.clock import format_datetime, now

        held = self.last().get("recent_uses")
        recent = [r for r in held if isinstance(r, dict)] if isinstance(held, list) else []
        recent += [{**row, "at": format_datetime(now())} for row in new_uses]
        report = {**report, "recent_uses": recent[-RECENT_USES:]}
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        atomic_write_text(Path(os.path.join(self.folder, LAST)), json.dumps(report, ensure_ascii=False, default=str))

    def last(self) -> dict:
        return _read_json(os.path.join(self.folder, LAST), {})


def head_hash(path: str, length: int) -> str:
    """The sha1 of a file's first `length` bytes."""
    with open(path, "rb") as handle:
        return hashlib.sha1(handle.read(length)).hexdigest()
