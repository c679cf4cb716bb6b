"""`.kept` files beside notes (storage/replace_guard.py): which repeat a text the tree holds (--fix removes
them) and which only a person can judge."""
from __future__ import annotations

import os
import re
from pathlib import Path

from memstrata.doctor.checks import Finding, Scan
from memstrata.storage import layout, versions
from memstrata.storage.sidecars import FULL_DIR
from memstrata.storage.safe_io import read_regular_bytes

_KEPT = re.compile(r"^\.(.+)\.\d+\.[0-9a-f]+\.kept$")
_ID_LINE = re.compile(rb"^(?:id|mem-id): *[0-9a-f]{12}\r?\n", re.M)
# Keys only the engine writes, with no text of the user's: a file that differs from its note in these
# alone is the note before a maintain or a fold changed them (one killed half-way leaves one per note)
_ENGINE_LINE = re.compile(rb"^(?:tier|weight|access_count|last_access): *[^\r\n]*\r?\n", re.M)


def check_kept_files(scan: Scan) -> list[Finding]:
    """A `.kept` file is what the engine took out of a note's place and could not put back or drop: an
    editor's save caught while it wrote the note, or the note's previous file when a write was killed
    half-way. One whose text the tree still holds (the note itself, the note with its id line, the
    note's compressed original, a kept version, the note but for the engine's own keys: tier, weight,
    reads) is a copy: --fix removes it. Any other only a person can judge."""
    out = []
    for rel in scan.kept_files:
        note = _note_of(rel)
        if _repeats(scan.root, rel, note):
            out.append(Finding("kept_file", f"a copy of {note} left by a write that was stopped half-way: the "
                               "tree holds the same text", path=rel, action="remove"))
        else:
            out.append(Finding("kept_file", f"kept beside {note or 'a note'} by a write that caught an editor's "
                               "save (or was killed half-way): compare it with the note, keep what you need, "
                               "then delete it", path=rel, fixable=False))
    return out


def _note_of(rel: str) -> str | None:
    folder, _, name = rel.rpartition("/")
    match = _KEPT.match(name)
    if match is None:
        return None
    return f"{folder}/{match.group(1)}" if folder else match.group(1)


def _repeats(root: Path, rel: str, note: str | None) -> bool:
    """Whether the kept file's bytes are the note's (less or plus its id line), its `.full/` original or
    one of its kept versions."""
    try:
        kept = read_regular_bytes(root / rel)
    except OSError:
        return False
    if note is None or not os.path.isfile(root / note):
        return False
    try:
        text = read_regular_bytes(root / note)
    except OSError:
        return False
    if kept == text or _ID_LINE.sub(b"", kept, count=1) == _ID_LINE.sub(b"", text, count=1):
        return True
    if not layout.is_adopted(root) and _engine_keys_aside(kept) == _engine_keys_aside(text):
        return True  # (a vault's note holds no key of the engine's: a `weight:` there is the user's)
    ids = _ID_LINE.findall(text)
    if not ids:
        return False
    entry_id = ids[0].split(b":", 1)[1].strip().decode()
    copies = [layout.path(root, FULL_DIR) / f"{entry_id}.md"] + list(versions.list_snapshots(root, entry_id).values())
    for copy in copies:
        try:
            if read_regular_bytes(copy) == kept:
                return True
        except OSError:
            continue
    return False


def _engine_keys_aside(text: bytes) -> bytes:
    """A note's bytes without its id line and the engine's own keys in its frontmatter (only there: a
    body line "weight: 3 kg" is the user's)."""
    if not text.startswith(b"---"):
        return text
    end = text.find(b"\n---", 3)
    if end < 0:
        return text
    head = _ENGINE_LINE.sub(b"", _ID_LINE.sub(b"", text[:end + 1], count=1))
    return head + text[end + 1:]
