"""The files `mem setup` changes: planned first (a dry run shows them as diffs), then written each
atomically, each after a backup of what it replaces.

A file is written where it really is: a settings.json that is a link (a dotfiles repository) keeps its
link and gets its target written. A file that changed between the plan and the write (the agent saved
its settings meanwhile) is left as it is and the run stops, asking to run again.
"""
from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from memstrata.errors import InvalidInput

NEW_FILE_MODE = 0o600


@dataclass
class Change:
    """One file: `before` (None: absent), `after` (None: to remove); `own_folder`: the folder holding
    it is memstrata's (a skill's), removed with the file when nothing else is left in it; `backup`:
    False for a file that holds exactly what memstrata ships (nothing of the user's to keep)."""

    path: Path
    before: str | None
    after: str | None
    own_folder: bool = False
    backup: bool = True

    @property
    def action(self) -> str:
        if self.before == self.after:
            return "unchanged"
        if self.before is None:
            return "create"
        return "remove" if self.after is None else "update"

    def diff(self) -> str:
        if self.action == "unchanged":
            return ""
        name = str(self.path)
        return "".join(difflib.unified_diff((self.before or "").splitlines(True), (self.after or "").splitlines(True),
                                            fromfile=name if self.before is not None else "/dev/null",
                                            tofile=name if self.after is not None else "/dev/null"))


def read_text(path: Path) -> str | None:
    """A file's text, None when there is none (a link to nowhere counts as none)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path} is not UTF-8 text: left as it is") from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from exc


def read_json_object(path: Path) -> tuple[str | None, dict]:
    """(text, parsed object) of a JSON settings file; ({} when absent). Anything but a JSON object is
    refused, never rewritten."""
    text = read_text(path)
    if text is None or not text.strip():
        return text, {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}): left as it is; "
                           f"fix it and run again") from exc
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a JSON object: left as it is")
    return text, data


def dump_json(data: dict, like: str | None) -> str:
    """JSON text in the indentation the file already uses (2 spaces when new), ending with a newline."""
    indent = 2
    for line in (like or "").splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(line) > len(stripped):
            indent = len(line) - len(stripped)
            break
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


def apply(changes: list[Change], stamp: str) -> list[dict]:
    """Write every change; returns one report row per file: path, action, backup (or None)."""
    from memstrata.storage.atomic import ChangedMeanwhile, atomic_write_text

    rows = []
    for change in changes:
        row = {"path": str(change.path), "action": change.action, "backup": None}
        rows.append(row)
        if change.action == "unchanged":
            continue
        target = Path(os.path.realpath(change.path))
        if change.before is not None and read_text(target) != change.before:
            raise InvalidInput(f"{change.path} changed while mem setup ran: nothing more written; run it again")
        if change.before is not None and change.backup:
            backup = target.with_name(f"{target.name}.memstrata-{stamp}.bak")
            mode = target.stat().st_mode & 0o777
            atomic_write_text(backup, change.before, mode=mode)
            row["backup"] = str(backup)
        if change.after is None:
            Path(change.path).unlink()  # a link goes, not what it points to
            if change.own_folder:
                _remove_empty_dir(Path(change.path).parent)
            continue
        mode = (target.stat().st_mode & 0o777) if change.before is not None else NEW_FILE_MODE
        try:
            atomic_write_text(target, change.after, mode=mode,
                              unchanged=lambda t=target, b=change.before: read_text(t) == b)
        except ChangedMeanwhile as exc:
            raise InvalidInput(f"{change.path} changed while mem setup ran: left as it is; run it again") from exc
    return rows


def _remove_empty_dir(folder: Path) -> None:
    try:
        folder.rmdir()  # only when empty (a skill's own folder)
    except OSError:
        pass


@dataclass
class Plan:
    """What a set-up changes: files, the agent's own commands to run (argv lists), notes for people."""

    changes: list[Change]
    commands: list[list[str]]
    notes: list[str]


def home(environ: dict) -> Path:
    return Path(environ.get("HOME") or Path.home())


def agent_folder(environ: dict, variable: str, default: str) -> Path:
    """An agent's configuration folder: $VARIABLE (CLAUDE_CONFIG_DIR, CODEX_HOME), else ~/DEFAULT."""
    chosen = environ.get(variable)
    return Path(chosen).expanduser() if chosen else home(environ) / default


def hooks_change(path: Path, shipped: str, program: list[str], root: str | None, uninstall: bool,
                 drop_empty: bool = False) -> Change:
    """A JSON file holding a `hooks` section (settings.json, hooks.json) with memstrata's hooks of the
    shipped file `shipped` put in (or taken out); `drop_empty`: a file left empty is removed."""
    from memstrata.integrations import hooks_config

    text, data = read_json_object(path)
    try:
        new = hooks_config.without_ours(data, str(path)) if uninstall else \
            hooks_config.with_ours(data, hooks_config.template(shipped), program, root, str(path))
    except hooks_config.BadShape as exc:
        raise InvalidInput(f"{exc}: left as it is") from exc
    after = text if new == data else None if (drop_empty and not new) else dump_json(new, text)
    return Change(path, text, after)


def skill_change(path: Path, uninstall: bool) -> Change:
    """SKILL.md at `path`: the shipped one written (install) or taken out (uninstall); a file that is
    not exactly the shipped one is backed up first."""
    shipped, before = shipped_skill(), read_text(path)
    return Change(path, before, None if uninstall else shipped, own_folder=True, backup=before != shipped)


def shipped_skill() -> str:
    """The SKILL.md memstrata ships (the repository's SKILL.md, in the Claude Code plugin)."""
    from importlib import resources

    return resources.files("memstrata.plugins").joinpath("claude-code", "skills", "memstrata", "SKILL.md") \
        .read_text(encoding="utf-8")
