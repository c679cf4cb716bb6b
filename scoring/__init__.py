"""Pure decisions: weights, tiers, lifecycle, promotion, review, conflicts; no IO."""
