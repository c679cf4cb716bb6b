"""Whether a text repeats what an entry said before its current version: a decision over term sets."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

# A text repeats a replaced version when it holds at least half of what that version said and the
# current one no longer says (at least two such terms when there are two), more of it than of what
# the current version added, and at least half of the old version's terms overall (so a turn that
# shares one dropped word, "dark" of "dark mode", but is about something else is left alone).
DROPPED_MIN_SHARE = 0.5
DROPPED_MIN_TERMS = 2
OLD_MIN_SHARE = 0.5


@dataclass(frozen=True)
class Replaced:
    """One kept version of an entry, by the terms that set it apart from the entry's current text."""

    entry_id: str
    version: int
    old: frozenset       # every term of the old version
    dropped: frozenset   # terms of the old version the current one no longer holds
    added: frozenset     # terms of the current version the old one did not hold


def replaced(entry_id: str, version: int, old_terms: Iterable[str], current_terms: Iterable[str]) -> Replaced | None:
    """The Replaced record of an old version, or None when the current text still holds all it said
    (a version that only added detail replaced nothing)."""
    old, current = frozenset(old_terms), frozenset(current_terms)
    dropped = old - current
    if not dropped:
        return None
    return Replaced(entry_id, int(version), old, dropped, current - old)


def repeats(text_terms: Iterable[str], version: Replaced) -> bool:
    """Whether a text (by its terms) repeats `version`'s replaced fact rather than the current one."""
    terms = text_terms if isinstance(text_terms, (set, frozenset)) else set(text_terms)
    held = len(version.dropped & terms)
    if held < min(DROPPED_MIN_TERMS, len(version.dropped)):
        return False
    share = held / len(version.dropped)
    if share < DROPPED_MIN_SHARE:
        return False
    if len(version.old & terms) < OLD_MIN_SHARE * len(version.old):
        return False
    added = len(version.added & terms) / len(version.added) if version.added else 0.0
    return share > added


def repeated(text_terms: Iterable[str], versions: Iterable[Replaced], own_id: str | None = None) -> Replaced | None:
    """The first replaced version a text repeats (never one of the text's own entry), or None."""
    terms = frozenset(text_terms)
    for version in versions:
        if version.entry_id != own_id and repeats(terms, version):
            return version
    return None
