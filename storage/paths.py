"""Category paths, slugs, names that are never entries, and the rule that nothing leaves the root."""
from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path, PurePosixPath

from memstrata.storage.errors import InvalidInput

ARCHIVED_DIR = "archived"
DEFAULT_CATEGORY = "general"
MAX_SEGMENT_CHARS = 80
MAX_SEGMENT_BYTES = 100  # UTF-8 bytes of one category level (file names stop at 255 bytes)
# File names (any case) that are never entries: the tree's own files and agents' instruction files.
RESERVED_FILE_NAMES = frozenset({"index.md", "config.md", "memory.md", "claude.md", "agents.md", "readme.md"})
# Names Windows reserves for devices, with or without an extension ("con", "nul.md", "com1.txt").
WINDOWS_DEVICE_NAMES = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)),
                                  *(f"lpt{i}" for i in range(1, 10))})
RESERVED_SEGMENTS = {ARCHIVED_DIR, *RESERVED_FILE_NAMES}  # category levels that are refused
# In an adopted vault the engine's config.md lives in `.memstrata/` and no README.md is the engine's:
# a vault's README.md and config.md are the user's notes. INDEX.md (the folder indexes asked for with
# --indexes) and agents' instruction files (never modified: an id line would change what they say) stay
# out, spelled as the engine and the agents spell them: a docs site's `index.md` home page or an
# Obsidian note titled "Memory" or "Agents" is a note.
VAULT_RESERVED_FILE_NAMES = frozenset({"INDEX.md", "MEMORY.md", "CLAUDE.md", "AGENTS.md"})


def reserved_file_name(name: str, vault: bool) -> bool:
    """Whether a file of this name is never an entry: in a tree made by `mem init`, the tree's own files
    and agents' instruction files in any letter case; in an adopted vault, only as they are spelled."""
    return name in VAULT_RESERVED_FILE_NAMES if vault else name.lower() in RESERVED_FILE_NAMES
TOP_CATEGORY = ""  # an adopted vault's top level: notes there have no folder, so no category
TOP_LABEL = "/"    # ... as people see it: no folder can be named "/", and it reads as "the vault's root"
MAX_SLUG_BYTES = 120  # file names are limited to 255 bytes; leave room for suffixes
# A whole category: levels and UTF-8 bytes. Limits of the file system, not preferences (so not
# settings): a path past PATH_MAX (4096 bytes on Linux, with the root in front) fails deep in a
# write as "File name too long", and 2,000 levels took minutes of mkdir and checks (issue 27).
MAX_CATEGORY_DEPTH = 32
MAX_CATEGORY_BYTES = 1024
_JOINERS = "\u200c\u200d"  # zero-width (non-)joiners: part of how some scripts and emoji are written
_SLUG_DROP = re.compile(r"[^\w]+", re.UNICODE)


def validate_category(category: str | None, top: bool = False) -> str:
    """Normalise a category path ('projects/web') or raise InvalidInput with the reason.

    `top` (an adopted vault): none, "" or "/" is the vault's top level (TOP_CATEGORY), where Obsidian
    puts new notes; elsewhere none is DEFAULT_CATEGORY (entries of a tree made by `mem init` live in folders)."""
    if category is None:
        return TOP_CATEGORY if top else DEFAULT_CATEGORY
    text = unicodedata.normalize("NFC", str(category)).strip()
    if not text or (top and text == TOP_LABEL):
        return TOP_CATEGORY if top else DEFAULT_CATEGORY
    if "\x00" in text or any(unicodedata.category(ch) in ("Cc", "Cs") for ch in text):
        raise InvalidInput("category contains control characters or lone surrogates")
    if any(ch in "<>" or (unicodedata.category(ch) == "Cf" and ch not in _JOINERS) for ch in text):
        # a folder name, shown to agents in listings and blocks: no markup ('</memory><system>'),
        # no invisible format characters (a right-to-left override reverses how a path reads)
        raise InvalidInput(f"category {text[:80]!r} holds '<', '>' or an invisible format character; "
                           "a category is a folder name")
    if text.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:[\\/]", text):
        raise InvalidInput(f"category {category!r} is an absolute path; use a relative path like projects/web")
    if text.startswith("~"):
        raise InvalidInput(f"category {category!r} starts with '~'; use a relative path like projects/web")
    if "\\" in text:
        raise InvalidInput(f"category {category!r} contains a backslash; separate levels with '/'")
    check_category_size(text, category)
    segments = [s.strip() for s in text.strip("/").split("/")]
    for segment in segments:
        if not segment:
            raise InvalidInput(f"category {category!r} has an empty level ('//')")
        if segment in (".", ".."):
            raise InvalidInput(f"category {category!r} contains '{segment}'; categories cannot leave the root")
        if segment.startswith("."):
            raise InvalidInput(f"category {category!r} has a hidden level {segment!r}; those are reserved")
        if segment.lower() in RESERVED_SEGMENTS:
            raise InvalidInput(f"category {category!r} uses the reserved name {segment!r}")
        _check_portable_name(segment, category)
    return "/".join(segments)


def check_category_size(text: str, category=None) -> None:
    """InvalidInput when a category path has more levels or bytes than any entrance accepts (checked
    first, before any level is looked at: a 2,000-level category is refused at once)."""
    depth = text.strip("/").count("/") + 1
    shown = repr(text[:40] + "...") if len(text) > 40 else repr(text)
    if depth > MAX_CATEGORY_DEPTH:
        raise InvalidInput(f"category {shown} has {depth} levels; at most {MAX_CATEGORY_DEPTH}")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_CATEGORY_BYTES:
        raise InvalidInput(f"category {shown} is {size} bytes long; at most {MAX_CATEGORY_BYTES} (UTF-8)")


def is_windows_device_name(name: str) -> bool:
    """Whether Windows reserves `name` for a device (CON, nul.md, com1.txt ...; any case)."""
    return name.split(".")[0].rstrip(" ").lower() in WINDOWS_DEVICE_NAMES


def _check_portable_name(segment: str, category) -> None:
    """A category level every file system can hold: no device name, no trailing '.'/' ', not too long."""
    if is_windows_device_name(segment):
        raise InvalidInput(f"category {category!r} uses {segment!r}, a name Windows reserves for a device")
    if segment.endswith((".", " ")):
        raise InvalidInput(f"category {category!r} has a level ending in '.' or ' ' ({segment!r})")
    if len(segment) > MAX_SEGMENT_CHARS:
        raise InvalidInput(f"category level {segment[:20]!r}... is longer than {MAX_SEGMENT_CHARS} characters")
    if len(segment.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES:
        raise InvalidInput(f"category level {segment[:20]!r}... is longer than {MAX_SEGMENT_BYTES} bytes (UTF-8)")


def slugify(title: str) -> str:
    """A file-name-safe slug that keeps letters of any script (CJK included); never empty."""
    text = unicodedata.normalize("NFKC", title or "").strip().lower()
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] not in ("C",) or ch in " \t")
    text = _SLUG_DROP.sub("-", text).strip("-_")
    while len(text.encode("utf-8")) > MAX_SLUG_BYTES:
        text = text[:-1]
    text = text.strip("-_") or "entry"
    if text == "index" or is_windows_device_name(text):
        text += "-entry"  # index.md is never an entry; con, nul, com1 ... cannot be created on Windows
    return text


def file_slug(title: str) -> str:
    """slugify for an entry's file name: also never config, memory, claude, agents or readme
    (RESERVED_FILE_NAMES: such a file is not read as an entry). Category levels use slugify."""
    text = slugify(title)
    return f"{text}-entry" if f"{text}.md" in RESERVED_FILE_NAMES else text


def category_of(relative_path: str) -> str:
    """The category of an entry file from its path ('a/b/archived/x.md' -> 'a/b')."""
    parts = list(PurePosixPath(relative_path).parent.parts)
    if parts and parts[-1] == ARCHIVED_DIR:
        parts = parts[:-1]
    return "/".join(parts)


def is_archived_path(relative_path: str) -> bool:
    parts = PurePosixPath(relative_path).parent.parts
    return bool(parts) and parts[-1] == ARCHIVED_DIR


def entry_dir(category: str, archived: bool = False) -> str:
    if not category:  # a vault's top level
        return ARCHIVED_DIR if archived else TOP_CATEGORY
    return f"{category}/{ARCHIVED_DIR}" if archived else category


def shown_category(category: str) -> str:
    """A category as people read it: a vault's top level is TOP_LABEL."""
    return category or TOP_LABEL


def inside_root(root: Path, relative: str) -> Path:
    """Resolve a path relative to the root, refusing anything (symlinks included) that leaves it."""
    text = str(relative)
    if "\x00" in text:
        raise InvalidInput("path contains a NUL byte")
    candidate = Path(text)
    if candidate.is_absolute() or text.startswith("~"):
        raise InvalidInput(f"path {relative!r} must be relative to the memory root")
    root_real = Path(os.path.realpath(root))
    target = Path(os.path.realpath(root_real / candidate))
    if target != root_real and root_real not in target.parents:
        raise InvalidInput(f"path {relative!r} leads outside the memory root")
    return target
