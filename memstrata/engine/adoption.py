"""Making a folder a tree: `mem init`, adopting a folder of notes, and ids for hand-made files."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from memstrata.errors import InvalidInput, MemstrataError, NotFound
from memstrata.storage import adopt, indexes, layout, tree
from memstrata.storage.atomic import ChangedMeanwhile, NotReplaced, one_sync
from memstrata.storage.catalog import read_entry_file
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry, new_id
from memstrata.storage.holders import keeper_first
from memstrata.storage.lock import TreeLock
from memstrata.storage.safe_io import read_regular_bytes

if TYPE_CHECKING:
    from memstrata.engine.entries import Entries

_NOTES_COUNTED = 1000  # a folder's Markdown notes are counted up to this many


def _markdown_notes(root) -> int:
    """How many entry-like Markdown files a folder holds (0 for an empty or new folder), its top
    level included: a new Obsidian vault keeps its notes there (`Welcome.md`), and would become
    adoptable only by `--adopt` (a README.md or config.md alone is no vault)."""
    import os

    from memstrata.storage.catalog import SKIPPED_FILES, iter_entry_files

    try:
        with os.scandir(root) as items:
            count = sum(1 for i in items if i.name.endswith(".md") and not i.name.startswith(".")
                        and i.name.lower() not in SKIPPED_FILES and i.is_file(follow_symlinks=False))
    except OSError:
        count = 0
    for _ in iter_entry_files(root):
        count += 1
        if count >= _NOTES_COUNTED:
            break
    return count


def _not_adoptable(root) -> tuple[list[str], list[str]]:
    """(files `mem init` would overwrite, Markdown notes that cannot become entries and why) of a
    folder that is not a tree yet: its own config.md or INDEX.md files; notes with a reserved name
    (is_entry_path: in an adopted vault, notes at the top level, README.md and config.md are entries)."""
    import os

    from memstrata.storage.catalog import is_entry_path_in, printable_name

    blocking, skipped = [], []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
            low = name.lower()
            if low == "index.md" or (rel.lower() == "config.md"):
                try:  # a regular file only: a FIFO or a link named INDEX.md is never opened
                    head = read_regular_bytes(os.path.join(folder, name), 1024 * 1024)[:200].decode("utf-8", "replace")
                except OSError:
                    head = ""
                if not head.startswith(("---\ncategory:", "---\ntype: root-index")) and "memstrata" not in head:
                    blocking.append(rel)
            if low.endswith(".md") and not is_entry_path_in(root, rel):
                shown = printable_name(rel)
                why = ("a name that is not UTF-8 or holds a line break; rename it to make it an entry"
                       if shown != rel or "\n" in rel or "\r" in rel else
                       "at the top level: entries live in folders" if "/" not in rel and not layout.is_adopted(root)
                       else "a reserved name")
                # printable_name escaped the line break once: quoted, not repr'd (that escaped it twice)
                skipped.append(f"not adopted: '{shown}' ({why})" if "\n" in rel or "\r" in rel
                               else f"not adopted: {shown} ({why})")
    return blocking, skipped



def _config_lost(root: Path, adopt: bool) -> bool:
    """Whether `root` is a tree made by `mem init` whose config.md is gone (`mem init` writes it back);
    InvalidInput for any other tree `mem init` must not make anew: a settings file that cannot be read
    (tree.config_problem), or `--adopt` of a tree made by `mem init` (every entry would get a second id,
    and its trash, versions and originals would be left beside the vault's)."""
    problem = tree.config_problem(root) if root.is_dir() else None
    if not problem:
        return False
    if os.path.lexists(layout.path(root, tree.CONFIG_FILE)):
        raise InvalidInput(problem)
    if adopt:
        raise InvalidInput(f"{root} is a memory tree made by `mem init` whose config.md is missing "
                           f"({', '.join(tree.engine_files(root)[:3])}): adopting it would give every entry a "
                           f"second id; `mem init --root {root}` (without --adopt) writes its config.md back")
    return True


def init(entries: Entries, adopt: bool = False, indexes_wanted: bool = False, progress=None) -> dict:
    """Create the tree (idempotent): root 0700, config.md, INDEX.md, .gitignore, starter categories.

    A folder that already holds Markdown notes (a vault, a docs folder) becomes a tree only
    with `adopt`: its notes become entries, each given one `mem-id:` line and nothing else, and
    the engine's own files go into one hidden `.memstrata/` folder (storage/layout.py; docs/vault.md).
    Its settings are written first, so an adopt that was killed resumes with the vault's rules
    when run again. Category INDEX.md files in a vault only with `indexes_wanted`.
    `progress(done, total)` follows the notes given an id (the embedding that follows reports its own).
    """
    if entries.root.exists() and not entries.root.is_dir():
        raise InvalidInput(f"{entries.root} exists and is not a folder")
    config_lost = _config_lost(entries.root, adopt)  # a tree whose config.md is gone: written back, never adopted
    if adopt and not tree.is_initialised(entries.root):  # --adopt names a folder of notes: never a new empty tree
        shown = str(entries.root)
        if not entries.root.exists():
            raise NotFound(f"{shown} does not exist: --adopt makes a folder of Markdown notes a tree "
                           f"(`mem init --root {shown}` without --adopt starts a new, empty one)")
        if not _markdown_notes(entries.root) and not (entries.root / layout.ENGINE_HOME).is_dir():
            raise InvalidInput(f"{shown} holds no Markdown notes to adopt "
                               f"(`mem init --root {shown}` without --adopt makes it an empty tree)")
    fresh = not tree.is_initialised(entries.root) and entries.root.exists()
    # a folder with the engine's hidden folder is an adopted vault that lost its settings: never
    # the old layout over the user's files
    adopt = adopt or (fresh and (entries.root / layout.ENGINE_HOME).is_dir())
    notes = _markdown_notes(entries.root) if fresh and not config_lost else 0
    if notes and not adopt:
        raise InvalidInput(f"{entries.root} already holds {notes}{'+' if notes >= _NOTES_COUNTED else ''} "
                           f"Markdown notes; `mem init --adopt` makes them memories (each gets a `mem-id:` "
                           f"line, nothing else in them changes), or choose an empty folder")
    if fresh and adopt:
        blocking = _not_adoptable(entries.root)[0] if indexes_wanted else []
        if blocking:  # INDEX.md files --indexes would overwrite: never, say so instead
            raise InvalidInput(f"{entries.root} holds files a memory tree writes itself: {', '.join(blocking[:5])}"
                               f"{' ...' if len(blocking) > 5 else ''}; rename them (e.g. to overview.md) "
                               "first, or adopt without --indexes")
        # a vault's notes are the user's own writing: aging retiers them but never cuts or moves them
        rules = Settings(compress_bodies=False, archive_moves_files=False, category_indexes=indexes_wanted)
        made = tree.initialise(entries.root, rules, adopted=True)
    else:
        with TreeLock(entries.root) if entries.root.exists() else _NoLock():
            made = tree.initialise(entries.root)
    entries.state.use_settings(None)
    entries.state.replace_catalog(None)  # the layout may have changed: the catalog opens where it now lives
    if layout.is_adopted(entries.root):
        _preload(entries.state)  # the index is synced next: load it while the notes are given ids
        with entries.state.lock():
            tree.ensure_gitignore(entries.root)
        refused: dict[str, str] = {}
        adopted = give_ids(entries, progress=progress, refused=refused)
        skipped = _not_adoptable(entries.root)[1] + _not_adopted(entries, refused)
        with entries.state.lock():
            entries.save.write_indexes(None)
        count = sum(1 for e in entries.state.catalog.entries() if e.id)
        return {"root": str(entries.root), "created": made, "adopted": adopted, "entries": count,
                "skipped": skipped}
    with entries.state.lock():
        now = entries.state.now()
        entries.state.catalog.refresh()
        if not entries.state.catalog.count():  # starter folders only for a new, empty tree
            for category, description in tree.STARTER_CATEGORIES.items():
                if tree.top_level_spelling(entries.root, category) != category:
                    continue  # the folder's own `Daily/` serves: no `daily/` twin beside it
                if not (entries.root / category / indexes.INDEX_FILE).exists():
                    indexes.set_description(entries.root, category, description, entries.state.catalog, now)
                    made.append(f"{category}/{indexes.INDEX_FILE}")
        entries.save.write_indexes(None)
    entries.state.use_settings(None)
    return {"root": str(entries.root), "created": made, "adopted": 0, "entries": 0, "skipped": []}


def _preload(state) -> None:
    """Load the embedding model, then import LanceDB, in a background thread: ~0.5 s and ~2 s of a
    fresh process that the adopt would otherwise spend before its first embedding and its first
    table write. The notes are given ids, read and chunked meanwhile, and the table is created
    after its rows are embedded (VectorIndex._create_with), so the import runs beside onnxruntime
    (which releases the GIL). Failures are left to the caller's own use, which raises them."""
    import threading

    model = None if state.loaded_embedder is not None else state.settings.embedding_model

    def run() -> None:
        from memstrata.models.embedder import get_embedder
        from memstrata.retrieval.lance_import import preload

        try:
            if model is not None:
                get_embedder(model)  # the state's own call finds it loaded (or waits for it)
            preload()
        except Exception:  # noqa: BLE001 - the caller loads it again and reports why it cannot
            pass

    # not a daemon: a process ending while this thread is inside onnxruntime's or LanceDB's native
    # start-up aborted ("terminate called without an active exception", exit 134) instead of exiting
    # with its one-line error; the interpreter now waits the second or two it takes
    threading.Thread(target=run, name="adopt-preload", daemon=False).start()


def give_ids(entries: Entries, left: list | None = None, progress=None, id_for=None,
             refused: dict | None = None) -> int:
    """Give every entry file without a usable id a stable one, written once into the file (one
    id line, `mem-id:` in an adopted vault; nothing else in it changes). Returns how many files got one.
    Only `mem sync`, `mem maintain`, `mem init` and writes call it: a read never writes. A file
    changed while it was given its id is left as it is (its path goes into `left`). `id_for(path)`
    chooses the id (team sync: the same on every clone for a note pulled without one); default random.
    A file the system does not let it write (immutable, a read-only folder) is left as it is, the
    others get theirs; `refused` gets its path and the reason."""
    from memstrata.doctor.checks import remove_dead_writers_temps

    catalog = entries.state.catalog
    given, categories = 0, []
    refused = {} if refused is None else refused
    with entries.state.lock():
        remove_dead_writers_temps(entries.root)  # a killed write's copy of a note is no note of the user's
        catalog.refresh()
        todo = catalog.unidentified()
        written, changed = [], set()
        try:
            with one_sync():  # one flush of the disk for every file given an id, not two fsyncs each
                for done, rel in enumerate(todo):
                    if progress is not None:
                        progress(done, len(todo))
                    fresh = id_for(rel) if id_for is not None else new_id()
                    try:
                        if adopt.give_id(entries.root, rel, fresh):
                            written.append((rel, fresh))
                    except OSError as exc:  # e.g. its folder takes no new file: left for the doctor to report
                        refused[rel] = exc.strerror or str(exc)
                    except MemstrataError:
                        continue  # left for the doctor to report
        except ChangedMeanwhile as exc:  # the others are written; these an editor saved meanwhile
            changed = set(exc.paths)
        except NotReplaced as exc:  # the others are written; these the system would not replace
            changed = set(exc.changed) | set(exc.refused)
            refused.update({os.path.relpath(path, entries.root).replace(os.sep, "/"): why
                            for path, why in exc.refused.items()})
        for rel, fresh in written:
            if str(entries.root / rel) in changed:
                if left is not None and rel not in refused:
                    left.append(rel)
                continue
            try:
                entry = read_entry_file(entries.root, rel)
            except (MemstrataError, OSError):
                continue  # left for the doctor to report
            if entry.id == fresh:
                catalog.record(entry)
                categories.append(entry.category)
                given += 1
        if categories:
            entries.save.write_indexes(list(dict.fromkeys(categories)))
        if progress is not None and todo:
            progress(len(todo), len(todo))
    return given

def _not_adopted(entries: Entries, refused: dict | None = None) -> list[str]:
    """The notes of a folder being adopted that did not become entries, and why (`refused`: those
    give_ids could not write, with the system's reason)."""
    refused = refused or {}
    catalog = entries.state.catalog
    out = [f"not adopted: {rel} (unreadable: {error}; fix it, then `mem sync`)"
           for rel, error in sorted(catalog.errors().items())]
    out += [f"not adopted: {rel} (cannot write: {refused[rel]})" if rel in refused else
            f"not adopted: {rel} ({_why_no_id(entries.root, rel)}; not adopted)"
            for rel in catalog.unidentified()]  # give_ids left it as it was: a one-line edit would break it
    holders: dict[str, list[Entry]] = {}
    for entry in catalog.entries():
        if entry.id:  # files without one are listed above
            holders.setdefault(entry.id, []).append(entry)
    for entry_id, same in sorted(holders.items()):
        keeper, *others = keeper_first(entries.root, same, catalog.first_seen(entry_id))  # as `mem read`, the doctor
        for other in others:
            out.append(f"{other.path} has the id of {keeper.path} ({entry_id}): `mem doctor --fix` gives it a "
                       f"fresh id; until then `mem read {entry_id}` shows {keeper.path}")
    return out


def _why_no_id(root, rel: str) -> str:
    """Why give_ids left the note without an id (it is left byte for byte as it was)."""
    try:
        toml = adopt.has_toml_frontmatter(read_regular_bytes(Path(root) / rel)[:64].decode("utf-8", "replace"))
    except OSError:
        toml = False
    return ("TOML frontmatter (+++), which the engine does not write into" if toml
            else "frontmatter style the engine cannot add a line to")


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


