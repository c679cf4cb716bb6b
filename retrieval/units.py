"""Row keys of the chunk table: an entry is one retrievable unit, a captured session one per turn.

A captured session (storage/turns.py) is one Markdown file of many turns, and recall ranks turns:
each turn is indexed as a unit of its own, keyed `<entry id>#<turn number>`, with the turn's time
as its `created`, so ranking, the dialogue priors and the ranker's features read it as they read
an imported turn (retrieval/fusion.time_structure links the turns of one session). Every other
entry is one unit keyed by its id. '#' is never in an entry id (storage.entry.ID_PATTERN), so the
entry of a row key is known from the key alone; the one place that says how is here.
"""
from __future__ import annotations

from dataclasses import replace

from memstrata.storage.entry import Entry
from memstrata.storage.turns import is_session, parse

SEP = "#"
INDEXED = "__indexed__"  # marks an entry already in its indexed form (retrieval.table_rows.indexed_form; never written)
AFTER_SEP = chr(ord(SEP) + 1)  # every key `<id>#...` sorts in [`<id>#`, `<id>$`)


def unit_id(entry_id: str, number: int) -> str:
    return f"{entry_id}{SEP}{number}"


def entry_of(rid: str) -> str:
    """The entry id (or `path:` key) a row key belongs to."""
    if rid.startswith("path:"):
        return rid
    head, sep, tail = rid.rpartition(SEP)
    return head if sep and tail.isdigit() else rid


def turn_of(rid: str) -> int | None:
    """The 1-based turn a row key is (None: a whole entry, or the text before a session's first turn)."""
    if rid.startswith("path:"):
        return None
    _, sep, tail = rid.rpartition(SEP)
    return int(tail) if sep and tail.isdigit() and int(tail) > 0 else None


def units_per(ids: list[str], keys: list) -> dict:
    """The number of session units among row keys `ids`, per key (`keys[n]`: row n's category, say).
    A unit's key holds SEP and is no `path:` key (is_unit's test, in one pass at C speed: 330,000 keys
    in some 30 ms where calling is_unit on each takes 150)."""
    counts: dict = {}
    for rid, key in zip(ids, keys):
        if SEP in rid and not rid.startswith("path:"):
            counts[key] = counts.get(key, 0) + 1
    return counts


def number_of(rid: str) -> int:
    """The unit number of a row key (0 before a session's first turn, and for a whole entry): its order."""
    return int(rid.rpartition(SEP)[2]) if is_unit(rid) else 0


def is_unit(rid: str) -> bool:
    """Whether a row key is part of a session (a turn, or its text before the first turn)."""
    return entry_of(rid) != rid


def units(entry: Entry) -> list[Entry]:
    """What the index holds of `entry` (in its indexed form, retrieval.table_rows.indexed_form), one
    Entry per row key: the entry itself, or for a captured session with turns one per turn that has
    text (id `<id>#<n>`, its body the turn's text, `created` the turn's time), and `<id>#0` for the
    text before the first turn when there is some (with the session's title). A unit carries the
    session's path, file stamp, category, tags, tier and status."""
    if not entry.id or not is_session(entry):
        return [entry]
    preamble, turns = parse(entry.body)
    if not turns:
        return [entry]
    base = entry.copy(extra={INDEXED: True}, history=[], layer="L0", full_content_file=None, summary=None)
    out = []
    if preamble:
        out.append(_unit(entry, base, 0, entry.title, preamble, entry.created))
    for t in turns:
        if t.text:
            out.append(_unit(entry, base, t.number, "", t.text, t.when or entry.created))
    return out


def _unit(entry: Entry, base: Entry, number: int, title: str, body: str, created) -> Entry:
    """One unit of a session: `base` (the session's fields, copied once) with its own key, text and
    time; it shares `base`'s lists (the index only reads them)."""
    unit = replace(base, id=unit_id(entry.id, number), title=title, body=body, created=created)
    unit.read_stamp = entry.read_stamp  # the session's file as read: what sync compares every unit's row with
    return unit
