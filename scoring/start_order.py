"""The order of the session-start block: weight with a bonus for what was written lately (pure)."""
# The source document's weight, W = importance x 1/(days+1)^0.3 x ln(uses+1) x correlation, stays what
# `mem weight` shows and what is stored. The block multiplies it by a bonus for a recent write:
#
#     start_score = W x (1 + B x 0.5^(days since written / H))
#
# `written` is the later of `created` and `updated`; B is `autoload_written_boost` (2.0) and H
# `autoload_written_half_life_days` (7). A note written today weighs three times its weight, one written
# a week ago twice, one written a month ago 1.1 times: what was written this week comes before what was
# only shown often. (Showing is no use at all: an injection never counts, docs/aging.md.)
#
# `in_order` gives entries in that order while reading a tree's entries only as far as it must: entries
# come latest touched first, and no entry touched d days ago can score more than `bound(d)`. The few
# `strong` entries (important, high importance, a correlation raised by a promotion) are given first,
# so the bound of the rest counts a medium importance and a neutral correlation: three times tighter.
from __future__ import annotations

import heapq
import math
from datetime import datetime
from typing import Callable, Iterable, Iterator

from memstrata.scoring.weight import (CORRELATION_DEFAULT, CORRELATION_MAX, DECAY_EXPONENT, FACTOR_HIGH, FACTOR_IMPORTANT,
                                      FACTOR_MEDIUM, clamp_correlation, compute_weight, importance_factor)

# The most importance factor x correlation can give: any entry, and one that is not `strong`.
STRENGTH_MAX = max(FACTOR_IMPORTANT, FACTOR_HIGH) * CORRELATION_MAX
STRENGTH_PLAIN = FACTOR_MEDIUM * CORRELATION_DEFAULT
from memstrata.storage.clock import days_between
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry


def written(entry: Entry) -> datetime | None:
    """When the entry's text was last written: the later of created and updated."""
    stamps = [d for d in (entry.created, entry.updated) if d is not None]
    return max(stamps) if stamps else None


def written_bonus(days: float, settings: Settings) -> float:
    """1 + B x 0.5^(days / H): the factor a write `days` ago gives."""
    return 1.0 + settings.autoload_written_boost * 0.5 ** (max(0.0, days) / settings.autoload_written_half_life_days)


def start_score(entry: Entry, now: datetime, settings: Settings) -> float:
    """The entry's weight (scoring.weight, at `now`) times its written bonus (none without a date: 1 + B)."""
    stamp = written(entry)
    days = days_between(stamp, now) if stamp is not None else 0.0
    return compute_weight(entry, now) * written_bonus(days, settings)


def _days(entry: Entry, now: datetime) -> float:
    stamp = entry.last_touched
    return days_between(stamp, now) if stamp is not None else 0.0


def strong(entry: Entry) -> bool:
    """Whether the entry's importance factor x correlation can pass STRENGTH_PLAIN: important, high
    importance (scoring.weight.HIGH_AT), or a correlation above the neutral one."""
    return importance_factor(entry) > FACTOR_MEDIUM or clamp_correlation(entry.context_correlation) > CORRELATION_DEFAULT


def bound(days_touched: float, max_uses: int, settings: Settings, strength: float = STRENGTH_MAX) -> float:
    """The highest start_score of an entry last touched (written or used) `days_touched` days ago,
    used at most `max_uses` times, whose importance factor x correlation is at most `strength`: its
    decay counted from the touch (the weight's reference time is never later), its write no later."""
    uses = math.log(max(1, int(max_uses)) + 1)
    decay = 1.0 / (math.floor(max(0.0, days_touched)) + 1) ** DECAY_EXPONENT
    return strength * uses * decay * written_bonus(days_touched, settings)


# The bound is computed apart from the scores it bounds: a relative margin covers their rounding (an
# attacker's review found a bound one ulp under the score of an entry it bounds). Scores are compared
# to 9 significant digits (`score_key`), so equal scores computed two ways are equal, and ties go to
# the latest write (to the second, as dates are kept), then the path: a tie at the bound is given
# without reading on when no entry left can win it (`wins_tie`). Without that, a vault copied in one
# go (every note the same second, no use) read all its 30,000 notes at each session start.
# The margin covers a few ulps of float error and nothing more: at 1e-9 it was as wide as the 9-digit
# rounding itself, so the ceiling rounded one unit above the entries' own scores at about a third of the
# moments of a day (by the digits of the bound), and a cold session start over 300,000 captured turns
# read the 9,000 notes of one second (1.4 s instead of 0.2 s). Only a bound within 1e-12 of a rounding
# boundary still reads on (about one moment in a thousand).
MARGIN = 1e-12


def score_key(score: float) -> float:
    """A score to 9 significant digits: what the order compares."""
    return float(f"{score:.9g}")


def wins_tie(item: tuple, touched: float, path: str) -> bool:
    """Whether a heap item (its written second and path) comes before every entry not read yet, the
    next being last touched in second `touched` with `path`: entries come by the second last touched,
    latest first, then by path, and none was written after it was last touched."""
    written, item_path = -item[1], item[2]
    return written > touched or (written == touched and item_path < path)


def in_order(first: Iterable[Entry], latest_first: Iterable[Entry], now: datetime, settings: Settings,
             max_uses: int, strength: float = STRENGTH_MAX, factor: Callable[[Entry], float] | None = None,
             factor_max: float = 1.0) -> Iterator[tuple[Entry, float]]:
    """(entry, start_score) of the entries of `first` (any order) and `latest_first` (by the second last
    touched, latest first, then by path), highest score first (`score_key`: to 9 significant digits);
    ties by the latest write (to the second), then the path. With `factor`, each
    score is multiplied by factor(entry) (at most `factor_max`), and an entry whose factor is 0 is left
    out (scoring.project_scope.start_factor: the session's project first, other projects out).

    `latest_first` is read only until what is left cannot come first (the entry's `bound` passed, or
    reached with the tie won: `wins_tie`; `max_uses` and `strength` must be at least the use count and importance factor x correlation of
    every entry in it that is not in `first`): a session start over 20,000 entries parses the few
    hundred it needs. `first` holds the entries the order of `latest_first` does not cover: those used
    since the catalog last saw them (the access journal), those with no date, and, with `strength`
    STRENGTH_PLAIN, every `strong` one.
    """
    heap: list = []
    seen: set = set()

    def push(entry: Entry) -> None:
        key = entry.ref
        if key in seen:
            return
        seen.add(key)
        scale = 1.0 if factor is None else factor(entry)
        if scale <= 0:
            return
        score = start_score(entry, now, settings) * scale
        stamp = written(entry)
        heapq.heappush(heap, (-score_key(score), -(math.floor(stamp.timestamp()) if stamp else 0), entry.path or "",
                              len(seen), entry, score))

    for entry in first:
        push(entry)
    for entry in latest_first:
        if entry.ref in seen:
            continue
        ceiling = score_key(bound(_days(entry, now), max_uses, settings, strength) * max(1.0, factor_max)
                            * (1.0 + MARGIN))
        touched = math.floor(entry.last_touched.timestamp()) if entry.last_touched is not None else math.inf
        path = entry.path or ""
        while heap and (-heap[0][0] > ceiling or (-heap[0][0] == ceiling and wins_tie(heap[0], touched, path))):
            item = heapq.heappop(heap)
            yield item[4], item[5]
        push(entry)
    while heap:
        item = heapq.heappop(heap)
        yield item[4], item[5]
