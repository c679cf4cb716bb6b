"""The service's open trees: warm `Memory` objects per root in an LRU, closed when idle, and the CLI factory."""
from __future__ import annotations

import os
import threading
import time

from memstrata.service.threads import call_local

MAX_OPEN_ROOTS = 8      # trees held open at once; the least recently used idle one is closed past it
MAX_IDLE_PER_ROOT = 2   # warm instances kept per tree (a second concurrent call gets a second one)


class _Open:
    """One open tree: its idle instances, the calls using it, when it was last used."""

    def __init__(self, root: str):
        self.root = root
        self.idle: list = []        # (memory, config stamp)
        self.busy = 0
        self.last_used = time.monotonic()
        self.opened = time.time()
        self.calls = 0
        self.entries: int | None = None


class MemoryPool:
    """Warm `Memory` objects per root, each used by one call at a time.

    A call gets an idle instance of its root (its vector index, frame cache, catalog and
    watcher stay loaded between calls) or a new one when all are busy; at the end of the
    call the instance goes back to the pool. An instance whose config.md changed meanwhile
    reloads its settings. A root nobody used for its idle time, or the least recently used
    one past `max_roots`, is closed: its instances release their watcher, catalog and table.
    """

    def __init__(self, max_idle: int = MAX_IDLE_PER_ROOT, max_roots: int = MAX_OPEN_ROOTS):
        self._open: dict[str, _Open] = {}
        self._lock = threading.Lock()
        self.max_idle = max_idle
        self.max_roots = max_roots
        self.created = 0
        self.closed = 0

    @staticmethod
    def _config_stamp(root) -> tuple:
        try:
            st = os.stat(os.path.join(root, "config.md"))
            return st.st_size, st.st_mtime_ns
        except OSError:
            return None, None

    def checkout(self, root=None, touch: bool = True, call: bool = True):
        """An instance of the root for this thread's call; `touch` False for background work
        (index upkeep, the sync timer), which does not keep a root open; `call` False for work
        that keeps it open but is not a caller's call (opening it)."""
        from memstrata.storage.tree import resolve_root

        key = str(resolve_root(root))
        held = getattr(call_local, "memories", None)
        if held is not None and key in held:
            return held[key][0]
        with self._lock:
            record = self._open.get(key)
            if record is None:
                record = self._open[key] = _Open(key)
            record.busy += 1
            if touch:
                record.last_used = time.monotonic()
            item = record.idle.pop() if record.idle else None
        evicted = self._evict()
        if item is None:
            from memstrata.memory import Memory

            memory = Memory(key)
            self.created += 1
        else:
            memory, stamp = item
            if stamp != self._config_stamp(key):
                memory.state.use_settings(None)
        if held is not None:
            held[key] = (memory, touch, call)
        _close_all(evicted)
        return memory

    def checkin_all(self) -> None:
        held = getattr(call_local, "memories", None) or {}
        spare = []
        for key, (memory, touch, call) in held.items():
            count = _entry_count(memory)
            with self._lock:
                record = self._open.get(key)
                if record is None:  # closed while in use (stop): reopened by this call
                    record = self._open[key] = _Open(key)
                    record.busy = 1
                record.busy = max(0, record.busy - 1)
                if touch:
                    record.last_used = time.monotonic()
                    record.calls += call
                if count is not None:
                    record.entries = count
                if len(record.idle) < self.max_idle:
                    record.idle.append((memory, self._config_stamp(key)))
                else:
                    spare.append(memory)
        call_local.memories = None
        _close_all(spare)

    def _evict(self) -> list:
        """Close the least recently used idle roots past max_roots; their instances to close."""
        out = []
        with self._lock:
            while len(self._open) > self.max_roots:
                idle = [r for r in self._open.values() if r.busy == 0]
                if not idle:
                    break
                victim = min(idle, key=lambda r: r.last_used)
                del self._open[victim.root]
                out += [m for m, _ in victim.idle]
                self.closed += 1
        return out

    def close_idle(self, idle_seconds_of) -> list[str]:
        """Close every root unused for longer than `idle_seconds_of(root)` (None: never); the closed roots."""
        now = time.monotonic()
        with self._lock:
            candidates = [(r.root, now - r.last_used) for r in self._open.values() if r.busy == 0]
        due = []
        for root, idle_for in candidates:
            limit = idle_seconds_of(root)
            if limit is not None and idle_for > limit:
                due.append(root)
        closed = []
        for root in due:
            instances = self.close(root, only_if_idle_since=now)
            if instances is not None:
                closed.append(root)
        return closed

    def close(self, root: str, only_if_idle_since: float | None = None) -> list | None:
        """Close one root now (its idle instances); None if it was not open, or used meanwhile."""
        with self._lock:
            record = self._open.get(root)
            if record is None or record.busy:
                return None
            if only_if_idle_since is not None and record.last_used > only_if_idle_since:
                return None
            del self._open[root]
            self.closed += 1
            instances = [m for m, _ in record.idle]
        _close_all(instances)
        return instances

    def roots(self) -> list[dict]:
        """The open roots, most recently used first: path, idle seconds, calls, instances, entries."""
        now = time.monotonic()
        with self._lock:
            records = sorted(self._open.values(), key=lambda r: r.last_used, reverse=True)
            return [{"root": r.root, "idle_s": round(now - r.last_used, 1), "calls": r.calls, "busy": r.busy,
                     "instances": len(r.idle) + r.busy, "entries": r.entries} for r in records]

    def is_open(self, root: str) -> bool:
        with self._lock:
            return root in self._open

    def size(self) -> int:
        with self._lock:
            return sum(len(r.idle) for r in self._open.values())


def _entry_count(memory) -> int | None:
    """The entries of a tree, from its catalog if this instance opened it (no new work)."""
    catalog = getattr(memory.state, "_catalog", None)
    if catalog is None:
        return None
    try:
        return catalog.count()
    except Exception:  # noqa: BLE001 - a count for the status only
        return None


def _close_all(memories) -> None:
    for memory in memories:
        try:
            memory.state.close()
        except Exception:  # noqa: BLE001 - closing is best effort; the objects go away anyway
            pass


POOL = MemoryPool()


def install_memory_factory() -> None:
    """Make the CLI's `memory(root)` hand out pooled instances inside the calls this process runs."""
    from memstrata.cli import output

    def pooled(root=None):
        if getattr(call_local, "memories", None) is None:
            from memstrata.memory import Memory

            return Memory(root)
        return POOL.checkout(root)

    output.set_memory_factory(pooled)
