"""A full rebuild of the vector index (`mem reindex`) that a stop leaves as it was before it started."""
from __future__ import annotations

import json

from memstrata.retrieval import held_back
from memstrata.retrieval.sync import UPSERT_BATCH, entries_progress, flag
from memstrata.retrieval.table import META_FILE, VectorIndex, indexed_form
from memstrata.storage.cancel import stop_if_cancelled
from memstrata.storage.catalog import iter_entry_files, read_entry_file
from memstrata.storage.errors import CorruptEntry, Interrupted


def indexable_entries(root) -> tuple[list, dict, dict]:
    """(entries to index, unreadable files, files holding a credential) of the tree, in path order;
    a second file with an id already seen is unreadable ("indexed once")."""
    entries, errors, flagged, seen = [], {}, {}, set()
    for rel, _ in sorted(iter_entry_files(root)):
        stop_if_cancelled("reindex")  # nothing is changed yet
        try:
            e = read_entry_file(root, rel)
        except (CorruptEntry, OSError) as exc:
            errors[rel] = getattr(exc, "message", str(exc))
            continue
        if e.id and e.id in seen:
            errors[rel] = f"duplicate id {e.id}: indexed once"
            continue
        if (why := flag(indexed_form(root, e), root)) is not None:
            flagged[rel] = why
            continue
        seen.add(e.id)
        entries.append(e)
    return entries, errors, flagged


def rebuild(index: VectorIndex, entries: list, embedder, progress=None, flagged: dict | None = None) -> None:
    """Replace the table with `entries` embedded again (caller holds the tree lock). The new table
    is a new version of the old one; when the rebuild stops (its caller went away, Ctrl-C, an
    error) the version from before is restored, with its meta: recall is never left with a
    half-built index. Old versions are kept (no compaction) until the rebuild is done. `flagged`:
    the notes held back as possible credentials (retrieval/held_back.py)."""
    table = index.table()
    before = (int(table.version), index.meta()) if table is not None else None
    done = 0
    index.hold_versions = True
    try:
        index.create(embedder)
        for start in range(0, len(entries), UPSERT_BATCH):
            part = entries[start:start + UPSERT_BATCH]
            # the embedder counts texts (an entry has one or many chunks): shown as entries
            index.upsert(part, lambda: embedder, progress=entries_progress(progress, start, len(part), len(entries)))
            done = start + len(part)
        if progress is not None and entries:
            progress(len(entries), len(entries))
    except BaseException as exc:
        if before is not None:
            _restore(index, *before)
        if isinstance(exc, Interrupted):
            kept = "the index is as it was before" if before is not None else "no index was there before"
            raise Interrupted(f"reindex stopped after {done} of {len(entries)} entries ({kept}); "
                              f"run it again to rebuild the index") from None
        raise
    finally:
        index.hold_versions = False
    held_back.record(index, flagged or {}, None)
    index.maybe_optimize(force=True)


def _restore(index: VectorIndex, version: int, meta: dict) -> None:
    """The table and its meta as they were at `version` (a new version with that content)."""
    from memstrata.storage.atomic import atomic_write_text

    table = index.table()
    if table is not None and int(table.version) != version:
        table.restore(version)
    atomic_write_text(index.dir / META_FILE, json.dumps(meta, indent=1))
    index.forget()  # every cached frame and handle belongs to the rebuilt table
