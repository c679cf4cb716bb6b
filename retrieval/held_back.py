"""Notes kept out of the index as possible credentials, said when a query matches them.

A note the guard flags (hand-made, adopted or pulled: the guard never saw it) is not indexed, so
the index never returns it. Sync records which notes it held back (`FLAGGED_META` in the table's
meta.json: path -> why, never the text); a recall answered by the index reads those few files and
says, in its notes and in `held_back`, which of them hold the query's words. Nothing of their text
is shown."""
from __future__ import annotations

import math

FLAGGED_META = "flagged"
READ_AT_MOST = 200  # held-back notes a query reads at most (a tree full of them says so by count)


def record(index, flagged: dict, looked_at: set | None) -> None:
    """Keep the held-back notes in the table's meta: `flagged` (path -> why) found among the files
    `looked_at` (None: the whole tree was walked). Caller holds the tree lock."""
    if not index.exists():
        return
    before = index.meta().get(FLAGGED_META)
    before = dict(before) if isinstance(before, dict) else {}
    now = {} if looked_at is None else {rel: why for rel, why in before.items() if rel not in looked_at}
    now.update(flagged)
    if now != before:
        index.set_meta(FLAGGED_META, now)


def release(index, rel: str) -> None:
    """`rel` is indexed now (allowed): no longer held back. Caller holds the tree lock."""
    before = recorded(index)
    if rel in before and index.exists():
        index.set_meta(FLAGGED_META, {k: v for k, v in before.items() if k != rel})


def recorded(index) -> dict:
    """The held-back notes as sync last recorded them (path -> why)."""
    flagged = index.meta().get(FLAGGED_META)
    return {str(k): str(v) for k, v in flagged.items()} if isinstance(flagged, dict) else {}


def matching(index, query: str, category: str | None = None) -> list[str]:
    """The held-back notes (paths) whose title, text or tags hold at least half the query's words."""
    from memstrata.retrieval.fallback import grep_terms
    from memstrata.retrieval.table import indexed_form
    from memstrata.storage.catalog import read_entry_file
    from memstrata.storage.errors import CorruptEntry

    flagged = recorded(index)
    if not flagged:
        return []
    terms = grep_terms(query)
    if not terms:
        return []
    need = max(1, math.ceil(len(terms) / 2))
    out = []
    for rel in sorted(flagged)[:READ_AT_MOST]:
        if category and not str(rel).startswith(category.rstrip("/") + "/"):
            continue
        try:
            e = indexed_form(index.root, read_entry_file(index.root, rel))
        except (CorruptEntry, OSError):
            continue
        low = f"{e.title}\n{e.body}\n{' '.join(e.tags)}".lower()
        if sum(1 for t in terms if t in low) >= need:
            out.append(rel)
    return out


def say(result, index, query: str, category: str | None = None) -> None:
    """Add to a recall result the held-back notes the query matches (`held_back`, and one note)."""
    found = matching(index, query, category)
    if not found:
        return
    result.held_back = found
    named = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    result.notes.append(f"held back {len(found)} matching note(s) that may hold a credential: {named} "
                        "(never indexed or shown until it is taken out of the file; if it is no secret, "
                        "`mem secrets allow PATH`)")
