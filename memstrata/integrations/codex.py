"""`mem setup codex`: memstrata in OpenAI Codex (docs: developers.openai.com/codex/hooks, /codex/skills,
/codex/config-reference).

- the MCP server: `[mcp_servers.memstrata]` in `$CODEX_HOME/config.toml` (else `~/.codex/config.toml`);
- hooks: `plugins/openai-codex/hooks.json` merged into `$CODEX_HOME/hooks.json` (Codex discovers hooks.json
  next to each config layer; the same event -> matcher group -> handler shape as Claude Code's; a
  hooks.json left with nothing but memstrata's is removed by `--uninstall`):
  SessionStart and UserPromptSubmit answer with `mem autoload --hook --json` (Codex reads its
  hookSpecificOutput.additionalContext), Stop and PreCompact run `mem capture --hook`, whose payload
  names the session's rollout file in `transcript_path`;
- the skill: SKILL.md in `~/.agents/skills/memstrata/` (Codex's user skills folder).

Codex runs a hook it has not seen only after the user trusts it in `/hooks` (trust is kept per hook
hash): the set-up says so, and cannot do it for the user.
"""
from __future__ import annotations

from pathlib import Path

from memstrata.errors import InvalidInput
from memstrata.integrations import changes, hooks_config, toml_table
from memstrata.integrations.changes import Change, Plan

HOOKS = "openai-codex/hooks.json"


def codex_home(environ: dict) -> Path:
    """$CODEX_HOME, else ~/.codex."""
    chosen = environ.get("CODEX_HOME")
    return Path(chosen).expanduser() if chosen else _home(environ) / ".codex"


def _home(environ: dict) -> Path:
    return Path(environ.get("HOME") or Path.home())


def server(program: list[str], root: str | None) -> dict:
    return {"command": program[0], "args": [*program[1:], "mcp", *(["--root", root] if root else [])]}


def plan(environ: dict, program: list[str], root: str | None, uninstall: bool) -> Plan:
    home = codex_home(environ)
    config = home / "config.toml"
    config_text = changes.read_text(config)
    new_config = toml_table.without_table(config_text, str(config)) if uninstall else \
        toml_table.with_table(config_text, server(program, root), str(config))
    hooks_file = home / "hooks.json"
    text, data = changes.read_json_object(hooks_file)
    try:
        new = hooks_config.without_ours(data, str(hooks_file)) if uninstall else \
            hooks_config.with_ours(data, hooks_config.template(HOOKS), program, root, str(hooks_file))
    except hooks_config.BadShape as exc:
        raise InvalidInput(f"{exc}: left as it is") from exc
    skill = _home(environ) / ".agents" / "skills" / "memstrata" / "SKILL.md"
    file_changes = [
        Change(config, config_text, new_config),
        Change(hooks_file, text, text if new == data else None if not new else changes.dump_json(new, text)),
        changes.skill_change(skill, uninstall),
    ]
    notes = [] if uninstall else [
        "Codex runs a new hook only once you trust it: in Codex, open /hooks and trust memstrata's four hooks "
        "(SessionStart, UserPromptSubmit, Stop, PreCompact); until then they are skipped without a word",
        *_hooks_off(config_text)]
    return Plan(file_changes, [], notes)


def _hooks_off(config_text: str | None) -> list[str]:
    """A note when config.toml turns Codex's hooks off ([features] hooks = false)."""
    data = toml_table._loads(config_text or "", "config.toml") or {}
    features = data.get("features") if isinstance(data.get("features"), dict) else {}
    if features.get("hooks", features.get("codex_hooks")) is False:
        return ["config.toml turns hooks off ([features] hooks = false): memories load and sessions are captured "
                "only once hooks are on"]
    return []
