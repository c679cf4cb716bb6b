"""The `AgentOps` mixin of `Memory`: shared space, daily notes, and the import/export entry points."""
from __future__ import annotations

import inspect
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from memstrata.errors import InvalidInput, MemstrataError, NotFound
from memstrata.results import WriteResult
from memstrata.storage import codec
from memstrata.storage.entry import Entry, new_id
from memstrata.transfer import (
    ImportReport,
    _entries_from_jsonl,
    _entries_from_pme,
    _entries_from_viking,
    _viking_base,
    _write_sidecar,
    detect_layout,
    entry_record,
)

SHARED_ENV = "MEMSTRATA_SHARED"
AGENT_ENV = "MEMSTRATA_AGENT"
IMPORT_BATCH = 256            # entries embedded per batch by the bulk import

Progress = Callable[[int, int], None]


@dataclass
class SharedWriteResult(WriteResult):
    """A write result plus what happened in the shared root (`shared`: its own write result)."""

    shared: dict | None = None

    def to_dict(self) -> dict:
        data = super().to_dict()
        if self.shared is not None:
            data["shared"] = self.shared
        return data


class AgentOps:
    """Shared space, daily notes, import/export (a mixin placed before MemoryCore).

    - Shared space: each agent has its own root; a shared root (``shared_root`` in config.md,
      else ``$MEMSTRATA_SHARED``) receives a copy of what an agent writes with ``share=True``
      (or shares later with ``share(ref)``), stamped ``agent: <name>``. The shared root is an
      ordinary memory tree with its own lock. ``recall(..., include_shared=True)`` searches it too.
    - Daily notes: ``daily(text)`` appends to ``daily/YYYY-MM-DD.md`` (one entry per day).
    - Import: a JSONL file, a Viking tree or a PME tree (readers in memstrata.transfer); all
      feed one bulk path that embeds in batches and writes INDEX.md once.
    - Export: ``export_jsonl`` writes every entry (frontmatter, category, body) as JSON lines;
      importing that file into an empty root gives the same entries and frontmatter.
    """

    # -- who am I, where is the shared root ---------------------------------------------
    @property
    def agent_name(self) -> str:
        """settings.agent_name, else $MEMSTRATA_AGENT, else the root folder's name."""
        name = None
        try:
            name = self.settings.agent_name
        except MemstrataError:
            name = None
        return str(name or os.environ.get(AGENT_ENV) or self.root.name or "agent").strip()

    @property
    def shared_root(self) -> Path | None:
        """The shared root: config.md's shared_root, else $MEMSTRATA_SHARED; None if neither is set."""
        from memstrata.storage.tree import resolve_root

        raw = None
        try:
            raw = self.settings.shared_root
        except MemstrataError:
            raw = None
        raw = raw or os.environ.get(SHARED_ENV)
        if not raw:
            return None
        path = Path(os.path.expanduser(str(raw)))
        if not path.is_absolute():
            path = self.root / path
        return resolve_root(path)

    def shared_memory(self):
        """The Memory of the shared root (cached; shares this Memory's loaded model)."""
        root = self.shared_root
        if root is None:
            raise InvalidInput(f"no shared root: set shared_root in config.md (mem config set shared_root PATH) "
                               f"or ${SHARED_ENV}")
        if root == self.root:
            raise InvalidInput("shared_root points at this root itself; give the shared space its own folder")
        cached = self.__dict__.get("_shared_memory")
        if cached is not None and cached.root == root:
            if cached._embedder is None and self._embedder is not None:
                cached._embedder = self._embedder
            return cached
        shared = type(self)(root, embedder=self._embedder)
        self.__dict__["_shared_memory"] = shared
        return shared

    # -- writing with share=True ----------------------------------------------------------
    def write(self, body, *args, share: bool = False, **kwargs) -> WriteResult:
        """Write a memory (see MemoryCore.write); with share=True also put a copy in the shared root."""
        if share:
            self.shared_memory()  # fail before writing anything if there is no shared root
        result = super().write(body, *args, **kwargs)
        if not share:
            return result
        shared = self._share_id(result.id)
        return SharedWriteResult(**_result_fields(result), shared=shared)

    def share(self, ref: str) -> dict:
        """Copy an existing entry of this root into the shared root (again: updates the copy)."""
        entry = self.resolve(ref)
        return self._share_id(entry.id)

    def _share_id(self, entry_id: str) -> dict:
        entry = self.resolve(entry_id)
        shared = self.shared_memory()
        agent = self.agent_name
        try:
            existing = shared.resolve(entry.id) if _initialised(shared.root) else None
        except NotFound:
            existing = None
        if existing is not None:
            if (existing.body, existing.title, existing.tags) == (entry.body, entry.title, entry.tags):
                out = {"id": existing.id, "path": existing.path, "action": "unchanged",
                       "message": f"already shared as {existing.path}"}
            else:
                out = shared.update(existing.id, entry.body, title=entry.title, tags=entry.tags,
                                    importance=entry.importance, important=entry.important).to_dict()
        else:
            extra = {k: v for k, v in entry.extra.items() if k != "agent"}
            extra["agent"] = agent
            out = shared.write(
                entry.body, title=entry.title, category=entry.category or None, tags=entry.tags,
                importance=entry.importance, important=entry.important, related=entry.related,
                expires=entry.expires, id=entry.id, created=entry.created, extra=extra,
            ).to_dict()
        out["root"] = str(shared.root)
        out["agent"] = agent
        return out

    # -- recall across the shared root ----------------------------------------------------
    def recall(self, query, *args, include_shared: bool = False, **kwargs):
        """Recall (see the recall feature); include_shared=True also searches the shared root."""
        parent = getattr(super(), "recall", None)
        if parent is None:
            raise InvalidInput("recall is not available in this build")
        if _accepts(parent, "include_shared"):
            return parent(query, *args, include_shared=include_shared, **kwargs)
        mine = parent(query, *args, **kwargs)
        if not include_shared:
            return mine
        if self.shared_root is None:
            mine.notes.append(f"no shared root is set (shared_root in config.md or ${SHARED_ENV})")
            return mine
        shared = self.shared_memory()
        if not _initialised(shared.root):
            mine.notes.append(f"the shared root {shared.root} holds no memory tree yet")
            return mine
        theirs = shared.recall(query, *args, **kwargs)
        return _merge_recall(mine, theirs, shared, kwargs.get("k", kwargs.get("limit", args[0] if args else None)))

    # -- daily notes ----------------------------------------------------------------------
    def daily(self, text: str, *, day=None, share: bool = False) -> WriteResult:
        """Append `text` to today's daily note daily/YYYY-MM-DD.md (created on first use).

        Each append is a "## HH:MM" section; the day and time are local to this machine.
        An append is not an edit: it goes through the one write path (_save) without
        making a new version, and skips the duplicate checks of a new write.
        """
        from memstrata.core import _clean_body

        text = _clean_body(text).strip()
        if not text:
            raise InvalidInput("a daily note needs some text")
        warnings = self._check_secrets({"body": text})
        now = self.now()
        local = now.astimezone()
        if day is None:
            day_text = local.strftime("%Y-%m-%d")
        else:
            from memstrata.clock import parse_datetime

            day_text = parse_datetime(day).strftime("%Y-%m-%d")
        block = f"## {local.strftime('%H:%M')}\n\n{text}\n"
        path = f"daily/{day_text}.md"
        self._ensure_tree()
        with self.lock():
            if (self.root / path).is_file():
                current = self.resolve(path)
                body = current.body.rstrip("\n")
                changed = current.copy(body=(body + "\n\n" if body else "") + block, updated=now)
                self._save(changed, previous=current)
                result = WriteResult(id=changed.id, path=changed.path, action="appended", version=changed.version,
                                     message=f"appended to {changed.path}", warnings=warnings)
            else:
                result = _plain_write(self, block, title=day_text, category="daily", tags=["daily"], force=True)
                result.message = f"started {result.path}"
                if result.path != path:
                    result.warnings.append(f"daily note written at {result.path}")
        if share:
            return SharedWriteResult(**_result_fields(result), shared=self._share_id(result.id))
        return result

    # -- export ---------------------------------------------------------------------------
    def export_jsonl(self, target=None) -> dict:
        """Write every entry as one JSON line (frontmatter + category + path + body).

        `target`: a path, an open text stream, or None for stdout. Returns counts.
        """
        import sys

        from memstrata.storage.catalog import read_entry_file

        entries = sorted(self.list(), key=lambda e: e.path or "")
        own = False
        if target is None or target == "-":
            stream = sys.stdout
        elif hasattr(target, "write"):
            stream = target
        else:
            path = Path(os.path.expanduser(str(target)))
            if path.is_dir():
                raise InvalidInput(f"{path} is a folder; give a file name for the export")
            path.parent.mkdir(parents=True, exist_ok=True)
            stream = open(path, "w", encoding="utf-8")
            own = True
        count = 0
        unreadable = sorted(self.catalog.errors())
        try:
            for meta in entries:
                try:
                    entry = read_entry_file(self.root, meta.path)
                except (MemstrataError, OSError):
                    unreadable.append(meta.path)
                    continue
                stream.write(json.dumps(entry_record(entry, self.root), ensure_ascii=False, default=str) + "\n")
                count += 1
        finally:
            if own:
                stream.close()
            else:
                stream.flush()
        return {"root": str(self.root), "entries": count, "unreadable": unreadable,
                "path": None if not own else str(Path(os.path.expanduser(str(target))).resolve())}

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
            return _as_dict(self.import_jsonl(source, progress))
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
        entries = list(_entries_from_jsonl(source, report, self.now()))
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
        now = self.now()
        if chosen == "viking":
            entries = list(_entries_from_viking(_viking_base(source), report, now, category))
        elif chosen == "pme":
            entries = list(_entries_from_pme(source, report, now))
        else:
            raise InvalidInput(f"layout must be auto, viking or pme, not {layout!r}")
        return self._bulk_import(entries, report, progress).to_dict()

    def _bulk_import(self, entries: list[Entry], report: ImportReport, progress: Progress | None) -> ImportReport:
        """Write many entries under one lock: files first, embeddings in batches, INDEX.md once.

        Entries keep every field they come with (status, tier, dates, version, history ...);
        an entry whose id is already in this root is skipped; one bad entry is reported, not fatal.
        """
        from memstrata.storage.atomic import atomic_write_text

        self._ensure_tree()
        total = len(entries)
        progress = _monotonic(progress) if progress else None
        if progress and total:
            progress(0, total)
        written = 0
        batch: list[Entry] = []
        with self.lock():
            self.catalog.refresh()
            taken = {e.id for e in self.catalog.entries()}
            for done, entry in enumerate(entries, 1):
                where = entry.extra.pop("__where__", None)
                full = entry.extra.pop("__full_content__", None)
                try:
                    if entry.id and entry.id in taken:
                        report.skipped += 1
                    else:
                        entry.id = entry.id or new_id()
                        self._place_imported(entry)
                        report.warnings.extend(f"{entry.path}: {w}" for w in self._check_secrets(
                            {"title": entry.title, "body": entry.body}))
                        atomic_write_text(self.root / entry.path, codec.render(entry))
                        if full is not None and entry.full_content_file:
                            _write_sidecar(self.root, entry.full_content_file, full)
                        self.catalog.record(entry)
                        taken.add(entry.id)
                        batch.append(entry)
                        written += 1
                        report.imported += 1
                        report.ids.append(entry.id)
                except MemstrataError as exc:
                    report.error(where if where is not None else (entry.path or entry.title), exc.message)
                if len(batch) >= IMPORT_BATCH:
                    self._import_index(batch, report, progress, done - len(batch), total)
                    batch = []
                elif progress and not batch:
                    progress(done, total)
            if batch:
                self._import_index(batch, report, progress, total - len(batch), total)
            if written:
                self._write_indexes(None)
        if report.skipped:
            report.warnings.append(f"{report.skipped} entries skipped: their id is already in this root")
        return report

    def _place_imported(self, entry: Entry) -> None:
        """Choose the file of an imported entry: its recorded path when free and consistent, else a new one."""
        from memstrata.storage import tree
        from memstrata.storage.paths import category_of, inside_root, is_archived_path, validate_category

        entry.category = validate_category(entry.category)
        archived = entry.status == "archived"
        wanted, entry.path = entry.path, None
        if wanted:
            try:
                target = inside_root(self.root, wanted)
                rel = target.relative_to(self.root).as_posix()
            except MemstrataError:
                rel = None
            if (rel and rel.endswith(".md") and not rel.startswith(".") and not target.exists()
                    and category_of(rel) == entry.category and is_archived_path(rel) == archived
                    and target.name.lower() not in ("index.md", "config.md")):
                entry.path = rel
        if entry.path is None:
            entry.path = tree.unique_entry_path(self.root, entry.category, entry.title, archived=archived)

    def _import_index(self, batch: list[Entry], report: ImportReport, progress: Progress | None = None,
                      base: int = 0, total: int = 0) -> None:
        """Embed one batch of written entries; progress counts an entry once it is embedded."""
        def step(done: int, of: int) -> None:
            progress(base + int(len(batch) * done / max(of, 1)), total)

        try:
            vindex = getattr(self, "_vindex", None)
            if vindex is not None:
                done = vindex().upsert(list(batch), lambda: self.embedder, progress=step if progress else None)
                report.embedded += int((done or {}).get("embedded", 0))
            else:
                self._index_upsert(list(batch))
        except Exception as exc:  # noqa: BLE001 - the files stand; the index is derived
            if not isinstance(exc, MemstrataError):
                raise

            note = f"vector index not updated ({exc.message}); recall will re-embed on its next sync"
            if note not in report.warnings:
                report.warnings.append(note)
        if progress:
            progress(base + len(batch), total)


# -- helpers ---------------------------------------------------------------------------------
def _monotonic(progress: Progress) -> Progress:
    """A progress callback that only ever moves forward (each value reported once)."""
    last = [-1]

    def report(done: int, total: int) -> None:
        if done > last[0]:
            last[0] = done
            progress(done, total)

    return report


def _plain_write(memory, body, **kwargs) -> WriteResult:
    """A plain write that skips this mixin's own write (no share)."""
    return super(AgentOps, memory).write(body, **kwargs)


def _result_fields(result: WriteResult) -> dict:
    data = asdict(result) if not isinstance(result, SharedWriteResult) else \
        {k: v for k, v in asdict(result).items() if k != "shared"}
    return {k: v for k, v in data.items() if k in WriteResult.__dataclass_fields__}


def _initialised(root: Path) -> bool:
    from memstrata.storage.tree import is_initialised

    return is_initialised(root)


def _accepts(fn, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params


def _as_dict(value) -> dict:
    return value.to_dict() if hasattr(value, "to_dict") else dict(value)


def _merge_recall(mine, theirs, shared, limit):
    """Merge two recall results by score; hits from the shared root say so (`shared`, `agent`)."""
    seen = {h.id for h in mine.results}
    extra = [_shared_hit(h, shared) for h in theirs.results if h.id not in seen]
    merged = sorted(list(mine.results) + extra, key=lambda h: h.score, reverse=True)
    if isinstance(limit, int) and limit > 0:
        merged = merged[:limit]
    mine.results = merged
    mine.notes.append(f"searched the shared root {shared.root} too")
    return mine


def _shared_hit(hit, shared):
    """A copy of a recall hit that says it came from the shared root and which agent wrote it."""
    from dataclasses import fields as dc_fields
    from dataclasses import make_dataclass

    cls = _SHARED_HIT_CLASSES.get(type(hit))
    if cls is None:
        def to_dict(self):
            data = type(hit).to_dict(self)
            data["shared"] = True
            data["agent"] = self.agent
            data["root"] = self.shared_root
            return data

        cls = make_dataclass("Shared" + type(hit).__name__,
                             [("agent", "str | None", None), ("shared_root", "str | None", None)],
                             bases=(type(hit),), namespace={"to_dict": to_dict})
        _SHARED_HIT_CLASSES[type(hit)] = cls
    agent = None
    try:
        meta = shared.catalog.paths_of(hit.id)
        if meta:
            found = shared.catalog.get(meta[0])
            agent = found.agent if found is not None else None
    except Exception:  # a hit is still a hit without its agent name
        agent = None
    values = {f.name: getattr(hit, f.name) for f in dc_fields(hit)}
    return cls(**values, agent=agent, shared_root=str(shared.root))


_SHARED_HIT_CLASSES: dict = {}
