"""memstrata's hooks inside an agent's hooks configuration, as data: find, remove and add them.

Claude Code's settings.json `hooks` and Codex's hooks.json share one shape (docs: code.claude.com
hooks reference, "Configuration"; developers.openai.com/codex/hooks): event name -> list of matcher
groups `{"matcher"?, "hooks": [handler, ...]}`, a handler `{"type": "command", "command", "timeout"?}`.
memstrata's handlers are recognised by their command (`mem|memstrata autoload --hook ...` or
`... capture --hook ...`, a `python -m memstrata.cli.app` form too), so the hand-written recipe of
earlier READMEs is replaced rather than doubled. Every function here is pure: a dict in, a new dict out.
"""
from __future__ import annotations

import copy
import json
import os
import shlex

GUARD = " || true"  # appended to each hook command: a hook must never block the agent (exit 2 blocks)
PROGRAMS = ("mem", "memstrata")
SUBCOMMANDS = ("autoload", "capture")


class BadShape(ValueError):
    """The hooks configuration is not the documented shape (said where); nothing is changed."""


def template(relative: str) -> dict:
    """A hooks file memstrata ships (`claude-code/hooks/hooks.json`, `openai-codex/hooks.json`), parsed."""
    from importlib import resources

    place = resources.files("memstrata.plugins")
    for part in relative.split("/"):
        place = place.joinpath(part)
    return json.loads(place.read_text(encoding="utf-8"))


def is_ours(command) -> bool:
    """Whether a hook command is memstrata's: `mem autoload --hook ...`, `mem capture --hook ...`
    (any path to mem or memstrata, or `python -m memstrata.cli.app`), with or without the guard."""
    if not isinstance(command, str):
        return False
    try:
        tokens = shlex.split(command.strip().removesuffix(GUARD.strip()))
    except ValueError:
        return False
    if not tokens:
        return False
    if os.path.basename(tokens[0]) in PROGRAMS:
        rest = tokens[1:]
    elif "memstrata.cli.app" in tokens[1:4]:
        rest = tokens[tokens.index("memstrata.cli.app") + 1:]
    else:
        return False
    return bool(rest) and rest[0] in SUBCOMMANDS and "--hook" in rest


def command_for(command: str, program: list[str], root: str | None) -> str:
    """A template command (`mem autoload --hook ... || true`) for this installation: `mem` replaced by
    `program` (the absolute path of this mem), `--root ROOT` added when a root is given, quoted for sh."""
    guarded = command.endswith(GUARD)
    tokens = shlex.split(command.removesuffix(GUARD))
    if not tokens or tokens[0] not in PROGRAMS:
        raise BadShape(f"the shipped hook command {command!r} does not start with mem")
    tokens = list(program) + tokens[1:] + (["--root", root] if root else [])
    return shlex.join(tokens) + (GUARD if guarded else "")


def _events(config: dict, where: str) -> dict:
    hooks = config.get("hooks", {})
    if not isinstance(hooks, dict):
        raise BadShape(f'{where}: "hooks" is not an object')
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise BadShape(f'{where}: "hooks.{event}" is not a list')
        for n, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
                raise BadShape(f'{where}: "hooks.{event}[{n}]" is not a matcher group with a "hooks" list')
    return hooks


def ours(config: dict, where: str = "settings") -> list[tuple[str, str]]:
    """(event, command) of every memstrata handler in the configuration."""
    found = []
    for event, groups in _events(config, where).items():
        for group in groups:
            found += [(event, h.get("command")) for h in group.get("hooks", [])
                      if isinstance(h, dict) and is_ours(h.get("command"))]
    return found


def without_ours(config: dict, where: str = "settings") -> dict:
    """The configuration with every memstrata handler taken out: a group left empty goes, an event
    left without groups goes, and `hooks` goes when nothing is left in it; the rest is untouched."""
    hooks = _events(config, where)
    if not ours(config, where):
        return copy.deepcopy(config)
    result = copy.deepcopy(config)
    kept_events = {}
    for event, groups in hooks.items():
        kept_groups = []
        for group in groups:
            handlers = group.get("hooks", [])
            kept = [h for h in handlers if not (isinstance(h, dict) and is_ours(h.get("command")))]
            if kept or not handlers:
                kept_groups.append({**copy.deepcopy(group), "hooks": copy.deepcopy(kept)} if len(kept) != len(handlers)
                                   else copy.deepcopy(group))
        if kept_groups or not groups:
            kept_events[event] = kept_groups
    if kept_events:
        result["hooks"] = kept_events
    else:
        result.pop("hooks", None)
    return result


def with_ours(config: dict, shipped: dict, program: list[str], root: str | None, where: str = "settings") -> dict:
    """The configuration with memstrata's handlers of `shipped` (a hooks file memstrata ships) in it,
    once each: any earlier memstrata handler is taken out first, then one group per event is appended
    after the user's own. Running it on its own result changes nothing."""
    result = without_ours(config, where)
    hooks = result.setdefault("hooks", {})
    for event, groups in _events(shipped, "the shipped hooks").items():
        for group in groups:
            added = copy.deepcopy(group)
            added["hooks"] = [{**h, "command": command_for(h["command"], program, root)} for h in group["hooks"]]
            hooks.setdefault(event, []).append(added)
    return result
