"""The plugin files against the formats their agents document (read 2026-12 from the Claude Code docs,
code.claude.com/docs/en/{plugins-reference,plugin-marketplaces,hooks,skills}, and Codex's,
developers.openai.com/codex/hooks with the hook input schemas of openai/codex codex-rs/hooks/schema):
manifest and marketplace fields, hook events and handler fields, the MCP server, the skill."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import yaml

import memstrata

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "plugins" / "claude-code"

# plugins-reference, "Plugin manifest schema": every field a plugin.json may hold
MANIFEST_FIELDS = {"$schema", "name", "displayName", "version", "description", "author", "homepage", "repository",
                   "license", "keywords", "metadata", "defaultEnabled", "skills", "commands", "agents", "workflows",
                   "hooks", "mcpServers", "outputStyles", "lspServers", "experimental", "userConfig", "channels",
                   "dependencies"}
# plugin-marketplaces, "Marketplace schema": names reserved for Anthropic
RESERVED = {"claude-code-marketplace", "claude-code-plugins", "claude-plugins-official", "claude-plugins-community",
            "claude-community", "anthropic-marketplace", "anthropic-plugins", "agent-skills", "anthropic-agent-skills",
            "knowledge-work-plugins", "life-sciences", "claude-for-legal", "claude-for-financial-services",
            "financial-services-plugins", "first-party-plugins", "healthcare"}
# hooks reference: the events memstrata uses are among the oldest (SessionEnd and PreCompact since mid-2025)
CLAUDE_EVENTS = {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"}
# hooks reference, "Hook handler fields": common and command fields
HANDLER_FIELDS = {"type", "command", "args", "async", "asyncRewake", "shell", "timeout", "statusMessage", "if", "once"}
# openai/codex codex-rs/hooks/schema/generated/*.command.input.schema.json: the events Codex runs
CODEX_EVENTS = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "PreCompact",
                "PostCompact", "Stop", "StopFailure", "SubagentStart", "SubagentStop"}
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_manifest_names_the_plugin_and_holds_only_documented_fields():
    manifest = load(PLUGIN / ".claude-plugin" / "plugin.json")
    assert set(manifest) <= MANIFEST_FIELDS
    assert KEBAB.match(manifest["name"]) and manifest["name"] == "memstrata"
    assert manifest["version"] == memstrata.__version__  # pinned: users get an update only when it changes
    assert isinstance(manifest["keywords"], list) and isinstance(manifest["author"], dict) and manifest["author"]["name"]
    # no component path fields: hooks/hooks.json, .mcp.json and skills/ are found where documented
    assert not {"hooks", "mcpServers", "skills", "commands", "agents"} & set(manifest)


def test_the_marketplace_lists_the_plugin_by_a_relative_path():
    market = load(REPO / ".claude-plugin" / "marketplace.json")
    assert KEBAB.match(market["name"]) and market["name"] not in RESERVED and market["owner"]["name"]
    [entry] = market["plugins"]
    assert entry["name"] == load(PLUGIN / ".claude-plugin" / "plugin.json")["name"]
    assert entry["source"].startswith("./") and ".." not in entry["source"]
    assert (REPO / entry["source"]).resolve() == PLUGIN.resolve()


def _check_hooks(config: dict, events: set[str], root_fields: set[str]) -> dict[str, str]:
    assert set(config) <= root_fields and isinstance(config["description"], str)
    commands = {}
    for event, groups in config["hooks"].items():
        assert event in events, event
        [group] = groups
        assert set(group) == {"hooks"}  # no matcher: every source / trigger / reason
        [handler] = group["hooks"]
        assert set(handler) <= HANDLER_FIELDS and handler["type"] == "command"
        assert isinstance(handler["timeout"], int) and 0 < handler["timeout"] <= 10
        assert handler["command"].startswith("mem ") and handler["command"].endswith(" || true")
        commands[event] = handler["command"]
    return commands


def test_the_claude_code_hooks_use_documented_events_and_fields():
    commands = _check_hooks(load(PLUGIN / "hooks" / "hooks.json"), CLAUDE_EVENTS, {"description", "hooks"})
    assert set(commands) == CLAUDE_EVENTS
    assert {commands[e] for e in ("Stop", "PreCompact", "SessionEnd")} == {"mem capture --hook || true"}
    assert commands["SessionStart"].startswith("mem autoload --hook")
    assert commands["UserPromptSubmit"].startswith("mem autoload --hook")


def test_the_codex_hooks_use_codex_events_and_answer_in_json():
    # developers.openai.com/codex/hooks: a hooks.json root holds only `description` and `hooks`
    commands = _check_hooks(load(REPO / "plugins" / "openai-codex" / "hooks.json"), CODEX_EVENTS,
                            {"description", "hooks"})
    assert set(commands) == {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact"}
    assert "--json" in commands["SessionStart"] and "--json" in commands["UserPromptSubmit"]


def test_the_mcp_server_is_mem_mcp():
    servers = load(PLUGIN / ".mcp.json")["mcpServers"]
    assert servers == {"memstrata": {"command": "mem", "args": ["mcp"]}}


def test_the_plugins_skill_is_the_repositorys_skill():
    skill = PLUGIN / "skills" / "memstrata" / "SKILL.md"
    # a link inside the marketplace (the repository): a marketplace install copies its target's text
    assert skill.is_symlink() and not os.path.isabs(os.readlink(skill))
    assert skill.resolve() == (REPO / "SKILL.md").resolve() and REPO.resolve() in skill.resolve().parents
    text = skill.read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---")[1])
    assert front["name"] == "memstrata" and set(front) <= {"name", "description", "when_to_use", "license", "metadata"}
    assert 50 < len(front["description"]) <= 1536  # skills reference: the listing cuts description at 1,536


def test_only_memstrata_hook_commands_are_taken_for_memstrata():
    """What `mem setup` replaces and `--uninstall` removes: memstrata's hook commands in any spelling,
    never a user's command that merely mentions mem."""
    from memstrata.integrations.hooks_config import is_ours

    ours = ["mem autoload --hook --promote", "/x/bin/mem capture --hook || true", "memstrata capture --hook",
            "'/a b/mem' capture --hook --root '/c d' || true", "/py -m memstrata.cli.app autoload --hook --json"]
    theirs = ["mem recall x", "echo mem autoload --hook", "mem autoload --context x", "memo capture --hook",
              "notify-send done", 'mem "unclosed', None, 5]
    assert [is_ours(c) for c in ours] == [True] * len(ours)
    assert [is_ours(c) for c in theirs] == [False] * len(theirs)
