"""What accesses (a read, a load, a review) do to an entry: dates, count, correlation, tier, weight."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memstrata.scoring import tiers, weight
from memstrata.storage.entry import Entry


@dataclass
class Access:
    """Accesses of one entry not yet in its file: the last one, how many, the last correlation given."""

    last: datetime
    count: int = 0
    correlation: float | None = None

    def seen(self, entry: Entry) -> Entry:
        """`entry` with these accesses counted (dates and count only: what a read shows)."""
        last = max(self.last, entry.last_access) if entry.last_access else self.last
        out = entry.copy(last_access=last, access_count=entry.access_count + self.count)
        if self.correlation is not None:
            out.context_correlation = weight.clamp_correlation(self.correlation)
        return out


def folded(entry: Entry, access: Access, now, settings) -> Entry:
    """`entry` as `mem maintain` writes it once its journaled accesses are folded in."""
    after = access.seen(entry)
    if after.status == "active":
        after.tier = tiers.tier_for(after, now, settings)
    after.weight = round(weight.compute_weight(after, now), 4)
    return after


def touched(entry: Entry, now, settings, correlation: float | None = None) -> Entry:
    """A copy of `entry` after one access at `now` (optionally with a new context correlation)."""
    after = entry.copy(last_access=now, access_count=entry.access_count + 1)
    if correlation is not None:
        after.context_correlation = weight.clamp_correlation(correlation)
    if after.status == "active":
        after.tier = tiers.tier_for(after, now, settings)
    after.weight = round(weight.compute_weight(after, now), 4)
    return after
