"""A stamp of the tree and the vector table when they were last found in step: an unchanged tree is known in step without opening LanceDB."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from memstrata.retrieval.table import META_FILE, TABLE_NAME
from memstrata.storage import layout
from memstrata.storage.atomic import atomic_write_text
from memstrata.storage.catalog import iter_entry_files
from memstrata.storage.safe_io import read_regular_text

# Where: the tree's cache (git-ignored, never pulled: a stamp says what this machine's table holds)
STAMP_FILE = ".cache/index.sig"
SIDECARS = (".full", ".versions")  # a change there changes what sync reads for a note (held back or not)


def tree_part(root: Path) -> str:
    """A digest of the entry files as the table compares them with its rows (path, size, mtime), and
    of their sidecars (full texts, kept versions): equal digests, no file the sync plan would read.
    Taken before a plan, so a file changed while the plan ran leaves a stamp that no longer matches."""
    from memstrata.storage.secret_allow import ALLOW_FILE

    from memstrata.storage.codec import READ_RULES

    digest = hashlib.sha1(f"read rules {READ_RULES}\n".encode())  # new rules: every file read again (sync.plan)
    for rel, st in sorted(iter_entry_files(root)):
        digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    for folder in SIDECARS:  # what the index reads beside a note: its full text, its kept versions
        base = layout.path(root, folder)
        for dirpath, dirs, files in os.walk(base):
            dirs.sort()
            for name in sorted(files):
                try:
                    st = os.lstat(os.path.join(dirpath, name))
                except OSError:
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    try:  # an allowance changed (`mem secrets allow|revoke`, a hand edit): notes to check again
        st = os.stat(layout.path(root, ALLOW_FILE))
        digest.update(f"allowed\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    except OSError:
        pass
    return digest.hexdigest()


def table_part(index) -> str:
    """What changes whenever the table does, read without LanceDB: the names of its manifests (one
    per commit: a write, a delete, a compaction, a rebuild) and its meta.json (the model)."""
    digest = hashlib.sha1()
    versions = Path(index.dir) / f"{TABLE_NAME}.lance" / "_versions"
    try:  # and the folder itself (a table made anew, as far as it got as the old one, is another table)
        st = os.stat(versions)
        names = [f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}", *sorted(os.listdir(versions))]
    except OSError:
        names = ["-"]  # no table: in step only with a tree of no entries, as sync.behind says
    digest.update("\0".join(names).encode("utf-8", "surrogateescape"))
    try:
        digest.update(read_regular_text(Path(index.dir) / META_FILE, 64 * 1024).encode("utf-8"))
    except (OSError, UnicodeDecodeError):
        digest.update(b"-")
    return digest.hexdigest()


def upkeep_part(index) -> str:
    """What the table's upkeep (retrieval/ann.maintain) decides by besides the table: the ANN setting."""
    return f"ann{int(getattr(index.settings, 'ann_min_rows', 0))}"


def _saved(index) -> list[str]:
    try:
        return read_regular_text(layout.path(index.root, STAMP_FILE), 1024).split()
    except (OSError, UnicodeDecodeError):
        return []


def matches(index, tree: str, table: str | None = None) -> bool:
    """Whether the table (its `table_part`, read now unless given) and the tree (its `tree_part`)
    are as they were when last found in step."""
    return _saved(index)[:2] == [tree, table_part(index) if table is None else table]


def upkept(index, tree: str, table: str | None = None) -> bool:
    """`matches`, and the table had its upkeep (retrieval/ann.maintain) when it was stamped, under
    the same settings: a `mem sync` with nothing to do need not open LanceDB for it (0.8 s)."""
    return matches(index, tree, table) and _saved(index)[2:] == [upkeep_part(index)]


def record(index, tree: str, table: str | None = None, upkept: bool = False) -> None:
    """The table is in step with the tree as `tree_part` was taken: the stamp of both, the table's
    read now, after its last write (the caller holds the tree lock). `table`: the `table_part` taken
    with `tree` by a caller without the lock; nothing is recorded when another process wrote the
    table meanwhile (an index pulled from a snapshot may be behind the tree). `upkept`: the caller
    ran the table's upkeep after its last write (sync)."""
    if table is not None and table != table_part(index):
        return
    line = f"{tree} {table_part(index)}" + (f" {upkeep_part(index)}" if upkept else "")
    try:
        atomic_write_text(layout.path(index.root, STAMP_FILE), line + "\n", root=Path(index.root))
    except OSError:
        pass  # derived: the next check opens the table


def forget(root) -> None:
    """No stamp: the next sync compares every file (an allowance changed what a note's file did not)."""
    try:
        layout.path(root, STAMP_FILE).unlink(missing_ok=True)
    except OSError:
        pass
