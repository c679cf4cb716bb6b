"""memstrata: a local, offline, persistent memory engine for AI agents."""
from __future__ import annotations

import os

# LanceDB's native side writes its warnings straight to stderr, dozens of lines per index build
# ("KMeans: more than 10% of clusters are empty" on a small or repetitive table): nothing a user
# can act on, in the middle of a command's output. A LANCEDB_LOG the user sets still wins.
os.environ.setdefault("LANCEDB_LOG", "error")

__version__ = "0.1.0"
__all__ = ["Memory", "__version__"]


def __getattr__(name):
    # Lazy, so `import memstrata.errors` (and `mem --help`) stay fast.
    if name == "Memory":
        from memstrata.memory import Memory

        return Memory
    raise AttributeError(name)
