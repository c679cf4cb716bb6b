"""Team sync decisions: how two machines' versions of one entry merge, and what a sync commit says."""
from __future__ import annotations

from dataclasses import dataclass, fields

from memstrata.storage.entry import Entry
from memstrata.storage.versions import history_item, one_line

# Facts every read changes: they never make a conflict (docs/team.md).
ACCESS_FIELDS = ("last_access", "access_count", "weight")
# What a new version is made of (docs/versions.md: metadata changes are not versions).
CONTENT_FIELDS = ("title", "body")
# Fields the merge decides itself rather than field by field.
_OWN_FIELDS = set(ACCESS_FIELDS) | set(CONTENT_FIELDS) | {"id", "path", "category", "version", "history", "updated"}
# the note's own fields (compare=False: Entry.read_stamp, where the entry was read from, is none)
_METADATA_FIELDS = tuple(f.name for f in fields(Entry) if f.name not in _OWN_FIELDS and f.compare)


@dataclass(frozen=True)
class EntryMerge:
    """The result of merging two sides of one entry.

    kind: same | access (only access facts differed) | metadata | ours | theirs (one side
    changed the text) | conflict (both did: `kept` holds the losing side as a version).
    """

    entry: Entry
    kind: str
    kept: tuple = ()          # ((version number, Entry), ...) to keep under .versions/{id}/
    message: str = ""


def content(e: Entry) -> tuple:
    return tuple(getattr(e, f) for f in CONTENT_FIELDS)


def differs_only_in_access(a: Entry, b: Entry) -> bool:
    """Whether two versions of an entry differ in access facts (and `updated`) at most."""
    return all(getattr(a, f) == getattr(b, f) for f in CONTENT_FIELDS + _METADATA_FIELDS) and a.history == b.history


def keep_edit_over_delete(base: Entry | None, edited: Entry) -> bool:
    """One side deleted the entry, the other changed it: the change wins, unless it was only a read."""
    return base is None or not differs_only_in_access(base, edited)


def same_entry(ours: Entry, theirs: Entry) -> bool:
    """Two files added at one path on two machines are one entry only when they carry the same id."""
    return bool(ours.id) and ours.id == theirs.id


def one_id(a: Entry, b: Entry) -> bool:
    """Whether two sides may be one entry: they carry one id, or one of them none yet (a hand-made
    note given its id on one machine only)."""
    return not a.id or not b.id or a.id == b.id


@dataclass(frozen=True)
class PathSplit:
    """A path whose sides carry different ids holds different entries (a rename or a new entry took
    the path of another): never merged by their texts. `lineage` is (base, ours, theirs) of the entry
    the base held there, each side None where that side put another entry at the path or none;
    `ours_new` / `theirs_new` the entry a side put at the path in its place (None: none)."""

    lineage: tuple
    ours_new: Entry | None = None
    theirs_new: Entry | None = None


def split_by_id(base: Entry | None, ours: Entry | None, theirs: Entry | None) -> PathSplit | None:
    """The entries at one path when its sides (a missing side None) carry different ids; None when
    every side present may be one entry (one_id), which the merge rules then merge as ever."""
    present = [e for e in (base, ours, theirs) if e is not None]
    if all(one_id(a, b) for n, a in enumerate(present) for b in present[n + 1:]):
        return None
    if base is None:  # two new entries at one path
        return PathSplit((None, None, None), ours, theirs)
    ours_same = ours is not None and one_id(ours, base)
    theirs_same = theirs is not None and one_id(theirs, base) and not (ours_same and not one_id(ours, theirs))
    return PathSplit((base, ours if ours_same else None, theirs if theirs_same else None),
                     ours if ours is not None and not ours_same else None,
                     theirs if theirs is not None and not theirs_same else None)


def _later(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def merge_access(base: Entry | None, ours: Entry, theirs: Entry) -> dict:
    """Access facts of both sides: the later last_access, both sides' reads counted, the newer weight."""
    if base is None:
        count = max(ours.access_count, theirs.access_count)
    else:
        count = base.access_count + max(0, ours.access_count - base.access_count) \
            + max(0, theirs.access_count - base.access_count)
    newer = theirs if _stamp(theirs.last_access) > _stamp(ours.last_access) else ours
    return {"last_access": _later(ours.last_access, theirs.last_access), "access_count": count,
            "weight": newer.weight if newer.weight is not None else (ours.weight if newer is theirs else theirs.weight)}


def _stamp(dt) -> float:
    return dt.timestamp() if dt is not None else float("-inf")


def _metadata(base: Entry | None, ours: Entry, theirs: Entry, prefer_theirs: bool) -> dict:
    """Three-way, field by field: a field only one side changed takes that side's value;
    both changed it: the preferred side's value."""
    out = {}
    for name in _METADATA_FIELDS:
        o, t = getattr(ours, name), getattr(theirs, name)
        b = getattr(base, name) if base is not None else None
        if o == t:
            out[name] = o
        elif base is not None and o == b:
            out[name] = t
        elif base is not None and t == b:
            out[name] = o
        else:
            out[name] = t if prefer_theirs else o
    return out


def _newer_is_theirs(ours: Entry, theirs: Entry) -> bool:
    """Which side is newer: later `updated`; a tie is broken by the text so every machine agrees."""
    return (_stamp(theirs.updated), content(theirs)) > (_stamp(ours.updated), content(ours))


def merge_entry(base: Entry | None, ours: Entry, theirs: Entry, ours_by: str, theirs_by: str,
                kept_versions=()) -> EntryMerge:
    """Merge two machines' versions of one entry (same id) given their common ancestor.

    - same text on both sides: one entry, access facts merged (`merge_access`), other fields
      three-way (`_metadata`); never a conflict;
    - only one side changed the text: that text, the other side's metadata changes kept too;
    - both changed the text: the conflict rule of docs/versions.md - the newer side is current,
      the other is kept as version N (N = one past every version either side kept), the
      current one becomes N + 1, and the history says which machine/agent wrote each.
    `kept_versions` are the version numbers already under .versions/{id}/ (after the merge).
    """
    access = merge_access(base, ours, theirs)
    updated = _later(ours.updated, theirs.updated)
    theirs_newer = _newer_is_theirs(ours, theirs)
    if content(ours) == content(theirs):
        kind = "same" if ours == theirs else (
            "access" if differs_only_in_access(ours, theirs) else "metadata")
        top = theirs if ours.version < theirs.version else ours
        merged = top.copy(**_metadata(base, ours, theirs, theirs_newer), **access, updated=updated)
        return EntryMerge(merged, kind)
    ours_changed = base is None or content(ours) != content(base)
    theirs_changed = base is None or content(theirs) != content(base)
    if ours_changed != theirs_changed:
        side, other = (ours, theirs) if ours_changed else (theirs, ours)
        merged = side.copy(**_metadata(base, ours, theirs, prefer_theirs=not ours_changed), **access,
                           updated=updated, version=max(side.version, other.version))
        return EntryMerge(merged, "ours" if ours_changed else "theirs")
    winner, loser = (theirs, ours) if theirs_newer else (ours, theirs)
    win_by, lose_by = (theirs_by, ours_by) if theirs_newer else (ours_by, theirs_by)
    floor = base.version if base is not None else 0
    n = max([floor, *[int(v) for v in kept_versions]]) + 1
    kept = loser.copy(version=n)
    history = {int(h["version"]): dict(h) for h in loser.history if int(h["version"]) < loser.version}
    history.update({int(h["version"]): dict(h) for h in winner.history if int(h["version"]) < winner.version})
    history = {v: h for v, h in history.items() if v < n}
    history[n] = history_item(n, loser.updated, f"{one_line(loser.body, loser.title)} "
                                                f"(by {lose_by}; kept, lost a conflict with {win_by})")
    history[n + 1] = history_item(n + 1, winner.updated, f"{one_line(winner.body, winner.title)} "
                                                        f"(by {win_by}; won a conflict with {lose_by})")
    merged = winner.copy(**_metadata(base, ours, theirs, prefer_theirs=theirs_newer), **access, updated=updated,
                         version=n + 1, history=[history[v] for v in sorted(history)])
    return EntryMerge(merged, "conflict", kept=((n, kept),),
                      message=f"{merged.id}: both changed; {win_by}'s text is current v{n + 1}, "
                              f"{lose_by}'s kept as v{n}")


def describe_changes(new: int, updated: int, deleted: int) -> str:
    """The summary line of a sync commit: "3 new, 1 updated, 2 deleted"."""
    parts = [f"{n} {word}" for n, word in ((new, "new"), (updated, "updated"), (deleted, "deleted")) if n]
    return ", ".join(parts) if parts else "no entry changes"
