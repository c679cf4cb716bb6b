"""Import: JSONL files, Viking and PME trees in, through the save path (export: features/export.py)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from memstrata.engine.entries import Entries
from memstrata.engine.index import INDEX_FAILURES
from memstrata.engine.inputs import check_size
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.errors import Interrupted, InvalidInput, MemstrataError, NotFound
from memstrata.features.import_index import index_missing, warm_imports
from memstrata.features.transfer_formats import (
    ImportReport,
    detect_layout,
    entries_from_jsonl,
    entries_from_pme,
    entries_from_viking,
    viking_base,
)
from memstrata.storage import cancel, layout, sidecars, trash, tree, versions
from memstrata.storage.secrets import redact
from memstrata.storage.entry import Entry, new_id

IMPORT_BATCH = 256            # entries saved (and embedded) per batch by the bulk import

WARM_IMPORTS_FROM = 64        # entries from which lancedb and onnxruntime are imported while files are written

Progress = Callable[[int, int], None]


class Transfer:
    """import_path / import_jsonl / import_tree.

    Imported entries take the one save path (engine/save.py) in batches: the same checks
    (input rules, the secret guard over the whole entry), files with rollback, catalog,
    index (a compressed entry by its full text) and INDEX.md once at the end. They keep the
    fields they come with (id, status, tier, dates, version, history), so the duplicate and
    conflict check of a new write does not apply: an id already in the root is skipped.
    """

    def __init__(self, state: TreeState, entries: Entries, save: SavePath):
        self.state = state
        self.entries = entries
        self.save = save
        self.root = state.root

    # -- import ---------------------------------------------------------------------------
    def import_path(self, path, layout: str = "auto", progress: Progress | None = None,
                    category: str | None = None) -> dict:
        """Import a JSONL file or a tree (`layout`: auto, jsonl, viking or pme). Returns counts."""
        source = Path(os.path.expanduser(str(path)))
        if not source.exists():
            raise NotFound(f"nothing to import at {source}")
        chosen = detect_layout(source) if layout in (None, "", "auto") else layout
        if chosen not in ("jsonl", "viking", "pme"):
            raise InvalidInput(f"layout must be auto, jsonl, viking or pme, not {layout!r}")
        if chosen == "jsonl":
            if source.is_dir():
                raise InvalidInput(f"{source} is a folder; a JSONL import needs a file")
            return self.import_jsonl(source, progress)
        return self.import_tree(source, layout=chosen, progress=progress, category=category)

    def import_jsonl(self, path, progress: Progress | None = None) -> dict:
        """Import a JSONL file: one entry per line (id, title, body, category, tags, created, ...).

        Every frontmatter field of a line is kept (status, tier, updated, version, agent,
        unknown keys ...), so `export_jsonl` then `import_jsonl` into an empty root gives the
        same entries. Ids already in the root are skipped; bad lines are reported, not fatal.
        Embeds in batches; `progress(done, total)` is called as lines are written.
        A folder is imported as a tree (layout detected: see import_path), so `mem import DIR` works.
        """
        source = Path(os.path.expanduser(str(path)))
        if source.is_dir():
            return self.import_path(source, "auto", progress)
        if not source.is_file():
            raise NotFound(f"no file at {source}")
        report = ImportReport(source=str(source), layout="jsonl")
        entries = list(entries_from_jsonl(source, report, self.state.now()))
        return self._bulk_import(entries, report, progress).to_dict()

    def import_tree(self, path, layout: str = "auto", progress: Progress | None = None,
                    category: str | None = None) -> dict:
        """Import a Viking tree (hot/ warm/ cold/ archive/ ...) or a PME tree (categories, archived/).

        `category`: where Viking tier folders' top-level files go (default: general).
        """
        source = Path(os.path.expanduser(str(path)))
        if not source.is_dir():
            raise InvalidInput(f"{source} is not a folder")
        chosen = detect_layout(source) if layout in (None, "", "auto") else layout
        if chosen == "jsonl":
            raise InvalidInput(f"{source} is a folder; a JSONL import needs a file")
        report = ImportReport(source=str(source), layout=chosen)
        now = self.state.now()
        if chosen == "viking":
            entries = list(entries_from_viking(viking_base(source), report, now, category))
        elif chosen == "pme":
            entries = list(entries_from_pme(source, report, now))
        else:
            raise InvalidInput(f"layout must be auto, viking or pme, not {layout!r}")
        return self._bulk_import(entries, report, progress).to_dict()

    def _bulk_import(self, entries: list[Entry], report: ImportReport, progress: Progress | None) -> ImportReport:
        """Save many entries under one lock, IMPORT_BATCH at a time; one bad entry is reported, not fatal.

        Resumable and idempotent: a row whose id is in the root already is never written again.
        Unchanged, it is only checked for its index rows (a killed run may have written the file
        and not the rows); edited in the source since (its text differs and the entry was not
        changed after the row), its entry is updated through the save path, a version kept.
        """
        import time

        started = time.monotonic()
        self.entries.require_tree()
        total = len(entries)
        if total >= WARM_IMPORTS_FROM:
            warm_imports()
        progress = _monotonic(progress) if progress else None
        if progress and total:
            progress(0, total)
        self.save.prepare()
        present: list[Entry] = []   # rows whose entry is in the root: their index rows are checked
        with self.state.lock():
            from memstrata.doctor.checks import remove_dead_writers_temps
            remove_dead_writers_temps(self.root)  # the copies a killed run left (as `mem sync` does)
            catalog = self.state.catalog
            catalog.refresh()
            live = {e.id: e for e in catalog.entries() if e.id}
            # ids in the trash (restorable: their versions are theirs) and with kept versions
            trashed = {i.id for i in trash.list_trash(self.root) if i.id}
            kept_only = versions.ids_with_snapshots(self.root) - trashed - set(live)
            stopped_at = self._import_rows(entries, report, progress, live, trashed, kept_only, present)
            try:
                report.reindexed += index_missing(self.state, present) if stopped_at is None else 0
            except Interrupted:
                stopped_at = total  # every row is in; the index rows of some already here are not
            except INDEX_FAILURES as exc:
                report.warnings.append(f"the index rows of entries already here could not be checked "
                                       f"({type(exc).__name__}); run `mem sync`")
            if stopped_at is not None:
                self.save.write_indexes(None)  # the listings of the batches written
                raise Interrupted(f"import stopped after {stopped_at} of {total} rows ({report.imported} entries "
                                  f"imported); run the same command again to resume: rows already imported are "
                                  f"not written twice")
            if total:
                self.save.write_indexes(None)  # also the listings a killed run did not get to
        if report.skipped:
            report.warnings.append(f"{report.skipped} entries skipped: their id is already in this root"
                                   + (f" ({report.unchanged} unchanged)" if report.unchanged else ""))
        report.seconds = time.monotonic() - started
        return report

    def _import_rows(self, entries: list[Entry], report: ImportReport, progress, live: dict, trashed: set,
                     kept_only: set, present: list) -> int | None:
        """The rows saved IMPORT_BATCH at a time (caller holds the lock); None when all were seen, else
        the rows done when the caller stopped the import (Ctrl-C, its service caller gone: seen between
        model runs); the batch being written is rolled back by the save path."""
        batch: list[tuple[Entry, str | None, object]] = []
        this_run: dict[str, object] = {}  # id -> the line or file that brought it
        total, saved = len(entries), 0
        # per run, not per entry: neither changes under the lock
        initialised, adopted = tree.is_initialised(self.root), layout.is_adopted(self.root)
        claimed: set[str] = set()  # the paths of the batch being filled
        try:
            for done, entry in enumerate(entries, 1):
                where = entry.extra.pop("__where__", None)
                as_of = entry.extra.pop("__as_of__", None)
                legacy = entry.extra.pop("__legacy_id__", None)
                if legacy in live and entry.id not in live and self._same_row(live[legacy], entry):
                    entry.id = legacy  # imported by an earlier release under its path-derived id (that id
                    # only says where the row was in its file: it is taken for the same text only)
                try:
                    if entry.id and entry.id in this_run:  # the same id twice in one source: the first is kept
                        report.repeated += 1
                        report.warnings.append(f"{_where(where)} repeats the id {entry.id} of {_where(this_run[entry.id])}: "
                                               f"skipped")
                    elif entry.id and entry.id in live:
                        report.duplicates_avoided += 1
                        this_run[entry.id] = where  # a later row repeating it is skipped, not applied over it
                        self._already_there(live[entry.id], entry, as_of, report, present)
                    elif entry.id and (entry.id in trashed or (entry.id in kept_only and not self._resumed(entry))):
                        report.skipped += 1
                        this_run[entry.id] = where
                    else:
                        self._check_size(entry)
                        entry.id = entry.id or new_id()
                        # the whole record: full text (the sidecar to be) and kept versions included
                        report.warnings.extend(f"{redact(entry.title)}: {w}"
                                               for w in self.save.check_entry(entry, initialised))
                        full = entry.extra.pop("__full_content__", None)
                        kept = entry.extra.pop("__versions__", None) or {}
                        self._place_imported(entry, claimed, adopted)
                        claimed.add(entry.path)
                        entry.extra["__versions__"] = kept
                        batch.append((entry, full, where))
                        this_run[entry.id] = where
                except MemstrataError as exc:
                    if isinstance(exc, Interrupted):
                        raise  # an update of an entry already here, stopped while embedded: rolled back
                    report.error(where if where is not None else redact(entry.path or entry.title), exc.message)
                if len(batch) >= IMPORT_BATCH or (batch and done == total):
                    self._save_batch(batch, report, progress, done, total)
                    batch, claimed = [], set()
                elif progress and not batch:
                    progress(done, total)
                if not batch:
                    saved = done
                    if cancel.cancelled() and done < total:
                        return done
        except (KeyboardInterrupt, Interrupted):  # inside a batch: the save path rolled it back
            return saved
        return None

    def _already_there(self, meta: Entry, row: Entry, as_of, report: ImportReport, present: list) -> None:
        """A row whose entry is in the root: unchanged, or updated when the row is the newer text."""
        from memstrata.storage.catalog import read_entry_file

        current = read_entry_file(self.root, meta.path)
        present.append(current)
        same = (current.title, current.body.strip(), sorted(current.tags)) == \
            (row.title, row.body.strip(), sorted(row.tags))
        newer_here = as_of is not None and current.updated is not None and _later(current.updated, as_of)
        if same or newer_here:  # an entry changed in the root after the row was written keeps its change
            report.skipped += 1
            report.unchanged += same
            return
        self._check_size(row)
        changed = current.copy(title=row.title, body=row.body, tags=list(row.tags), updated=self.state.now())
        report.warnings.extend(f"{redact(row.title)}: {w}" for w in self.save.check_entry(changed))
        self.save.update(current, changed)
        present.pop()
        report.updated += 1
        report.ids.append(current.id)

    def _check_size(self, row: Entry) -> None:
        """The limit `mem write` applies (max_entry_bytes), to a row's body and a compressed row's original."""
        limit = self.state.settings.max_entry_bytes
        check_size(row.body, limit)
        full = row.extra.get("__full_content__")
        if isinstance(full, str):
            check_size(full, limit, "its full original text")

    def _same_row(self, meta: Entry, row: Entry) -> bool:
        """The entry in the root holds this row's title and text."""
        from memstrata.storage.catalog import read_entry_file

        try:
            current = read_entry_file(self.root, meta.path)
        except (MemstrataError, OSError):
            return False
        return (current.title, current.body.strip()) == (row.title, row.body.strip())

    def _resumed(self, entry: Entry) -> bool:
        """True when the kept versions of an id with no entry are exactly this row's: a killed
        import wrote them and not the entry (versions go first), so the row may take the id."""
        kept = entry.extra.get("__versions__") or {}
        on_disk = versions.list_snapshots(self.root, entry.id)
        if not kept or not on_disk or not set(on_disk) <= set(kept):
            return False
        from memstrata.storage.safe_io import read_regular_text

        try:
            return all(read_regular_text(path) == kept[n] for n, path in on_disk.items())
        except OSError:
            return False

    def _save_batch(self, batch: list, report: ImportReport, progress: Progress | None, done: int, total: int) -> None:
        """Sidecars first, then the entries through the save path; a failed batch is rolled back and reported."""
        undo: list = []
        base = done - len(batch)

        def step(embedded: int, of: int) -> None:
            progress(base + int(len(batch) * embedded / max(of, 1)), total)

        try:
            for entry, full, _ in batch:
                if full is not None and entry.full_content_file:
                    # the original goes to this entry's own sidecar, never to a path the record names
                    entry.full_content_file = sidecars.relative_path(entry.id, self.root)
                    if sidecars.exists(self.root, entry.full_content_file):
                        if _read_text(self.root, entry.full_content_file) != full:
                            raise InvalidInput(f"{entry.full_content_file} exists already: not overwritten")
                        # the same text: a killed import of this row wrote it (sidecars go first)
                    else:
                        sidecars.write(self.root, entry.id, full.encode("utf-8"))  # with its hash
                        undo.append(lambda rel=entry.full_content_file: sidecars.remove(self.root, rel))
                for number, text in sorted(entry.extra.pop("__versions__", {}).items()):
                    if versions.save_snapshot(self.root, entry.id, number, text):
                        undo.append(lambda i=entry.id, n=number: versions.remove_snapshot(self.root, i, n))
            counts = self.save.save_many([(entry, None) for entry, _, _ in batch], undo=undo,
                                         index_progress=step if progress else None, write_indexes=False)
        except (MemstrataError, OSError) as exc:
            if isinstance(exc, Interrupted):
                raise  # the caller went away while the batch was embedded: rolled back, no row's error
            message = getattr(exc, "message", None) or str(exc)
            for entry, _, where in batch:
                report.error(where if where is not None else entry.path, message)
            return
        report.embedded += int(counts.get("embedded", 0))
        if counts.get("skipped"):
            note = "vector index not updated (the model cannot load); recall will re-embed on its next sync"
            if note not in report.warnings:
                report.warnings.append(note)
        report.imported += len(batch)
        report.ids.extend(entry.id for entry, _, _ in batch)
        if progress:
            progress(done, total)

    def _place_imported(self, entry: Entry, claimed: set[str], adopted: bool) -> None:
        """Choose the file of an imported entry: its recorded path when free and consistent, else a new one."""
        from memstrata.storage.catalog import is_entry_path_in
        from memstrata.storage.paths import category_of, inside_root, is_archived_path, validate_category

        entry.category = validate_category(entry.category, top=adopted)
        archived = entry.status == "archived"
        wanted, entry.path = entry.path, None
        if wanted:
            try:
                target = inside_root(self.root, wanted)
                rel = target.relative_to(self.root).as_posix()
            except MemstrataError:
                rel = None
            if (rel and rel.endswith(".md") and not rel.startswith(".") and not target.exists() and rel not in claimed
                    and category_of(rel) == entry.category and is_archived_path(rel) == archived
                    and is_entry_path_in(self.root, rel)):
                entry.path = rel
        if entry.path is None:
            # the other entries of this batch are not on disk yet. (Suffixing the title instead never
            # ended for two long equal titles: the slug is cut to its byte limit, suffix and all.)
            entry.path = tree.unique_entry_path(self.root, entry.category, entry.title, archived=archived,
                                                avoid=claimed)


# -- helpers ---------------------------------------------------------------------------------
def _where(where) -> str:
    """A row's place in its source, for a message: `line 12` or the file."""
    return f"line {where}" if isinstance(where, int) else str(where)


def _later(a, b) -> bool:
    """a after b (dates as the entry model keeps them; a naive one is read as UTC)."""
    from datetime import timezone

    a, b = (d.replace(tzinfo=timezone.utc) if d.tzinfo is None else d for d in (a, b))
    return a > b


def _read_text(root, rel: str) -> str | None:
    try:
        return sidecars.read_bytes(root, rel).decode("utf-8")
    except (MemstrataError, OSError, UnicodeDecodeError):
        return None


def _monotonic(progress: Progress) -> Progress:
    """A progress callback that only ever moves forward (each value reported once)."""
    last = [-1]

    def report(done: int, total: int) -> None:
        if done > last[0]:
            last[0] = done
            progress(done, total)

    return report
