"""Tiers by age (hot/warm/cold/archive) and the compression layer each tier maps to."""
from __future__ import annotations

import math
from datetime import datetime

from memstrata.storage.config import Settings
from memstrata.storage.entry import LAYERS, TIERS, Entry

from memstrata.storage.clock import days_between
from memstrata.storage.errors import InvalidInput

TIER_LAYER = {"hot": "L0", "warm": "L1", "cold": "L2", "archive": "L4"}
LAYER_DEPTH = {layer: i for i, layer in enumerate(LAYERS)}  # L0 0 ... L4 4
TIER_RANK = {tier: i for i, tier in enumerate(TIERS)}       # hot 0 ... archive 3


def days_since_touched(entry: Entry, now: datetime) -> int:
    """Whole days (floor) since entry.last_touched (latest of updated/last_access/created); 0 if undated."""
    stamp = entry.last_touched
    if stamp is None:
        return 0
    return int(math.floor(days_between(stamp, now)))


def tier_for_days(days: int, settings: Settings) -> str:
    """hot up to hot_days, warm up to warm_days, cold up to cold_days, archive beyond (inclusive bounds)."""
    if days <= settings.hot_days:
        return "hot"
    if days <= settings.warm_days:
        return "warm"
    if days <= settings.cold_days:
        return "cold"
    return "archive"


def tier_for(entry: Entry, now: datetime, settings: Settings) -> str:
    """The tier an entry belongs in now; important entries are always hot.

    With the defaults: 0-7 days hot, 8-29 warm, 30-89 cold, 90+ archive, counting whole
    days since the entry was last touched (updated or read).
    """
    if entry.important:
        return "hot"
    return tier_for_days(days_since_touched(entry, now), settings)


def layer_for_tier(tier: str) -> str:
    """hot -> L0 (full), warm -> L1 (key points), cold -> L2 (one line + tags), archive -> L4."""
    try:
        return TIER_LAYER[tier]
    except KeyError:
        raise InvalidInput(f"unknown tier {tier!r}; expected one of {', '.join(TIERS)}") from None


def layer_depth(layer: str) -> int:
    """How compressed a layer is: L0 0 ... L4 4 (unknown layers count as L0)."""
    return LAYER_DEPTH.get(layer, 0)


