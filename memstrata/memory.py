"""The public Python API: `Memory(root)`, the core plus each feature's operations."""
from __future__ import annotations

from memstrata.agents_ops import AgentOps
from memstrata.aging_ops import AgingOps
from memstrata.builtin_ops import BuiltinOps
from memstrata.core import MemoryCore
from memstrata.doctor_ops import DoctorOps
from memstrata.promotion_ops import PromotionOps
from memstrata.recall_ops import RecallOps
from memstrata.split_ops import SplitOps
from memstrata.versions_ops import VersionOps


class Memory(PromotionOps, VersionOps, SplitOps, BuiltinOps, AgentOps, AgingOps, RecallOps, DoctorOps, MemoryCore):
    """A memory tree at `root` (default: $MEMSTRATA_HOME, else ~/memory).

    Each feature lives in its own module as a mixin placed before MemoryCore, so every
    write still goes through the core's one path (_save) and its hooks.

    >>> m = Memory("/tmp/mem"); r = m.write("We chose Postgres", title="DB choice", category="projects/alpha")
    >>> m.read(r.id).title
    'DB choice'
    """
