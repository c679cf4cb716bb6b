"""The doctor's checks of the derived stores (catalog, INDEX.md files, vector table) against the files."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from memstrata.doctor.checks import VECTORS_DIR, Finding, Scan
from memstrata.storage import indexes
from memstrata.storage import layout
from memstrata.storage.catalog import CACHE_DIR, CATALOG_FILE
from memstrata.storage.entry import Entry
from memstrata.storage.safe_io import read_regular_text


def catalog_rows(root: Path) -> dict[str, tuple]:
    """path -> (id, size, mtime_ns) from the catalog (DatabaseError if it is damaged)."""
    db = layout.path(root, f"{CACHE_DIR}/{CATALOG_FILE}")
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        ok = conn.execute("PRAGMA quick_check").fetchone()
        if not ok or ok[0] != "ok":
            raise sqlite3.DatabaseError(f"quick_check: {ok[0] if ok else 'no answer'}")
        return {r[0]: (r[1], r[2], r[3]) for r in conn.execute("SELECT path, id, size, mtime_ns FROM entries")}
    finally:
        conn.close()


def check_catalog(scan: Scan) -> list[Finding]:
    db = layout.path(scan.root, f"{CACHE_DIR}/{CATALOG_FILE}")
    if not db.exists():
        return []  # built on first use
    try:
        rows = catalog_rows(scan.root)
    except sqlite3.Error as exc:
        return [Finding("catalog", f"the catalog cannot be read ({exc}); it is derived and can be rebuilt",
                        path=layout.at(scan.root, f"{CACHE_DIR}/{CATALOG_FILE}"), action="rebuild from the files")]
    parsed = {e.path: e.id for e in scan.entries}
    wrong = []
    for rel, (size, mtime) in scan.stats.items():
        row = rows.get(rel)
        if row is not None and (row[1], row[2]) == (size, mtime) and rel in parsed and row[0] != parsed[rel]:
            wrong.append(rel)  # same size and mtime, other id: a refresh would not see it
    if wrong:
        return [Finding("catalog", f"{len(wrong)} catalog rows disagree with their files (e.g. {wrong[0]})",
                        path=layout.at(scan.root, f"{CACHE_DIR}/{CATALOG_FILE}"), action="rebuild from the files")]
    return []


def _index_ids(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        if line.startswith("| [") and " | " in line:
            cells = line.split(" | ")
            if len(cells) > 1:
                out.append(cells[1].strip())
    return out


def expected_indexes(root: Path, entries: list[Entry], now) -> dict[str, str]:
    """rel path of every INDEX.md -> the text write_indexes would give it (root without its stamp)."""
    return indexes.render_all(root, entries, now)


def check_indexes(scan: Scan, now) -> list[Finding]:
    out = []
    for rel, want in expected_indexes(scan.root, scan.entries, now).items():
        path = scan.root / rel
        try:
            have = read_regular_text(path)
        except FileNotFoundError:
            out.append(Finding("index_md", "missing", path=rel, action="regenerate from the files"))
            continue
        except (OSError, UnicodeDecodeError) as exc:
            out.append(Finding("index_md", f"unreadable ({exc})", path=rel, action="regenerate from the files"))
            continue
        if rel == indexes.root_index_rel(scan.root):
            same = indexes.without_stamp(have) == indexes.without_stamp(want)
        else:
            same = have == want
        if same:
            continue
        listed, real = _index_ids(have), _index_ids(want)
        if sorted(listed) != sorted(real):
            lost, extra = set(real) - set(listed), set(listed) - set(real)
            detail = f"lists {len(listed)} entries, the folder holds {len(real)}"
            if lost:
                named = [i or "a file without an id yet" for i in sorted(lost)[:3]]
                detail += f"; not listed: {', '.join(named)}"
            if extra:
                detail += f"; listed but gone: {', '.join(sorted(extra)[:3])}"
        else:
            detail = "out of date (titles, counts, tiers or dates differ from the files)"
        out.append(Finding("index_md", detail, path=rel, action="regenerate from the files"))
    return out


def configured_model(settings) -> str:
    try:
        from memstrata.models.locate import canonical_name

        return canonical_name(settings.embedding_model)
    except ImportError:  # pragma: no cover
        return settings.embedding_model


def vector_state(root: Path, settings):
    """(index, frame or None, error message or None) of the tree's vector table."""
    from memstrata.retrieval.table import VectorIndex

    index = VectorIndex(root, settings, own_caches=True)
    if not index.exists():
        return index, None, None
    try:
        frame = index.frame()
        counts = index.table().count_rows()  # reads every fragment's metadata
        del counts
        return index, frame, None
    except Exception as exc:  # noqa: BLE001 - any lance/arrow failure means unreadable
        return index, None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def compare_rows(wanted: list[tuple[str, str, str]], frame_ids: list, frame_hashes: list, frame_paths: list) -> dict:
    """Pure: what differs between the rows wanted (flagged.row_key of each unit) and the chunk-0 rows
    (missing/extra/stale/moved/duplicated)."""
    want: dict[str, tuple[str, str]] = {}
    for rid, digest, path in wanted:
        want.setdefault(rid, (digest, path))
    seen: dict[str, int] = {}
    for i in frame_ids:
        seen[i] = seen.get(i, 0) + 1
    out = {"missing": sorted(set(want) - set(seen)), "extra": sorted(set(seen) - set(want)),
           "duplicated": sorted(i for i, n in seen.items() if n > 1), "stale": [], "moved": []}
    for i, digest, path in zip(frame_ids, frame_hashes, frame_paths):
        wanted_here = want.get(i)
        if wanted_here is None:
            continue
        if digest != wanted_here[0]:
            out["stale"].append(i)
        elif path != wanted_here[1]:
            out["moved"].append(i)
    out["stale"] = sorted(set(out["stale"]))
    out["moved"] = sorted(set(out["moved"]))
    return out


def blocked_vector_paths(root: Path) -> list[str]:
    """The vector index's folders (`.vectors`, its table) where something else sits (a file, a
    symlink): nothing can be built there until it is moved aside."""
    from memstrata.retrieval.table import TABLE_NAME

    out = []
    for rel in (VECTORS_DIR, f"{VECTORS_DIR}/{TABLE_NAME}.lance"):
        path = layout.path(root, rel)
        if os.path.lexists(path) and (path.is_symlink() or not path.is_dir()):
            out.append(layout.at(root, rel))
            break  # a blocked .vectors hides its table
    return out


def check_vectors(scan: Scan, settings) -> list[Finding]:
    blocked = blocked_vector_paths(scan.root)
    if blocked:
        return [Finding("vectors_unreadable", "not a folder: the vector index cannot be built there (recall "
                        "falls back to grep); the index is derived", path=blocked[0],
                        action="move it to .quarantine/ and rebuild the index from the files")]
    try:
        index, frame, error = vector_state(scan.root, settings)
    except ImportError:
        return []
    rel = layout.at(scan.root, VECTORS_DIR)
    if error:
        return [Finding("vectors_unreadable", f"the vector table cannot be read ({error}); it is derived",
                        path=rel, action="rebuild from the files (re-embeds everything)")]
    if not index.exists():
        if scan.entries:
            return [Finding("vectors_missing", f"no vector index for {len(scan.entries)} entries; recall falls "
                            "back to grep and INDEX.md", path=rel, action="build it (mem sync)")]
        return []
    out = []
    meta = index.meta()
    want_model = configured_model(settings)
    if meta.get("model") and meta.get("model") != want_model:
        out.append(Finding("model_mismatch", f"the table was embedded with {meta.get('model')}, config.md names "
                           f"{want_model}", path=f"{rel}/meta.json", action="re-embed everything"))
        return out
    cols = frame.cols if frame is not None else {"id": [], "hash": [], "path": []}
    diff = compare_rows(scan.indexed[1], list(cols["id"]), list(cols["hash"]), list(cols["path"]))
    parts = [f"{len(v)} {k} ({', '.join(v[:3])}{'...' if len(v) > 3 else ''})" for k, v in diff.items() if v]
    if parts:
        out.append(Finding("vectors_rows", "index rows differ from the files: " + "; ".join(parts), path=rel,
                           # a stale row may carry its file's current stamp (an edit made while an older
                           # release embedded it was stamped as indexed): sync passes it over, --fix re-embeds it
                           action="rebuild (mem reindex)" if diff["duplicated"] else
                           "re-embed them (mem doctor --fix)" if diff["stale"] else "re-sync (mem sync)"))
    from memstrata.retrieval.ann import damaged_indexes

    damaged = damaged_indexes(index)
    if damaged:
        named = "; ".join(f"{name} ({why})" for name, why in sorted(damaged.items()))
        out.append(Finding("vectors_index", f"{len(damaged)} index(es) of the vector table cannot be read: {named}; "
                           "recall falls back to grep and writes leave the index behind", path=rel,
                           action="drop and rebuild them from the table's rows"))
    from memstrata.retrieval.trusted import mismatched_rows

    planted = mismatched_rows(index)  # a row whose text is not the text its hash was made from
    if planted:
        out.append(Finding("vectors_rows", f"{len(planted)} index rows hold a text that is not their file's "
                           f"({', '.join(planted[:3])}{'...' if len(planted) > 3 else ''})", path=rel,
                           action="drop them and embed their files again"))
    return out
