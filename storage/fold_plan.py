"""A fold's plan: what a fold of the access journal was about to save, and settling one killed half-way.

A fold writes a plan (`fold-<token>.plan` in the pending folder: the taken files, and per entry
its file's hash before and after and its count after) before it saves any entry; the next fold
first drops from those taken files the lines of every entry the plan shows saved (`settle`), so
no read is counted twice (storage/journal.py has the journal itself).
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path

from memstrata.storage import journal
from memstrata.storage.atomic import atomic_write_bytes, atomic_write_chunks, fsync_dir
from memstrata.storage.safe_io import is_regular_file

PLAN_SUFFIX = ".plan"


def file_hash(path: Path) -> str | None:
    """The sha256 of a regular file's bytes (None: missing or not a regular file); for fold plans."""
    fd = journal.open_file(path)
    if fd is None:
        return None
    digest = hashlib.sha256()
    try:
        while chunk := os.read(fd, journal.CHUNK):
            digest.update(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return digest.hexdigest()


def write_plan(root: Path, taken: list[Path], entries: dict[str, dict]) -> Path | None:
    """Before a fold saves an entry: record (atomically) the taken files and, per entry id, what
    its file is before and after (`old`/`new` hashes, `after` count). None when nothing to save."""
    pending = journal.real_folder(root, journal.PENDING_DIR, create=True)
    if pending is None or not entries:
        return None
    path = pending / f"fold-{os.getpid()}-{secrets.token_hex(6)}{PLAN_SUFFIX}"
    body = {"files": [p.name for p in taken if p.parent == pending], "entries": entries}
    atomic_write_bytes(path, json.dumps(body, sort_keys=True).encode("utf-8"), root=root)
    return path


def plans(root: Path) -> list[tuple[Path, dict]]:
    """The plans stopped folds left: (file, {"files": [...], "entries": {id: record}}); a
    plan that cannot be read (torn: never, it is written atomically) is skipped."""
    out = []
    for path in journal.files_in(journal.real_folder(root, journal.PENDING_DIR, create=False), (PLAN_SUFFIX,)):
        fd = journal.open_file(path)
        if fd is None:
            continue
        try:
            body = json.loads(b"".join(iter(lambda: os.read(fd, journal.CHUNK), b"")).decode("utf-8"))
        except (OSError, ValueError):
            continue
        finally:
            os.close(fd)
        if isinstance(body, dict) and isinstance(body.get("files"), list) and isinstance(body.get("entries"), dict):
            out.append((path, body))
    return out


def settle(root: Path, plan_path: Path, plan: dict, saved: set[str]) -> None:
    """Finish a stopped fold's plan: each taken file it lists is rewritten (atomically) without
    the lines of the entries in `saved` (their counts are in their files already), then the
    plan goes. Idempotent: a settle that stops is done again, alike, by the next fold."""
    pending = plan_path.parent
    for name in map(str, plan["files"]):
        path = pending / name
        if not saved or "/" in name or not name.endswith((journal.TAKEN, journal.MOVING)) or not is_regular_file(path):
            continue
        fd = journal.open_file(path)
        if fd is None:
            continue
        kept = (line.encode("utf-8") + b"\n" for line in journal.stream_lines(fd) if _line_id(line) not in saved)
        atomic_write_chunks(path, kept, root=root)
    remove_plan(plan_path)


def _line_id(line: str) -> str | None:
    parts = journal.well_formed_line(line)
    return parts[1] if parts is not None else None


def remove_plan(path: Path | None) -> None:
    if path is not None:
        journal.release([path])
        fsync_dir(path.parent)
