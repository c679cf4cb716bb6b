"""Giving a hand-made entry file its stable id with the smallest edit: one id line (`id:`, or
`mem-id:` in an adopted vault: storage/layout.py), nothing else changed."""
from __future__ import annotations

import os
import re
from pathlib import Path

from memstrata.storage.errors import CorruptEntry
from memstrata.storage import codec, layout
from memstrata.storage.atomic import atomic_write_text
from memstrata.storage.entry import valid_id
from memstrata.storage.frontmatter_yaml import scalar_yaml
from memstrata.storage.safe_io import read_regular_bytes

def text_with_id(text: str, entry_id: str, key: str = "id") -> str | None:
    """`text` with `{key}: entry_id` added, every other byte of the file kept; None when the file
    already has a valid id or cannot take one by a one-line edit (the doctor reports it).

    Without frontmatter, a block holding only the id goes first (body unchanged: the codec
    drops the one blank line the block ends with). With frontmatter, the line goes right after
    the opening `---`; an unusable `id:` line is kept, renamed `invalid_id:`.
    """
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    rest = text[len(bom):]
    nl = "\r\n" if rest.split("\n", 1)[0].endswith("\r") else "\n"  # a CRLF note's lines stay CRLF
    try:
        data, _ = codec.split_frontmatter(text)
    except CorruptEntry:
        return None
    if has_toml_frontmatter(rest):
        return None  # Hugo/Zola read a `+++` block only at the very top: a YAML block before it breaks the site
    if not data and not rest.startswith(codec.FRONTMATTER_DELIMITER):
        return f"{bom}---{nl}{key}: {scalar_yaml(entry_id)}{nl}---{nl}{nl}{rest}"
    if valid_id(str(data.get(key, ""))):
        return None
    first_break = rest.find("\n")
    if first_break < 0:
        return None
    head, block_and_body = rest[: first_break + 1], rest[first_break + 1:]
    end = _block_end(block_and_body)
    if end is None:
        return None
    block, body = block_and_body[:end], block_and_body[end:]
    expected = dict(data)
    if key in data:
        id_line = re.compile(rf"^{re.escape(key)}:[^\n]*$", re.M)
        lines = id_line.findall(block)
        if len(lines) != 1 or f"invalid_{key}" in data:
            return None
        block = id_line.sub(lambda m: f"invalid_{key}:" + m.group(0)[len(key) + 1:], block, count=1)
        expected[f"invalid_{key}"] = expected.pop(key)
    expected[key] = entry_id
    for candidate in _with_key(block, key, entry_id, nl):
        new = f"{bom}{head}{candidate}{body}"
        if _reads_back(new, expected, text):
            return new
    return None  # a style no one-line edit keeps valid (the caller reports it): never a broken file


def has_toml_frontmatter(text: str) -> bool:
    """Whether the file opens with a TOML frontmatter block (`+++`, Hugo and Zola), which the engine
    leaves alone: its id is kept in YAML only."""
    return text.lstrip("\ufeff").split("\n", 1)[0].rstrip() == "+++"


def _with_key(block: str, key: str, entry_id: str, nl: str):
    """The ways to add the key to a block, the plainest first: a line above the block's first
    line, at that line's indentation (a block of indented keys), or inside a flow mapping."""
    first = block.split("\n", 1)[0]
    indent = first[: len(first) - len(first.lstrip(" "))]
    value = scalar_yaml(entry_id)  # quoted when YAML would read it as a number (`'031170406351'`)
    yield f"{indent}{key}: {value}{nl}{block}"
    stripped = block.lstrip()
    if stripped.startswith("{"):
        at = len(block) - len(stripped) + 1
        inner = stripped[1:].lstrip()
        sep = " " if inner.startswith("}") else ", "
        yield f"{block[:at]}{key}: {value}{sep}{block[at:]}"


def _reads_back(new: str, expected: dict, old: str) -> bool:
    """Whether `new` parses to `expected` with the body of `old` unchanged (the read-back check
    storage/frontmatter_edit.py makes for an edit)."""
    try:
        data, body = codec.split_frontmatter(new)
        return data == expected and body == codec.split_frontmatter(old)[1]
    except CorruptEntry:
        return False


def _block_end(text: str) -> int | None:
    """Offset of the closing `---`/`...` line of a frontmatter block that starts at `text`."""
    offset = 0
    for line in text.split("\n"):
        if line.rstrip() in (codec.FRONTMATTER_DELIMITER, "..."):
            return offset
        offset += len(line) + 1
    return None


def give_id(root: Path, rel: str, entry_id: str) -> bool:
    """Write `entry_id` into the entry file at `rel` (atomically); False when it needs none or cannot take one.

    The caller holds the tree lock and checks afterwards that the file parses to the new id. A file
    an editor changed since it was read is left as it is (ChangedMeanwhile): the next sync gives it one.
    Inside storage.atomic.one_sync the file changes when the block ends (and ChangedMeanwhile comes then)."""
    path = Path(root) / rel
    seen = os.stat(path)
    raw = read_regular_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    new = text_with_id(text, entry_id, layout.id_key(root))
    if new is None:
        return False
    # an adopted file keeps its permissions and its modification time (aging counts from the user's
    # last edit; set on the new file before it takes the old one's place)
    atomic_write_text(path, new, root=Path(root), unchanged=lambda: _unchanged(path, seen, raw),
                      mode=seen.st_mode & 0o777, times_ns=(seen.st_atime_ns, seen.st_mtime_ns))
    return True


def _unchanged(path: Path, seen: os.stat_result, raw: bytes) -> bool:
    """Whether the file still is what was read (size, mtime_ns and bytes): an editor's save since is kept."""
    try:
        now = os.stat(path)
        return (now.st_size, now.st_mtime_ns) == (seen.st_size, seen.st_mtime_ns) and read_regular_bytes(path) == raw
    except OSError:
        return False
