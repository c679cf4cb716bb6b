"""What one access (a read, a load, a review) does to an entry: dates, count, correlation, tier, weight."""
from __future__ import annotations

from memstrata.scoring import tiers, weight
from memstrata.storage.entry import Entry


def touched(entry: Entry, now, settings, correlation: float | None = None) -> Entry:
    """A copy of `entry` after one access at `now` (optionally with a new context correlation)."""
    after = entry.copy(last_access=now, access_count=entry.access_count + 1)
    if correlation is not None:
        after.context_correlation = weight.clamp_correlation(correlation)
    if after.status == "active":
        after.tier = tiers.tier_for(after, now, settings)
    after.weight = round(weight.compute_weight(after, now), 4)
    return after
