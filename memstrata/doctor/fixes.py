"""The doctor's repairs: quarantine (move aside, never delete), rebuilds of derived stores, permissions."""
from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from memstrata.clock import format_datetime
from memstrata.doctor.permissions import chmod_safe, mode_problems, private_base
from memstrata.doctor.checks import (
    QUARANTINE_DIR,
    VECTORS_DIR,
    Finding,
    scan_tree,
)
from memstrata.doctor.derived import blocked_vector_paths, catalog_rows, check_vectors
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.errors import MemstrataError
from memstrata.storage import layout
from memstrata.storage.atomic import atomic_write_text, ensure_dir
from memstrata.storage.catalog import CACHE_DIR, CATALOG_FILE, read_entry_file
from memstrata.storage.entry import new_id
from memstrata.storage.safe_io import ENGINE_DIRS, check_write_target, read_regular_text

QUARANTINE_INDEX = "INDEX.md"
_QUARANTINE_HEADER = (
    "# Quarantine\n\nFiles `mem doctor --fix` moved out of the tree instead of deleting them. "
    "Fix one and move it back into a category folder to make it an entry again.\n\n"
    "| when | kind | from | kept as | reason |\n| --- | --- | --- | --- | --- |\n"
)


def quarantine(root: Path, rel: str, kind: str, reason: str, now) -> str:
    """Move a file, folder or symlink into .quarantine/ (never delete) and note it; returns its new path."""
    folder = check_write_target(root, layout.path(root, QUARANTINE_DIR) / QUARANTINE_INDEX).parent  # never a symlinked one
    ensure_dir(folder)
    os.chmod(folder, 0o700)
    stamp = (format_datetime(now) or "now").replace(":", "").replace("-", "")
    base = rel.strip("/").replace("/", "__")
    home = layout.at(root, QUARANTINE_DIR)
    target_rel = f"{home}/{stamp}--{base}"
    n = 2
    while os.path.lexists(root / target_rel):
        target_rel = f"{home}/{stamp}-{n}--{base}"
        n += 1
    os.replace(root / rel, root / target_rel)
    moved = os.lstat(root / target_rel)
    if stat.S_ISREG(moved.st_mode) and moved.st_nlink == 1 and moved.st_uid == os.getuid():
        os.chmod(root / target_rel, 0o600)  # private like every file of the tree (never through a hard link)
    index = folder / QUARANTINE_INDEX
    current = read_regular_text(index) if index.exists() else _QUARANTINE_HEADER

    def cell(text):
        return str(text or "").replace("|", "\\|").replace("\n", " ")

    atomic_write_text(index, root=root, text=current + f"| {format_datetime(now)} | {kind} | {cell(rel)} | {cell(target_rel)} | "
                                       f"{cell(reason)} |\n")
    return target_rel


class Repairs:
    """The repairs `doctor(fix=True)` runs under the tree lock."""

    def __init__(self, state: TreeState, save: SavePath, recall):
        self.state = state
        self.save = save
        self.recall = recall  # features.recall.Recall: sync and reindex of the vector index
        self.root = state.root

    def run(self, findings: list[Finding]) -> None:
        now = self.state.now()
        kinds = {f.kind for f in findings if f.fixable and not f.fixed}
        if "permissions" in kinds:  # first: a folder that opens again changes what the other repairs see
            _tighten(self.root)
        for f in findings:
            if not f.fixable or f.fixed:
                continue
            try:
                if f.kind in ("symlink_outside", "unparseable", "orphan_sidecar", "orphan_versions"):
                    if os.path.lexists(self.root / f.path):
                        where = quarantine(self.root, f.path, f.kind, f.detail, now)
                        f.action = f"moved to {where}"
                        if f.kind == "symlink_outside" and f.path in {layout.at(self.root, d) for d in ENGINE_DIRS}:
                            ensure_dir(self.root / f.path)  # a real, empty engine folder (0700) instead
                            f.action += f"; {f.path}/ is a real folder again"
                elif f.kind == "kept_file":  # fixable only when the tree holds the same text (doctor/kept.py)
                    (self.root / f.path).unlink(missing_ok=True)
                    f.action = "removed (the tree holds the same text)"
                elif f.kind == "temp_file":
                    (self.root / f.path).unlink(missing_ok=True)
                    f.action = "removed"
                elif f.kind == "duplicate_id":
                    self._fix_duplicate(f, now)
            except (OSError, MemstrataError) as exc:
                f.action = f"could not fix: {getattr(exc, 'message', None) or exc}"
        if kinds & {"catalog", "unparseable", "duplicate_id", "symlink_outside", "index_md"}:
            self._fix_catalog()
        if kinds & {"vectors_missing", "vectors_unreadable", "model_mismatch", "vectors_rows", "duplicate_id",
                    "unparseable", "vectors_index"}:
            self._fix_vectors(findings)
        if kinds & {"index_md", "unparseable", "duplicate_id", "catalog"}:
            self.save.write_indexes(None)  # last: from the files as every other repair left them

    def _fix_duplicate(self, f: Finding, now) -> None:
        if "fresh id" in (f.action or ""):
            entry = read_entry_file(self.root, f.path)
            fresh = entry.copy(id=new_id())
            self.save.save(fresh, previous=entry)
            f.action = f"now id {fresh.id}"
        else:
            where = quarantine(self.root, f.path, "duplicate_id", f"{f.detail}; {f.action}", now)
            f.action = f"moved to {where}"

    def _fix_catalog(self) -> None:
        from memstrata.storage.catalog import Catalog

        self.state.replace_catalog(None)
        db = layout.path(self.root, f"{CACHE_DIR}/{CATALOG_FILE}")
        try:
            catalog_rows(self.root) if db.exists() else None
        except sqlite3.Error:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)  # derived data: rebuilt just below
        catalog = Catalog(self.root)
        catalog.rebuild()
        self.state.replace_catalog(catalog)

    def _fix_vectors(self, findings: list[Finding]) -> None:
        scan = scan_tree(self.root)
        state = check_vectors(scan, self.state.settings)
        if not state:
            return
        rebuild = any(f.kind in ("vectors_unreadable", "model_mismatch") or "duplicated" in f.detail for f in state)
        if rebuild:
            if any(f.kind == "vectors_unreadable" for f in state):
                import shutil

                for rel in blocked_vector_paths(self.root):  # a file where a folder belongs: set aside, never deleted
                    quarantine(self.root, rel, "vectors_unreadable", "not a folder where the vector index belongs",
                               self.state.now())
                shutil.rmtree(layout.path(self.root, VECTORS_DIR), ignore_errors=True)  # derived: rebuilt from the files
                self.state.forget_vector_index()
            self.recall.reindex()
            return
        if any(f.kind == "vectors_index" for f in state):
            from memstrata.retrieval.ann import damaged_indexes, rebuild_indexes

            index = self.state.vector_index()
            rebuild_indexes(index, list(damaged_indexes(index)))
        from memstrata.retrieval.trusted import mismatched_rows
        from memstrata.retrieval.units import entry_of

        index = self.state.vector_index()
        # planted rows: their entries (a session: all its turns, so sync sees it unindexed) are embedded again below
        index.delete(sorted({entry_of(rid) for rid in mismatched_rows(index)}))
        self.recall.sync()
        if check_vectors(scan_tree(self.root), self.state.settings):
            self.recall.reindex()


def _tighten(root: Path) -> None:
    """chmod what check_permissions may fix: folders 0700, files 0600 (owner bits kept, owner read and
    write added). Never a hard-linked file or one another user owns (chmod_safe)."""
    base = private_base(root)
    os.chmod(base, 0o700)
    owner = os.stat(base).st_uid
    for rel, st in mode_problems(root):
        if not chmod_safe(st, owner):
            continue
        wanted = 0o700 if stat.S_ISDIR(st.st_mode) else (stat.S_IMODE(st.st_mode) & 0o700) | 0o600
        path = os.path.join(root, rel)
        now_st = os.lstat(path)
        if (now_st.st_ino, now_st.st_dev) == (st.st_ino, st.st_dev) and chmod_safe(now_st, owner):
            os.chmod(path, wanted)
