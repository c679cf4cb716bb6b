"""The weight formula: importance factor x time decay x ln(accesses + 1) x context correlation."""
from __future__ import annotations

import math
from datetime import datetime

from memstrata.storage.entry import Entry

from memstrata.storage.clock import days_between

# The factors and the decay exponent are the source document's formula, not tunable thresholds.
FACTOR_IMPORTANT = 3.0
FACTOR_HIGH = 3.0
FACTOR_MEDIUM = 1.5
FACTOR_LOW = 0.5
# Where the 0-1 importance scale is cut into the source's words (codec: low 0.2, medium 0.5,
# high 0.8, important 1.0). These bands define the vocabulary mapping, so they live here.
HIGH_AT = 0.7
MEDIUM_AT = 0.4
DECAY_EXPONENT = 0.3
CORRELATION_MIN = 0.5
CORRELATION_MAX = 1.5
CORRELATION_DEFAULT = 1.0


def importance_label(entry: Entry) -> str:
    """The source's word for an entry's importance: important | high | medium | low.

    `important: true` -> "important"; otherwise the 0-1 importance is banded:
    >= 0.7 "high", >= 0.4 "medium", below that "low".
    """
    if entry.important:
        return "important"
    value = _finite(entry.importance, 0.5)
    if value >= HIGH_AT:
        return "high"
    if value >= MEDIUM_AT:
        return "medium"
    return "low"


def is_high(entry: Entry) -> bool:
    """True for important entries and for importance >= 0.7 (the source's high/important)."""
    return importance_label(entry) in ("important", "high")


def importance_factor(entry: Entry) -> float:
    """The formula's importance factor.

    Rule: the `important` flag gives 3.0; otherwise importance (0-1) >= 0.7 is high (3.0),
    >= 0.4 is medium (1.5), anything lower is low (0.5). The source document's words map
    through the codec first (low 0.2 -> 0.5, medium 0.5 -> 1.5, high 0.8 -> 3.0,
    important 1.0 -> 3.0).
    """
    return {
        "important": FACTOR_IMPORTANT,
        "high": FACTOR_HIGH,
        "medium": FACTOR_MEDIUM,
        "low": FACTOR_LOW,
    }[importance_label(entry)]


def clamp_correlation(x) -> float:
    """Context correlation clamped to 0.5-1.5; None or NaN gives the neutral 1.0."""
    value = _finite(x, CORRELATION_DEFAULT)
    return min(CORRELATION_MAX, max(CORRELATION_MIN, value))


def weight_reference_time(entry: Entry) -> datetime | None:
    """The moment the decay counts from: last access, else updated, else created."""
    for stamp in (entry.last_access, entry.updated, entry.created):
        if stamp is not None:
            return stamp
    return None


def weight_days(entry: Entry, now: datetime) -> int:
    """Whole days (floor) since the reference time; 0 when the entry carries no date.

    Whole days keep a stored weight stable within a day (no churn in the Markdown files)
    and match how tiers count days.
    """
    stamp = weight_reference_time(entry)
    if stamp is None:
        return 0
    return int(math.floor(days_between(stamp, now)))


# Reads of one entry counted per machine and UTC day, at most (scoring.access caps the journal with
# it): an agent reads an entry a few times a day; a planted or runaway journal of 1.5 million lines
# raised an entry's weight from 0.52 to 21.3 (issue 27).
MAX_READS_PER_DAY = 50


def credible_count(count, created: datetime | None, now: datetime | None) -> int:
    """An access count as far as it can be believed: at most MAX_READS_PER_DAY for each day since
    the entry was created (its first day included), as the journal counts reads. The engine's own
    counts never reach it; a count that arrived by sync or by a hand edit of the frontmatter
    (`access_count: 100000000`) is held to it, so it cannot lead every session start."""
    value = max(0, int(_finite(count, 0.0)))
    if now is None:
        return value
    days = int(math.floor(days_between(created, now))) if created is not None else 0
    return min(value, MAX_READS_PER_DAY * (days + 1))


def effective_access_count(entry: Entry, now: datetime | None = None) -> int:
    """access_count, counted as at least 1 (the write is the entry's first access) and, given `now`,
    at most what credible_count believes.

    The formula's ln(access_count + 1) is 0 for a never-read entry, which would give every
    fresh memory weight 0 and make weight useless for ranking new entries. The engine
    therefore treats writing an entry as its first access: a never-read entry weighs
    the same as one read once.
    """
    return max(1, credible_count(entry.access_count or 0, entry.created, now))


def compute_weight(entry: Entry, now: datetime, context_correlation=None) -> float:
    """W = factor x 1/(days+1)^0.3 x ln(max(access_count, 1) + 1) x clamp(correlation, 0.5, 1.5).

    access_count as credible_count believes it (at most MAX_READS_PER_DAY per day since created);
    days: whole days since last access (else updated, else created); correlation: the
    argument when given, else the entry's own `context_correlation`.
    """
    factor = importance_factor(entry)
    days = weight_days(entry, now)
    decay = 1.0 / (days + 1) ** DECAY_EXPONENT
    accesses = math.log(effective_access_count(entry, now) + 1)
    corr = clamp_correlation(entry.context_correlation if context_correlation is None else context_correlation)
    return factor * decay * accesses * corr


def _finite(x, default: float) -> float:
    if x is None or isinstance(x, bool):
        return default
    try:
        value = float(x)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(value) or math.isinf(value) else value
