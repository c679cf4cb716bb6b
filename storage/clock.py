"""The one place that knows what time it is (MEMSTRATA_NOW overrides it)."""
from __future__ import annotations

import os
import threading
from datetime import date, datetime, timedelta, timezone, tzinfo

from memstrata.storage.errors import InvalidInput


MIN_TIMESTAMP = 100_000_000  # 1973-03-03: a smaller number in a date field is no Unix time


def parse_datetime(value) -> datetime:
    """Parse an ISO 8601 date or datetime (or a datetime/date object) into an aware UTC datetime."""
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if not value >= MIN_TIMESTAMP:  # `expires: 1`, `created: 2024`: a count or a year, not seconds since 1970
            raise InvalidInput(f"not a date: {value!r} (a number is a date only as seconds since 1970, from 1973 on)")
        try:
            dt = datetime.fromtimestamp(value, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise InvalidInput(f"not a date: {value!r} (a timestamp out of range)") from None
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith("Z") or text.endswith("z"):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            dt = _parse_loose(text)
    else:
        raise InvalidInput(f"not a date: {value!r}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    try:
        return dt.astimezone(timezone.utc)
    except OverflowError:  # 9999-12-31T23:59:59-23:59, 0001-01-01T00:00:00+14:00: no UTC moment
        raise InvalidInput(f"not a date: {value!r} (out of range once in UTC)") from None


_LOOSE_FORMATS = (
    "%Y/%m/%d %H:%M:%S", "%Y/%m/%d %H:%M", "%Y/%m/%d", "%Y-%m-%d %H:%M", "%Y%m%d",
    "%d.%m.%Y", "%Y.%m.%d", "%d %B %Y", "%B %d, %Y", "%d %b %Y", "%b %d, %Y",
    "%Y年%m月%d日",
)


def _parse_loose(text: str) -> datetime:
    for fmt in _LOOSE_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise InvalidInput(f"not a date: {text!r} (use ISO 8601, e.g. 2026-11-30 or 2026-11-30T09:00:00Z)")


def now() -> datetime:
    """Current time as an aware UTC datetime; MEMSTRATA_NOW (ISO 8601) overrides it."""
    override = os.environ.get("MEMSTRATA_NOW")
    if override:
        moment = parse_datetime(override)
        if not 1970 <= moment.year <= 9000:  # the rules add years (reviews, forgetting) to now
            raise InvalidInput(f"MEMSTRATA_NOW must be a date between the years 1970 and 9000, not {override!r}")
        return moment
    return datetime.now(timezone.utc).replace(microsecond=0)


def format_datetime(dt: datetime | None) -> str | None:
    """Canonical text form written to frontmatter: ISO 8601, UTC, seconds, trailing Z."""
    if dt is None:
        return None
    # isoformat, not strftime("%Y"): glibc writes the year 1 as "1", which reads back as no date
    return parse_datetime(dt).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def days_between(earlier: datetime, later: datetime) -> float:
    """Whole and fractional days from earlier to later (never negative)."""
    return max(0.0, (later - earlier).total_seconds() / 86400.0)


def parse_until(value) -> datetime:
    """The end of a range given by `value`: a date alone (2026-12-01, 20261201, or a date object)
    means the whole day, up to its last microsecond (UTC); anything with a time is that moment."""
    text = value.strip() if isinstance(value, str) else None
    whole_day = (isinstance(value, date) and not isinstance(value, datetime)) or (
        text is not None and (len(text) == 10 and text[4:5] == "-" or len(text) == 8 and text.isdigit()))
    moment = parse_datetime(value)
    if not whole_day or (moment.hour, moment.minute, moment.second, moment.microsecond) != (0, 0, 0, 0):
        return moment
    try:
        return moment + timedelta(days=1) - timedelta(microseconds=1)
    except OverflowError:  # the last day there is
        return datetime.max.replace(tzinfo=timezone.utc)


_zone = threading.local()


def set_local_zone(zone: tzinfo | None) -> None:
    """The local time zone of this thread's call (the warm service sets its caller's); None: this
    process's own (the C library's, from TZ or /etc/localtime, as `astimezone()` reads it)."""
    _zone.value = zone


def to_local(dt: datetime) -> datetime:
    """`dt` in the caller's local time: the day and hour a user reads (daily notes)."""
    zone = getattr(_zone, "value", None)
    return dt.astimezone(zone) if zone is not None else dt.astimezone()
