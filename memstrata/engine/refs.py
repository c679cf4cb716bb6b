"""Which entry a reference names: a path, an engine id, a vault note's own `id:`, or a unique id prefix."""
from __future__ import annotations

import html
import os
import time

from memstrata.engine.inputs import valid_id
from memstrata.engine.state import TreeState
from memstrata.errors import ChangedOnDisk, CorruptEntry, InvalidInput, NotFound
from memstrata.storage import layout, trash, tree
from memstrata.storage.catalog import is_entry_path_in, read_entry_file
from memstrata.storage.entry import Entry
from memstrata.storage.holders import keeper_first
from memstrata.storage.paths import inside_root
from memstrata.storage.safe_io import is_regular_file, read_regular_bytes

MIN_ID_PREFIX = 4  # shortest id prefix accepted for an id


def own_id(entry: Entry) -> str | None:
    """A vault note's own `id:` as text (the user's key, kept beside the engine's `mem-id:`), as the
    catalog compares it (storage.catalog.OWN_ID); None in a tree made by `mem init` (`id:` is the engine's)."""
    if entry.id_key == layout.ID_KEY:
        return None
    value = entry.extra.get("id")
    if value is None or isinstance(value, (bool, dict, list)):
        return None
    return str(value).strip() or None


def resolve(state: TreeState, ref: str) -> Entry:
    """The entry `ref` names; NotFound if there is none, InvalidInput when it names several.

    In order: a path relative to the root (or `path:` and a path, as recall names a note without an
    id); an engine id; the own `id:` of an adopted vault's note (the user's id stays usable wherever an
    id is); a unique prefix of an engine id. A reference that is both an engine id and another note's
    own id, or the own id of several notes, names the files instead of choosing one."""
    root = state.root
    ref = str(ref or "").strip()
    if not ref:
        raise InvalidInput("give an entry id or a path relative to the root")
    tree.require_initialised(root)
    if ref.startswith("path:"):  # how recall names a hand-made file `mem sync` has not given an id yet
        ref = ref[len("path:"):]
    if "/" in ref or ref.endswith(".md"):
        return _at_path_or_own_id(state, ref)
    # where it was, before a refresh forgets it (a new process's catalog may have forgotten it already:
    # its record of the first holder stays)
    known = (state.catalog.paths_of(ref) or [p for p in [state.catalog.first_seen(ref)] if p]) if valid_id(ref) else []
    for attempt in range(2):
        holders = _holders(state, ref) if valid_id(ref) else []
        own = _own_id_holders(state, ref, {h.path for h in holders})
        if holders or own:
            return _named_by(state, ref, holders, own)
        if attempt == 0:
            state.catalog.refresh()
    if not valid_id(ref):
        raise InvalidInput(f"{ref!r} is not an entry id")
    if len(ref) >= MIN_ID_PREFIX:  # a unique prefix, like git's
        found = state.catalog.ids_starting(ref)
        if len(found) == 1:
            return resolve(state, found[0])
        if found:
            raise InvalidInput(f"{ref} is the start of several ids ({', '.join(found)} ...); give more of it")
    try:
        trashed = trash.find(root, ref)
    except InvalidInput as exc:  # a prefix of several trashed ids: say so, with the way back
        raise NotFound(f"no entry with id {ref} in the tree; {exc.message} (`mem trash list`, `mem restore ID`)")
    except (NotFound, OSError):
        trashed = None
    if trashed is not None:
        raise NotFound(f"{ref} is in the trash ({trashed.title or trashed.trashed_from}): "
                       f"`mem restore {trashed.id}` brings it back")
    if len(ref) < MIN_ID_PREFIX:
        raise NotFound(f"no entry with id {ref} (an id prefix needs at least {MIN_ID_PREFIX} characters)")
    saving = [rel for rel in known if _half_saved(root, rel, ref)]
    if saving:  # an editor that truncates, then writes, left it without its id for a moment
        return _once_saved(state, ref, saving)
    left = [rel for rel in known if is_regular_file(root / rel)]
    if left:  # not deleted: the file is there without the id (emptied, or rewritten outside the engine)
        raise NotFound(f"no entry with id {ref}: {left[0]}, which held it, holds no entry id now "
                       "(emptied or rewritten outside the engine?)")
    aside = _quarantined(root, ref)
    if aside:  # `mem doctor --fix` set its file aside (it could not be read): say where, and how back
        raise NotFound(f"no entry with id {ref} in the tree: `mem doctor --fix` set its file aside as {aside} "
                       "(it could not be read); mend it and move it back into a category folder")
    raise NotFound(f"no entry with id {ref}")


def _quarantined(root, ref: str) -> str | None:
    """The file in `.quarantine/` (the doctor's, never deleted) whose `id:` (or `mem-id:`) line is the
    whole id `ref`, its name with control characters escaped (a file name is no terminal command), or None."""
    import re

    from memstrata.doctor.checks import QUARANTINE_DIR

    folder = layout.path(root, QUARANTINE_DIR)
    line = re.compile(rf"(?m)^(?:mem-)?id: *['\"]?{re.escape(ref)}['\"]? *\r?$")  # the whole id, never a prefix
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    for name in names:
        try:
            text = read_regular_bytes(folder / name, 1 << 20).decode("utf-8", "replace") if name.endswith(".md") else ""
            if line.search(text):
                shown = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in name)
                return f"{layout.at(root, QUARANTINE_DIR)}/{shown}"
        except (OSError, ValueError):
            continue
    return None


SAVE_SECONDS = 2.0  # a file of the entry's changed this recently may be half-way through an editor's save


def _half_saved(root, rel: str, ref: str) -> bool:
    """Whether the file at `rel` looks half-way through a save: changed in the last SAVE_SECONDS and
    empty, unreadable as an entry, or holding `ref` again (saved whole since it was read); not a whole
    note without the id (a rewrite, or another entry now)."""
    try:
        if not is_regular_file(root / rel) or not 0 <= time.time() - os.stat(root / rel).st_mtime < SAVE_SECONDS:
            return False
    except OSError:
        return False
    try:
        if os.stat(root / rel).st_size == 0:
            return True
        return read_entry_file(root, rel).id == ref
    except (CorruptEntry, NotFound, OSError):
        return True


def _once_saved(state: TreeState, ref: str, saving: list[str]) -> Entry:
    """The entry `ref` names once the file it was in is saved whole (read again after each quiet
    moment, up to SAVE_SECONDS); ChangedOnDisk if it still holds no such entry then."""
    deadline = time.monotonic() + SAVE_SECONDS
    while time.monotonic() < deadline:
        time.sleep(max(0.02, state.settings.edit_quiet_ms / 1000))
        state.catalog.refresh()
        try:
            holders = _holders(state, ref)
        except CorruptEntry:  # still half-way through the save
            continue
        if holders:
            return _named_by(state, ref, holders, [])
    raise ChangedOnDisk(saving, reading=True)


def _at_path_or_own_id(state: TreeState, ref: str) -> Entry:
    """The entry file at `ref`; when there is none, the note whose own `id:` is `ref` (a vault's ids may
    hold a slash, `id: sub/a2`, and an engine id never does): a file at that path still wins."""
    try:
        return _at_path(state.root, ref)
    except (NotFound, InvalidInput) as missing:  # InvalidInput: `ref` as a path leaves the root
        for attempt in range(2):
            own = _own_id_holders(state, ref, set())
            if own:
                return _named_by(state, ref, [], own)
            if attempt == 0:
                state.catalog.refresh()
        raise missing


def _at_path(root, ref: str) -> Entry:
    """The entry file at `ref`, or, when there is none, at `ref` unescaped: a fence's id and the MCP and
    `--json` answers show a path escaped as fenced text is (`ops/Q&amp;A.md`), and an agent hands that back."""
    for candidate in dict.fromkeys((ref, html.unescape(ref))):
        path = inside_root(root, candidate)
        rel = path.relative_to(root).as_posix()
        if is_entry_path_in(root, rel) and is_regular_file(path):
            return read_entry_file(root, rel)  # a read never writes: an id comes by sync, maintain or a write
    raise NotFound(f"no entry at {ref}")


def _holders(state: TreeState, entry_id: str) -> list[Entry]:
    """The entries whose engine id is `entry_id` (several: a copied note kept its id line)."""
    holders = []
    for rel in state.catalog.paths_of(entry_id):
        if is_regular_file(state.root / rel):
            entry = read_entry_file(state.root, rel)
            if entry.id == entry_id:
                holders.append(entry)
    return holders


def _own_id_holders(state: TreeState, ref: str, skip: set) -> list[Entry]:
    """An adopted vault's notes whose own `id:` is `ref`, other than those at `skip` (the file itself)."""
    out = []
    for rel in state.catalog.paths_of_own_id(ref):
        if rel not in skip and is_regular_file(state.root / rel):
            entry = read_entry_file(state.root, rel)
            if own_id(entry) == ref:
                out.append(entry)
    return out


def _named_by(state: TreeState, ref: str, holders: list[Entry], own: list[Entry]) -> Entry:
    """The one entry `ref` names: by its engine id (several files with one id, a copy: the one the
    doctor lets keep it), or by a note's own `id:`; InvalidInput naming the files when `ref` is both,
    or the own id of several notes: which one was meant is the user's to say."""
    if holders:
        keeper = keeper_first(state.root, holders, state.catalog.first_seen(ref))[0]
        if own:
            raise InvalidInput(f"{ref} names two notes: {keeper.path} (its {keeper.id_key}) and {own[0].path} "
                               f"(its own id:); give the path of the one you mean")
        return keeper
    if len(own) > 1:
        raise InvalidInput(f"{ref} is the own id: of several notes: {', '.join(e.path for e in own[:5])}; "
                           f"give the path of the one you mean")
    return own[0]
