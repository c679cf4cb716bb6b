"""A note's other names (frontmatter `aliases:`) and `related:` notes, as the index reads them."""
from __future__ import annotations

import re
from pathlib import PurePosixPath

from memstrata.storage import codec
from memstrata.storage.entry import Entry

# The line the aliases take in a note's indexed text, right under the title: the words of the
# frontmatter line itself (what the user wrote), so the embedding, the full-text index and the
# title feature all read them; the displayed title and the file stay as they are.
ALIAS_PREFIX = "aliases: "
# `related:` entries (names, `[[wikilinks]]` or the engine's ids) become wikilinks on the line after:
# the ranker's `link` feature reads a note's links from its indexed text (retrieval.rerank.link_targets)
RELATED_PREFIX = "related: "
_BRACKETS = re.compile(r"^[\[\]'\"\s]+|[\[\]'\"\s]+$")  # [[Note]], or YAML's [['Note']] of an unquoted [[Note]]
_KEYS = ("aliases", "alias")  # Obsidian reads both (`alias:` is its older spelling)


def aliases(entry: Entry) -> list[str]:
    """The note's aliases from its frontmatter: a list, or one comma-separated string (both are
    Obsidian's forms); empty values and the title itself are left out, order kept. A note titled by
    its first H1 (no `title:`, codec.first_heading) goes by its file name too, first: it was its
    title before READ_RULES 2, and a docs folder names its files in English (`redis-persistence.md`
    for `# Redis 持久化机制`)."""
    found: list[str] = []
    stem = PurePosixPath(entry.path).stem if entry.path else ""
    if stem and entry.title and entry.title == codec.first_heading(entry.body) \
            and _plain(stem) != _plain(entry.title):
        found.append(stem)
    for key in _KEYS:
        value = entry.extra.get(key)
        items = value if isinstance(value, (list, tuple)) else value.split(",") if isinstance(value, str) else [value]
        for item in items:
            text = codec.scalar_text(item)  # `1`, `true` as written; a mapping is no name
            name = " ".join(text.split()) if text is not None else ""
            if name and name.lower() != (entry.title or "").strip().lower() and name not in found:
                found.append(name)
    return found


def _plain(name: str) -> str:
    """A name as compared with another: its words, lower case (`redis-persistence` is `Redis persistence`)."""
    return " ".join(re.findall(r"\w+", name.lower()))


def related(entry: Entry) -> list[str]:
    """The names (or ids) of the notes the entry's `related:` lists, without their brackets."""
    found: list[str] = []
    for value in entry.related:
        name = _BRACKETS.sub("", str(value))
        if name and name not in found:
            found.append(name)
    return found


def with_aliases(entry: Entry) -> Entry:
    """The entry with its aliases, then its related notes as wikilinks, as lines at the top of its
    body, under the H1 when the note is titled by it (for the index only: the indexed text then reads
    `Title` or `# Title`, `aliases: A, B`, `related: [[C]]`, body); the entry itself when it has neither."""
    lines = []
    if names := aliases(entry):
        lines.append(ALIAS_PREFIX + ", ".join(names))
    if links := related(entry):
        lines.append(RELATED_PREFIX + ", ".join(f"[[{name}]]" for name in links))
    if not lines:
        return entry
    head, newline, rest = (entry.body or "").partition("\n")
    if newline and codec.first_heading(head) == entry.title:  # under the H1 the note is titled by
        return entry.copy(body="\n".join([head] + lines + [rest]))
    return entry.copy(body="\n".join(lines + [entry.body]) if entry.body else "\n".join(lines))


def aliases_in(text: str) -> list[str]:
    """The aliases of an indexed text (its line right under the title, as `with_aliases` put it)."""
    lines = (text or "").split("\n", 2)
    if len(lines) < 2 or not lines[1].startswith(ALIAS_PREFIX):
        return []
    return [a.strip() for a in lines[1][len(ALIAS_PREFIX):].split(",") if a.strip()]


def without_names(text: str) -> str:
    """An indexed text without the aliases and related lines `with_aliases` put under its title
    (a snippet shows the note's own sentences, not `aliases: DHCP`)."""
    lines = (text or "").split("\n")
    head = lines[:1]
    rest = lines[1:]
    if len(rest) > 1 and rest[0].lstrip().startswith("# ") and rest[1].startswith((ALIAS_PREFIX, RELATED_PREFIX)):
        head, rest = lines[:2], lines[2:]  # a title line, then the H1 it came from (with_aliases put them under it)
    kept = len(rest)
    while rest and rest[0].startswith((ALIAS_PREFIX, RELATED_PREFIX)):
        rest = rest[1:]
    return "\n".join(head + rest) if len(rest) < kept else text
