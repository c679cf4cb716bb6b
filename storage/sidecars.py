"""The `.full/` sidecar store: the original of a compressed entry, byte for byte.

When an entry is compressed (warm L1, cold L2, archive L4) the body in the tree shrinks;
the file as it was at L0 (frontmatter and body, exact bytes) is written first to
`.full/{id}.md` under the root, and the entry's `full_content_file:` holds that relative
path. Compressing further (L1 -> L2 -> L4) keeps the existing sidecar: it is only ever
written from an uncompressed (L0) file. Restoring takes the body back from it.

Beside each original, `.full/{id}.sha256` holds the SHA-256 of its bytes, written before it:
the original is the only copy of a compressed entry's text, so a truncated or changed one is
refused wherever it would be used (`read_bytes`: decompress, compressing further, a kept
version) and reported by `mem doctor`. An original written before the hashes has none and is
read unchecked.

Callers hold the tree lock. Pure file IO: no clock, no embedding, no catalog.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from memstrata.storage.errors import CorruptEntry, InvalidInput, NotFound
from memstrata.storage import layout
from memstrata.storage.atomic import atomic_write_bytes, atomic_write_text
from memstrata.storage.codec import body_of
from memstrata.storage.entry import Entry, require_id
from memstrata.storage.safe_io import FileTooLarge, check_write_target, is_regular_file, read_regular_bytes

FULL_DIR = ".full"
SUPERSEDED_DIR = "superseded"
HASH_SUFFIX = ".sha256"


def relative_path(entry_id: str, root=None) -> str:
    """Where an entry's sidecar lives, relative to the root: `.full/{id}.md` (in an adopted
    tree `.memstrata/full/{id}.md`: storage/layout.py)."""
    folder = layout.at(root, FULL_DIR) if root is not None else FULL_DIR
    return f"{folder}/{require_id(entry_id, 'entry id (for a .full/ sidecar)')}.md"


def _resolve(root: Path, rel: str) -> Path:
    """The absolute sidecar path, refusing anything outside `.full/` under the root."""
    root = Path(root)
    text = str(rel or "")
    parts = Path(text).parts
    home = Path(layout.at(root, FULL_DIR)).parts
    if not text or Path(text).is_absolute() or tuple(parts[:len(home)]) != home or len(parts) <= len(home) \
            or ".." in parts:
        raise InvalidInput(f"full_content_file {text!r} must be a path under {FULL_DIR}/ in the memory root")
    path = root / text
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    if real_root not in real.parents:
        raise InvalidInput(f"full_content_file {text!r} leads outside the memory root")
    return check_write_target(root, path)  # also refuses a symlinked .full/


def write(root: Path, entry_id: str, original: bytes) -> str:
    """Atomically store `original` (the whole L0 file) as the entry's sidecar, its hash first;
    returns its relative path."""
    rel = relative_path(entry_id, root)
    atomic_write_text(_resolve(root, hash_path(rel)), hashlib.sha256(bytes(original)).hexdigest() + "\n", root=root)
    atomic_write_bytes(_resolve(root, rel), bytes(original), root=root)
    return rel


def hash_path(rel: str) -> str:
    """Where the hash of the original at `rel` is kept: `.full/{id}.sha256`."""
    return (rel[:-3] if rel.endswith(".md") else rel) + HASH_SUFFIX


def kept_hash(root: Path, rel: str) -> str | None:
    """The SHA-256 kept for the original at `rel` (None: an original written before hashes were kept)."""
    try:
        text = read_regular_bytes(_resolve(root, hash_path(rel)), 1024).decode("ascii", "replace").strip()
    except (OSError, InvalidInput, FileTooLarge):
        return None
    return text.lower() if text else None


def damage(root: Path, rel: str, raw: bytes | None = None) -> str | None:
    """Why the original at `rel` cannot be trusted (it differs from the hash kept when it was
    written: truncated or changed), or None (it matches, or no hash was kept)."""
    want = kept_hash(root, rel)
    if want is None:
        return None
    if raw is None:
        raw = read_regular_bytes(_resolve(root, rel))
    have = hashlib.sha256(raw).hexdigest()
    if have == want:
        return None
    return (f"the original {rel} ({len(raw)} bytes) does not match the hash kept when it was written "
            "(truncated or changed on disk)")


def exists(root: Path, rel: str | None) -> bool:
    if not rel:
        return False
    try:
        return is_regular_file(_resolve(root, rel))
    except InvalidInput:
        return False


def read_bytes(root: Path, rel: str) -> bytes:
    """The stored original file (NotFound when the sidecar is missing; CorruptEntry past the size
    an entry file may have, which no original written here reaches: a planted file)."""
    from memstrata.storage.catalog import ENTRY_FILE_MAX_BYTES

    path = _resolve(root, rel)
    try:
        raw = read_regular_bytes(path, ENTRY_FILE_MAX_BYTES)
    except FileNotFoundError:
        raise NotFound(f"the full content {rel} is missing") from None
    except FileTooLarge:
        raise CorruptEntry(f"the full content {rel} is larger than any entry file "
                           f"({ENTRY_FILE_MAX_BYTES // (1024 * 1024)} MB): not read") from None
    why = damage(root, rel, raw)
    if why:
        raise CorruptEntry(f"{why}: not used; the compressed entry is kept as it is")
    return raw


def original_body(root: Path, rel: str) -> str:
    """The body of the stored original, exactly as the codec reads a body from a file (its
    version history is not part of it: the entry in the tree carries the history)."""
    raw = read_bytes(root, rel)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptEntry(f"{rel} is not UTF-8 text") from None
    return body_of(text)


def full_body(root: Path, entry: Entry) -> str:
    """The full text of an entry: the sidecar's original body when compressed, else its body.

    For the indexer: a compressed entry stays findable by its full content. Falls back to the
    entry's own body when the sidecar is missing or unreadable (never raises for that).
    """
    if entry.layer != "L0" and entry.full_content_file:
        try:
            return original_body(root, entry.full_content_file)
        except (NotFound, CorruptEntry, InvalidInput, OSError):
            return entry.body
    return entry.body


def with_full_body(root: Path, entry: Entry) -> Entry:
    """The entry as the index and grep see it: a compressed entry carries its full original body."""
    return entry.copy(body=full_body(root, entry)) if entry.is_compressed else entry


def remove(root: Path, rel: str | None) -> bool:
    """Delete a sidecar (after a restore or a purge); True when a file was removed."""
    if not rel:
        return False
    try:
        path = _resolve(root, rel)
    except InvalidInput:
        return False
    try:
        _resolve(root, hash_path(rel)).unlink(missing_ok=True)
    except InvalidInput:
        pass
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False


def supersede(root: Path, rel: str, stamp: str) -> str | None:
    """Keep a copy of an outdated original (`.full/superseded/{id}--{stamp}.md`) instead of losing it.

    Used when the body of a compressed entry is replaced by an update: the new body is the
    entry's full content from then on. The sidecar itself is left in place (it is no longer
    referenced; the next compression from L0 overwrites it), so a failed update loses nothing.
    Returns the copy's relative path, or None when there was no sidecar.
    """
    try:
        path = _resolve(root, rel)
    except InvalidInput:
        return None
    if not is_regular_file(path):
        return None
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in stamp)
    target_rel = f"{layout.at(root, FULL_DIR)}/{SUPERSEDED_DIR}/{path.stem}--{safe}.md"
    atomic_write_bytes(Path(root) / target_rel, read_regular_bytes(path), root=root)
    return target_rel


def remove_superseded(root: Path, entry_id: str) -> int:
    """Delete the superseded copies of an entry's originals (after a purge); returns how many."""
    folder = layout.path(root, FULL_DIR) / SUPERSEDED_DIR
    prefix = require_id(entry_id) + "--"
    if not folder.is_dir() or folder.is_symlink() or os.path.islink(layout.path(root, FULL_DIR)):
        return 0
    removed = 0
    for item in folder.iterdir():
        if item.name.startswith(prefix) and is_regular_file(item):
            check_write_target(root, item).unlink(missing_ok=True)
            removed += 1
    return removed
