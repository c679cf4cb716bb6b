"""A note's other names (frontmatter `aliases:`) as the index reads them: another title."""
from __future__ import annotations

from memstrata.storage.entry import Entry

# The line the aliases take in a note's indexed text, right under the title: the words of the
# frontmatter line itself (what the user wrote), so the embedding, the full-text index and the
# title feature all read them; the displayed title and the file stay as they are.
ALIAS_PREFIX = "aliases: "
_KEYS = ("aliases", "alias")  # Obsidian reads both (`alias:` is its older spelling)


def aliases(entry: Entry) -> list[str]:
    """The note's aliases from its frontmatter: a list, or one comma-separated string (both are
    Obsidian's forms); empty values and the title itself are left out, order kept."""
    found: list[str] = []
    for key in _KEYS:
        value = entry.extra.get(key)
        items = value if isinstance(value, (list, tuple)) else str(value).split(",") if value else []
        for item in items:
            name = " ".join(str(item).split()) if item is not None else ""
            if name and name.lower() != (entry.title or "").strip().lower() and name not in found:
                found.append(name)
    return found


def with_aliases(entry: Entry) -> Entry:
    """The entry with its aliases as a line at the top of its body (for the index only: the
    indexed text then reads `Title`, `aliases: A, B`, body); the entry itself when it has none."""
    names = aliases(entry)
    if not names:
        return entry
    line = ALIAS_PREFIX + ", ".join(names)
    return entry.copy(body=f"{line}\n{entry.body}" if entry.body else line)


def aliases_in(text: str) -> list[str]:
    """The aliases of an indexed text (its line right under the title, as `with_aliases` put it)."""
    lines = (text or "").split("\n", 2)
    if len(lines) < 2 or not lines[1].startswith(ALIAS_PREFIX):
        return []
    return [a.strip() for a in lines[1][len(ALIAS_PREFIX):].split(",") if a.strip()]
