"""memstrata: a local, offline, persistent memory engine for AI agents."""
from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Memory", "__version__"]


def __getattr__(name):
    # Lazy, so `import memstrata.errors` (and `mem --help`) stay fast.
    if name == "Memory":
        from memstrata.memory import Memory

        return Memory
    raise AttributeError(name)
