"""The one save path: checks before a write, then files (with rollback), catalog, index and INDEX.md."""
from __future__ import annotations

import os
from typing import Callable

from memstrata.engine.index import IndexStep
from memstrata.engine.state import TreeState
from memstrata.errors import InvalidInput, MemstrataError
from memstrata.results import WriteResult
from memstrata.storage import codec, frontmatter_edit, indexes, layout, modes, tree, vault_note
from memstrata.storage.atomic import atomic_move, atomic_write_bytes, atomic_write_text, one_sync
from memstrata.storage.entry import Entry, new_id
from memstrata.storage.entry_files import read_entry_file
from memstrata.storage.paths import inside_root
from memstrata.storage.safe_io import read_regular_bytes

# A check a new entry passes before it is written: None to go on, or the answer instead of
# a write (duplicate, near-duplicate, conflict, merged). Registered by features.versions.
WriteCheck = Callable[[Entry, bool, bool], "WriteResult | None"]
# A step run on every change of an existing entry, before it is saved: (current, changed,
# version note or None, undo list). Registered in order by features.aging and features.versions.
UpdateStep = Callable[[Entry, Entry, "str | None", list], None]


class SavePath:
    """Every change to an entry file goes through here, in this order:

    1. `check_entry`: input rules and the secret guard over the whole entry (every way in);
    2. `write_checks` (new entries): duplicate / near-duplicate / conflict, which may answer instead;
    3. `update_steps` (changed entries): aging's "a new body is full text again", then versions'
       snapshot and history line;
    4. `save_many`: the files (a move is a rename, then a rewrite), the catalog, the vector
       index, INDEX.md, each step after the one before; if any fails, every file is put back
       as it was and the undo actions of the steps above run.
    """

    def __init__(self, state: TreeState, index: IndexStep):
        self.state = state
        self.index = index
        self.write_checks: list[WriteCheck] = []
        self.update_steps: list[UpdateStep] = []

    # -- 1. checks before a write ---------------------------------------------------------
    def check_fields(self, fields: dict, initialised: bool | None = None) -> list[str]:
        """The secret guard over named text fields: refuses (SecretDetected) or returns warnings.
        `initialised`: whether the tree is one, when the caller (a bulk write under the lock)
        knows it already (reading config.md for each of its entries was 3% of an import)."""
        from memstrata.storage import secrets

        if initialised is None:
            initialised = tree.is_initialised(self.state.root)
        mode = self.state.settings.secrets if initialised else "refuse"
        return [f"possible secret: {f.describe()}" for f in secrets.check(fields, mode)]

    def check_entry(self, entry: Entry, initialised: bool | None = None) -> list[str]:
        """The secret guard over everything an entry would store (storage.secrets.record_fields:
        every field, every frontmatter key and value, path, an import's full text and versions)."""
        from memstrata.storage import secret_allow
        from memstrata.storage.secrets import located_in_entry, record_fields

        # values the user allowed in this very note (`mem secrets allow`) pass; any other is judged as ever
        if entry.path and secret_allow.holds(self.state.root, entry.path) and not secret_allow.not_allowed(
                self.state.root, entry.path, located_in_entry(entry)):
            return []
        return self.check_fields(record_fields(entry), initialised)

    def prepare(self) -> None:
        """Slow set-up a write needs (loading the model), done before the tree lock is taken."""
        self.index.prepare()

    # -- 2. and 3. ---------------------------------------------------------------------------
    def precheck(self, entry: Entry, force: bool, merge: bool) -> WriteResult | None:
        """Run the write checks in order; the first answer stops the write. Caller holds the lock."""
        for check in self.write_checks:
            answer = check(entry, force, merge)
            if answer is not None:
                return answer
        return None

    def update(self, current: Entry, changed: Entry, note: str | None = None, text: str | None = None) -> None:
        """Save `changed` as the next state of `current`, after every update step.

        `note`: the version history line for this change (a conflict, a merge, a revert);
        None for a plain update (a version is kept when anything the user sees changed). `text`: the
        file's exact new text, which reads as `changed` (a vault note's revert: its kept bytes).
        """
        undo: list[Callable[[], None]] = []
        if not current.id:  # a hand-made file without an id yet: this write gives it one (for versions too)
            current.id = changed.id = new_id()  # in place: the caller answers with this id
        for step in self.update_steps:
            step(current, changed, note, undo)
        self.save_many([(changed, current)], undo=undo, texts={changed.path: text} if text is not None else None)

    # -- 4. the save itself --------------------------------------------------------------------
    def save(self, entry: Entry, previous: Entry | None) -> None:
        self.save_many([(entry, previous)])

    def save_many(self, changes: list[tuple[Entry, Entry | None]], *, undo: list | None = None,
                  index_progress=None, write_indexes: bool = True, texts: dict | None = None) -> dict:
        """Write entries at entry.path (each moved from previous.path), then catalog, index and
        INDEX.md once. Callers hold the tree lock. Returns the index step's counts.

        A move is an atomic rename first and a rewrite second, so a crash leaves the old or
        the new entry, never two copies.
        """
        files: list[tuple[Entry, str | None, bytes | None]] = []
        key = layout.id_key(self.state.root)
        for entry, _ in changes:
            entry.id_key = key  # `mem-id:` in an adopted vault, whatever the entry was built from
            entry.read_stamp = None  # its file is the one written now: the index stats it
            if not entry.id:  # a hand-made file the user writes to: a write gives it its id
                entry.id = new_id()
        try:
            with one_sync():  # the batch's files reach the disk with one flush (storage/atomic.py)
                categories = self._write_files(changes, files, texts or {})
            self._record_catalog(changes)
            counts = self.index.upsert([entry for entry, _ in changes], progress=index_progress)
            if categories and write_indexes:
                self.write_indexes(list(dict.fromkeys(categories)))
            return counts
        except BaseException:
            for entry, old_path, old_bytes in reversed(files):
                self._put_back(entry, old_path, old_bytes)
            for action in reversed(undo or []):
                action()
            try:
                self.state.catalog.refresh()
            except Exception:  # noqa: BLE001 - derived; the next refresh walks again
                pass
            raise

    def _write_files(self, changes, files: list, texts: dict) -> list[str]:
        root = self.state.root
        categories: list[str] = []
        for entry, previous in changes:
            inside_root(root, entry.path)  # a symlinked folder must not lead a write outside the root
            target = root / entry.path
            old_path = previous.path if previous is not None else None
            old_file = root / old_path if old_path else None
            old_bytes = read_regular_bytes(old_file) if old_file is not None and os.path.lexists(old_file) else None
            if entry.path != old_path and (target.exists() or any(entry.path == e.path for e, _, _ in files)):
                raise InvalidInput(f"{entry.path} already exists")
            files.append((entry, old_path, old_bytes))
            if layout.is_adopted(root) and "/" in entry.path:  # a new folder in a vault: the user's mode
                modes.make_user_folders(root, entry.path.rsplit("/", 1)[0])
            if old_bytes is not None and old_path != entry.path:
                atomic_move(old_file, target, root=root)
            vault = layout.is_adopted(root)
            text = texts.get(entry.path) or _file_text(entry, old_path, old_bytes, vault)
            if not vault or old_path != entry.path or old_bytes != text.encode("utf-8"):
                # a vault's note given only a fresh id (doctor --fix of a template's copy) keeps its time: aging reads it
                kept = os.stat(target) if vault and old_path == entry.path and _only_id_changed(entry, previous) else None
                # a vault's note keeps its owner's permissions, a new one gets the umask's, as an editor's
                # save would (the engine's own files are private)
                mode = modes.vault_file_mode(root, entry.path) if vault else None
                atomic_write_text(target, text, root=root, mode=mode,  # a vault's note with the same bytes is left be
                                  times_ns=(kept.st_atime_ns, kept.st_mtime_ns) if kept else None)
            if indexes.listing_changed(entry, previous):
                categories.append(entry.category)
                if previous is not None:
                    categories.append(previous.category)
        return categories

    def _record_catalog(self, changes) -> None:
        catalog = self.state.catalog
        vault = layout.is_adopted(self.state.root)
        for entry, previous in changes:
            if previous is not None and previous.path and previous.path != entry.path:
                catalog.forget(previous.path)
            if vault:  # a vault's note holds only the user's keys: the catalog lists what it holds
                try:
                    entry = read_entry_file(self.state.root, entry.path)
                except (MemstrataError, OSError):
                    pass  # unreadable right after the write: the next refresh reads it again
            catalog.record(entry)

    def _put_back(self, entry: Entry, old_path: str | None, old_bytes: bytes | None) -> None:
        root = self.state.root
        if old_path and old_bytes is not None:
            atomic_write_bytes(root / old_path, old_bytes, root=root)
        if entry.path != old_path or old_bytes is None:
            (root / entry.path).unlink(missing_ok=True)

    # -- the tree's INDEX.md files -------------------------------------------------------------
    def write_indexes(self, categories) -> None:
        """Regenerate the INDEX.md files of `categories` (None: all, after re-reading the tree).

        Targeted updates trust the catalog, which every save records as it goes.
        """
        if categories is None:
            self.state.catalog.refresh()
        indexes.write_indexes(self.state.root, self.state.catalog, self.state.now(), categories)


def _only_id_changed(entry: Entry, previous: Entry | None) -> bool:
    """Whether `entry` is `previous` with another id and nothing else changed."""
    if previous is None or previous.id == entry.id or previous.body != entry.body:
        return False
    return previous.copy(id=entry.id, id_key=entry.id_key) == entry.copy()


def _decoded(old_bytes: bytes | None) -> str | None:
    try:
        return None if old_bytes is None else old_bytes.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _file_text(entry: Entry, old_path: str | None, old_bytes: bytes | None, vault: bool = False) -> str:
    """The text the entry's file gets: a hand-made file keeps every line that did not change; a
    vault's note keeps its own format and gets none of the engine's keys (storage/vault_note.py)."""
    old_text = _decoded(old_bytes)
    if old_text is None:
        return codec.render(entry)
    if vault:
        return vault_note.note_text(old_text, entry.path, entry)
    return frontmatter_edit.edited_text(old_text, old_path, entry)
