"""The formats of import and export: JSONL records, Viking and PME trees, and imported sidecars."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable, Iterator

from memstrata.engine.inputs import valid_id
from memstrata.errors import InvalidInput, MemstrataError
from memstrata.storage import codec, layout, versions
from memstrata.storage.safe_io import is_regular_file, read_regular_bytes
from memstrata.storage.entry import INVALID_ID_KEY, TIERS, Entry
from memstrata.storage.safe_io import read_regular_text
from memstrata.storage.sidecars import FULL_DIR

IMPORT_FILE_MAX_BYTES = 8 * 1024 * 1024  # a Markdown file or sidecar read by an import
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
VIKING_TIER_DIRS = TIERS      # hot warm cold archive
VIKING_CATEGORY_DIRS = ("daily", "meetings", "long-term")
VIKING_SKIP_DIRS = ("config",)
# JSONL keys that are not frontmatter.
_RECORD_KEYS = ("body", "content", "text", "category", "path", "full_content", "history", "versions")


@dataclass
class ImportReport:
    """What an import did."""

    source: str
    layout: str
    imported: int = 0
    embedded: int = 0
    skipped: int = 0          # rows not written: unchanged, older than the entry, or an id taken otherwise
    unchanged: int = 0        # rows whose entry is in the root as they are (a re-import, a resumed one)
    updated: int = 0          # rows edited since they were imported: their entry updated (a version kept)
    reindexed: int = 0        # entries of earlier (killed) runs whose index rows were missing, indexed now
    duplicates_avoided: int = 0  # rows whose entry was in the root already: not written a second time
    repeated: int = 0         # rows repeating the id of an earlier row of the same source: skipped, a warning each
    seconds: float = 0.0
    errors: list[dict] = field(default_factory=list)     # {"line" or "file": ..., "error": one line}
    warnings: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)

    def error(self, where, message: str) -> None:
        key = "line" if isinstance(where, int) or where is None else "file"
        self.errors.append({key: where, "error": message})

    def to_dict(self) -> dict:
        return {"source": self.source, "layout": self.layout, "imported": self.imported,
                "embedded": self.embedded, "skipped": self.skipped, "unchanged": self.unchanged,
                "updated": self.updated, "reindexed": self.reindexed, "duplicates_avoided": self.duplicates_avoided,
                "repeated": self.repeated,
                "seconds": round(self.seconds, 2), "errors": list(self.errors),
                "warnings": list(self.warnings), "ignored_fields": []}


def entry_record(entry: Entry, root: Path | None = None) -> dict:
    """The JSONL form of an entry: canonical frontmatter, then category, path, body."""
    data = dict(codec.entry_to_frontmatter(entry))
    data["category"] = entry.category
    data["path"] = entry.path
    data["body"] = entry.body
    if entry.history:
        data["history"] = [dict(h) for h in entry.history]
    if root is not None and entry.full_content_file:
        full = _read_sidecar(root, entry.full_content_file)
        if full is not None:
            data["full_content"] = full
    if root is not None and valid_id(entry.id):
        kept = {str(n): read_regular_text(path) for n, path in versions.list_snapshots(root, entry.id).items()}
        if kept:
            data["versions"] = kept
    return data


# Not storage/sidecars.py's read_bytes/write: those accept only `.full/...` paths, raise on a
# missing or bad one, and write to `.full/{id}.md` from the id. An import must also read
# sidecars of other trees named bare or elsewhere under their root, and skip (None) rather
# than fail; an export/import round trip keeps the recorded full_content_file name as is.
def _sidecar_candidates(root: Path, name: str) -> list[Path]:
    """full_content_file is relative to the root (.full/{id}.md); older files named it bare."""
    name = str(name)
    return [Path(root) / name, layout.path(root, FULL_DIR) / name]


def _read_sidecar(root: Path, name: str) -> str | None:
    for candidate in _sidecar_candidates(root, name):
        try:
            resolved = candidate.resolve()
            if Path(root).resolve() not in resolved.parents:
                continue
            if resolved.is_file():
                return resolved.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return None


def entry_from_record(record: dict, now) -> Entry:
    """An Entry from one JSONL record (either vocabulary; unknown keys kept as frontmatter)."""
    from memstrata.engine.inputs import clean_body, clean_tags, clean_title, kind_of

    if not isinstance(record, dict):
        raise InvalidInput("a line must be a JSON object")
    for name in ("title", "category"):  # a name or a folder; an object would become its Python spelling
        value = record.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int, float))):
            raise InvalidInput(f'"{name}" must be a string, not {kind_of(value)}')
    body = next((record[k] for k in ("body", "content", "text") if record.get(k) is not None), "")
    if not isinstance(body, str):
        body = json.dumps(body, ensure_ascii=False) if not isinstance(body, (int, float)) else str(body)
    body = clean_body(body, end_line=False)
    if not body.strip() and not str(record.get("full_content") or "").strip():
        # a title alone would be an entry with nothing to recall (a write refuses an empty text too)
        raise InvalidInput('the row has no text: give it a non-empty "body" (or "content" or "text")')
    frontmatter = {k: v for k, v in record.items() if k not in _RECORD_KEYS}
    category = record.get("category") or ""
    key = "mem-id" if "mem-id" in frontmatter else "id"  # exported from an adopted vault (storage/layout.py)
    entry = codec.entry_from_frontmatter(frontmatter, body, category=str(category), path=record.get("path"), id_key=key)
    entry.title = clean_title(entry.title or None, body)
    # tags and links as the row gives them, by the rule of a write (clean_tags): strings or numbers;
    # an object, a nested list or a boolean refuses the row (a tag "{'a': 1}" would be no one's tag)
    for field_name, spellings in (("tags", ("tags", "tag")), ("related", ("related",))):
        given = next((name for name in spellings if name in record), spellings[0])  # as the codec: tags before tag
        raw = record.get(given)
        # a line of words is split as in a file's frontmatter (codec); a list is taken item by item
        setattr(entry, field_name, clean_tags(getattr(entry, field_name) if isinstance(raw, str) else raw,
                                              f'"{given}"'))
    raw_id = record.get(key)
    if raw_id not in (None, "") and not valid_id(str(raw_id)):
        raise InvalidInput(f"id {raw_id!r} may only hold letters, digits, '.', '_' and '-' (max 64)")
    if entry.created is None:
        entry.created = entry.updated or now
    if entry.updated is None:
        entry.updated = entry.created
    history = record.get("history")
    if isinstance(history, list):
        entry.history = [dict(h) for h in history if isinstance(h, dict)]
    if record.get("full_content") is not None and entry.full_content_file:
        entry.extra["__full_content__"] = str(record["full_content"])
    kept = record.get("versions")
    if kept is not None:
        if not isinstance(kept, dict) or not all(str(n).isdigit() and isinstance(t, str) for n, t in kept.items()):
            raise InvalidInput('"versions" must map version numbers to the text of each kept version')
        entry.extra["__versions__"] = {int(n): clean_body(t) for n, t in kept.items()}
    return entry


def entries_from_jsonl(source: Path, report: ImportReport, now) -> Iterator[Entry]:
    """The entries of a JSONL file. A line without an id gets one derived from its content: title,
    body, date and which occurrence of that same row it is in the file (content_id), never from
    where the file is, so importing the file again, a copy of it from another folder, or after a
    killed import, finds the entry it made instead of making another. An edited row is a new row;
    give rows ids to update their entries on a re-import."""
    from datetime import datetime, timezone

    import hashlib

    from memstrata.scoring.conflicts import normalise_text

    where = str(Path(source).resolve())
    try:  # what a line without its own `updated` is as of: the file's last change
        file_time = datetime.fromtimestamp(source.stat().st_mtime, tz=timezone.utc)
    except OSError:
        file_time = now
    seen: dict[str, int] = {}
    titles: dict[str, int] = {}
    with open(source, "rb") as handle:
        if handle.read(2) in (b"\xff\xfe", b"\xfe\xff"):  # each of its lines would be refused: say it once
            raise InvalidInput(f"{source} is UTF-16 text; a JSONL file is UTF-8 (iconv -f UTF-16 -t UTF-8 converts it)")
        handle.seek(0)
        for number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8").strip()  # a BOM opens a file, no row
            except UnicodeDecodeError:
                report.error(number, "not UTF-8")
                continue
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                report.error(number, f"not JSON ({exc.msg})")
                continue
            except RecursionError:  # `[[[[...` thousands deep: the parser gives up, the row is refused
                report.error(number, "nested too deeply to read as JSON")
                continue
            except ValueError:  # Python refuses integers past 4,300 digits (a denial-of-service guard)
                report.error(number, "a number too long to read (more than 4,300 digits)")
                continue
            try:
                entry = entry_from_record(record, now)
            except MemstrataError as exc:
                report.error(number, exc.message)
                continue
            entry.extra["__where__"] = number
            entry.extra["__as_of__"] = entry.updated if record.get("updated") else file_time
            if not entry.id:
                stamp = next((str(record[k]) for k in _DATE_KEYS if record.get(k) not in (None, "")), "")
                key = "\0".join((normalise_text(entry.title), normalise_text(entry.body), stamp))
                seen[key] = seen.get(key, 0) + 1
                entry.id = content_id(key, seen[key])
                # what earlier releases derived (the file's path and the title's occurrence): a re-import
                # of a file imported by them finds its entries under these ids
                title = normalise_text(entry.title)
                titles[title] = titles.get(title, 0) + 1
                legacy = hashlib.sha256(f"{where}\0{title}\0{titles[title]}".encode("utf-8")).hexdigest()
                entry.extra["__legacy_id__"] = "im" + legacy[:14]
            yield entry


_DATE_KEYS = ("created", "date", "timestamp", "time")  # not `updated`: a row edited later is the same row


def content_id(key: str, occurrence: int) -> str:
    """The id of a JSONL row without one: from its content key and its occurrence in the file."""
    import hashlib

    return "ic" + hashlib.sha256(f"{key}\0{occurrence}".encode("utf-8")).hexdigest()[:14]


# -- layouts ---------------------------------------------------------------------------------
def detect_layout(source: Path) -> str:
    """jsonl for a file; viking if hot/ warm/ cold/ archive/ folders are there; else pme."""
    if source.is_file():
        if source.suffix.lower() in JSONL_SUFFIXES:
            return "jsonl"
        raise InvalidInput(f"{source.name}: import reads a .jsonl file or a folder")
    return "viking" if viking_base(source, strict=True) is not None else "pme"


def viking_base(source: Path, strict: bool = False) -> Path | None:
    """The folder holding hot/ warm/ cold/ archive/: the source itself, memories/, agent/memories/,
    or the shared space's memory/ and shared/memory/ (viking-global)."""
    for candidate in (source, source / "memories", source / "agent" / "memories", source / "memory",
                      source / "shared" / "memory"):
        if sum((candidate / d).is_dir() for d in VIKING_TIER_DIRS) >= 1 and \
                not (candidate / "INDEX.md").is_file():
            return candidate
    return None if strict else source


def _read_markdown(path: Path, rel_category: str, report: ImportReport) -> Entry | None:
    try:  # a regular file of bounded size only: never a FIFO, a device or a link out of the tree
        text = read_regular_bytes(path, IMPORT_FILE_MAX_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        report.error(str(path), "not UTF-8 text")
        return None
    except OSError as exc:
        report.error(str(path), str(exc.strerror))
        return None
    try:
        entry = codec.parse(text, category=rel_category, path=None, fallback_title=_first_heading(text, path.stem))
    except MemstrataError as exc:
        report.error(str(path), exc.message)
        return None
    if not entry.title:
        entry.title = path.stem
    return entry


def _first_heading(text: str, stem: str) -> str:
    _, body = codec.split_frontmatter(text) if text.startswith("---") else ({}, text)
    for line in body.splitlines():
        line = line.strip()
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            if heading:
                return heading
    return stem


def _safe_category(parts: Iterable[str]) -> str:
    from memstrata.storage.paths import slugify, validate_category

    segments = [p for p in parts if p]
    try:
        return validate_category("/".join(segments))
    except InvalidInput:
        return validate_category("/".join(slugify(p) for p in segments))


def _fill_dates(entry: Entry, path: Path, now) -> None:
    from datetime import datetime, timezone

    if entry.created is None:
        try:
            entry.created = datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc).replace(microsecond=0)
        except OSError:
            entry.created = now
    if entry.updated is None:
        entry.updated = entry.created
    try:  # a file edited by hand may keep its `updated:`; its mtime says when it changed
        entry.extra["__as_of__"] = max(entry.updated, datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc))
    except (OSError, TypeError):
        entry.extra["__as_of__"] = entry.updated


def _md_files(folder: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".md") and not name.startswith(".") and name.lower() != "index.md" \
                    and not os.path.islink(os.path.join(dirpath, name)):
                out.append(Path(dirpath) / name)
    return out


def entries_from_viking(base: Path, report: ImportReport, now, category: str | None) -> Iterator[Entry]:
    """hot/ warm/ cold/ archive/ set the tier; daily/ meetings/ long-term/ (and others) are categories."""
    default_category = category or "general"
    seen: set[str] = set()
    for folder in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
        name = folder.name
        if name in VIKING_SKIP_DIRS:
            continue
        tier = name if name in VIKING_TIER_DIRS else None
        for path in _md_files(folder):
            rel_parts = path.relative_to(folder).parent.parts
            try:  # a folder too deep or too long is reported for its files, and the rest goes on
                if tier:
                    cat = _safe_category(rel_parts) if rel_parts else _safe_category(default_category.split("/"))
                else:
                    cat = _safe_category((name,) + rel_parts)
            except InvalidInput as exc:
                report.error(str(path), exc.message)
                continue
            entry = _read_markdown(path, cat, report)
            if entry is None:
                continue
            if tier:
                entry.tier = tier
            _take_viking_sidecar(entry, path, report)
            _fill_dates(entry, path, now)
            _settle_id(entry, base, path, seen, report)
            yield entry


def _settle_id(entry: Entry, base: Path, path: Path, seen: set, report: ImportReport) -> None:
    """Keep a file's own id when usable; else derive one from where the file is.

    A derived id is stable for the same file of the same tree, so importing a tree again
    skips what it imported before (ids without frontmatter `id:` included).
    """
    import hashlib

    unusable = entry.extra.pop(INVALID_ID_KEY, None)  # storage's codec set it aside: it is not an id
    if unusable is not None:
        entry.extra.setdefault("source_id", unusable)
    if entry.id and entry.id in seen:
        report.warnings.append(f"{path}: id {entry.id} seen twice in this tree; gave it another id")
        entry.id = ""
    if not entry.id:
        where = f"{Path(base).resolve()}\0{Path(path).resolve().relative_to(Path(base).resolve()).as_posix()}"
        entry.id = hashlib.sha1(where.encode("utf-8")).hexdigest()[:12]
    seen.add(entry.id)


def _take_viking_sidecar(entry: Entry, path: Path, report: ImportReport) -> None:
    """A Viking archive keeps the full text in `<file>.archive.full`: bring it back as the body."""
    if not entry.full_content_file:
        return
    candidate = path.parent / entry.full_content_file
    if not _beside(candidate, path) or not is_regular_file(candidate):
        candidate = path.parent / Path(entry.full_content_file).name  # only a file beside the entry
    if is_regular_file(candidate):
        try:
            entry.body = read_regular_bytes(candidate, IMPORT_FILE_MAX_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            report.warnings.append(f"{path.name}: cannot read {entry.full_content_file}; kept the summary")
            return
        entry.full_content_file = None
        entry.layer = "L0"
    else:
        report.warnings.append(f"{path.name}: {entry.full_content_file} is missing; kept the summary only")
        entry.full_content_file = None


def _beside(candidate: Path, entry_file: Path) -> bool:
    """True when `candidate` resolves inside the folder of `entry_file` (a sidecar never leads out)."""
    folder = os.path.realpath(entry_file.parent)
    return os.path.realpath(candidate).startswith(folder + os.sep)


def entries_from_pme(base: Path, report: ImportReport, now) -> Iterator[Entry]:
    """Categories are folders (any depth); archived/ means status archived; .trash/ is not imported."""
    from memstrata.storage.paths import ARCHIVED_DIR

    seen: set[str] = set()
    for path in _md_files(base):
        rel = PurePosixPath(path.relative_to(base).as_posix())
        parts = list(rel.parent.parts)
        if not parts:
            continue  # files at the top (config.md, MEMORY.md, README.md) are not entries
        if path.name.lower() in ("memory.md", "claude.md", "agents.md", "readme.md"):
            continue
        archived = ARCHIVED_DIR in parts
        try:
            cat = _safe_category([p for p in parts if p != ARCHIVED_DIR])
        except InvalidInput as exc:
            report.error(str(path), exc.message)
            continue
        entry = _read_markdown(path, cat, report)
        if entry is None:
            continue
        if archived:
            entry.status = "archived"
        _fill_dates(entry, path, now)
        if entry.full_content_file:
            full = _read_sidecar(base, entry.full_content_file)
            if full is not None:
                entry.extra["__full_content__"] = full
        _settle_id(entry, base, path, seen, report)
        yield entry
