"""The core of the public API: write, read, update, list, delete, restore, trash, config, stats."""
from __future__ import annotations

import re
from functools import cached_property

from memstrata import clock
from memstrata.errors import InvalidInput, NotFound
from memstrata.results import WriteResult
from memstrata.storage import codec, indexes, trash, tree
from memstrata.storage.atomic import atomic_move, atomic_write_text
from memstrata.storage.catalog import Catalog, read_entry_file
from memstrata.storage.config import Settings, load_settings, set_setting
from memstrata.storage.entry import Entry, new_id
from memstrata.storage.lock import TreeLock
from memstrata.storage.paths import category_of, inside_root, validate_category

_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_TITLE_CHARS = 300


def _clean_title(title: str | None, body: str) -> str:
    text = title if title is not None else ""
    text = " ".join(str(text).split())
    if not text:
        for line in body.splitlines():
            line = line.strip().lstrip("#").strip()
            if line:
                text = line
                break
    if not text:
        raise InvalidInput("an entry needs a title or a non-empty body")
    if "\x00" in text:
        raise InvalidInput("title contains a NUL byte")
    _require_encodable(text, "title")
    if len(text) > MAX_TITLE_CHARS:
        text = text[: MAX_TITLE_CHARS - 1].rstrip() + "…"
    return text


def _clean_body(body) -> str:
    if body is None:
        return ""
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput("body is not UTF-8 text (binary data cannot be stored as a memory)") from None
    body = str(body)
    if "\x00" in body:
        raise InvalidInput("body contains NUL bytes (binary data cannot be stored as a memory)")
    _require_encodable(body, "body")
    return body.replace("\r\n", "\n")


def _require_encodable(text: str, what: str) -> None:
    """Refuse text that cannot be written as UTF-8 (lone surrogates from a broken decoder)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} is not valid Unicode text (it holds a lone surrogate)") from None


def _check_size(body: str, limit: int) -> None:
    """Refuse bodies above max_entry_bytes with the sizes and the setting to change."""
    size = len(body.encode("utf-8"))
    if limit and size > limit:
        mb = 1024 * 1024
        raise InvalidInput(f"body is {size / mb:.1f} MB; the limit is {limit / mb:.1f} MB "
                           f"(max_entry_bytes in config.md)")


def _clean_tags(tags) -> list[str]:
    out: list[str] = []
    for tag in tags or []:
        for part in str(tag).split(","):
            part = " ".join(part.split()).lstrip("#")
            if part and part not in out:
                out.append(part)
    return out


class MemoryCore:
    """Storage operations of a memory tree; `memstrata.Memory` adds the features on top."""

    def __init__(self, root=None, *, embedder=None):
        self.root = tree.resolve_root(root)
        self._embedder = embedder

    # -- plumbing -----------------------------------------------------------------------
    @cached_property
    def settings(self) -> Settings:
        return load_settings(self.root)

    @cached_property
    def catalog(self) -> Catalog:
        tree.require_initialised(self.root)
        return Catalog(self.root, watcher=self._tree_watcher())

    def _tree_watcher(self):
        """This instance's inotify watcher of the tree (None where inotify cannot run)."""
        watcher = getattr(self, "_watcher", False)
        if watcher is False:
            import weakref

            from memstrata.storage.watcher import TreeWatcher

            watcher = TreeWatcher(self.root)
            if watcher.ok:
                weakref.finalize(self, watcher.close)
            else:
                watcher.close()
                watcher = None
            self._watcher = watcher
        return watcher

    def lock(self) -> TreeLock:
        return TreeLock(self.root)

    def now(self):
        return clock.now()

    @property
    def embedder(self):
        if self._embedder is None:
            from memstrata.models.embedder import get_embedder

            self._embedder = get_embedder(self.settings.embedding_model)
        return self._embedder

    def _ensure_tree(self) -> None:
        if not tree.is_initialised(self.root):
            self.init()

    # -- init and config ----------------------------------------------------------------
    def init(self) -> dict:
        """Create the tree (idempotent): root 0700, config.md, INDEX.md, .gitignore, starter categories."""
        if self.root.exists() and not self.root.is_dir():
            raise InvalidInput(f"{self.root} exists and is not a folder")
        with TreeLock(self.root) if self.root.exists() else _NoLock():
            made = tree.initialise(self.root)
        with self.lock():
            now = self.now()
            for category, description in tree.STARTER_CATEGORIES.items():
                if not (self.root / category / indexes.INDEX_FILE).exists():
                    indexes.set_description(self.root, category, description, self.catalog, now)
                    made.append(f"{category}/{indexes.INDEX_FILE}")
            self._write_indexes(None)
        self.__dict__.pop("settings", None)
        return {"root": str(self.root), "created": made}

    def config_list(self) -> dict:
        return self.settings.to_dict()

    def config_get(self, key: str):
        if key not in Settings.field_names():
            raise InvalidInput(f"unknown setting {key!r}; known: {', '.join(Settings.field_names())}")
        return getattr(self.settings, key)

    def config_set(self, key: str, value) -> dict:
        tree.require_initialised(self.root)
        with self.lock():
            updated = set_setting(self.root, key, value)
        self.__dict__["settings"] = updated
        return {key: getattr(updated, key)}

    # -- finding entries ----------------------------------------------------------------
    def resolve(self, ref: str) -> Entry:
        """Find an entry by id or by path relative to the root; NotFound if there is none."""
        ref = str(ref or "").strip()
        if not ref:
            raise InvalidInput("give an entry id or a path relative to the root")
        tree.require_initialised(self.root)
        if "/" in ref or ref.endswith(".md"):
            path = inside_root(self.root, ref)
            rel = path.relative_to(self.root).as_posix()
            if not path.is_file() or rel.split("/")[0].startswith("."):
                raise NotFound(f"no entry at {ref}")
            return read_entry_file(self.root, rel)
        if not _ID_PATTERN.match(ref):
            raise InvalidInput(f"{ref!r} is not an entry id")
        for attempt in range(2):
            for rel in self.catalog.paths_of(ref):
                if (self.root / rel).is_file():
                    entry = read_entry_file(self.root, rel)
                    if entry.id == ref:
                        return entry
            if attempt == 0:
                self.catalog.refresh()
        raise NotFound(f"no entry with id {ref}")

    def read(self, ref: str, *, count_access: bool = True) -> Entry:
        """An entry with its body; counts as an access (last_access, access_count) unless told not to."""
        entry = self.resolve(ref)
        if not count_access:
            return entry
        with self.lock():
            current = self.resolve(entry.id or ref)
            touched = self._touched(current, self.now())
            self._save(touched, previous=current, reindex_text=False)
        return touched

    def _touched(self, entry: Entry, now, correlation: float | None = None) -> Entry:
        """The entry after one access (hook for weights: see scoring)."""
        return entry.copy(last_access=now, access_count=entry.access_count + 1)

    def list(self, category: str | None = None, tier: str | None = None, status: str | None = None,
             tags=None) -> list[Entry]:
        """Entries (metadata only, no bodies) filtered by category subtree, tier, status and tags."""
        tree.require_initialised(self.root)
        scope = validate_category(category) if category else None
        self.catalog.refresh()
        wanted_tags = set(_clean_tags(tags))
        out = []
        for entry in self.catalog.entries(scope):
            if tier and entry.tier != tier:
                continue
            if status and entry.status != status:
                continue
            if wanted_tags and not wanted_tags.issubset(entry.tags):
                continue
            out.append(entry)
        return out

    def hot_entries(self, now) -> list[Entry]:
        """Entries in the hot tier at `now` (the catalog narrows the search to the important
        ones and those touched within hot_days)."""
        from datetime import timedelta

        from memstrata.scoring.tiers import tier_for

        tree.require_initialised(self.root)
        self.catalog.refresh()
        since = (now - timedelta(days=self.settings.hot_days + 1)).timestamp()
        return [e for e in self.catalog.entries(touched_since=since) if tier_for(e, now, self.settings) == "hot"]

    # -- writing ------------------------------------------------------------------------
    def write(self, body, *, title: str | None = None, category: str | None = None, tags=None,
              importance=None, important: bool = False, related=None, expires=None, id: str | None = None,
              created=None, extra: dict | None = None, force: bool = False, merge: bool = False) -> WriteResult:
        """Write a new memory; the pre-write checks may answer duplicate/conflict instead of creating."""
        body = _clean_body(body)
        _check_size(body, self.settings.max_entry_bytes)
        title = _clean_title(title, body)
        category = validate_category(category)
        tags = _clean_tags(tags)
        level, important_word = codec.normalise_importance(importance)
        if id is not None and not _ID_PATTERN.match(str(id)):
            raise InvalidInput(f"id {id!r} may only hold letters, digits, '.', '_' and '-' (max 64)")
        warnings = self._check_secrets({"title": title, "body": body, "tags": tags})
        self._ensure_tree()
        self._prepare_write()
        now = self.now()
        stamp = clock.parse_datetime(created) if created else now
        entry = Entry(
            id=str(id) if id else new_id(), title=title, body=body, category=category, created=stamp,
            updated=stamp, tags=tags, importance=level, important=bool(important) or important_word,
            related=_clean_tags(related), expires=clock.parse_datetime(expires) if expires else None,
            extra=dict(extra or {}),
        )
        with self.lock():
            if id is not None and self._exists(entry.id):
                raise InvalidInput(f"an entry with id {entry.id} already exists; use update")
            early = self._before_write(entry, force=force, merge=merge)
            if early is not None:
                early.warnings = warnings + early.warnings
                return early
            entry.path = tree.unique_entry_path(self.root, category, title)
            self._save(entry, previous=None)
        return WriteResult(id=entry.id, path=entry.path, action="created", version=entry.version,
                           message=f"wrote {entry.path}", warnings=warnings + self._category_warnings(category))

    def update(self, ref: str, body=None, *, title: str | None = None, tags=None, importance=None,
               important: bool | None = None, related=None, expires=None, category: str | None = None) -> WriteResult:
        """Change an entry in place (same id); the previous body is kept as a version."""
        new_body = None if body is None else _clean_body(body)
        if new_body is not None:
            _check_size(new_body, self.settings.max_entry_bytes)
        fields_given = {"title": title, "body": new_body}
        warnings = self._check_secrets({k: v for k, v in fields_given.items() if v}
                                       | {"tags": _clean_tags(tags)})
        self._prepare_write()
        with self.lock():
            current = self.resolve(ref)
            changed = current.copy(updated=self.now())
            if new_body is not None:
                changed.body = new_body
            if title is not None:
                changed.title = _clean_title(title, changed.body)
            if tags is not None:
                changed.tags = _clean_tags(tags)
            if importance is not None:
                changed.importance, word_important = codec.normalise_importance(importance)
                changed.important = changed.important or word_important
            if important is not None:
                changed.important = bool(important)
            if related is not None:
                changed.related = _clean_tags(related)
            if expires is not None:
                changed.expires = clock.parse_datetime(expires) if expires else None
            if category is not None and validate_category(category) != current.category:
                changed.category = validate_category(category)
                changed.path = tree.unique_entry_path(self.root, changed.category, changed.title,
                                                      archived=current.status == "archived")
            self._before_update(current, changed)
            self._save(changed, previous=current)
        return WriteResult(id=changed.id, path=changed.path, action="updated", version=changed.version,
                           message=f"updated {changed.path} (v{changed.version})", warnings=warnings)

    # -- deleting -----------------------------------------------------------------------
    def delete(self, ref: str, reason: str = "deleted") -> trash.TrashItem:
        """Move an entry to the trash (restorable for trash_retention_days)."""
        with self.lock():
            entry = self.resolve(ref)
            now = self.now()
            rel = trash.move_to_trash(self.root, entry, reason, now)
            self.catalog.forget(entry.path)
            self._index_remove([entry.id])
            self._write_indexes([entry.category])
        return trash.TrashItem(id=entry.id, title=entry.title, trashed_at=now, trashed_from=entry.path,
                               reason=reason, path=rel)

    def restore(self, entry_id: str) -> Entry:
        """Bring an entry back from the trash to where it was, status active."""
        tree.require_initialised(self.root)
        with self.lock():
            item = trash.find(self.root, entry_id)
            if self._exists(item.id):
                raise InvalidInput(f"an entry with id {item.id} exists outside the trash already")
            entry = trash.take_out(self.root, item)
            origin = item.trashed_from or f"{entry.category or 'general'}/x.md"
            category = category_of(origin) or "general"
            now = self.now()
            entry = entry.copy(category=category, status="active", updated=now,
                               tier="hot" if entry.status != "active" else entry.tier)
            keep = origin if not (self.root / origin).exists() else None
            entry.path = keep or tree.unique_entry_path(self.root, category, entry.title)
            self._save(entry, previous=None)
            (self.root / item.path).unlink(missing_ok=True)
            trash.audit(self.root, now, "restore", entry.id, entry.title, entry.path, "restored")
        return entry

    def trash_list(self) -> list[trash.TrashItem]:
        tree.require_initialised(self.root)
        return trash.list_trash(self.root)

    def trash_purge(self, everything: bool = False) -> list[trash.TrashItem]:
        """Delete for good the trash entries older than trash_retention_days (or all)."""
        tree.require_initialised(self.root)
        with self.lock():
            return trash.purge(self.root, self.now(), self.settings.trash_retention_days, everything)

    # -- the tree's own files ------------------------------------------------------------
    def rebuild_indexes(self) -> dict:
        """Regenerate every INDEX.md from the entry files."""
        tree.require_initialised(self.root)
        with self.lock():
            self.catalog.rebuild()
            self._write_indexes(None)
        return {"categories": len(indexes.all_categories(self.catalog.entries(), self.root)),
                "entries": self.catalog.count()}

    def stats(self) -> dict:
        """Counts per category, tier and status, and the retrieval strategy advised per category."""
        entries = self.list()
        s = self.settings
        per_category: dict[str, dict] = {}
        for e in entries:
            row = per_category.setdefault(e.category, {"entries": 0, "active": 0, "archived": 0, "expired": 0})
            row["entries"] += 1
            row[e.status] = row.get(e.status, 0) + 1
        for category, row in per_category.items():
            subtree = sum(r["entries"] for c, r in per_category.items() if c == category or c.startswith(category + "/"))
            row["subtree"] = subtree
            row["strategy"] = ("grep" if subtree < s.grep_max_entries else
                               "index" if subtree <= s.index_max_entries else "vector")
            row["split_advised"] = row["entries"] > s.split_threshold
        tiers: dict[str, int] = {}
        statuses: dict[str, int] = {}
        for e in entries:
            tiers[e.tier] = tiers.get(e.tier, 0) + 1
            statuses[e.status] = statuses.get(e.status, 0) + 1
        return {"root": str(self.root), "entries": len(entries), "tiers": tiers, "statuses": statuses,
                "categories": dict(sorted(per_category.items())), "trash": len(trash.list_trash(self.root)),
                "unreadable": sorted(self.catalog.errors())}

    # -- internals: one way to save, move and index -------------------------------------
    def _exists(self, entry_id: str) -> bool:
        try:
            self.resolve(entry_id)
            return True
        except NotFound:
            return False

    def _save(self, entry: Entry, previous: Entry | None, reindex_text: bool = True) -> None:
        """Write one entry: see _save_many."""
        self._save_many([(entry, previous)], reindex_text=reindex_text)

    def _save_many(self, changes: list[tuple[Entry, Entry | None]], reindex_text: bool = True) -> None:
        """Write entries at entry.path (each moved from previous.path), then catalog, index and INDEX.md once.

        A move is an atomic rename first and a rewrite second, so a crash leaves the old or
        the new entry, never two copies. If the index or INDEX.md step fails, every file is
        put back as it was and the error raised. Callers hold the tree lock.
        """
        undo: list[tuple[Entry, str | None, bytes | None]] = []
        categories: list[str] = []
        try:
            for entry, previous in changes:
                inside_root(self.root, entry.path)  # a symlinked folder must not lead a write outside the root
                target = self.root / entry.path
                old_path = previous.path if previous is not None else None
                old_file = self.root / old_path if old_path else None
                old_bytes = old_file.read_bytes() if old_file is not None and old_file.exists() else None
                if entry.path != old_path and target.exists():
                    raise InvalidInput(f"{entry.path} already exists")
                undo.append((entry, old_path, old_bytes))
                if old_bytes is not None and old_path != entry.path:
                    atomic_move(old_file, target)
                atomic_write_text(target, codec.render(entry))
                if indexes.listing_changed(entry, previous):
                    categories.append(entry.category)
                    if previous is not None:
                        categories.append(previous.category)
            for entry, previous in changes:
                if previous is not None and previous.path and previous.path != entry.path:
                    self.catalog.forget(previous.path)
                self.catalog.record(entry)
            self._index_upsert([entry for entry, _ in changes], text_changed=reindex_text)
            if categories:
                self._write_indexes(list(dict.fromkeys(categories)))
        except BaseException:
            for entry, old_path, old_bytes in reversed(undo):
                self._rollback(entry, old_path, old_bytes)
            raise

    def _rollback(self, entry: Entry, old_path: str | None, old_bytes: bytes | None) -> None:
        if old_path and old_bytes is not None:
            from memstrata.storage.atomic import atomic_write_bytes

            atomic_write_bytes(self.root / old_path, old_bytes)
        if entry.path != old_path or old_bytes is None:
            (self.root / entry.path).unlink(missing_ok=True)
        try:
            self.catalog.refresh()
        except Exception:
            pass

    def _move(self, entry: Entry, new_path: str) -> Entry:
        """Move an entry file to a new path (archive, split, promotion) and keep everything in line."""
        moved = entry.copy(path=new_path, category=category_of(new_path))
        self._save(moved, previous=entry, reindex_text=False)
        return moved

    def _write_indexes(self, categories) -> None:
        """Regenerate the INDEX.md files of `categories` (None: all, after re-reading the tree).

        Targeted updates trust the catalog, which every engine write records as it goes.
        """
        if categories is None:
            self.catalog.refresh()
        indexes.write_indexes(self.root, self.catalog, self.now(), categories)

    # Hooks that later layers fill in (kept here so every write path goes through them).
    def _check_secrets(self, fields: dict) -> list[str]:
        try:
            from memstrata.storage import secrets
        except ImportError:
            return []
        findings = secrets.check(fields, self.settings.secrets if tree.is_initialised(self.root) else "refuse")
        return [f"possible secret: {f.describe()}" for f in findings]

    def _prepare_write(self) -> None:
        """Slow set-up a write needs (e.g. loading the model), done before taking the tree lock."""
        return None

    def _before_write(self, entry: Entry, force: bool, merge: bool) -> WriteResult | None:
        return None

    def _before_update(self, current: Entry, changed: Entry) -> None:
        return None

    def _category_warnings(self, category: str) -> list[str]:
        count = self.catalog.category_counts().get(category, 0)
        if count > self.settings.split_threshold:
            return [f"category {category} holds {count} entries (> {self.settings.split_threshold}); "
                    f"consider `mem split {category} --by year`"]
        return []

    def _index_upsert(self, entries: list[Entry], text_changed: bool = True) -> None:
        return None

    def _index_remove(self, ids: list[str]) -> None:
        return None


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None
