"""The three-level INDEX.md files: root -> category -> entry, regenerated from the catalog."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

from memstrata.clock import format_datetime
from memstrata.storage.atomic import atomic_write_text
from memstrata.storage.codec import split_frontmatter
from memstrata.storage.entry import Entry
from memstrata.storage.paths import ARCHIVED_DIR

INDEX_FILE = "INDEX.md"


def _cell(text) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ").strip()


def _day(dt: datetime | None) -> str:
    return format_datetime(dt)[:10] if dt else ""


def read_description(root: Path, category: str) -> str:
    """A category's description, kept in its INDEX.md frontmatter."""
    path = Path(root) / category / INDEX_FILE
    if not path.exists():
        return ""
    try:
        data, _ = split_frontmatter(path.read_text(encoding="utf-8"))
    except Exception:
        return ""
    return str(data.get("description") or "")


def all_categories(entries: list[Entry], root: Path) -> list[str]:
    """Every category that has entries or an INDEX.md, with all their ancestors."""
    found = {e.category for e in entries if e.category}
    root = Path(root)
    for index in root.rglob(INDEX_FILE):
        rel = index.parent.relative_to(root).as_posix()
        if rel != "." and not any(part.startswith(".") for part in rel.split("/")) \
                and ARCHIVED_DIR not in rel.split("/"):
            found.add(rel)
    with_ancestors = set()
    for category in found:
        parts = category.split("/")
        for i in range(1, len(parts) + 1):
            with_ancestors.add("/".join(parts[:i]))
    return sorted(with_ancestors)


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


def render_root_index(rows: list[tuple[str, str, int, int, datetime | None]], now: datetime) -> str:
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
        lines.append(f"| [{_cell(category)}](<{category}/{INDEX_FILE}>) | {_cell(description)} | {own} | {subtree} | {_day(updated)} |")
    lines.append("")
    return "\n".join(lines)


def _yaml_scalar(text: str) -> str:
    import json

    return json.dumps(text or "", ensure_ascii=False)


def write_indexes(root: Path, entries: list[Entry], now: datetime, categories: list[str] | None = None) -> None:
    """Regenerate the root INDEX.md and the given categories' INDEX.md files (all when None)."""
    root = Path(root)
    known = all_categories(entries, root)
    targets = known if categories is None else sorted(
        {a for c in categories if c for a in _ancestors(c)} & set(known) | {c for c in categories if c})
    by_category: dict[str, list[Entry]] = {}
    for e in entries:
        by_category.setdefault(e.category, []).append(e)
    for category in targets:
        subs = sorted(c for c in known if c.startswith(category + "/") and "/" not in c[len(category) + 1:])
        text = render_category_index(category, read_description(root, category),
                                     by_category.get(category, []), subs, now)
        path = root / category / INDEX_FILE
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            atomic_write_text(path, text)
    rows = []
    for category in known:
        own = by_category.get(category, [])
        subtree = sum(len(v) for k, v in by_category.items() if k == category or k.startswith(category + "/"))
        updated = max((e.updated for e in own if e.updated), default=None)
        rows.append((category, read_description(root, category), len(own), subtree, updated))
    root_text = render_root_index(rows, now)
    root_path = root / INDEX_FILE
    if not root_path.exists() or _without_stamp(root_path.read_text(encoding="utf-8")) != _without_stamp(root_text):
        atomic_write_text(root_path, root_text)


def set_description(root: Path, category: str, description: str, entries: list[Entry], now: datetime) -> None:
    path = Path(root) / category / INDEX_FILE
    own = [e for e in entries if e.category == category]
    atomic_write_text(path, render_category_index(category, description, own, [], now))
    write_indexes(root, entries, now, [category])


def _ancestors(category: str) -> list[str]:
    parts = category.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _without_stamp(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("updated: "))
