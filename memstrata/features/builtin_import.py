"""The one-way import of an agent's own MEMORY.md / CLAUDE.md: one entry per section, the source never written."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from memstrata.engine.entries import Entries
from memstrata.engine.save import SavePath
from memstrata.engine.state import TreeState
from memstrata.engine.index import INDEX_FAILURES
from memstrata.errors import InvalidInput, NotFound
from memstrata.features.import_index import index_missing
from memstrata.storage.paths import slugify, validate_category

IMPORT_MAX_BYTES = 4 * 1024 * 1024


class BuiltinImport:
    """import_builtin: one entry per section of an agent's own memory file, stable ids, read-only source."""

    def __init__(self, state: TreeState, entries: Entries, save: SavePath):
        self.state = state
        self.entries = entries
        self.save = save
        self.root = state.root

    def import_builtin(self, path, category: str | None = None, dry_run: bool = False) -> dict:
        """Read an agent's own MEMORY.md / CLAUDE.md into entries, one per section, one way.

        The source is opened read-only and never written. Each section gets a stable id (from
        the source path, its title and occurrence), so a second run adds nothing; a section
        whose text changed in the source becomes a new version of its entry.
        """
        from memstrata.scoring.conflicts import normalise_text

        source = Path(os.path.realpath(os.path.expanduser(str(path))))
        if not source.is_file():
            raise NotFound(f"no file at {path}")
        root_real = Path(os.path.realpath(self.root))
        if source == root_real or root_real in source.parents:
            raise InvalidInput(f"{path} is inside the memory root; import-builtin reads an agent's own "
                               "memory file from outside the tree")
        with open(source, "rb") as handle:  # read-only, never written
            raw = handle.read(IMPORT_MAX_BYTES + 1)
        if len(raw) > IMPORT_MAX_BYTES:
            raise InvalidInput(f"{path} is larger than {IMPORT_MAX_BYTES // (1024 * 1024)} MB")
        try:
            text = raw.decode("utf-8-sig").replace("\r\n", "\n")
        except UnicodeDecodeError:
            raise InvalidInput(f"{path} is not UTF-8 text") from None
        category = validate_category(category or f"imported/{slugify(source.stem)}")  # e.g. imported/claude
        sections = markdown_sections(text, fallback_title=source.stem)
        # credentials: refuse the whole import before anything is written
        warnings = self.save.check_fields({f"section {n + 1} ({t})": f"{t}\n{b}" for n, (t, b) in enumerate(sections)})
        seen: dict[str, int] = {}
        result = {"source": str(source), "category": category, "sections": len(sections), "dry_run": dry_run,
                  "created": [], "updated": [], "unchanged": [], "skipped": [], "warnings": warnings}
        self.entries.require_tree()
        present = []  # sections imported before: a run killed after a file and before its index rows
        with self.state.lock():
            for title, body in sections:
                key = normalise_text(title)
                seen[key] = seen.get(key, 0) + 1
                digest = hashlib.sha256(f"{source}\n{key}\n{seen[key]}".encode("utf-8")).hexdigest()
                entry_id = "bi" + digest[:10]
                body_hash = hashlib.sha256(f"{title}\n{body}".encode("utf-8")).hexdigest()[:16]
                marker = {"source": str(source), "source_section": title, "source_hash": body_hash}
                try:
                    current = self.entries.resolve(entry_id)
                except NotFound:
                    current = None
                if current is not None:
                    if current.extra.get("source_hash") == body_hash:
                        result["unchanged"].append(entry_id)
                        present.append(current)
                        continue
                    if not dry_run:
                        changed = current.copy(title=title, body=body, updated=self.state.now(),
                                               extra={**current.extra, **marker})
                        self.save.update(current, changed)
                    result["updated"].append(entry_id)
                    continue
                if dry_run:
                    result["created"].append(entry_id)
                    continue
                res = self.entries.write(body, title=title, category=category, id=entry_id, extra=marker)
                if res.action == "created":
                    result["created"].append(entry_id)
                elif res.action in ("conflict", "merged"):
                    result["updated"].append(res.id)
                else:  # duplicate / near_duplicate of an entry already in the category
                    result["skipped"].append({"title": title, "reason": res.message, "id": res.id})
            if not dry_run:
                try:
                    result["reindexed"] = index_missing(self.state, present)
                except INDEX_FAILURES:
                    result["warnings"].append("the index rows of sections imported before could not be checked; "
                                              "run `mem sync`")
        return result


# ========================================================================== helpers
def markdown_sections(text: str, fallback_title: str = "notes") -> list[tuple[str, str]]:
    """(title, body) per section of a Markdown file, split at the shallowest heading level that
    occurs at least twice (else the shallowest there is); fenced code is never split. Text
    before the first such heading becomes a section named after the heading above it (or
    `fallback_title`); sections with an empty body are left out."""
    lines = text.split("\n")
    headings = []  # (line number, level, title)
    fence = None
    for n, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            mark = stripped[:3]
            fence = None if fence == mark else (fence or mark)
            continue
        if fence or len(line) - len(stripped) > 3 or not stripped.startswith("#"):
            continue
        level = len(stripped) - len(stripped.lstrip("#"))
        rest = stripped[level:]
        if 1 <= level <= 6 and (rest == "" or rest[0] in " \t"):
            title = rest.strip().rstrip("#").strip()
            if title:
                headings.append((n, level, title))
    if not headings:
        body = text.strip()
        return [(fallback_title, body + "\n")] if body else []
    levels = sorted({h[1] for h in headings})
    split_level = next((lv for lv in levels if sum(1 for h in headings if h[1] == lv) >= 2), levels[0])
    cuts = [h for h in headings if h[1] == split_level]
    out = []
    pre = lines[:cuts[0][0]]
    above = [h for h in headings if h[0] < cuts[0][0]]
    pre_title = above[0][2] if above else fallback_title
    pre_body = "\n".join(l for i, l in enumerate(pre) if not any(h[0] == i for h in above)).strip()
    if pre_body:
        out.append((pre_title, pre_body + "\n"))
    for k, (n, _, title) in enumerate(cuts):
        end = cuts[k + 1][0] if k + 1 < len(cuts) else len(lines)
        body = "\n".join(lines[n + 1:end]).strip()
        if body:
            out.append((title, body + "\n"))
    return out
