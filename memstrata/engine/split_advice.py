"""When a category gets the advice to split it: a pure rule of its size, the threshold and the tree's kind."""
from __future__ import annotations


def split_advised(count: int, limit: int, adopted: bool) -> bool:
    """Whether a folder of `count` entries gets the split advice: never in an adopted vault, whose
    notes the engine does not move (`mem split` refuses there)."""
    return count > limit and not adopted


def split_warning(category: str, count: int, limit: int) -> str:
    """The advice given when a category grows past split_threshold (writes and stats say the same)."""
    return f"category {category} holds {count} entries (> {limit}); consider `mem split {category} --by year`"
