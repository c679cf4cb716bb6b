"""The shared space: a second tree other agents read; sharing entries into it and recalling across it."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from memstrata.engine.entries import Entries
from memstrata.engine.state import TreeState
from memstrata.errors import InvalidInput, MemstrataError, NotFound
from memstrata.features.recall import Recall
from memstrata.features.start_block import SHARED_ENV, foreign_reason, shared_root_of  # noqa: F401 - SHARED_ENV: its name here too
from memstrata.results import WriteResult
from memstrata.storage.lock import LOCK_FILE, TreeLock
from memstrata.storage.tree import is_initialised

AGENT_ENV = "MEMSTRATA_AGENT"


@dataclass
class SharedWriteResult(WriteResult):
    """A write result plus what happened in the shared root (`shared`: its own write result)."""

    shared: dict | None = None

    @classmethod
    def of(cls, result: WriteResult, shared: dict) -> "SharedWriteResult":
        fields = {name: getattr(result, name) for name in WriteResult.__dataclass_fields__}
        return cls(**fields, shared=shared)

    def to_dict(self) -> dict:
        data = super().to_dict()
        if self.shared is not None:
            data["shared"] = self.shared
        return data


class SharedSpace:
    """Each agent has its own root; a shared root (``shared_root`` in config.md, else
    ``$MEMSTRATA_SHARED``) receives a copy of what an agent writes with ``share=True`` (or
    shares later with ``share(ref)``), stamped ``agent: <name>``. The shared root is an
    ordinary memory tree with its own lock; ``recall(..., include_shared=True)`` searches it too.
    """

    def __init__(self, state: TreeState, entries: Entries, recall: Recall, open_memory: Callable):
        self.state = state
        self.entries = entries
        self._recall = recall
        self._open_memory = open_memory  # (root, embedder) -> the Memory of another root
        self._shared = None
        self.root = state.root

    # -- who am I, where is the shared root ---------------------------------------------
    @property
    def agent_name(self) -> str:
        """settings.agent_name, else $MEMSTRATA_AGENT, else the root folder's name."""
        name = None
        try:
            name = self.state.settings.agent_name
        except MemstrataError:
            name = None
        return str(name or os.environ.get(AGENT_ENV) or self.root.name or "agent").strip()

    @property
    def shared_root(self) -> Path | None:
        """The shared root: config.md's shared_root, else $MEMSTRATA_SHARED; None if neither is set."""
        try:
            settings = self.state.settings
        except MemstrataError:
            settings = None
        return shared_root_of(self.root, settings)

    def shared_memory(self):
        """The Memory of the shared root (cached; shares this Memory's loaded model)."""
        root = self.shared_root
        if root is None:
            raise InvalidInput(f"no shared root: set shared_root in config.md (mem config set shared_root PATH) "
                               f"or ${SHARED_ENV}")
        if root == self.root:
            raise InvalidInput("shared_root points at this root itself; give the shared space its own folder")
        cached = self._shared
        if cached is not None and cached.root == root:
            return cached
        self._shared = self._open_memory(root, self.state.loaded_embedder)
        return self._shared

    def writable_shared(self):
        """The shared root's Memory, for a copy into it: refused (InvalidInput) when another user
        owns it or every user can write to it, where that user would read what is shared and could
        plant notes (`foreign_reason`)."""
        shared = self.shared_memory()
        reason = foreign_reason(shared.root)
        if reason:
            raise InvalidInput(f"the shared root {shared.root} is not yours alone ({reason}): nothing is copied "
                               "where another user can read or change it; point shared_root (or "
                               f"${SHARED_ENV}) at a folder of your own")
        return shared

    def for_autoload(self, notes: list[str]):
        """The shared root's Memory for autoload and the hooks, or None. A shared root another user
        owns or anyone can write is left out (with a note) unless the user set shared_from_others."""
        shared = self.shared_or_none()
        if shared is None or self.others_allowed():
            return shared
        reason = foreign_reason(shared.root)
        if reason:
            notes.append(f"the shared root {shared.root} was left out ({reason}): notes another user can write "
                         "are loaded only with `mem config set shared_from_others true`")
            return None
        return shared

    def mine(self, shared, path: str | None) -> bool:
        """Whether a shared entry's file was written by this user (or the user takes others' notes):
        autoload and the hooks never load another user's note unasked."""
        if self.others_allowed():
            return True
        try:
            return os.lstat(Path(shared.root) / str(path)).st_uid == os.getuid()
        except (OSError, TypeError):
            return False

    def others_allowed(self) -> bool:
        """Whether the user takes other users' notes from the shared root (setting shared_from_others)."""
        try:
            return bool(self.state.settings.shared_from_others)
        except MemstrataError:
            return False

    def shared_or_none(self):
        """The shared root's Memory when one is configured and initialised, else None."""
        root = self.shared_root
        if root is None or root == self.root or not is_initialised(root):
            return None
        return self.shared_memory()

    def share(self, ref: str) -> dict:
        """Copy an existing entry of this root into the shared root (again: updates the copy)."""
        entry = self.entries.resolve(ref)
        return self.share_id(entry.id)

    def share_id(self, entry_id: str) -> dict:
        entry = self.entries.resolve(entry_id)
        shared = self.writable_shared()
        agent = self.agent_name
        if not is_initialised(shared.root):
            self._make_shared_tree(shared)
        try:
            existing = shared.resolve(entry.id) if is_initialised(shared.root) else None
        except NotFound:
            existing = None
        if existing is not None:
            if (existing.body, existing.title, existing.tags) == (entry.body, entry.title, entry.tags):
                out = {"id": existing.id, "path": existing.path, "action": "unchanged",
                       "message": f"already shared as {existing.path}"}
            else:
                out = shared.update(existing.id, entry.body, title=entry.title, tags=entry.tags,
                                    importance=entry.importance, important=entry.important, agent=agent).to_dict()
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

    @staticmethod
    def _make_shared_tree(shared) -> None:
        """The shared space is made on purpose the first time something is shared; agents that
        share at the same moment make it once (under the tree lock, taken on the new folder)."""
        shared.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        with TreeLock(shared.root):
            if is_initialised(shared.root):
                return  # another agent made it while this one waited
            if any(p.name != LOCK_FILE for p in shared.root.iterdir()):
                raise InvalidInput(f"the shared root {shared.root} is not a memory tree; "
                                   f"run `mem init --root {shared.root}` to make it one")
            shared.init()

    def shared_result(self, result: WriteResult) -> SharedWriteResult:
        """A write's result after its entry was copied into the shared root."""
        return SharedWriteResult.of(result, self.share_id(result.id))

    # -- recall across the shared root ----------------------------------------------------
    def recall(self, query, k: int = 10, **options):
        """Recall in this root and in the shared root, merged by score; shared hits say so."""
        mine = self._recall.recall(query, k=k, **options)
        if self.shared_root is None:
            mine.notes.append(f"no shared root is set (shared_root in config.md or ${SHARED_ENV})")
            return mine
        shared = self.shared_memory()
        if not is_initialised(shared.root):
            mine.notes.append(f"the shared root {shared.root} holds no memory tree yet")
            return mine
        try:
            theirs = shared.recall(query, k=k, **{**options, "count_access": options.get("count_access", False)})
        except NotFound:
            if not options.get("category"):
                raise
            mine.notes.append(f"the shared root {shared.root} has no category {options['category']!r}")
            return mine
        return _merge_recall(mine, theirs, shared, k)


def _merge_recall(mine, theirs, shared, limit):
    """Merge two recall results by score; hits from the shared root say so (`shared`, `agent`)."""
    seen = {h.id for h in mine.results}
    extra = [_shared_hit(h, shared) for h in theirs.results if h.id not in seen]
    merged = sorted(list(mine.results) + extra, key=lambda h: h.score, reverse=True)
    if isinstance(limit, int) and limit > 0:
        merged = merged[:limit]
    mine.results = merged
    seen_best = [r for r in (mine.best_relevance, theirs.best_relevance) if r is not None]
    mine.best_relevance = max(seen_best) if seen_best else None
    mine.notes.append(f"searched the shared root {shared.root} too")
    return mine


def _shared_hit(hit, shared):
    """A copy of a recall hit that says it came from the shared root and which agent wrote it."""
    from dataclasses import replace

    agent = None
    try:
        meta = shared.catalog.paths_of(hit.id)
        if meta:
            found = shared.catalog.get(meta[0])
            agent = found.agent if found is not None else None
    except Exception:  # noqa: BLE001 - a hit is still a hit without its agent name
        agent = None
    return replace(hit, agent=agent, shared_root=str(shared.root))
