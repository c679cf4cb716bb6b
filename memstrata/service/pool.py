"""The service's pool of warm `Memory` objects per root, and the CLI factory that hands them out."""
from __future__ import annotations

import os
import threading

from memstrata.service.threads import _local


class MemoryPool:
    """Warm `Memory` objects per root, each used by one call at a time.

    A call gets an idle instance of its root (its vector index, frame cache and catalog stay
    loaded between calls) or a new one when all are busy; at the end of the call the
    instance goes back to the pool. An instance whose config.md changed meanwhile reloads
    its settings.
    """

    def __init__(self, max_idle: int = 4):
        self._idle: dict[str, list] = {}
        self._lock = threading.Lock()
        self.max_idle = max_idle
        self.created = 0

    @staticmethod
    def _config_stamp(root) -> tuple:
        try:
            st = os.stat(os.path.join(root, "config.md"))
            return st.st_size, st.st_mtime_ns
        except OSError:
            return None, None

    def checkout(self, root=None):
        from memstrata.storage.tree import resolve_root

        key = str(resolve_root(root))
        held = getattr(_local, "memories", None)
        if held is not None and key in held:
            return held[key][0]
        with self._lock:
            idle = self._idle.get(key) or []
            item = idle.pop() if idle else None
        if item is None:
            from memstrata.memory import Memory

            memory = Memory(key)
            self.created += 1
        else:
            memory, stamp = item
            if stamp != self._config_stamp(key):
                memory.state.use_settings(None)
        if held is not None:
            held[key] = (memory, None)
        return memory

    def checkin_all(self) -> None:
        held = getattr(_local, "memories", None) or {}
        for key, (memory, _) in held.items():
            with self._lock:
                idle = self._idle.setdefault(key, [])
                if len(idle) < self.max_idle:
                    idle.append((memory, self._config_stamp(key)))
        _local.memories = None

    def size(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._idle.values())


POOL = MemoryPool()


def install_memory_factory() -> None:
    """Make the CLI's `memory(root)` hand out pooled instances inside the calls this process runs."""
    from memstrata.cli import output

    def pooled(root=None):
        if getattr(_local, "memories", None) is None:
            from memstrata.memory import Memory

            return Memory(root)
        return POOL.checkout(root)

    output.set_memory_factory(pooled)
