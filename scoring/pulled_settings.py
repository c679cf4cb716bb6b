"""Which settings a config.md pulled from another machine may change here (pure: dicts in, verdicts out)."""
from __future__ import annotations

from typing import Callable

from memstrata.storage.errors import InvalidInput
from memstrata.storage.config import Settings

MACHINE_OWN = ("git_connect_timeout", "git_idle_timeout", "git_timeout")  # never taken from a pull
# Lowering one makes this machine lose data sooner (forget to the trash, purge the trash): a pulled
# lower value is held back (set it on each machine), a higher one applies.
SOONER_IS_DESTRUCTIVE = ("forget_after_days", "trash_retention_days")
# Turning one on rewrites or moves the notes of a tree that had it off (an adopted vault).
ON_REWRITES_NOTES = ("compress_bodies", "archive_moves_files")
UNSET = object()  # the key is not in this machine's config.md: its default applies


def held_back(ours: dict, pulled: dict, model_available: Callable[[str], bool]) -> dict[str, tuple[object, str]]:
    """Settings whose pulled value is not applied: key -> (this machine's value or UNSET, why).

    `ours` / `pulled`: the keys config.md sets, before and after the pull. A pulled value is
    held back when it is not valid here (so it would stop every command on this machine), when
    it weakens the secret guard (a peer may not turn `refuse` into `warn` for everyone), or when
    it names an embedding model this machine does not have, when it makes this machine forget or
    purge sooner (SOONER_IS_DESTRUCTIVE) or rewrite or move notes it left alone (ON_REWRITES_NOTES:
    compression or archive moves turned on), or it changes a network timeout
    (MACHINE_OWN: a peer's 1-second git_timeout would stop every machine's sync, the one that
    would pull its repair included). Every other change applies.
    Converges: a value held back here is pushed back, and the other machine accepts it (it is
    valid, stronger or available there), so two machines never trade a setting back and forth.
    """
    out: dict[str, tuple[object, str]] = {}
    names = set(Settings.field_names())
    default = Settings()
    for key in sorted((set(ours) | set(pulled)) & names):
        mine, theirs = ours.get(key, UNSET), pulled.get(key, UNSET)
        if mine == theirs:
            continue
        value = getattr(default, key) if theirs is UNSET else theirs
        try:
            default.with_value(key, value)
        except InvalidInput as exc:
            out[key] = (mine, f"not valid here ({exc.message})")
            continue
        before = getattr(default, key) if mine is UNSET else mine
        if key == "secrets" and str(before) == "refuse" and str(value) != "refuse":
            out[key] = (mine, "a pulled change may not weaken the secret guard (set it on each machine)")
        elif key in MACHINE_OWN and str(value) != str(before):
            out[key] = (mine, "network timeouts are each machine's own (a peer could stop every sync with one)")
        elif key in SOONER_IS_DESTRUCTIVE and _number(value) < _number(before):
            out[key] = (mine, f"a pulled change may not forget or purge sooner ({before} -> {value} days; "
                              f"set it on each machine)")
        elif key in ON_REWRITES_NOTES and _truthy(value) and not _truthy(before):
            out[key] = (mine, "a pulled change may not turn on rewriting or moving notes here (set it on each "
                              "machine)")
        elif key == "embedding_model" and str(value) != str(before) and not model_available(str(value)):
            out[key] = (mine, f"model {value} is not on this machine")
    if not out:
        merged = {k: v for k, v in pulled.items() if k in names}
        try:
            settings = default
            for key, value in merged.items():
                settings = settings.with_value(key, value)
        except InvalidInput as exc:  # valid one by one, not together (the tier order)
            for key in sorted(k for k in merged if ours.get(k, UNSET) != merged[k]):
                out[key] = (ours.get(key, UNSET), f"not valid with the other settings ({exc.message})")
    return out


def raised_here(ours: dict, pulled: dict) -> dict[str, object]:
    """The SOONER_IS_DESTRUCTIVE settings this machine's config.md sets that a pull raises (or
    removes, for a higher default): key -> this machine's value. The echo of a peer that held this
    machine's lower value back is one: when this machine set that value itself, it keeps it as its
    own (features/team_settings.py) while config.md takes the team's, so neither trades it back."""
    default = Settings()
    out: dict[str, object] = {}
    for key in SOONER_IS_DESTRUCTIVE:
        if key not in ours:
            continue
        theirs = pulled.get(key, UNSET)
        value = getattr(default, key) if theirs is UNSET else theirs
        if _number(value) > _number(ours[key]):
            out[key] = ours[key]
    return out


def _number(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("inf")  # not a number: the validity check above has said so


def _truthy(value) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes", "on")
