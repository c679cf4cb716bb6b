"""Editing the keys of a flow-style frontmatter block (`{title: x, tags: [a]}`, JSON) in place."""
from __future__ import annotations

import yaml

from memstrata.storage.frontmatter_yaml import EntryDumper


def is_flow(block: str) -> bool:
    """Whether the block is one flow mapping (a line-per-key edit would break it)."""
    return block.lstrip().startswith("{")


def flow_edited(block: str, sets: dict, drops: list[tuple[str, ...]]) -> str | None:
    """`block` with each key of `sets` set to its value (added after the last pair when absent) and
    the first present spelling of each of `drops` removed, every other byte kept; None when the
    block is not one flow mapping of plain keys. Adding then dropping a key gives the block back."""
    for spellings in drops:
        block = _drop(block, spellings)
        if block is None:
            return None
    for key, value in sets.items():
        block = _set(block, key, value)
        if block is None:
            return None
    return block


def _mapping(block: str):
    try:
        node = yaml.compose(block, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    ok = isinstance(node, yaml.MappingNode) and node.flow_style and \
        all(isinstance(k, yaml.ScalarNode) for k, _ in node.value)
    return node if ok else None


def _pair_text(key: str, value) -> str:
    dumped = yaml.dump({key: value}, Dumper=EntryDumper, default_flow_style=True, width=100000,
                       allow_unicode=True, sort_keys=False).strip()
    return dumped[1:-1]  # `key: value` without the braces


def _set(block: str, key: str, value) -> str | None:
    node = _mapping(block)
    if node is None:
        return None
    for k, v in node.value:
        if k.value == key:  # the value only: the key keeps its spelling and quotes
            new_value = _pair_text(key, value).split(": ", 1)[1]
            return block[:v.start_mark.index] + new_value + block[v.end_mark.index:]
    if node.value:
        at = node.value[-1][1].end_mark.index
        return block[:at] + ", " + _pair_text(key, value) + block[at:]
    at = node.start_mark.index + 1
    return block[:at] + _pair_text(key, value) + block[at:]


def _drop(block: str, spellings: tuple[str, ...]) -> str | None:
    node = _mapping(block)
    if node is None:
        return None
    pairs = node.value
    where = next((i for s in spellings for i, (k, _) in enumerate(pairs) if k.value == s), None)
    if where is None:
        return block
    k, v = pairs[where]
    if where > 0:  # from the end of the pair before: `, key: value` goes (what _set added)
        start, end = pairs[where - 1][1].end_mark.index, v.end_mark.index
    elif len(pairs) > 1:  # the first of several: up to the next key
        start, end = k.start_mark.index, pairs[1][0].start_mark.index
    else:
        start, end = k.start_mark.index, v.end_mark.index
    return block[:start] + block[end:]
