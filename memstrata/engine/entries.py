"""Entry operations of a tree: init, config, find, read, list, write, update, delete, restore, trash, stats."""
from __future__ import annotations

from memstrata import clock
from memstrata.engine.inputs import (
    check_size,
    clean_body,
    clean_expires,
    clean_importance,
    clean_tags,
    clean_title,
    valid_id,
)
from memstrata.engine.save import SavePath
from memstrata.engine.split_advice import split_advised, split_warning
from memstrata.engine.state import TreeState
from memstrata.engine.use_days import UseDays
from memstrata.errors import ChangedOnDisk, CorruptEntry, InvalidInput, NotFound
from memstrata.results import WriteResult
from memstrata.scoring.access import folded
from memstrata.storage import indexes, journal, layout, trash, tree
from memstrata.storage.config import require_known, set_setting, unset_setting
from memstrata.storage.entry import Entry, new_id
from memstrata.storage.line_ends import file_line_end, with_line_ends
from memstrata.storage.paths import category_of, is_archived_path, validate_category


UPDATE_ATTEMPTS = 3  # an update reads an entry an editor keeps saving this often before it says so


class Entries:
    """The storage operations of a tree; every change goes through the save path."""

    def __init__(self, state: TreeState, save: SavePath):
        self.state = state
        self.save = save
        self.root = state.root
        self.days = UseDays(state)  # the days the tree was in use: what the archive tier and the trash count

    # -- init and config ----------------------------------------------------------------
    def init(self, adopt: bool = False, indexes_wanted: bool = False, progress=None) -> dict:
        """Create the tree, or adopt a folder of notes (memstrata/engine/adoption.py)."""
        from memstrata.engine import adoption

        return adoption.init(self, adopt, indexes_wanted, progress)

    def give_ids(self, left: list | None = None, id_for=None) -> int:
        """Give every entry file without a usable id a stable one (memstrata/engine/adoption.py)."""
        from memstrata.engine import adoption

        return adoption.give_ids(self, left, id_for=id_for)

    def config_list(self) -> dict:
        return self.state.settings.to_dict()

    def config_get(self, key: str):
        require_known(key)
        return getattr(self.state.settings, key)

    def config_set(self, key: str, value) -> dict:
        tree.require_initialised(self.root)
        with self.state.lock():
            updated = set_setting(self.root, key, value)
        self.state.use_settings(updated)
        return {key: getattr(updated, key)}

    def config_unset(self, key: str) -> dict:
        """Forget a changed setting: it takes its documented default again."""
        with self.state.lock():
            updated = unset_setting(self.root, key)
        self.state.use_settings(updated)
        return {key: getattr(updated, key)}

    # -- finding entries ----------------------------------------------------------------
    def resolve(self, ref: str) -> Entry:
        """Find an entry by path relative to the root, id, a vault note's own `id:` or a unique id
        prefix (memstrata/engine/refs.py); NotFound if there is none."""
        from memstrata.engine import refs

        return refs.resolve(self.state, ref)

    def read(self, ref: str, *, count_access: bool = True) -> Entry:
        """An entry with its body, as the access journal sees it; counts as an access unless told
        not to. The access goes to the journal (storage/journal.py): the entry file is not rewritten."""
        entry = self.resolve(ref)
        if count_access and entry.id:  # best effort: on a full disk the read answers, uncounted
            journal.append(self.root, [(entry.id, self.state.now(), None)])
        return self.seen(entry)

    def seen(self, entry: Entry, accesses: dict | None = None) -> Entry:
        """`entry` with the accesses the journal holds for it counted, its tier and weight as
        `mem maintain` will write them (what reads and lists show); `accesses`: the journal's, when
        the caller read them for many entries."""
        accesses = self.state.accesses() if accesses is None else accesses
        access = accesses.get(entry.id) if entry.id else None
        entry = folded(entry, access, self.state.now(), self.state.settings) if access is not None else entry
        return self.due_tiers([entry])[0]

    def tiers_now(self, hits: list, wanted: str | None) -> list:
        """Recall hits of an adopted vault with the tier reads show (`seen`: none is in its notes or
        their index rows); only those in `wanted` when a tier was asked for."""
        accesses = self.state.accesses() if hits else {}  # the journal's files listed once, not once a hit
        for hit in hits:
            entry = self.state.catalog.get(hit.path) if hit.path and hit.shared_root is None else None
            hit.tier = self.seen(entry, accesses).tier if entry is not None else hit.tier
        return [hit for hit in hits if not wanted or hit.tier == wanted]

    def due_tiers(self, entries: list[Entry], all_entries: list[Entry] | None = None) -> list[Entry]:
        """`entries` with the tier `mem maintain` gives them now (scoring.lifecycle.tier_now: one rule).
        The days in use are counted (over `all_entries`, else the catalog's) only when an entry is old
        enough by the calendar for the archive tier, the one they decide."""
        from memstrata.scoring.lifecycle import tier_now

        now, settings = self.state.now(), self.state.settings
        calendar = [tier_now(e, now, settings, None) for e in entries]
        days = None
        if any(t == "archive" and e.status == "active" for t, e in zip(calendar, entries)):
            days = self.days.over(all_entries, now) if all_entries is not None else self.days.tree(now)
        for entry, tier in zip(entries, calendar):
            entry.tier = tier if days is None else tier_now(entry, now, settings, days)
        return entries

    def list(self, category: str | None = None, tier: str | None = None, status: str | None = None,
             tags=None, as_stored: bool = False) -> list[Entry]:
        """Entries (metadata only, no bodies) filtered by category subtree, tier, status and tags.

        Each shows the tier `mem maintain` gives it now (scoring.lifecycle.tier_now, the one rule);
        `as_stored`: the tier its file holds (what maintain plans from)."""
        tree.require_initialised(self.root)
        scope = validate_category(category, top=self.state.vault) if category else None
        self.state.catalog.refresh()  # a hand-made file is listed without an id: reads never write
        wanted_tags = set(clean_tags(tags))
        listed = self.state.catalog.entries(scope)
        if self.state.accesses():
            now, settings, accesses = self.state.now(), self.state.settings, self.state.accesses()
            listed = [folded(e, accesses[e.id], now, settings) if e.id in accesses else e for e in listed]
        if not as_stored:
            self.due_tiers(listed, listed if scope is None else None)
        out = []
        for entry in listed:
            if tier and entry.tier != tier:
                continue
            if status and entry.status != status:
                continue
            if wanted_tags and not wanted_tags.issubset(entry.tags):
                continue
            out.append(entry)
        return out

    def unreadable(self, category: str | None = None) -> dict[str, str]:
        """Entry files (of `category`'s subtree) that cannot be read: `list` leaves them out, and says
        so (path -> why); `mem doctor` reports them, `--fix` sets them aside."""
        scope = validate_category(category, top=self.state.vault) if category else None
        errors = self.state.catalog.errors()
        return {rel: why for rel, why in sorted(errors.items()) if not scope or rel.startswith(scope + "/")}

    def hot_entries(self, now) -> list[Entry]:
        """Entries in the hot tier at `now` (the catalog narrows the search to the important
        ones and those touched within hot_days)."""
        from datetime import timedelta

        from memstrata.scoring.tiers import tier_for

        tree.require_initialised(self.root)
        catalog, settings = self.state.catalog, self.state.settings
        catalog.refresh()
        since = (now - timedelta(days=settings.hot_days + 1)).timestamp()
        accesses = self.state.accesses()
        candidates = {e.ref: e for e in catalog.entries(touched_since=since)}  # hand-made files: no id yet
        for entry_id, access in accesses.items():  # touched lately only through the journal
            if entry_id not in candidates and access.last.timestamp() >= since:
                candidates.update({e.ref: e for e in (catalog.get(p) for p in catalog.paths_of(entry_id)) if e})
        return [e for e in map(self.seen, candidates.values()) if tier_for(e, now, settings) == "hot"]

    # -- writing ------------------------------------------------------------------------
    def write(self, body, *, title: str | None = None, category: str | None = None, tags=None,
              importance=None, important: bool = False, related=None, expires=None, id: str | None = None,
              created=None, extra: dict | None = None, force: bool = False, merge: bool = False) -> WriteResult:
        """Write a new memory; the pre-write checks may answer duplicate/conflict instead of creating."""
        body = clean_body(body)
        check_size(body, self.state.settings.max_entry_bytes)
        title = clean_title(title, body)
        category = validate_category(category, top=self.state.vault)  # a vault's top level when none
        tags = clean_tags(tags)
        level, important_word = clean_importance(importance)
        if id is not None and not valid_id(str(id)):
            raise InvalidInput(f"id {id!r} may only hold letters, digits, '.', '_' and '-' (max 64)")
        now = self.state.now()
        stamp = clock.parse_datetime(created) if created else now
        entry = Entry(
            id=str(id) if id else new_id(), title=title, body=body, category=category, created=stamp,
            updated=stamp, tags=tags, importance=level, important=bool(important) or important_word,
            related=clean_tags(related, "related"), expires=clean_expires(expires, now) if expires else None,
            extra=dict(extra or {}),
        )
        if entry.extra.get("agent"):  # a canonical field given among the extras (the shared space does)
            entry.agent = str(entry.extra.pop("agent"))
        warnings = self.save.check_entry(entry)
        self.require_tree()
        self.save.prepare()
        with self.state.lock():
            if id is not None and self.exists(entry.id):
                raise InvalidInput(f"an entry with id {entry.id} already exists; use update")
            early = self.save.precheck(entry, force=force, merge=merge)
            if early is not None:
                early.warnings = warnings + early.warnings
                return early
            entry.path = tree.unique_entry_path(self.root, category, title)
            self.save.save(entry, previous=None)
        return WriteResult(id=entry.id, path=entry.path, action="created", version=entry.version,
                           message=f"wrote {entry.path}", warnings=warnings + self.category_warnings(category)
                           + self.index_warnings())

    def update(self, ref: str, body=None, *, title: str | None = None, tags=None, importance=None,
               important: bool | None = None, related=None, expires=None, category: str | None = None,
               add_tags=None, remove_tags=None, agent: str | None = None) -> WriteResult:
        """Change an entry in place (same id); the previous body is kept as a version. An entry file
        an editor saves meanwhile is read again and the change made on what it saved (ChangedOnDisk,
        nothing written, when it keeps changing: UPDATE_ATTEMPTS reads)."""
        new_body = None if body is None else clean_body(body)
        if new_body is not None:
            check_size(new_body, self.state.settings.max_entry_bytes)
        self.save.prepare()
        changing = None
        for attempt in range(1, UPDATE_ATTEMPTS + 1):
            try:
                return self._update_once(ref, new_body, title=title, tags=tags, importance=importance,
                                         important=important, related=related, expires=expires, category=category,
                                         add_tags=add_tags, remove_tags=remove_tags, agent=agent)
            except ChangedOnDisk as exc:
                if attempt == UPDATE_ATTEMPTS:
                    raise
                changing = exc
            except NotFound:
                if changing is not None:  # it was being saved when first read: that is the answer, not "no entry"
                    raise changing from None
                raise

    def _update_once(self, ref: str, new_body, *, title, tags, importance, important, related, expires, category,
                     add_tags, remove_tags, agent) -> WriteResult:
        with self.state.lock():
            current = self.resolve(ref)
            changed = current.copy(updated=self.state.now())
            if new_body is not None:  # in the file's own line ends (a CRLF note stays CRLF throughout)
                changed.body = with_line_ends(new_body, file_line_end(self.root / current.path))
            if title is not None:
                changed.title = clean_title(title, changed.body)
            if tags is not None:
                changed.tags = clean_tags(tags)
            if agent is not None:
                changed.agent = str(agent) or None
            if add_tags:
                changed.tags = list(dict.fromkeys(changed.tags + clean_tags(add_tags)))
            if remove_tags:
                gone = set(clean_tags(remove_tags))
                changed.tags = [t for t in changed.tags if t not in gone]
            if importance is not None:
                changed.importance, word_important = clean_importance(importance)
                changed.important = changed.important or word_important
            if important is not None:
                changed.important = bool(important)
            if related is not None:
                changed.related = clean_tags(related, "related")
            if expires is not None:
                changed.expires = clean_expires(expires, self.state.now()) if expires else None
            if category is not None and validate_category(category, top=self.state.vault) != current.category:
                changed.category = validate_category(category, top=self.state.vault)
                changed.path = tree.unique_entry_path(self.root, changed.category, changed.title,
                                                      archived=current.status == "archived")
            if _same_content(current, changed):  # e.g. --untag of a tag it does not have: no version, no write
                return WriteResult(id=current.id, path=current.path, action="unchanged", version=current.version,
                                   message=f"nothing to change in {current.path} (v{current.version})")
            warnings = self.save.check_entry(changed)
            if (changed.title, changed.category) != (current.title, current.category):
                warnings += self.title_warnings(changed)
            self.save.update(current, changed)
        return WriteResult(id=changed.id, path=changed.path, action="updated", version=changed.version,
                           message=f"updated {changed.path} (v{changed.version})",
                           warnings=warnings + self.index_warnings())

    # -- deleting -----------------------------------------------------------------------
    def delete(self, ref: str, reason: str = "deleted", reported: bool = False) -> trash.TrashItem:
        """Move an entry to the trash (restorable until purged: trash_retention_days after it was
        reported; `reported` when the caller shows the user this move now)."""
        with self.state.lock():
            entry = self.resolve(ref)
            now = self.state.now()
            rel = trash.move_to_trash(self.root, entry, reason, now, reported=reported)
            self.state.catalog.forget(entry.path)
            self.save.index.remove([entry.id])
            self.save.write_indexes([entry.category])
        return trash.TrashItem(id=entry.id, title=entry.title, trashed_at=now, trashed_from=entry.path,
                               reason=reason, path=rel, reported_at=now if reported else None)

    def restore(self, entry_id: str) -> Entry:
        """Bring an entry back from the trash to where it was, status active.

        `entry_id` is the id, or the trash file's path (`.trash/NAME.md`) for an entry that had no
        valid id; such an entry comes back with a fresh id (the old value stays in `invalid_id`).
        """
        tree.require_initialised(self.root)
        with self.state.lock():
            item = trash.find(self.root, entry_id)
            if item.id and self.exists(item.id):
                raise InvalidInput(f"an entry with id {item.id} exists outside the trash already")
            if item.damaged:
                raise CorruptEntry(f"{item.path} cannot be restored: {item.damaged} (`mem doctor` reports it)")
            entry = trash.take_out(self.root, item)
            if not entry.id:
                entry.id = new_id()
            vault = self.state.vault  # a vault's top-level note comes back to the top level
            origin = item.trashed_from or (f"{entry.category}/x.md" if entry.category or vault else "general/x.md")
            category = category_of(origin) or ("" if vault else "general")
            now = self.state.now()
            # its `updated` stays the last change of its text; coming back is a touch (hot for hot_days)
            entry = entry.copy(category=category, status="active", last_access=now,
                               tier="hot" if entry.status != "active" else entry.tier)
            if entry.expires is not None and entry.expires <= now:
                entry.expires = None  # bringing back what expired is keeping it: the next maintain would trash it again
            # it comes back active: out of the archive folder the engine moved it to (a vault's own
            # `archived/` folder is the user's: its note goes back there)
            archived_by_us = not vault and is_archived_path(origin)
            keep = origin if not (self.root / origin).exists() and not archived_by_us else None
            entry.path = keep or tree.unique_entry_path(self.root, category, entry.title)
            # the trash file moves back and keeps its own lines (a hand-made note stays as written),
            # and a vault's note its own mode (one trashed by an older release: the umask's)
            trash.give_back_mode(self.root, item)
            self.save.save(entry, previous=entry.copy(path=item.path))
            (self.root / item.path).unlink(missing_ok=True)
            trash.audit(self.root, now, "restore", entry.id, entry.title, entry.path, "restored")
        return entry

    def trash_list(self, report: bool = True) -> list[trash.TrashItem]:
        """The trash, oldest first. Listing it is showing it: with `report`, each item not reported
        before gets `reported_at` now, and from then on the purge counts trash_retention_days."""
        tree.require_initialised(self.root)
        if not report:
            return trash.list_trash(self.root)
        with self.state.lock():
            return trash.mark_reported(self.root, trash.list_trash(self.root), self.state.now())

    def trash_purge(self, everything: bool = False) -> list[trash.TrashItem]:
        """Delete for good the trash entries older than trash_retention_days (or all)."""
        tree.require_initialised(self.root)
        with self.state.lock():
            self.state.catalog.refresh()
            now = self.state.now()
            return trash.purge(self.root, now, self.state.settings.trash_retention_days, everything,
                               live_ids=set(self.state.catalog.ids()), use_days=self.trash_use_days(now))

    def trash_use_days(self, now) -> tuple:
        """The days in use a trash item's wait counts (those of the whole tree)."""
        return self.days.tree(now)

    def trash_purge_report(self, everything: bool = False) -> dict:
        """trash_purge, and why what is left was not purged (scoring.lifecycle.trash_waiting)."""
        from memstrata.scoring.lifecycle import trash_waiting

        purged = self.trash_purge(everything)
        left = trash.list_trash(self.root)
        now = self.state.now()
        waiting = trash_waiting([(i.trashed_at, i.reported_at) for i in left], now, self.state.settings,
                                self.trash_use_days(now))
        return {"purged": purged, "left": len(left), **waiting,
                "retention_days": self.state.settings.trash_retention_days}

    # -- the tree's own files ------------------------------------------------------------
    def rebuild_indexes(self) -> dict:
        """Regenerate every INDEX.md from the entry files."""
        tree.require_initialised(self.root)
        catalog = self.state.catalog
        with self.state.lock():
            catalog.rebuild()
            self.save.write_indexes(None)
        return {"categories": len(indexes.all_categories(catalog.entries(), self.root)),
                "entries": catalog.count()}

    def stats(self) -> dict:
        """Counts per category, tier and status, and the retrieval strategy advised per category."""
        from memstrata.engine.stats import tree_stats

        return tree_stats(self.state, self.list())

    # -- helpers the other parts use ----------------------------------------------------
    def exists(self, entry_id: str) -> bool:
        try:
            self.resolve(entry_id)
            return True
        except NotFound:
            return False

    def require_tree(self) -> None:
        """NotFound unless the root is an initialised tree: nothing is ever written elsewhere."""
        tree.require_initialised(self.root)

    def index_warnings(self) -> list[str]:
        """The save path's note when the (derived) vector index could not follow the last save."""
        return [self.save.index.last_error] if self.save.index.last_error else []

    def require_category(self, category: str | None) -> None:
        """NotFound when a category filter names no category of the tree (no folder, no entry in
        or under it): a mistyped --category would otherwise quietly find nothing."""
        tree.require_initialised(self.root)  # (before the catalog: nothing is made outside a tree)
        scope = validate_category(category, top=self.state.vault) if category else None
        if not scope or (self.root / scope).is_dir():
            return
        if any(c == scope or c.startswith(scope + "/") for c in self.state.catalog.category_counts()):
            return
        raise NotFound(f"no category {scope!r} in {self.root} (`mem stats` lists the categories)")

    def title_warnings(self, entry: Entry) -> list[str]:
        """A warning when another entry of the category has the entry's title: a title names one subject
        there (scoring.conflicts.title_key), so later writes with it go to the one they are most like."""
        from memstrata.scoring.conflicts import title_key

        key = title_key(entry.title)
        others = [e for e in self.state.catalog.entries(entry.category)
                  if e.category == entry.category and e.id != entry.id and key and title_key(e.title) == key]
        return [f'{o.id} in {entry.category} has this title too ("{o.title}"): a later write with it becomes a '
                f"version of the one it is most like (or a new entry)" for o in others[:3]]

    def category_warnings(self, category: str) -> list[str]:
        count = self.state.catalog.category_counts().get(category, 0)
        limit = self.state.settings.split_threshold
        return [split_warning(category, count, limit)] if split_advised(count, limit, layout.is_adopted(self.root)) else []


_CONTENT_FIELDS = ("body", "title", "tags", "importance", "important", "related", "expires", "category", "agent")


def _same_content(before: Entry, after: Entry) -> bool:
    """Whether an update changes nothing a person wrote (timestamps aside)."""
    return all(getattr(before, f) == getattr(after, f) for f in _CONTENT_FIELDS)
