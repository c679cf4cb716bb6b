"""`mem setup claude`: the Claude Code plugin's parts put where every Claude Code version reads them.

- hooks: the plugin's `hooks/hooks.json` merged into the user settings, `$CLAUDE_CONFIG_DIR/settings.json`
  (else `~/.claude/settings.json`; docs: code.claude.com settings, "Hook locations"), with `mem` as the
  absolute path of this installation, so the hooks work whatever PATH Claude Code starts with;
- the skill: SKILL.md as a personal skill, `<config dir>/skills/memstrata/SKILL.md` (docs: skills,
  "Where skills live");
- the MCP server: `claude mcp add --scope user memstrata -- <mem> mcp` (Claude Code keeps user MCP
  servers in `.claude.json`, which "it writes for itself; you don't need to edit it": docs, settings).

Why not install the plugin itself: a `directory` marketplace declared in settings.json is not always
added (anthropics/claude-code#17988) nor its plugin enabled (#17832), and a skills-directory plugin needs
a Claude Code of August 2026 or newer; the settings route works on every version with hooks, and the
plugin stays available for `/plugin marketplace add` (docs/agents.md).
"""
from __future__ import annotations

import json
from pathlib import Path

from memstrata.errors import InvalidInput
from memstrata.integrations import changes
from memstrata.integrations.changes import Plan

HOOKS = "claude-code/hooks/hooks.json"
SERVER = "memstrata"


def config_dir(environ: dict) -> Path:
    """Claude Code's configuration folder: $CLAUDE_CONFIG_DIR, else ~/.claude."""
    return changes.agent_folder(environ, "CLAUDE_CONFIG_DIR", ".claude")


def user_state(environ: dict) -> Path:
    """Where Claude Code keeps user-scope MCP servers (read here, never written)."""
    chosen = environ.get("CLAUDE_CONFIG_DIR")
    return Path(chosen).expanduser() / ".claude.json" if chosen else changes.home(environ) / ".claude.json"


def plan(environ: dict, program: list[str], root: str | None, uninstall: bool) -> Plan:
    settings = config_dir(environ) / "settings.json"
    if not uninstall:
        _refuse_when_the_plugin_is_enabled(changes.read_json_object(settings)[1], settings)
    file_changes = [changes.hooks_change(settings, HOOKS, program, root, uninstall),
                    changes.skill_change(config_dir(environ) / "skills" / "memstrata" / "SKILL.md", uninstall)]
    notes = [] if uninstall else ["start a new Claude Code session (or run /hooks) to load the hooks"]
    return Plan(file_changes, mcp_commands(environ, program, root, uninstall), notes)


def _refuse_when_the_plugin_is_enabled(data: dict, settings: Path) -> None:
    enabled = data.get("enabledPlugins")
    names = [name for name, on in (enabled.items() if isinstance(enabled, dict) else [])
             if on is True and str(name).split("@")[0] == "memstrata"]
    if names:
        raise InvalidInput(f"the memstrata plugin ({names[0]}) is enabled in {settings}: its hooks would run twice; "
                           f"keep the plugin, or `claude plugin uninstall {names[0]}` and run mem setup claude again")


def registered(environ: dict) -> dict | None:
    """memstrata's user-scope MCP server as Claude Code holds it, or None."""
    try:
        data = json.loads(user_state(environ).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    server = servers.get(SERVER) if isinstance(servers, dict) else None
    return server if isinstance(server, dict) else None


def mcp_commands(environ: dict, program: list[str], root: str | None, uninstall: bool) -> list[list[str]]:
    """The `claude mcp` calls that leave memstrata's server registered as wanted (none when it is)."""
    args = [*program[1:], "mcp", *(["--root", root] if root else [])]
    current = registered(environ)
    remove = ["claude", "mcp", "remove", "--scope", "user", SERVER]
    if uninstall:
        return [remove] if current is not None else []
    if current is not None and current.get("command") == program[0] and current.get("args", []) == args:
        return []
    return ([remove] if current is not None else []) + [["claude", "mcp", "add", "--scope", "user", SERVER, "--",
                                                         program[0], *args]]
