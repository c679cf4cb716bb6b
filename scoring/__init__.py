"""Pure decisions: weights, tiers, lifecycle, promotion, review, conflicts; no IO."""
# The names below load their module on first use (PEP 562): importing one rule (`scoring.weight`)
# no longer loads every other (a cold session start pays for each module it imports).
from __future__ import annotations

import importlib

_WHERE = {
    "WriteDecision": "conflicts", "classify_write": "conflicts", "normalise_text": "conflicts",
    "Action": "lifecycle", "plan": "lifecycle", "trash_purge_due": "lifecycle",
    "Promotion": "promotion", "correlation_from_similarity": "promotion", "promotion_changes": "promotion",
    "select": "promotion",
    "REVIEW_INTERVALS": "review", "due": "review", "mark_review": "review", "stats": "review",
    "layer_for_tier": "tiers", "tier_for": "tiers",
    "clamp_correlation": "weight", "compute_weight": "weight", "importance_factor": "weight",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
