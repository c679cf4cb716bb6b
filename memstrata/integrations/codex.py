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

from memstrata.integrations import changes, toml_table
from memstrata.integrations.changes import Change, Plan

HOOKS = "openai-codex/hooks.json"


def codex_home(environ: dict) -> Path:
    """$CODEX_HOME, else ~/.codex."""
    return changes.agent_folder(environ, "CODEX_HOME", ".codex")


def server(program: list[str], root: str | None) -> dict:
    return {"command": program[0], "args": [*program[1:], "mcp", *(["--root", root] if root else [])]}


def plan(environ: dict, program: list[str], root: str | None, uninstall: bool) -> Plan:
    config = codex_home(environ) / "config.toml"
    config_text = changes.read_text(config)
    new_config = toml_table.without_table(config_text, str(config)) if uninstall else \
        toml_table.with_table(config_text, server(program, root), str(config))
    file_changes = [
        Change(config, config_text, new_config),
        changes.hooks_change(codex_home(environ) / "hooks.json", HOOKS, program, root, uninstall, drop_empty=True),
        changes.skill_change(changes.home(environ) / ".agents" / "skills" / "memstrata" / "SKILL.md", uninstall),
    ]
    notes = [] if uninstall else [
        "Codex runs a new hook only once you trust it: in Codex, open /hooks and trust memstrata's four hooks "
        "(SessionStart, UserPromptSubmit, Stop, PreCompact); until then they are skipped without a word",
        *_hooks_off(config_text)]
    return Plan(file_changes, [], notes)


def _hooks_off(config_text: str | None) -> list[str]:
    """A note when config.toml turns Codex's hooks off ([features] hooks = false)."""
    data = toml_table.parse(config_text or "", "config.toml") or {}
    features = data.get("features") if isinstance(data.get("features"), dict) else {}
    if features.get("hooks", features.get("codex_hooks")) is False:
        return ["config.toml turns hooks off ([features] hooks = false): memories load and sessions are captured "
                "only once hooks are on"]
    return []
