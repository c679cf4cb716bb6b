"""What the engine may write into an adopted vault's note: the note's own lines and body, of its keys only `mem-id:`."""
from __future__ import annotations

from pathlib import PurePosixPath

from memstrata.storage import codec, frontmatter_edit
from memstrata.storage.entry import Entry

# The keys the engine keeps up by itself (aging, the access journal, versions, review, agents).
# In a note of the user's they are never added nor changed: the engine keeps them outside the
# note (the access journal, `.memstrata/versions/`, the catalog, computed at read time), so a
# recall, `mem maintain`, a restore or a team merge never rewrites the user's file. A value the
# user wrote under one of these names (`updated: 2023-01-01`) stays as they wrote it.
ENGINE_KEYS = ("status", "tier", "layer", "created", "updated", "version", "last_access", "access_count",
               "context_correlation", "weight", "retention", "summary", "full_content_file", "agent", "history")
# What is left (title, tags, importance, important, related, expires, the review keys, and every
# key of the user's own) changes in the note only when a command the user gives changes it:
# `mem update --title/--tag`, `mem review mark`, a merge of two people's edits of their keys. The
# id line is the one line adoption adds.


def is_engine_rendered(text: str, rel: str, id_key: str) -> bool:
    """Whether `text` is exactly the engine's canonical rendering of what it parses to (a note
    `mem write` made in the vault): such a file is the engine's and is rendered anew as ever."""
    try:
        entry = codec.parse(text, path=rel, fallback_title=PurePosixPath(rel).stem, id_key=id_key)
        return codec.render(entry) == text
    except Exception:  # noqa: BLE001 - unreadable: not the engine's rendering
        return False


def note_text(old_text: str | None, rel: str, entry: Entry, home: str | None = None) -> str:
    """The text of the note at `rel` (holding `old_text`, the user's own format) once it stores
    `entry`: `old_text` with the body and the user's keys as `entry` has them; the engine's keys
    (ENGINE_KEYS) stay as the note had them, absent when it had none. A note without text yet,
    or one the engine rendered itself, gets the engine's rendering (frontmatter_edit.edited_text).

    `rel` is where the note will be; `home` (default `rel`) the path whose file name gives the note
    its title (the trash keeps a note under another name): a title taken from it is no change."""
    if not old_text or is_engine_rendered(old_text, rel, entry.id_key):
        return frontmatter_edit.edited_text(old_text, rel, entry)
    try:
        before = codec.parse(old_text, category=entry.category, path=rel,
                             fallback_title=PurePosixPath(rel).stem, id_key=entry.id_key)
    except Exception:  # noqa: BLE001 - the note as the engine wrote it before: rendered anew
        return frontmatter_edit.edited_text(old_text, rel, entry)
    shown = entry.copy(**{key: getattr(before, key) for key in ENGINE_KEYS})
    stem = PurePosixPath(home or entry.path or rel).stem
    if "title" not in codec.split_frontmatter(old_text)[0] and (not shown.title or shown.title in (stem, before.title)):
        # titled by what the note holds (its H1, else its file name: codec.first_heading), not by a `title:`
        # line: the title follows a new body, and no `title:` line is written for it
        shown.title = codec.first_heading(shown.body) or PurePosixPath(rel).stem  # as the note at `rel` reads
    elif not shown.title or shown.title == stem:
        shown.title = before.title  # the file name gives it: no `title:` line
    return frontmatter_edit.edited_text(old_text, rel, shown, own_spacing=True)


def as_read(text: str, rel: str, entry: Entry) -> Entry:
    """The entry a note's `text` holds (a kept version of it, say) at `rel`, with the engine's keys
    (ENGINE_KEYS, kept outside the note) as `entry` has them."""
    read = codec.parse(text, category=entry.category, path=rel, fallback_title=PurePosixPath(rel).stem,
                       id_key=entry.id_key)
    return read.copy(**{key: getattr(entry, key) for key in ENGINE_KEYS})
