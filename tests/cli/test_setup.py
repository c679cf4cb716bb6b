"""`mem setup claude|codex` through the real `mem` on a HOME of the test's own: the user's other settings
kept, a second run changes nothing, a dry run writes nothing, `--uninstall` gives the settings back,
CLAUDE_CONFIG_DIR / CODEX_HOME honoured, nothing but memstrata's entries touched."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MEM = str(Path(sys.executable).parent / "mem")
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd")

SETTINGS = {  # a user's settings.json: keys of every kind, hooks of their own on two of memstrata's events
    "model": "opus",
    "env": {"FOO": "bar"},
    "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(.env)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo pre"}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo welcome"}]}],
    },
    "enabledPlugins": {"formatter@team-tools": True},
    "statusLine": {"type": "command", "command": "~/.claude/status.sh"},
}


def mem(home: Path, *args, env_extra=None, check=True):
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "MEMSTRATA_HOME")}
    env.update({"HOME": str(home), "PATH": "/usr/bin:/bin"}, **(env_extra or {}))
    proc = subprocess.run([MEM, "setup", *args], capture_output=True, text=True, env=env, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def report(proc) -> dict:
    return json.loads(proc.stdout)


def snapshot(folder: Path) -> dict:
    """{relative path: (bytes, mtime_ns)} of every file under a folder (links as their target's text)."""
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def home(tmp_path):
    folder = tmp_path / "home"
    (folder / ".claude").mkdir(parents=True)
    (folder / ".claude" / "settings.json").write_text(json.dumps(SETTINGS, indent=2) + "\n")
    return folder


def test_setup_claude_keeps_the_users_settings_runs_once_and_uninstall_gives_them_back(home):
    settings = home / ".claude" / "settings.json"
    original = settings.read_bytes()
    first = report(mem(home, "claude", "--json"))
    data = json.loads(settings.read_text())
    for key in ("model", "env", "permissions", "enabledPlugins", "statusLine"):
        assert data[key] == SETTINGS[key]
    assert data["hooks"]["PreToolUse"] == SETTINGS["hooks"]["PreToolUse"]
    assert data["hooks"]["SessionStart"][0] == SETTINGS["hooks"]["SessionStart"][0]  # the user's first, untouched
    shipped = json.loads((REPO / "plugins/claude-code/hooks/hooks.json").read_text())["hooks"]
    for event in EVENTS:
        commands = [h["command"] for g in data["hooks"][event] for h in g["hooks"] if "memstrata" in h["command"]
                    or h["command"].startswith(MEM)]
        assert len(commands) == 1, (event, commands)
        expected = shipped[event][0]["hooks"][0]["command"].replace("mem ", f"{MEM} ", 1)
        assert commands[0] == expected, (event, commands[0])
    backups = [Path(row["backup"]) for row in first["files"] if row["backup"]]
    assert [b.read_bytes() for b in backups] == [original]
    skill = home / ".claude/skills/memstrata/SKILL.md"
    assert skill.read_bytes() == (REPO / "SKILL.md").read_bytes()
    assert first["changed"] and first["commands"][0]["argv"][:6] == ["claude", "mcp", "add", "--scope", "user",
                                                                    "memstrata"]

    before = snapshot(home)
    second = report(mem(home, "claude", "--json"))
    assert not second["changed"] and {row["action"] for row in second["files"]} == {"unchanged"}
    assert snapshot(home) == before  # not a byte, not a time, no new backup

    gone = report(mem(home, "claude", "--uninstall", "--json"))
    assert gone["changed"]
    assert json.loads(settings.read_text()) == SETTINGS
    assert not (home / ".claude/skills/memstrata").exists()  # the skill and its folder, no backup needed
    assert not report(mem(home, "claude", "--uninstall", "--json"))["changed"]


def test_a_dry_run_shows_the_diff_and_writes_nothing(home):
    before = snapshot(home)
    proc = mem(home, "claude", "--dry-run")
    assert snapshot(home) == before
    assert f'"command": "{MEM} capture --hook || true"' in proc.stdout  # the diff's added lines
    assert "would update" in proc.stdout and "would create" in proc.stdout and "+name: memstrata" in proc.stdout
    assert "claude mcp add --scope user memstrata --" in proc.stdout


def test_claude_config_dir_is_where_the_settings_go(home, tmp_path):
    other = tmp_path / "work-claude"
    result = report(mem(home, "claude", "--json", env_extra={"CLAUDE_CONFIG_DIR": str(other)}))
    assert [Path(r["path"]).relative_to(other).as_posix() for r in result["files"]] == \
        ["settings.json", "skills/memstrata/SKILL.md"]
    assert json.loads((home / ".claude/settings.json").read_text()) == SETTINGS
    assert "UserPromptSubmit" in json.loads((other / "settings.json").read_text())["hooks"]


def test_memstrata_home_is_written_into_the_commands(home, tmp_path):
    """An agent started from a desktop launcher may not see the shell's MEMSTRATA_HOME: the tree is named."""
    tree = tmp_path / "work-memory"
    result = report(mem(home, "claude", "--json", env_extra={"MEMSTRATA_HOME": str(tree)}))
    assert result["root"] == str(tree)
    hooks = json.loads((home / ".claude/settings.json").read_text())["hooks"]
    assert hooks["Stop"][0]["hooks"][0]["command"] == f"{MEM} capture --hook --root {tree} || true"
    assert result["commands"][0]["argv"][-3:] == ["mcp", "--root", str(tree)]


def test_the_hand_written_recipe_is_replaced_not_doubled(home):
    settings = home / ".claude" / "settings.json"
    settings.write_text(json.dumps({"hooks": {  # the README's recipe before `mem setup`
        "SessionStart": [{"hooks": [{"type": "command", "command": "mem autoload --hook --promote", "timeout": 10}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "mem autoload --hook --promote --budget 1500",
                                         "timeout": 10}]}]}}))
    mem(home, "claude", "--root", str(home / "notes"))
    hooks = json.loads(settings.read_text())["hooks"]
    assert sorted(hooks) == sorted(EVENTS)
    for event in EVENTS:
        [group] = hooks[event]
        [handler] = group["hooks"]
        assert handler["command"].startswith(MEM + " ") and f"--root {home / 'notes'}" in handler["command"]


def test_settings_that_are_no_json_object_are_left_alone(home):
    settings = home / ".claude" / "settings.json"
    for text in ('{"model": "opus",}', '["not", "an", "object"]', '{"hooks": {"Stop": {"command": "x"}}}'):
        settings.write_text(text)
        proc = mem(home, "claude", check=False)
        assert proc.returncode == 2 and proc.stderr.startswith("mem: error: ") and proc.stderr.count("\n") == 1
        assert "left as it is" in proc.stderr
        assert settings.read_text() == text
        assert not (home / ".claude/skills").exists()


def test_a_linked_settings_file_keeps_its_link(home, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude-settings.json"
    (home / ".claude/settings.json").rename(real)
    (home / ".claude/settings.json").symlink_to(real)
    mem(home, "claude")
    assert (home / ".claude/settings.json").is_symlink()
    assert "Stop" in json.loads(real.read_text())["hooks"]


def test_an_enabled_memstrata_plugin_is_not_doubled(home):
    settings = home / ".claude" / "settings.json"
    settings.write_text(json.dumps({"enabledPlugins": {"memstrata@memstrata": True}}))
    proc = mem(home, "claude", check=False)
    assert proc.returncode == 2 and "would run twice" in proc.stderr
    assert json.loads(settings.read_text()) == {"enabledPlugins": {"memstrata@memstrata": True}}


CLAUDE_STAND_IN = '''#!{python}
"""Stands in for the `claude` CLI (not installed here): logs its argv, and keeps user-scope MCP servers in
$HOME/.claude.json as Claude Code does for `claude mcp add|remove --scope user` (docs: mcp, "User scope")."""
import json, os, sys
home = os.environ["HOME"]
with open(os.path.join(home, "claude-calls.log"), "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
path = os.path.join(home, ".claude.json")
data = json.load(open(path)) if os.path.exists(path) else {{}}
args = sys.argv[1:]
if args[:4] == ["mcp", "add", "--scope", "user"]:
    name, rest = args[4], args[args.index("--") + 1:]
    data.setdefault("mcpServers", {{}})[name] = {{"type": "stdio", "command": rest[0], "args": rest[1:], "env": {{}}}}
elif args[:4] == ["mcp", "remove", "--scope", "user"]:
    data.get("mcpServers", {{}}).pop(args[4])
json.dump(data, open(path, "w"))
'''


def test_the_mcp_server_is_added_once_through_the_claude_command(home, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(CLAUDE_STAND_IN.format(python=sys.executable))
    claude.chmod(0o755)
    path = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    first = report(mem(home, "claude", "--json", "--root", str(tmp_path / "tree"), env_extra=path))
    assert [c["status"] for c in first["commands"]] == ["ran"]
    calls = [json.loads(line) for line in (home / "claude-calls.log").read_text().splitlines()]
    assert calls == [["mcp", "add", "--scope", "user", "memstrata", "--", MEM, "mcp", "--root", str(tmp_path / "tree")]]
    assert report(mem(home, "claude", "--json", "--root", str(tmp_path / "tree"), env_extra=path))["commands"] == []
    moved = report(mem(home, "claude", "--json", env_extra=path))  # another root: the server follows
    assert [c["argv"][1:3] for c in moved["commands"]] == [["mcp", "remove"], ["mcp", "add"]]
    report(mem(home, "claude", "--uninstall", "--json", env_extra=path))
    assert json.loads((home / ".claude.json").read_text())["mcpServers"] == {}


CODEX_CONFIG = '''# my Codex settings
model = "gpt-5"
notify = ["notify-send", "Codex"]

[mcp_servers.github]
command = "gh-mcp"
args = ["--stdio"]   # keep this comment

[projects."/home/me/code"]
trust_level = "trusted"
'''


def test_setup_codex_adds_its_table_and_hooks_and_uninstall_gives_the_files_back(tmp_path):
    home = tmp_path / "home"
    codex_home = tmp_path / "codex"
    codex_home.mkdir(parents=True)
    (codex_home / "config.toml").write_text(CODEX_CONFIG)
    user_hooks = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}
    (codex_home / "hooks.json").write_text(json.dumps(user_hooks))
    env = {"CODEX_HOME": str(codex_home)}
    result = report(mem(home, "codex", "--json", env_extra=env))
    assert result["changed"] and any("/hooks" in note for note in result["notes"])
    text = (codex_home / "config.toml").read_text()
    assert text.startswith(CODEX_CONFIG) and text.endswith(f'[mcp_servers.memstrata]\ncommand = "{MEM}"\nargs = ["mcp"]\n')
    import tomllib

    assert tomllib.loads(text)["mcp_servers"]["github"] == {"command": "gh-mcp", "args": ["--stdio"]}
    hooks = json.loads((codex_home / "hooks.json").read_text())["hooks"]
    assert hooks["Stop"][0] == user_hooks["hooks"]["Stop"][0] and len(hooks["Stop"]) == 2
    assert hooks["SessionStart"][0]["hooks"][0]["command"] == f"{MEM} autoload --hook --promote --json || true"
    assert (home / ".agents/skills/memstrata/SKILL.md").read_bytes() == (REPO / "SKILL.md").read_bytes()
    before = snapshot(tmp_path)
    assert not report(mem(home, "codex", "--json", env_extra=env))["changed"]
    assert snapshot(tmp_path) == before
    mem(home, "codex", "--uninstall", env_extra=env)
    assert (codex_home / "config.toml").read_text() == CODEX_CONFIG
    assert json.loads((codex_home / "hooks.json").read_text()) == user_hooks
    assert not (home / ".agents/skills/memstrata").exists()


def test_a_codex_server_written_another_way_is_left_to_the_user(tmp_path):
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    config = 'mcp_servers = { memstrata = { command = "mem", args = ["mcp"] } }\n'
    (codex_home / "config.toml").write_text(config)
    proc = mem(tmp_path / "home", "codex", env_extra={"CODEX_HOME": str(codex_home)}, check=False)
    assert proc.returncode == 2 and "edit it by hand" in proc.stderr
    assert (codex_home / "config.toml").read_text() == config and not (codex_home / "hooks.json").exists()


def test_an_unknown_agent_is_refused(tmp_path):
    proc = mem(tmp_path, "cursor", check=False)
    assert proc.returncode == 2 and "choose one of claude, codex" in proc.stderr
