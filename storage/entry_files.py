"""Which files of a tree are entries, and reading one: the walk, the path rule, the size cap, the parse."""
from __future__ import annotations

import os
import stat as stat_mod
from datetime import datetime, timezone
from pathlib import Path

from memstrata.storage import codec, layout
from memstrata.storage.atomic import is_temp_file
from memstrata.storage.entry import Entry, valid_id
from memstrata.storage.errors import CorruptEntry, InvalidInput, NotFound
from memstrata.storage.folder_stamps import stamp as folder_stamp
from memstrata.storage.paths import RESERVED_FILE_NAMES, VAULT_RESERVED_FILE_NAMES, category_of, reserved_file_name
from memstrata.storage.safe_io import FileTooLarge, read_regular_stamped

SKIPPED_FILES = RESERVED_FILE_NAMES  # compared lower-cased (paths.reserved_file_name): INDEX.md, Config.md ... are never entries
VAULT_SKIPPED_FILES = VAULT_RESERVED_FILE_NAMES  # ... in an adopted vault, as spelled (its README.md, config.md, index.md are notes)


def _unencodable(name: str) -> bool:
    """A name that is not valid UTF-8 on disk (os gives it with surrogates): never an entry."""
    try:
        name.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def printable_name(rel: str) -> str:
    """A relative path as one line a report can show (undecodable bytes as \\xNN, newlines escaped)."""
    text = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") if _unencodable(rel) else rel
    return text.replace("\n", "\\n").replace("\r", "\\r")


def iter_entry_files(root: Path, skipped: list | None = None, bad_names: list | None = None, stats: bool = True,
                     folders: list | None = None):
    """Yield (relative path, os.stat_result) of every entry file in the tree (with `stats` false,
    (relative path, None): the names alone, no system call per file).

    Hidden folders (.trash, .vectors, .full, ...), INDEX.md files, config.md, an agent's own
    MEMORY.md/CLAUDE.md, temporary files, files at the root, symlinks and anything that is not a
    regular file (a FIFO, socket or device named x.md: opening it could block) are not entries; in an
    adopted vault, files at the root, README.md and config.md are (is_entry_path).
    Plain string paths and one scandir per folder: a walk happens whenever no watcher can name the changes.
    A folder that cannot be opened (no permission) is skipped, and its relative path added to `skipped`.
    With `folders`, (relative path or ".", (mtime_ns, ctime_ns, inode)) of each folder listed is added to it,
    stamped before its listing (storage/folder_stamps.py).
    """
    base = str(root)
    cut = len(base) + 1
    stack = [base]
    vault = layout.is_adopted(root)
    while stack:
        folder = stack.pop()
        if folders is not None:
            found = folder_stamp(folder, follow=folder == base)
            if found is not None:
                folders.append((folder[cut:].replace(os.sep, "/") or ".", found))
        try:
            with os.scandir(folder) as items:
                for item in items:
                    name = item.name
                    if name.startswith("."):
                        continue
                    if _unencodable(name) or "\n" in name or "\r" in name:
                        # one file a teammate named badly never stops the tree: reported, skipped
                        if bad_names is not None and (name.endswith(".md") or item.is_dir(follow_symlinks=False)):
                            bad_names.append(printable_name(item.path[cut:].replace(os.sep, "/")))
                        continue
                    if item.is_dir(follow_symlinks=False):
                        stack.append(item.path)
                    elif ((vault or folder != base) and name.endswith(".md") and item.is_file(follow_symlinks=False)
                          and not is_temp_file(name) and not reserved_file_name(name, vault)):
                        st = _regular_stat(item) if stats else None
                        if st is not None or not stats:
                            yield item.path[cut:].replace(os.sep, "/"), st
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError:
            if skipped is not None:
                skipped.append(folder[cut:].replace(os.sep, "/") or ".")
            continue


def _regular_stat(item: os.DirEntry):
    """The lstat of a scandir item when it is (still) a regular file, else None."""
    try:
        st = item.stat(follow_symlinks=False)
    except OSError:
        return None
    return st if stat_mod.S_ISREG(st.st_mode) else None


def is_entry_path(rel: str, vault: bool = False) -> bool:
    """Whether a path relative to the root is where an entry file can be (as iter_entry_files sees it).

    `vault` (an adopted tree, layout.is_adopted): notes at the top level are entries too, and so
    are README.md and config.md (the engine's own files are in `.memstrata/`)."""
    parts = rel.split("/")
    name = parts[-1]
    return ((vault or len(parts) > 1) and name.endswith(".md")
            and not any(p.startswith(".") or p in ("", "..") for p in parts)
            and not reserved_file_name(name, vault)
            and "\n" not in rel and "\r" not in rel and not _unencodable(rel))


def is_entry_path_in(root, rel: str) -> bool:
    """is_entry_path for the tree at `root` (a vault's rule when it is adopted)."""
    return is_entry_path(rel, layout.is_adopted(root))


def entry_file_stat(root: Path, rel: str):
    """os.stat_result of the entry file at `rel`, None if there is none (gone, a symlink, a folder, a FIFO ...)."""
    try:
        st = os.lstat(os.path.join(str(root), rel))
    except OSError:
        return None
    return st if stat_mod.S_ISREG(st.st_mode) else None


# An entry file past this is never parsed or indexed (a hand-made or pulled dump: it would take
# the service's memory to gigabytes and overflow LanceDB's offsets); max_entry_bytes stays below.
ENTRY_FILE_MAX_BYTES = 16 * 1024 * 1024


def edited_at(root: Path, rel: str):
    """When a vault's note was last saved (its modification time), the age of a note that carries
    no date of its own: aging counts from the user's last edit, not from its first recall (a
    note never read would otherwise stay hot for ever while a recalled one ages). Never written
    into the note (storage/vault_note.py keeps `created:` out of it). None when it cannot be read."""
    try:
        return datetime.fromtimestamp(int(os.stat(os.path.join(str(root), rel)).st_mtime), tz=timezone.utc)
    except (OSError, OverflowError, ValueError):
        return None


def _outside_the_note(root: Path, rel: str, entry: Entry) -> None:
    """What a vault's note does not hold (storage/vault_note.py), from where the engine keeps it:
    its age from the file's time when it has no date, and its version number after its kept
    versions (`.memstrata/versions/{id}/`: the current one comes after every kept one)."""
    from memstrata.storage import versions

    if entry.last_touched is None:
        entry.created = edited_at(root, rel)
    if entry.id and valid_id(entry.id):
        kept = versions.list_snapshots(root, entry.id)
        if kept and max(kept) >= entry.version:
            entry.version = max(kept) + 1


def file_stamp(st) -> tuple:
    """(size, mtime_ns, inode) of a file: what changes when anyone saves it, in place or by a rename
    (Entry.read_stamp; the index keeps the first two)."""
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def read_entry_file(root: Path, rel: str) -> Entry:
    """Parse one entry file (CorruptEntry if it cannot be decoded or parsed).

    NotFound when `rel` is not where an entry can be (is_entry_path: a reserved name such as
    INDEX.md or config.md, a hidden folder, the root itself); safe_io.NotRegularFile (an
    OSError) when it is a symlink, FIFO, socket or device: those are never opened.
    """
    if not is_entry_path_in(root, str(rel)):
        raise NotFound(f"{rel} is not an entry file (a reserved name, a hidden folder or outside a category)")
    try:
        raw, st = read_regular_stamped(os.path.join(str(root), rel), ENTRY_FILE_MAX_BYTES)
    except FileTooLarge:
        raise CorruptEntry(f"{rel} is larger than {ENTRY_FILE_MAX_BYTES // (1024 * 1024)} MB: not read "
                           f"(an entry that size is a pasted dump, not a memory)") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptEntry(f"{rel} is not UTF-8 text") from None
    stem = Path(rel).stem
    adopted = layout.is_adopted(root)
    try:
        entry = codec.parse(text, category=category_of(rel), path=rel, fallback_title=stem,
                            id_key=layout.ADOPTED_ID_KEY if adopted else layout.ID_KEY)
        if adopted:
            _outside_the_note(root, rel, entry)
        entry.read_stamp = file_stamp(st)
        return entry
    except InvalidInput as exc:  # a value the codec refuses (e.g. importance: urgent): this file only
        raise CorruptEntry(exc.message) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:  # e.g. created: -62135596801
        raise CorruptEntry(f"frontmatter value cannot be read ({type(exc).__name__}: {exc})") from None


def unreadable_hint(message: str) -> str:
    """What to do about a file read_entry_file refused, by its cause (the message it raised)."""
    if "not UTF-8 text" in message:
        return "save it as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)"
    if "NUL bytes" in message:
        return "binary data, not a note: move it out of the tree"
    if "MB: not read" in message:
        return "split it into smaller notes"
    return "fix its frontmatter (the YAML between the --- lines)"  # every other refusal is the frontmatter's
