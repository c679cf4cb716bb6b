"""Whether a text repeats what an entry said before its current version: a decision over term sets."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

# A text repeats a replaced version when it holds at least half of what that version said and the
# current one no longer says (at least two such terms when there are two), more of it than of what
# the current version added, and at least half of the old version's terms overall, and when it says
# one of those dropped terms in the old version's own words (a word 3-gram, or a CJK character
# 3-gram, of the old text holding it): "Lena will call the account manager this week" shares lena,
# call and week with "Lena is on call this week" but no 3-gram, so it is no repeat.
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
    context: frozenset   # the old version's 3-grams that hold a dropped term


def replaced(entry_id: str, version: int, old_terms: Iterable[str], current_terms: Iterable[str],
             old_grams: Iterable[tuple] = (), refinement: bool = False) -> Replaced | None:
    """The Replaced record of an old version, or None when the current text still holds all it said,
    says nothing it did not (a fact moved to another note, or cut), or is a `refinement` of it
    (scoring.conflicts.refines: it keeps the old words and adds to them)."""
    old, current = frozenset(old_terms), frozenset(current_terms)
    dropped, added = old - current, current - old
    if not dropped or not added or refinement:
        return None  # said more, or only less (its facts may live in another note now): no change of mind
    context = frozenset(g for g in old_grams if any(part in dropped for part in g[1]))
    return Replaced(entry_id, int(version), old, dropped, added, context)


def repeats(text_terms: Iterable[str], version: Replaced, text_grams: Iterable[tuple] = ()) -> bool:
    """Whether a text (by its terms and 3-grams) repeats `version`'s replaced fact rather than the current one."""
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
    if share <= added:
        return False
    grams = text_grams if isinstance(text_grams, (set, frozenset)) else set(text_grams)
    return not version.context or bool(version.context & grams)


def repeated(text_terms: Iterable[str], versions: Iterable[Replaced], own_id: str | None = None,
             text_grams: Iterable[tuple] = ()) -> Replaced | None:
    """The first replaced version a text repeats (never one of the text's own entry), or None."""
    terms, grams = frozenset(text_terms), frozenset(text_grams)
    for version in versions:
        if version.entry_id != own_id and repeats(terms, version, grams):
            return version
    return None
