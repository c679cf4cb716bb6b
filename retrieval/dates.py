"""Time in a text: relative dates ("yesterday", "last Friday", "two weeks ago") resolved against the text's own date."""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "a couple of": 2}
_UNITS = {"day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month", "months": "month",
          "year": "year", "years": "year"}
_NUM = r"(\d{1,2}|a couple of|couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(days?|weeks?|months?|years?)"
_DAY_WORDS = {"today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0, "this evening": 0,
              "yesterday": -1, "last night": -1, "tomorrow": 1, "the day before yesterday": -2,
              "the day after tomorrow": 2}
_RELATIVE = re.compile(
    r"\b(?:(the day before yesterday|the day after tomorrow|today|tonight|this (?:morning|afternoon|evening)"
    r"|yesterday|last night|tomorrow)"
    r"|(last|this past|past|this|next|coming) (" + "|".join(WEEKDAYS) + r"|week|weekend|month|year)"
    r"|" + _NUM + r" " + _UNIT + r" ago"
    r"|in " + _NUM + r" " + _UNIT + r")\b", re.I)
# A time stated outright: a month, a weekday, a year, "2023-05-07"
# (names capitalised: "may" is mostly a verb)
_ABSOLUTE = re.compile(r"\b(?:" + "|".join(w.capitalize() for w in MONTHS + WEEKDAYS)
                       + r"|(?:19|20)\d\d|\d{4}-\d\d-\d\d)\b")
# A question about time: "when", "what year / month / day / date / time", "how long", "since when"
_ASKS_TIME = re.compile(r"\b(?:when|how long|what (?:year|month|day|date|time)|which (?:year|month|day|date))\b",
                        re.I)


def _month_shift(d: date, months: int) -> date:
    m = d.month - 1 + months
    return date(d.year + m // 12, m % 12 + 1, 1)


def _shift(d: date, count: int, unit: str) -> tuple[date, str]:
    """d moved by `count` units, with the precision the unit allows (day, month or year)."""
    if unit == "day":
        return d + timedelta(days=count), "day"
    if unit == "week":
        return d + timedelta(weeks=count), "month"
    if unit == "month":
        return _month_shift(d, count), "month"
    return date(d.year + count, 1, 1), "year"


def resolve(text: str, written: date | datetime) -> list[tuple[date, str]]:
    """The dates the relative time expressions of `text` name, read against the day it was written:
    [(date, precision)], precision "day", "month" (a week counts as its month) or "year", in the order
    of the text. "Last Friday" is the latest Friday before that day, "next Friday" the first after it."""
    day = written.astimezone(timezone.utc).date() if isinstance(written, datetime) else written
    out = []
    for m in _RELATIVE.finditer(text or ""):
        word, rel, what, n1, u1, n2, u2 = (g.lower() if g else None for g in m.groups())
        if word:
            out.append((day + timedelta(days=_DAY_WORDS[word]), "day"))
        elif what in WEEKDAYS:
            back = (day.weekday() - WEEKDAYS.index(what)) % 7 or 7
            if rel in ("last", "this past", "past"):
                out.append((day - timedelta(days=back), "day"))
            elif rel in ("next", "coming"):
                out.append((day + timedelta(days=(WEEKDAYS.index(what) - day.weekday()) % 7 or 7), "day"))
            else:  # "this Friday": the one of the current week
                out.append((day + timedelta(days=WEEKDAYS.index(what) - day.weekday()), "day"))
        elif what:
            step = {"last": -1, "this past": -1, "past": -1, "this": 0, "next": 1, "coming": 1}[rel]
            unit = "week" if what == "weekend" else what
            out.append(_shift(day, step, unit))
        else:
            count = int(n1 or n2) if (n1 or n2).isdigit() else _NUMBERS[n1 or n2]
            out.append(_shift(day, -count if n1 else count, _UNITS[u1 or u2]))
    return out


def words(text: str, written: date | datetime | None) -> str:
    """The resolved dates of `text` as words full-text search can match ("7 May 2023", "May 2023",
    "2022"), each once; "" when it has none or no date of its own."""
    if written is None:
        return ""
    out: list[str] = []
    for d, precision in resolve(text, written):
        w = {"day": f"{d.day} {d:%B %Y}", "month": f"{d:%B %Y}", "year": f"{d.year}"}[precision]
        if w not in out:
            out.append(w)
    return " ".join(out)


def states_time(text: str) -> bool:
    """Whether a text says when: a relative time expression, a month, a weekday or a year."""
    return bool(_RELATIVE.search(text or "") or _ABSOLUTE.search(text or ""))


def asks_time(query: str) -> bool:
    """Whether a query asks when something happened or how long it took."""
    return bool(_ASKS_TIME.search(query or ""))
