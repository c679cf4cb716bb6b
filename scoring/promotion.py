"""Dynamic promotion: which cold/archive entries similar to the current task come back to hot."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

from memstrata.scoring.tiers import tier_for
from memstrata.scoring.weight import clamp_correlation, compute_weight, is_high
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry
from memstrata.storage.turns import is_session

DEFAULT_LAYERS = frozenset({"cold", "archive"})


@dataclass(frozen=True)
class Promotion:
    """One entry to bring back to hot.

    Apply with `promotion_changes`: tier hot, status active, last_access now (what makes it
    hot), context_correlation = new_correlation, weight = new_weight. The use count is left
    alone: a promotion is the engine's guess that the task needs the entry, not a use of it
    (docs/aging.md), so a wrong guess fades like any unused note. The layer is left alone
    (decompressing is a separate, explicit step).
    """

    entry_id: str
    similarity: float
    from_tier: str
    new_correlation: float
    new_weight: float


def correlation_from_similarity(sim: float, threshold: float) -> float:
    """Map a similarity onto the 0.5-1.5 context correlation, piecewise linear.

    sim (clamped to 0-1) at the threshold -> 1.0, sim 1.0 -> 1.5, sim 0 -> 0.5, linear in
    between on each side. Negative similarities count as 0.
    """
    s = min(1.0, max(0.0, float(sim)))
    t = min(1.0, max(0.0, float(threshold)))
    if s >= t:
        if t >= 1.0:
            return 1.5
        return 1.0 + 0.5 * (s - t) / (1.0 - t)
    return 0.5 + 0.5 * s / t  # here t > s >= 0, so t > 0


def current_tier(entry: Entry, now: datetime, settings: Settings) -> str:
    """The tier an entry is in now: archive for archived entries, else by age, but never archive for
    an active one (only maintain archives, and it counts days in use: old by the calendar is cold)."""
    if entry.status == "archived":
        return "archive"
    tier = tier_for(entry, now, settings)
    return "cold" if tier == "archive" else tier


def select(candidates: Iterable[tuple[Entry, float]], now: datetime, settings: Settings,
           threshold: float | None = None, layers: set[str] | None = None,
           max_count: int | None = None, keep_important: bool | None = None,
           relevance: dict[str, float] | None = None) -> list[Promotion]:
    """Promotions for (entry, similarity-to-task) candidates, most similar first, at most max_count.

    Only entries whose current tier is in `layers` (default cold, archive), never expired ones nor
    captured sessions (their turns are recalled in any tier; brought back whole, a session would be
    injected whole, and a prompt asked again matches its own earlier turns before any note);
    with keep_important, important and high (importance >= 0.7) entries keep their tier. An entry
    listed more than once (several chunks) counts with its best similarity.

    The rule (calibrated on realistic tasks, bench/promotion_tasks.py; docs/hooks.md): every
    candidate at least promote_threshold similar; the most similar candidate when it is at least
    promote_best_cosine similar (the task is about it more than about any other memory); and the
    candidate recall ranks as the likeliest answer (`relevance`: its calibrated relevance, by id)
    when that relevance is at least promote_min_relevance. With an explicit `threshold`, every
    candidate at least that similar and nothing else (`mem promote --threshold`). None arguments
    take the settings' values (promote_threshold, promote_max, promote_keep_important).
    """
    explicit = threshold is not None
    threshold = settings.promote_threshold if threshold is None else threshold
    layers = DEFAULT_LAYERS if layers is None else set(layers)
    max_count = settings.promote_max if max_count is None else max_count
    keep_important = settings.promote_keep_important if keep_important is None else keep_important
    if max_count <= 0:
        return []

    best: dict[str, tuple[Entry, float]] = {}
    for entry, sim in candidates:
        if sim is None or is_session(entry):
            continue
        sim = float(sim)
        if entry.id not in best or sim > best[entry.id][1]:
            best[entry.id] = (entry, sim)
    tiers = {i: current_tier(e, now, settings) for i, (e, _) in best.items() if e.status != "expired"}
    eligible = {i: pair for i, pair in best.items() if tiers.get(i) in layers}

    chosen = {i for i, (_, sim) in eligible.items() if sim >= threshold}
    floor = threshold
    if not explicit and eligible:
        floor = min(threshold, settings.promote_best_cosine)
        top = max(eligible, key=lambda i: (eligible[i][1], i))
        if eligible[top][1] >= settings.promote_best_cosine:
            chosen.add(top)
        judged = [i for i in eligible if (relevance or {}).get(i) is not None]
        if judged:
            likeliest = max(judged, key=lambda i: (relevance[i], i))
            if relevance[likeliest] >= settings.promote_min_relevance:
                chosen.add(likeliest)

    picked: list[Promotion] = []
    for entry_id in chosen:
        entry, sim = eligible[entry_id]
        if keep_important and is_high(entry):
            continue
        corr = correlation_from_similarity(sim, floor)
        promoted = entry.copy(last_access=now)
        weight = compute_weight(promoted, now, corr)
        picked.append(Promotion(entry.id, sim, tiers[entry_id], corr, weight))
    picked.sort(key=lambda p: (-p.similarity, p.entry_id))
    return picked[:max_count]


def for_use(entry: Entry, now: datetime, settings: Settings) -> Promotion | None:
    """The promotion a use brings to a cold, archived or compressed entry (an agent's reply used it:
    scoring.reply_use): hot, whole. None for one that needs none (hot or warm and whole, expired, a
    captured session). Its context correlation stays what it was: the use says the entry was needed,
    not how closely."""
    if entry.status == "expired" or is_session(entry):
        return None
    tier = current_tier(entry, now, settings)
    if tier not in DEFAULT_LAYERS and not entry.is_compressed:
        return None
    corr = clamp_correlation(entry.context_correlation)
    used = entry.copy(last_access=now, access_count=entry.access_count + 1)
    return Promotion(entry.id, 1.0, tier, corr, compute_weight(used, now, corr))


def promotion_changes(promotion: Promotion, entry: Entry, now: datetime) -> dict:
    """The Entry field changes that apply a promotion (see Promotion)."""
    return {
        "tier": "hot",
        "status": "active",
        "last_access": now,
        "context_correlation": promotion.new_correlation,
        "weight": promotion.new_weight,
    }
