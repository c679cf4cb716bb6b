"""The one save path: checks before a write, then files (with rollback), catalog, index and INDEX.md."""
from __future__ import annotations

import os
import time
from typing import Callable

from memstrata.engine.index import IndexStep
from memstrata.engine.state import TreeState
from memstrata.errors import ChangedOnDisk, InvalidInput, MemstrataError
from memstrata.results import WriteResult
from memstrata.storage import codec, frontmatter_edit, indexes, layout, modes, tree, vault_note
from memstrata.storage.atomic import ChangedMeanwhile, atomic_move, atomic_write_bytes, atomic_write_text, one_sync
from memstrata.storage.entry import Entry, new_id
from memstrata.storage.entry_files import file_stamp, read_entry_file
from memstrata.storage.paths import inside_root
from memstrata.storage.safe_io import read_regular_bytes, read_regular_stamped

OWN_WRITES_KEPT = 4096  # stamps of the files this process wrote last (SavePath._own): they need no quiet wait

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

    No file is replaced that changed since it was read (an editor saved it meanwhile): the
    entry's `read_stamp` is checked before the write and the bytes once more right before the
    rename; a file saved outside the engine less than `edit_quiet_ms` ago is replaced only once it
    stayed unchanged that long (an editor that truncates, then writes). Else nothing of the batch
    is written and ChangedOnDisk names the files: the caller reads them again and redoes, or
    skips them and says so.
    """

    def __init__(self, state: TreeState, index: IndexStep):
        self.state = state
        self.index = index
        self.write_checks: list[WriteCheck] = []
        self.update_steps: list[UpdateStep] = []
        self._own: dict[str, tuple] = {}  # path -> stamp of the files this process wrote last

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
        the new entry, never two copies. ChangedOnDisk (nothing written) when a file changed since
        `previous` was read from it, or while this batch was being written.
        """
        files: list[tuple] = []
        key = layout.id_key(self.state.root)
        for entry, _ in changes:
            entry.id_key = key  # `mem-id:` in an adopted vault, whatever the entry was built from
            entry.read_stamp = None  # its file is the one written now: the index stats it
            if not entry.id:  # a hand-made file the user writes to: a write gives it its id
                entry.id = new_id()
        try:
            try:
                with one_sync():  # the batch's files reach the disk with one flush (storage/atomic.py)
                    categories = self._write_files(changes, files, texts or {})
            except ChangedMeanwhile as exc:
                root = self.state.root
                raise ChangedOnDisk([os.path.relpath(p, root).replace(os.sep, "/") for p in exc.paths]) from None
            self._remember(files)
            self._record_catalog(changes)
            counts = self.index.upsert([entry for entry, _ in changes], progress=index_progress)
            if categories and write_indexes:
                self.write_indexes(list(dict.fromkeys(categories)))
            return counts
        except BaseException:
            for entry, old_path, old_bytes, new_bytes in reversed(files):
                self._put_back(entry, old_path, old_bytes, new_bytes)
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
            old_bytes, seen = self._read_unchanged(old_path, previous) if old_file is not None and \
                os.path.lexists(old_file) else (None, None)
            if entry.path != old_path and (target.exists() or any(entry.path == e.path for e, *_ in files)):
                raise InvalidInput(f"{entry.path} already exists")
            vault = layout.is_adopted(root)
            text = texts.get(entry.path) or _file_text(entry, old_path, old_bytes, vault)
            files.append((entry, old_path, old_bytes, text.encode("utf-8")))
            if vault and "/" in entry.path:  # a new folder in a vault: the user's mode
                modes.make_user_folders(root, entry.path.rsplit("/", 1)[0])
            if old_bytes is not None and old_path != entry.path:
                atomic_move(old_file, target, root=root)
            # replaced only if it still is the file read (an editor's save since is kept: ChangedMeanwhile)
            unchanged = (lambda t=target, s=seen, b=old_bytes: _still(t, s, b)) if seen is not None else None
            if not vault or old_path != entry.path or old_bytes != text.encode("utf-8"):
                # a vault's note given only a fresh id (doctor --fix of a template's copy) keeps its time: aging reads it
                kept = os.stat(target) if vault and old_path == entry.path and _only_id_changed(entry, previous) else None
                # a vault's note keeps its owner's permissions, a new one gets the umask's, as an editor's
                # save would (the engine's own files are private)
                mode = modes.vault_file_mode(root, entry.path) if vault else None
                # (a vault's note with the same bytes is left be)
                atomic_write_text(target, text, root=root, mode=mode, unchanged=unchanged,
                                  times_ns=(kept.st_atime_ns, kept.st_mtime_ns) if kept else None)
            if indexes.listing_changed(entry, previous):
                categories.append(entry.category)
                if previous is not None:
                    categories.append(previous.category)
        return categories

    def _read_unchanged(self, rel: str, previous: Entry | None) -> tuple[bytes, os.stat_result]:
        """The bytes and stamp of the file `previous` was read from, as long as nobody saved it since
        (ChangedOnDisk otherwise) and it has been quiet for edit_quiet_ms (waiting for that when it
        was saved outside the engine just now: an editor may be half-way through its save)."""
        path = self.state.root / rel
        data, seen = read_regular_stamped(path)
        expected = previous.read_stamp if previous is not None else None
        if expected is not None and file_stamp(seen) != tuple(expected):
            raise ChangedOnDisk([rel])
        quiet = self.state.settings.edit_quiet_ms / 1000
        age = time.time() - seen.st_mtime_ns / 1e9
        if 0 <= age < quiet and self._own.get(rel) != file_stamp(seen):
            time.sleep(quiet - age)
            again = read_regular_bytes(path)
            if file_stamp(os.stat(path)) != file_stamp(seen) or again != data:
                raise ChangedOnDisk([rel])
        return data, seen

    def _remember(self, files: list) -> None:
        """The stamps of the files just written: this process's next write of them waits for no quiet."""
        for entry, *_ in files:
            try:
                self._own[entry.path] = file_stamp(os.stat(self.state.root / entry.path))
            except OSError:
                continue
        while len(self._own) > OWN_WRITES_KEPT:
            self._own.pop(next(iter(self._own)))

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

    def _put_back(self, entry: Entry, old_path: str | None, old_bytes: bytes | None, new_bytes: bytes) -> None:
        """Undo one file of a failed batch: only a file that holds what this batch wrote (or, moved,
        what it held) is put back; one an editor saved since is left as saved."""
        root = self.state.root
        target = root / entry.path
        try:
            now = read_regular_bytes(target)
        except OSError:
            now = None
        ours = now is not None and (now == new_bytes or (entry.path != old_path and now == old_bytes))
        if not ours:
            return
        if old_path and old_bytes is not None and (old_path == entry.path or not os.path.lexists(root / old_path)):
            atomic_write_bytes(root / old_path, old_bytes, root=root,
                               unchanged=lambda: _holds(root / old_path, new_bytes, old_bytes))
        if entry.path != old_path or old_bytes is None:
            target.unlink(missing_ok=True)

    # -- the tree's INDEX.md files -------------------------------------------------------------
    def write_indexes(self, categories) -> None:
        """Regenerate the INDEX.md files of `categories` (None: all, after re-reading the tree).

        Targeted updates trust the catalog, which every save records as it goes.
        """
        if categories is None:
            self.state.catalog.refresh()
        indexes.write_indexes(self.state.root, self.state.catalog, self.state.now(), categories)


def _still(path, seen: os.stat_result, data: bytes) -> bool:
    """Whether the file at `path` still is the one read (its stamp and bytes): the last check before a rename."""
    try:
        return file_stamp(os.stat(path)) == file_stamp(seen) and read_regular_bytes(path) == data
    except OSError:
        return False


def _holds(path, *texts: bytes) -> bool:
    """Whether the file at `path` is missing or holds one of `texts` (a put-back never replaces an editor's save)."""
    try:
        return read_regular_bytes(path) in texts
    except FileNotFoundError:
        return True
    except OSError:
        return False


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
