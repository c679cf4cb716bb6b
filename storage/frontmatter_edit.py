"""Rewriting a hand-made entry file with the smallest edit: only the frontmatter keys that changed."""
from __future__ import annotations

from pathlib import PurePosixPath

from memstrata.storage import codec, frontmatter_flow
from memstrata.storage.entry import Entry

_MISSING = object()


def edited_text(old_text: str | None, old_path: str | None, entry: Entry, *, own_spacing: bool = False) -> str:
    """The new text of the file at `old_path` (holding `old_text`) once it stores `entry`.

    A file the engine wrote itself (its text is the canonical rendering of what it parses to)
    is rendered anew, as every write always did. A file a person made (an adopted note, a
    hand-edited entry, one of an older layout) keeps every line that did not change: its own
    keys, their order, spelling and comments, and its body byte for byte unless the body
    changed. Only the keys whose values changed are rewritten (in the canonical form) or
    added before the closing line, so `git diff` shows what the engine changed and nothing
    else. Whenever the edited text would not read back as exactly `entry`, the canonical
    rendering is used instead: the edit is an optimisation of the diff, never of the content.
    A new body follows the block after one blank line; with `own_spacing` (a vault's note), only
    where the file had one (storage/vault_note.py: the note stays in its owner's format).
    """
    full = codec.render(entry)
    if not old_text or not old_path:
        return full
    before = _parsed(old_text, old_path, entry.category, entry.id_key)
    if before is None or _renders_to(before, old_text):
        return full
    layout = _layout(old_text)
    if layout is None:
        return full
    head, lines, tail_start = layout
    nl = "\r\n" if head.endswith("\r\n") else "\n"
    old_fm, new_fm = codec.entry_to_frontmatter(before), codec.entry_to_frontmatter(entry)
    sets = {key: value for key, value in new_fm.items() if old_fm.get(key, _MISSING) != value}
    if "title" in sets and sets["title"] == _read_title(entry.body, entry.path or old_path) \
            and "title" not in codec.split_frontmatter(old_text)[0]:
        del sets["title"]  # the title the note's text gives (its H1 or file name): never written into it
    for key in _LISTS_AS_WRITTEN:
        if key in sets:
            sets[key] = _as_written(key, sets[key], old_text)
    lines = _edited(lines, sets, [key for key in old_fm if key not in new_fm], nl)
    if lines is None:
        return full
    if entry.body == before.body:
        tail = old_text[tail_start:]
    else:
        closing, _, after_block = old_text[tail_start:].partition("\n")
        # the file's own way: a blank line after the block only where it had one (or the body needs it)
        blank = not own_spacing or after_block.startswith(("\n", "\r\n")) or not after_block \
            or entry.body.startswith(("\n", "\r\n"))
        tail = f"{closing.rstrip(chr(13))}{nl}{nl if blank else ''}{entry.body}"
    text = head + "".join(lines) + tail
    after = _parsed(text, entry.path or old_path, entry.category, entry.id_key)
    if after is not None and after.title != entry.title:  # the title came from the old file name: say it
        lines = _edited(lines, {"title": entry.title}, [], nl)
        if lines is None:
            return full
        text = head + "".join(lines) + tail
        after = _parsed(text, entry.path or old_path, entry.category, entry.id_key)
    if after is None or after.body != entry.body or \
            codec.entry_to_frontmatter(after) != new_fm:
        return full
    return text


def _read_title(body: str, path: str | None) -> str:
    """The title a note without `title:` is read with (codec.entry_from_frontmatter)."""
    return codec.first_heading(body) or PurePosixPath(path or "").stem


# Lists whose items an entry reads as the words they were written as (codec.scalar_text): `1`, `true`.
_LISTS_AS_WRITTEN = ("tags", "related")


def _as_written(key: str, value, old_text: str):
    """`value` (a tags or related list) with each item the file already held as a number, boolean or
    date given back as that: `mem update --tag x` on `tags: [1, true]` writes `[1, true, x]`, not the
    quoted strings '1', 'true' the entry reads them as (they read back the same either way)."""
    try:
        raw, _ = codec.split_frontmatter(old_text)
    except Exception:  # noqa: BLE001 - unreadable: the entry's own strings
        return value
    old = next((raw[name] for name in _spellings(key) if name in raw), None)
    if not isinstance(value, list) or not isinstance(old, (list, tuple)):
        return value
    typed = {}
    for item in old:
        text = None if isinstance(item, str) else codec.scalar_text(item)
        if text is not None:
            typed.setdefault(text.strip(), item)
    return [typed.get(v, v) if isinstance(v, str) else v for v in value]


def _edited(lines: list[str], sets: dict, drops: list[str], nl: str) -> list[str] | None:
    """The block's lines with `sets` set and `drops` dropped: line by line, or inside the block's
    flow mapping when it is one (a `key:` line after `{title: x}` would not parse); None if neither."""
    block = "".join(lines)
    if frontmatter_flow.is_flow(block):
        edited = frontmatter_flow.flow_edited(block, sets, [_spellings(key) for key in drops])
        return None if edited is None else [edited]
    for key, value in sets.items():
        lines = _set_key(lines, key, value, nl)
    for key in drops:
        lines = _drop_key(lines, key)
    return lines


def _parsed(text: str, rel: str, category: str, id_key: str = "id") -> Entry | None:
    try:
        return codec.parse(text, category=category, path=rel, fallback_title=PurePosixPath(rel).stem, id_key=id_key)
    except Exception:  # noqa: BLE001 - anything unreadable is simply rendered anew
        return None


def _renders_to(entry: Entry, text: str) -> bool:
    try:
        return codec.render(entry) == text
    except Exception:  # noqa: BLE001
        return False


def _layout(text: str) -> tuple[str, list[str], int] | None:
    """(the opening up to and with its `---` line, the block's lines with their line ends,
    the offset of the closing line) of a file with a frontmatter block; a file without one
    gets an empty block in front of its text. None when the block cannot be found."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    rest = text[len(bom):]
    first = rest.split("\n", 1)[0] + "\n"
    if first not in (codec.FRONTMATTER_DELIMITER + "\n", codec.FRONTMATTER_DELIMITER + "\r\n"):
        return None
    start = len(bom) + len(first)
    offset, lines = start, []
    for line in text[start:].splitlines(keepends=True):
        if line.rstrip() in (codec.FRONTMATTER_DELIMITER, "...") and line.endswith("\n"):
            return text[:start], lines, offset
        lines.append(line)
        offset += len(line)
    return None


def _key_of(line: str) -> str | None:
    """The top-level key a block line starts, None for a continuation, comment or blank line."""
    if not line or line[0] in " \t-#\n\r" or ":" not in line:
        return None
    key = line.split(":", 1)[0].strip()
    if len(key) >= 2 and key[0] == key[-1] and key[0] in "'\"":
        key = key[1:-1]
    return key


def _extent(lines: list[str], i: int) -> int:
    """The index after the last line of the value the key at line `i` starts."""
    end = i + 1
    while end < len(lines) and _key_of(lines[end]) is None and not lines[end].startswith("#"):
        end += 1
    while end > i + 1 and not lines[end - 1].strip():
        end -= 1  # blank lines between keys stay where they are
    return end


def _spellings(key: str) -> tuple[str, ...]:
    return (key,) + tuple(alias for alias, canonical in codec.ALIASES.items() if canonical == key)


def _find(lines: list[str], key: str) -> int | None:
    """The line of `key` as the codec reads it: the canonical spelling wins over an alias."""
    found = {}
    for i, line in enumerate(lines):
        name = _key_of(line)
        if name is not None and name not in found:
            found[name] = i
    for spelling in _spellings(key):
        if spelling in found:
            return found[spelling]
    return None


def _set_key(lines: list[str], key: str, value, nl: str) -> list[str]:
    new = [line.rstrip("\n") + nl for line in codec.dump_yaml({key: value}).splitlines(keepends=True)]
    at = _find(lines, key)
    if at is None:
        if lines and not lines[-1].endswith("\n"):
            lines = lines[:-1] + [lines[-1] + nl]
        return lines + new
    return lines[:at] + new + lines[_extent(lines, at):]


def _drop_key(lines: list[str], key: str) -> list[str]:
    at = _find(lines, key)
    return lines if at is None else lines[:at] + lines[_extent(lines, at):]
