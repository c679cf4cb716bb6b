"""Lifecycle planning: retier, compress, archive, expire and forget decisions, plus trash purge."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Iterable, Sequence

from memstrata.scoring.tiers import (
    days_since_touched,
    layer_depth,
    layer_for_tier,
    tier_for,
)
from memstrata.scoring.usage import days_in_use_since, idle_days_in_use
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry

from memstrata.storage.clock import days_between

ACTION_KINDS = ("retier", "compress", "archive", "expire", "forget")


@dataclass(frozen=True)
class Action:
    """One change the engine should apply to one entry.

    kind / from_value -> to_value:
      retier    tier -> tier; `layer` is the new tier's nominal layer (informational: retier
                changes only the `tier` field, compress alone changes the layer)
      compress  layer -> deeper layer (summary + lossless sidecar in .full/)
      archive   status "active" -> "archived"; the file moves to {category}/archived/
      expire    status -> "expired"; the entry is forgotten (moved to .trash/)
      forget    status "archived" -> trash; the file moves to .trash/

    Actions for one entry come in the order they should be applied. Applying them must not
    touch `updated`, `last_access` or `access_count`, or the plan would no longer be stable.
    """

    entry_id: str
    kind: str
    from_value: str | None
    to_value: str | None
    reason: str
    layer: str | None = None


def plan(entries: Iterable[Entry], now: datetime, settings: Settings,
         referenced_ids: set[str] | None = None, use_days: Iterable[date] | None = None) -> list[Action]:
    """The lifecycle actions due at `now` for these entries (empty when nothing is due).

    Rules, per entry:
    - status "expired": nothing (already handled).
    - `expires` at or before now: "expire" only (explicit expiry applies to important
      entries too: the user set the date).
    - important: never compressed, archived or forgotten; an active important entry whose
      stored tier is not hot gets a "retier" to hot and nothing else.
    - status "archived": its tier is "archive" (reading or editing it does not restore it;
      that is promotion's or restore's job).
    - otherwise the tier comes from age (scoring.tiers.tier_for), in calendar days: retier and
      compress only ever change an entry in place, losslessly.
    - moving out of sight counts days *in use* (`use_days`: the days the tree was written or
      read on; scoring.usage.idle_days_in_use): the archive tier needs more than cold_days of
      them (else the entry stays cold), forgetting needs forget_after_days of them. A tree
      nobody opened keeps its entries however long it rests. `use_days=None` counts every
      calendar day (the rule before days in use).
    - "retier" when the tier differs from the stored one; "compress" when the tier's layer
      is deeper than the current layer (never the other way: an entry touched again keeps
      its layer and only gets a "retier" to the hotter tier).
    - tier archive and status active: "archive".
    - archived (or being archived now), untouched for forget_after_days days in use, not
      important, not referenced and `archive_moves_files` (off for an adopted folder: its notes
      stay where they are, archived) (by `referenced_ids` or by any other entry's `related`):
      "forget", replacing retier/compress (the trash keeps the file as it is).

    Idempotent: applying the actions (fields only, no new touch dates) and planning again at
    the same `now` yields nothing.
    """
    entries = list(entries)
    days_in_use = None if use_days is None else tuple(sorted(set(use_days)))
    referenced = set(referenced_ids or ())
    for other in entries:
        if other.status == "expired":
            continue
        referenced.update(r for r in other.related if r and r != other.id)
    actions: list[Action] = []
    for entry in entries:
        actions.extend(_plan_entry(entry, now, settings, referenced, days_in_use))
    return actions


def tier_now(entry: Entry, now: datetime, settings: Settings, use_days: Sequence[date] | None = None) -> str:
    """The tier an entry is in at `now`: what `mem list` shows and what `mem maintain` writes (one rule).

    Expired entries and entries past their `expires` keep their stored tier (maintain expires
    them, never retiers); important active ones are hot; archived ones archive; the others by
    age in calendar days (scoring.tiers.tier_for), except that the archive tier also needs more
    than cold_days days *in use* (`use_days`; None counts every calendar day), else cold.
    """
    if entry.status == "expired" or (entry.expires is not None and entry.expires <= now):
        return entry.tier
    if entry.important:
        return "hot" if entry.status == "active" else entry.tier
    if entry.status == "archived":
        return "archive"
    target = tier_for(entry, now, settings)
    if target == "archive" and entry.status == "active" and use_days is not None \
            and idle_days_in_use(entry, now, use_days) <= settings.cold_days:
        return "cold"  # old by the calendar, but the tree was hardly used since: stays in place
    return target


def _plan_entry(entry: Entry, now: datetime, settings: Settings, referenced: set[str],
                use_days: Sequence[date] | None) -> list[Action]:
    if entry.status == "expired":
        return []
    if entry.expires is not None and entry.expires <= now:
        return [Action(entry.id, "expire", entry.status, "expired",
                       f"expired on {entry.expires.date().isoformat()}")]
    if entry.important:
        if entry.status == "active" and entry.tier != "hot":
            return [Action(entry.id, "retier", entry.tier, "hot", "important entries stay hot",
                           layer=layer_for_tier("hot"))]
        return []

    days = days_since_touched(entry, now)
    idle = days if use_days is None else idle_days_in_use(entry, now, use_days)
    target = tier_now(entry, now, settings, use_days)
    forgetting = (
        target == "archive"
        and settings.archive_moves_files  # an adopted note is never moved, to the trash neither: it stays archived
        and idle >= settings.forget_after_days
        and entry.id not in referenced
    )
    idle_text = f"{days} days" if idle == days else f"{idle} days of use ({days} calendar days)"
    actions: list[Action] = []
    if not forgetting:
        if target != entry.tier:
            why = "archived entry" if entry.status == "archived" else f"untouched for {days} days"
            actions.append(Action(entry.id, "retier", entry.tier, target, why,
                                  layer=layer_for_tier(target)))
        target_layer = layer_for_tier(target)
        if settings.compress_bodies and layer_depth(target_layer) > layer_depth(entry.layer):
            actions.append(Action(entry.id, "compress", entry.layer, target_layer,
                                  f"{target} tier keeps {target_layer}"))
    if target == "archive" and entry.status == "active":
        actions.append(Action(entry.id, "archive", "active", "archived",
                              f"untouched for {idle_text} (archive after {settings.cold_days})"))
    if forgetting:
        actions.append(Action(entry.id, "forget", "archived", "trash",
                              f"archived, untouched for {idle_text} and not referenced"))
    return actions


def trash_purge_due(deleted_at: datetime | None, now: datetime, settings: Settings,
                    reported_at: datetime | None, use_days: Sequence[date] | None = None) -> bool:
    """True when a trash item was reported to the user and has been in the trash more than
    trash_retention_days since both (unknown trash date or never reported: never purged), and,
    with `use_days` (the days the tree was used on, sorted), the tree was used on at least
    trash_retention_days days after that day: as for archive and forgetting, a tree nobody used
    (or a clock moved ahead, MEMSTRATA_NOW) keeps its trash. `use_days=None` counts calendar days."""
    if deleted_at is None or reported_at is None:
        return False
    since = max(deleted_at, reported_at)
    if days_between(since, now) <= settings.trash_retention_days:
        return False
    return use_days is None or days_in_use_since(since, now, use_days) >= settings.trash_retention_days


def trash_purgeable_after(deleted_at: datetime | None, settings: Settings, reported_at: datetime | None,
                          now: datetime | None = None, use_days: Sequence[date] | None = None) -> datetime | None:
    """The earliest moment at which trash_purge_due can hold for an item: trash_retention_days after
    it was trashed and reported, and (with `now` and `use_days`) no sooner than the start of the day
    the days in use it still lacks end on, were the tree used every day from tomorrow. None: never
    as it stands (no trash date, or never reported)."""
    if deleted_at is None or reported_at is None:
        return None
    since = max(deleted_at, reported_at)
    after = since + timedelta(days=settings.trash_retention_days)
    if now is None or use_days is None:
        return after
    lacking = settings.trash_retention_days - days_in_use_since(since, now, use_days)
    if lacking <= 0:
        return after
    start_of_day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return max(after, start_of_day + timedelta(days=lacking))


def trash_waiting(items: Iterable[tuple[datetime | None, datetime | None]], now: datetime,
                  settings: Settings, use_days: Sequence[date] | None = None) -> dict:
    """Why trash items (deleted_at, reported_at) are not purged at `now`: how many were never
    reported, how many have no trash date, how many wait for trash_retention_days (of use, with
    `use_days`) to pass, and the earliest moment the first of those can become purgeable."""
    unreported, undated, waiting, first = 0, 0, 0, None
    for deleted_at, reported_at in items:
        if trash_purge_due(deleted_at, now, settings, reported_at, use_days):
            continue
        after = trash_purgeable_after(deleted_at, settings, reported_at, now, use_days)
        if reported_at is None:
            unreported += 1
        elif after is None:
            undated += 1  # no trash date: only `--all` purges it
        else:
            waiting += 1
            first = after if first is None or after < first else first
    return {"unreported": unreported, "undated": undated, "waiting": waiting, "purgeable_after": first}


def plan_with_cascade(entries: list[Entry], now, settings,
                      use_days: Iterable[date] | None = None) -> tuple[dict[str, list[Action]], set[str]]:
    """lifecycle.plan, repeated without the entries it sends to the trash, until nothing more leaves.

    An entry referenced only by entries that are forgotten or expired in this run is no longer
    referenced once they are in the trash; planning it now (instead of on the next run) is what
    makes a second run right after the first change nothing. Returns (actions per id, ids
    going to the trash).
    """
    use_days = None if use_days is None else tuple(sorted(set(use_days)))
    leaving: set[str] = {e.id for e in entries if e.status == "expired"}
    trash_actions: dict[str, list[Action]] = {}
    while True:
        remaining = [e for e in entries if e.id not in leaving]
        planned: dict[str, list[Action]] = {}
        for action in plan(remaining, now, settings, use_days=use_days):
            planned.setdefault(action.entry_id, []).append(action)
        new = {i for i, acts in planned.items() if any(a.kind in ("expire", "forget") for a in acts)}
        if not new:
            planned.update(trash_actions)
            return planned, leaving
        for entry_id in new:
            trash_actions[entry_id] = planned[entry_id]
        leaving |= new


def referrers(entries: list[Entry]) -> dict[str, set[str]]:
    """id -> ids of the (non-expired) entries that list it in `related`."""
    out: dict[str, set[str]] = {}
    for other in entries:
        if other.status == "expired":
            continue
        for ref in other.related:
            if ref and ref != other.id:
                out.setdefault(ref, set()).add(other.id)
    return out


# What aging does to an adopted vault's note: only an explicit `expires:` applies (the note goes
# to the trash, restorable byte for byte). Its tier, status and weight live outside the note
# (reads show them, computed: engine/entries.seen), so retiering or archiving it writes nothing.
VAULT_NOTE_ACTIONS = ("expire",)


def for_vault_notes(actions: list[Action]) -> list[Action]:
    """The actions of a plan that apply to a note of an adopted vault (VAULT_NOTE_ACTIONS)."""
    return [a for a in actions if a.kind in VAULT_NOTE_ACTIONS]


def stray_expired(entry: Entry) -> list[Action]:
    """An entry marked expired but still in the tree (a crash mid-expiry, a hand edit): to the trash."""
    if entry.status != "expired":
        return []
    return [Action(entry.id, "expire", "expired", "expired", "marked expired")]
