"""Frontmatter text <-> YAML mapping: split a file, load its block within limits, dump one; what a value may be.

An entry file is untrusted input (made by hand, by git, by another tool): a block is read with
the safe loader and refused (CorruptEntry) past the size, nesting and alias-expansion limits.
"""
from __future__ import annotations

import re
from datetime import date, datetime

import yaml

from memstrata.storage.errors import CorruptEntry

FRONTMATTER_DELIMITER = "---"
# The line that closes a frontmatter block ("---" or "...", trailing whitespace allowed).
_CLOSING_LINE = re.compile(r"^(?:---|\.\.\.)[^\S\n]*$", re.MULTILINE)
# Limits on what one frontmatter block may cost to read (a hand-made file is untrusted input).
MAX_FRONTMATTER_BYTES = 256 * 1024
MAX_FRONTMATTER_DEPTH = 32       # nested mappings/lists (the engine writes 2-3)
MAX_FRONTMATTER_NODES = 100_000  # values once aliases are expanded


# libyaml's C parser and emitter when PyYAML has them: parsing is the cost of every read.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SafeDumperBase = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


# Top-level keys whose scalars are ids (the engine's `id:`, a vault's `mem-id:`, `related:` links):
# read as the text written. YAML 1.1 reads `031170406351` as the octal number 3387034857, `1_000` as
# 1000, `0x1f` as 31, `1.50` as 1.5 and `yes` as true; an id is a name, never a number (`null`,
# `~` and an empty value stay no id).
ID_KEYS = ("id", "mem-id", "related")
_STR_TAG = "tag:yaml.org,2002:str"
_NOT_TEXT = {f"tag:yaml.org,2002:{kind}" for kind in ("int", "float", "bool", "timestamp")}


class _Loader(_SafeLoader):
    """The safe loader, with a date YAML cannot build (`0000-00-00`, `2024-02-30`) read as the text it
    is, and the scalars of ID_KEYS read as the text written."""

    def construct_document(self, node):
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value in ID_KEYS:
                    for scalar in (value.value if isinstance(value, yaml.SequenceNode) else [value]):
                        if isinstance(scalar, yaml.ScalarNode) and scalar.tag in _NOT_TEXT:
                            scalar.tag = _STR_TAG
        return super().construct_document(node)


def _lenient_timestamp(loader, node):
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_timestamp(loader, node)
    except (ValueError, OverflowError):  # one odd date must not make the whole note unreadable
        return loader.construct_scalar(node)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _lenient_timestamp)


class EntryDumper(_SafeDumperBase):
    """The YAML dumper of the tree's frontmatter (its strings and block mappings as the tree writes them)."""


def _str_presenter(dumper, data):
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


EntryDumper.add_representer(str, _str_presenter)


class _BlockMapping(dict):
    """A mapping always written in block style (one `key: value` line each), whatever it holds."""


EntryDumper.add_representer(_BlockMapping, lambda dumper, data: dumper.represent_mapping(
    "tag:yaml.org,2002:map", data.items(), flow_style=False))


def split_frontmatter(text: str) -> tuple[dict, str]:
    """Split a Markdown file into (frontmatter dict, body). No frontmatter gives ({}, text).

    CorruptEntry for malformed YAML, a block over MAX_FRONTMATTER_BYTES, or one whose
    aliases or nesting go past the limits (see check_frontmatter_limits).
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith(FRONTMATTER_DELIMITER):
        return {}, text
    first_end = text.find("\n")
    if (text if first_end < 0 else text[:first_end]).strip() != FRONTMATTER_DELIMITER:
        return {}, text
    close = _CLOSING_LINE.search(text, first_end + 1) if first_end >= 0 else None
    if close is None:
        raise CorruptEntry("frontmatter opened with '---' but never closed")
    raw = text[first_end + 1:max(first_end + 1, close.start() - 1)]
    body = text[close.end() + 1:]
    if body.startswith("\n"):
        body = body[1:]
    elif body.startswith("\r\n"):  # the blank line after the block, in a CRLF file
        body = body[2:]
    return _load_yaml(raw), body


def _load_yaml(raw: str) -> dict:
    """The frontmatter mapping of a YAML block, within the limits (CorruptEntry otherwise)."""
    if len(raw) > MAX_FRONTMATTER_BYTES // 4 and len(raw.encode("utf-8", "surrogatepass")) > MAX_FRONTMATTER_BYTES:
        raise CorruptEntry(f"frontmatter is larger than {MAX_FRONTMATTER_BYTES // 1024} KB")
    try:
        data = yaml.load(raw, Loader=_Loader) if raw.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise CorruptEntry(f"malformed YAML frontmatter{where}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise CorruptEntry("frontmatter is not a mapping of keys to values")
    if "&" in raw:  # an anchor: aliases may repeat (or contain) it, count the values they expand to
        check_frontmatter_limits(data)
    else:  # nothing is shared: the size is bounded by the block's, only the depth needs a look
        _check_depth_only(data)
    problem = value_problem(data) if "\\" in raw else None  # an escape such as "\\0" in a quoted string
    if problem:
        raise CorruptEntry(f"frontmatter value {problem}")
    return data


def check_frontmatter_limits(data) -> None:
    """CorruptEntry when a loaded value is cyclic, nests deeper than MAX_FRONTMATTER_DEPTH, or,
    with its aliases expanded, holds more than MAX_FRONTMATTER_NODES values (a "billion laughs")."""
    sizes: dict[int, int] = {}
    _expanded_size(data, 0, sizes, set())


def _expanded_size(value, depth: int, sizes: dict, open_ids: set) -> int:
    if not isinstance(value, (dict, list)):
        return 1
    key = id(value)
    if key in sizes:
        return sizes[key]  # an alias of a value already measured: counted again, not walked again
    if key in open_ids:
        raise CorruptEntry("frontmatter refers to itself (a YAML alias inside its own anchor)")
    if depth >= MAX_FRONTMATTER_DEPTH:
        raise CorruptEntry(f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels")
    open_ids.add(key)
    children = value.values() if isinstance(value, dict) else value
    total = 1 + sum(_expanded_size(child, depth + 1, sizes, open_ids) for child in children)
    open_ids.discard(key)
    if total > MAX_FRONTMATTER_NODES:
        raise CorruptEntry(f"frontmatter expands to more than {MAX_FRONTMATTER_NODES} values (YAML aliases?)")
    sizes[key] = total
    return total


def _check_depth_only(data) -> None:
    """The nesting limit alone (no anchors: nothing is shared, sizes are bounded by the block size)."""
    level, depth = [v for v in data.values() if isinstance(v, (dict, list))], 1
    while level:
        depth += 1
        if depth > MAX_FRONTMATTER_DEPTH:
            raise CorruptEntry(f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels")
        level = [c for v in level for c in (v.values() if isinstance(v, dict) else v) if isinstance(c, (dict, list))]


# Characters no entry file may hold: NUL (the file would read as binary) and lone surrogates (not UTF-8).
BAD_CHARS = re.compile("[\x00\ud800-\udfff]")
# Values YAML safe_dump writes (and the codec reads back); containers are walked.
_LEAF_TYPES = (str, bool, int, float, type(None), bytes, datetime, date)
_CONTAINERS = (dict, list, tuple, set, frozenset)


def value_problem(value, depth: int = 0) -> str | None:
    """Why `value` cannot be written to an entry file (a NUL or lone surrogate in a string,
    a type YAML safe_dump cannot write, nesting past MAX_FRONTMATTER_DEPTH), None when it can."""
    if isinstance(value, str):
        bad = BAD_CHARS.search(value)
        return None if bad is None else ("holds a NUL character" if bad.group() == "\x00"
                                          else f"holds a lone surrogate (U+{ord(bad.group()):04X})")
    if not isinstance(value, _CONTAINERS):
        return None if type(value) in _LEAF_TYPES else f"holds a {type(value).__name__}, which YAML cannot store"
    if depth >= MAX_FRONTMATTER_DEPTH:
        return f"nests deeper than {MAX_FRONTMATTER_DEPTH} levels"
    items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    for key, item in items:
        problem = (value_problem(str(key), depth + 1) if key is not None else None) or value_problem(item, depth + 1)
        if problem:
            return problem
    return None


def scalar_yaml(value) -> str:
    """One value as a YAML scalar: plain where YAML reads it back as it is, quoted where it would
    read as another type (`'031170406351'`, `'yes'`): what a hand-written `key: value` line holds."""
    return yaml.dump(value, Dumper=EntryDumper, allow_unicode=True, width=100000).split("\n...")[0].rstrip("\n")


def dump_yaml(mapping: dict) -> str:
    """A frontmatter mapping as the YAML lines entry files hold (keys in the given order)."""
    return yaml.dump(_BlockMapping(mapping), Dumper=EntryDumper, allow_unicode=True, sort_keys=False,
                     default_flow_style=None, width=100000)
