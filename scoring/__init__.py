"""Pure decisions: weights, tiers, lifecycle, promotion, review, conflicts; no IO."""
from memstrata.scoring.conflicts import WriteDecision, classify_write, normalise_text
from memstrata.scoring.lifecycle import Action, plan, trash_purge_due
from memstrata.scoring.promotion import (
    Promotion,
    correlation_from_similarity,
    promotion_changes,
    select,
)
from memstrata.scoring.review import REVIEW_INTERVALS, due, mark_review, stats
from memstrata.scoring.tiers import layer_for_tier, tier_for
from memstrata.scoring.weight import (
    clamp_correlation,
    compute_weight,
    importance_factor,
)

__all__ = [
    "Action", "Promotion", "REVIEW_INTERVALS", "WriteDecision", "clamp_correlation", "classify_write",
    "compute_weight", "correlation_from_similarity", "due", "importance_factor", "layer_for_tier",
    "mark_review", "normalise_text", "plan", "promotion_changes", "select", "stats", "tier_for",
    "trash_purge_due",
]
