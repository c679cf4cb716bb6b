"""Export: every entry out as JSON lines (frontmatter fields, category, path, body), as `mem import` reads them back."""
from __future__ import annotations

import json
import os
from pathlib import Path

from memstrata.engine.entries import Entries
from memstrata.engine.state import TreeState
from memstrata.errors import InvalidInput, MemstrataError
from memstrata.features.transfer_formats import entry_record


def export_jsonl(state: TreeState, entries: Entries, target=None) -> dict:
    """Write every entry as one JSON line (frontmatter + category + path + body).

    `target`: a path, an open text stream, or None for stdout. Returns counts.
    """
    import sys

    from memstrata.storage.atomic import ReplacingFile
    from memstrata.storage.catalog import read_entry_file

    listed = sorted(entries.list(), key=lambda e: e.path or "")
    own = False
    if target is None or target == "-":
        stream = sys.stdout
    elif hasattr(target, "write"):
        stream = target
    else:
        path = Path(os.path.expanduser(str(target)))
        if path.is_dir():
            raise InvalidInput(f"{path} is a folder; give a file name for the export")
        if not path.parent.is_dir():
            raise InvalidInput(f"{path.parent} is not a folder; make it first or export elsewhere")
        stream, own = ReplacingFile(path), True  # written whole or not at all
    count = 0
    unreadable = sorted(state.catalog.errors())
    try:
        for meta in listed:
            try:
                entry = read_entry_file(state.root, meta.path)
            except (MemstrataError, OSError):
                unreadable.append(meta.path)
                continue
            stream.write(json.dumps(entry_record(entry, state.root), ensure_ascii=False, default=str) + "\n")
            count += 1
    except BaseException:
        if own:
            stream.close(keep=False)
        raise
    stream.close() if own else stream.flush()
    return {"root": str(state.root), "entries": count, "unreadable": unreadable,
            "path": None if not own else str(Path(os.path.expanduser(str(target))).resolve())}
