"""The three-level INDEX.md files: root -> category -> entry, regenerated from the catalog."""
from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from memstrata.storage.clock import format_datetime, parse_datetime
from memstrata.storage import layout
from memstrata.storage.atomic import atomic_write_text
from memstrata.storage.codec import split_frontmatter
from memstrata.storage.entry import Entry
from memstrata.storage.paths import ARCHIVED_DIR, shown_category
from memstrata.storage.safe_io import is_regular_file, read_regular_text

INDEX_FILE = "INDEX.md"
INDEX_MAX_BYTES = 64 * 1024 * 1024  # an INDEX.md larger than this is not one the engine wrote: not read


def _cell(text) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ").strip()


def _day(dt: datetime | None) -> str:
    return format_datetime(dt)[:10] if dt else ""


def read_description(root: Path, category: str) -> str:
    """A category's description, kept in its INDEX.md frontmatter."""
    path = Path(root) / category / INDEX_FILE
    if not is_regular_file(path):
        return ""
    try:
        data, _ = split_frontmatter(read_regular_text(path, INDEX_MAX_BYTES))
    except Exception:
        return ""
    return str(data.get("description") or "")


def categories_with_index(root: Path) -> set[str]:
    """Categories that have an INDEX.md (walks folders only, never the entry files)."""
    root = Path(root)
    found: set[str] = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as items:
                for item in items:
                    if item.name.startswith(".") or item.name == ARCHIVED_DIR:
                        continue
                    if item.is_dir(follow_symlinks=False):
                        stack.append(Path(item.path))
                    elif item.name == INDEX_FILE and folder != root:
                        found.add(folder.relative_to(root).as_posix())
        except OSError:
            continue
    return found


def with_ancestors(categories) -> list[str]:
    out = set()
    for category in categories:
        if category:
            parts = category.split("/")
            out.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return sorted(out)


def all_categories(entries: list[Entry], root: Path) -> list[str]:
    """Every category that has entries or an INDEX.md, with all their ancestors."""
    return with_ancestors({e.category for e in entries} | categories_with_index(root))


def render_category_index(category: str, description: str, entries: list[Entry],
                          subcategories: list[str], now: datetime) -> str:
    own = sorted((e for e in entries if e.category == category),
                 key=lambda e: (e.status != "active", -(e.updated or now).timestamp(), e.title))
    updated = max((e.updated for e in own if e.updated), default=None)
    lines = [
        "---",
        f"category: {category}",
        f"description: {_yaml_scalar(description)}",
        f"entries: {len(own)}",
        f"updated: {format_datetime(updated) if updated else 'null'}",
        "---",
        "",
        f"# {category}",
        "",
    ]
    if description:
        lines += [description, ""]
    lines += ["| title | id | status | tier | updated | file |", "| --- | --- | --- | --- | --- | --- |"]
    prefix = category + "/"
    for e in own:
        rel = e.path[len(prefix):] if e.path and e.path.startswith(prefix) else (e.path or "")
        lines.append(f"| [{_cell(e.title)}](<{rel}>) | {e.id} | {e.status} | {e.tier} | {_day(e.updated)} | {_cell(rel)} |")
    if subcategories:
        lines += ["", "## Subcategories", ""]
        for sub in subcategories:
            name = sub[len(prefix):]
            lines.append(f"- [{name}](<{name}/{INDEX_FILE}>)")
    lines.append("")
    return "\n".join(lines)


def root_index_rel(root: Path) -> str:
    """Where the root index lives: INDEX.md, or `.memstrata/INDEX.md` in an adopted vault."""
    return layout.at(root, INDEX_FILE)


def writes_category_indexes(root: Path) -> bool:
    """Whether the tree keeps an INDEX.md in each category folder: always in a tree made by `mem
    init`; in an adopted vault only when asked (`mem init --adopt --indexes`: setting category_indexes)."""
    if not layout.is_adopted(root):
        return True
    from memstrata.storage.config import load_settings

    try:
        return bool(load_settings(root).category_indexes)
    except Exception:  # noqa: BLE001 - an unreadable config.md: write nothing among the user's notes
        return False


def render_root_index(rows: list[tuple[str, str, int, int, datetime | None]], now: datetime,
                      link_prefix: str = "", with_category_index: bool = True) -> str:
    total = sum(r[2] for r in rows)
    lines = [
        "---",
        "type: root-index",
        f"categories: {len(rows)}",
        f"entries: {total}",
        f"updated: {format_datetime(now)}",
        "---",
        "",
        "# Memory index",
        "",
        "| category | description | entries | with subcategories | updated |",
        "| --- | --- | --- | --- | --- |",
    ]
    for category, description, own, subtree, updated in rows:
        target = (f"{link_prefix}{category}/{INDEX_FILE if with_category_index else ''}" if category
                  else link_prefix or "./")  # a vault's top level: the folder itself
        lines.append(f"| [{_cell(shown_category(category))}](<{target}>) | {_cell(description)} | {own} | {subtree} "
                     f"| {_day(updated)} |")
    lines.append("")
    return "\n".join(lines)


def _yaml_scalar(text: str) -> str:
    import json

    return json.dumps(text or "", ensure_ascii=False)


def _subcategories(category: str, known: list[str]) -> list[str]:
    return sorted(c for c in known if c.startswith(category + "/") and "/" not in c[len(category) + 1:])


def _root_rows(root: Path, known: list[str], summary: dict, per_category: bool = True) -> list[tuple]:
    """(category, description, own entries, entries with subcategories, last update) per category."""
    rows = []
    if summary.get("", (0, None))[0]:  # notes at an adopted vault's top level: its first row, shown as "/"
        own, updated = summary[""]
        rows.append(("", "", own, sum(n for n, _ in summary.values()), parse_datetime(updated) if updated else None))
    for category in known:
        own, updated = summary.get(category, (0, None))
        subtree = sum(n for c, (n, _) in summary.items() if c == category or c.startswith(category + "/"))
        rows.append((category, read_description(root, category) if per_category else "", own,
                     subtree, parse_datetime(updated) if updated else None))
    return rows


def render_all(root: Path, entries: list[Entry], now: datetime) -> dict[str, str]:
    """Every INDEX.md the tree should have (relative path -> text), from the entries' metadata."""
    per_category = writes_category_indexes(root)
    known = all_categories(entries, root) if per_category else with_ancestors({e.category for e in entries})
    by_category: dict[str, list[Entry]] = {}
    for e in entries:
        by_category.setdefault(e.category, []).append(e)
    out = {f"{c}/{INDEX_FILE}": render_category_index(c, read_description(root, c), by_category.get(c, []),
                                                      _subcategories(c, known), now)
           for c in (known if per_category else [])}
    summary = {c: (len(v), format_datetime(max((e.updated for e in v if e.updated), default=None)))
               for c, v in by_category.items()}
    out[root_index_rel(root)] = _render_root(root, known, summary, now, per_category)
    return out


def _render_root(root: Path, known: list[str], summary: dict, now: datetime, per_category: bool) -> str:
    rel = root_index_rel(root)
    prefix = "../" * rel.count("/")  # `.memstrata/INDEX.md` links up to the vault's folders
    return render_root_index(_root_rows(root, known, summary, per_category), now, prefix, per_category)


_LISTED = ("id", "title", "status", "tier", "updated", "path", "category")


def listing_changed(entry: Entry, previous: Entry | None) -> bool:
    """Whether writing `entry` over `previous` changes what the INDEX.md files show (an access,
    which moves only last_access and the counters, does not)."""
    return previous is None or any(getattr(entry, f) != getattr(previous, f) for f in _LISTED)


def write_indexes(root: Path, catalog, now: datetime, categories: list[str] | None = None) -> None:
    """Regenerate the root INDEX.md and the given categories' INDEX.md files (all when None).

    Reads only what it writes: the entries of the named categories and per-category counts,
    so a write costs O(its category), not O(tree).
    """
    root = Path(root)
    summary = catalog.category_summary()
    per_category = writes_category_indexes(root)
    if per_category:
        known = with_ancestors(set(summary) | categories_with_index(root) | set(c for c in categories or [] if c))
        targets = known if categories is None else with_ancestors(c for c in categories if c)
    else:  # an adopted vault's folders get no INDEX.md: a user's own INDEX.md files stay theirs
        known, targets = with_ancestors(c for c, (n, _) in summary.items() if n), []
    for category in targets:
        text = render_category_index(category, read_description(root, category), catalog.entries_exact(category, read_only=True),
                                     _subcategories(category, known), now)
        _write_if_changed(root, root / category / INDEX_FILE, text)
    root_text = _render_root(root, known, summary, now, per_category)
    root_path = root / root_index_rel(root)
    if _without_stamp(_current_text(root_path)) != _without_stamp(root_text):
        atomic_write_text(root_path, root_text, root=root)


SIGNATURE_FILE = ".cache/indexes.sig"  # listing_signature() of the INDEX.md files sync last wrote


def listing_signature(root: Path, catalog) -> str:
    """A digest of what the INDEX.md files are made of: each catalog row's path, size and mtime (the
    entry files as the catalog last read them), each INDEX.md's size and mtime (descriptions, hand
    edits), the layout and the rendering code's files (an upgrade renders again). Equal digests,
    equal INDEX.md files: sync need not render 10k listings."""
    import hashlib
    import sys

    root = Path(root)
    digest = hashlib.sha1(repr((writes_category_indexes(root), catalog.id_key)).encode())
    for module in (__name__, format_datetime.__module__, shown_category.__module__):  # the code that renders
        try:
            st = os.stat(sys.modules[module].__file__)
            digest.update(f"{module}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except (KeyError, AttributeError, TypeError, OSError):
            digest.update(f"{module}\0-\n".encode())
    for row in catalog.file_stats():
        digest.update(repr(row).encode())
    for rel in sorted(f"{c}/{INDEX_FILE}" for c in categories_with_index(root)) + [root_index_rel(root)]:
        try:
            st = os.lstat(root / rel)
            digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except OSError:
            digest.update(f"{rel}\0-\n".encode())
    return digest.hexdigest()


def saved_signature(root: Path) -> str:
    try:
        return read_regular_text(layout.path(root, SIGNATURE_FILE), 1024).strip()
    except (OSError, UnicodeDecodeError):
        return ""


def save_signature(root: Path, signature: str) -> None:
    try:
        atomic_write_text(layout.path(root, SIGNATURE_FILE), signature + "\n", root=Path(root))
    except OSError:
        pass  # derived: the next sync renders the listings again


def _current_text(path: Path) -> str:
    """An INDEX.md as it is now ("" when missing, not a regular file, too large or not UTF-8: rewrite it)."""
    try:
        return read_regular_text(path, INDEX_MAX_BYTES)
    except (OSError, UnicodeDecodeError):
        return ""


def _write_if_changed(root: Path, path: Path, text: str) -> None:
    if _current_text(path) != text:
        atomic_write_text(path, text, root=root)


def set_description(root: Path, category: str, description: str, catalog, now: datetime) -> None:
    """Store a category's description in its INDEX.md (and show it in the root index)."""
    path = Path(root) / category / INDEX_FILE
    atomic_write_text(path, render_category_index(category, description, catalog.entries_exact(category, read_only=True), [], now),
                      root=root)
    write_indexes(root, catalog, now, [category])


def without_stamp(text: str) -> str:
    """The text without its `updated:` lines (what two renderings at different times share)."""
    return _without_stamp(text)


def _without_stamp(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("updated: "))
