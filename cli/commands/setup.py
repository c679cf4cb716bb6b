"""`mem setup claude|codex`: memstrata's hooks, MCP server and skill in an agent's settings (memstrata/integrations/)."""
from __future__ import annotations

import sys
from typing import Annotated

import typer
from memstrata.cli.output import JsonOpt, RootOpt, emit


def register(app: typer.Typer) -> None:
    app.command("setup")(setup)


def setup(
    agent: Annotated[str, typer.Argument(help="claude (Claude Code) or codex (OpenAI Codex).", show_default=False)],
    uninstall: Annotated[bool, typer.Option("--uninstall", help="Take memstrata's hooks, server and skill out "
                                                                "again (the rest of the files stays).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change (a diff per file, the commands "
                                                            "it would run); change nothing.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Plug memstrata into an agent in one step: memories at session start and with each prompt, every
    session captured, the MCP server, the skill. Run it again at any time: it changes nothing when all is
    in place. Each file it edits is backed up beside itself first (NAME.memstrata-TIME.bak), and only
    memstrata's own entries are touched.

    claude: the hooks into $CLAUDE_CONFIG_DIR/settings.json (else ~/.claude/settings.json), SKILL.md as
    a personal skill, the MCP server through `claude mcp add --scope user`.
    codex: [mcp_servers.memstrata] in $CODEX_HOME/config.toml (else ~/.codex), the hooks into
    hooks.json there (trust them once in Codex's /hooks), SKILL.md in ~/.agents/skills/.

    --root (else $MEMSTRATA_HOME when set) is written into the commands as the memory tree they use;
    with neither they use ~/memory.

    \b
      mem setup claude --dry-run
      mem setup claude
      mem setup codex --root ~/memory
      mem setup claude --uninstall
    """
    from memstrata.integrations import setup as run_setup

    result = run_setup(agent.strip().lower(), root=root, uninstall=uninstall, dry_run=dry_run)
    emit(as_json, result, lambda: _human(result))
    failed = [c for c in result["commands"] if c["status"].startswith("failed")]
    if failed:
        sys.stderr.write(f"mem: error: {' '.join(failed[0]['argv'][:3])} {failed[0]['status']}\n")
        raise typer.Exit(1)


VERBS = {"create": "created", "update": "updated", "remove": "removed", "unchanged": "unchanged"}
DRY = {"create": "would create", "update": "would update", "remove": "would remove", "unchanged": "unchanged"}


def _human(result: dict) -> None:
    import shlex

    verbs = DRY if result["dry_run"] else VERBS
    for row in result["files"]:
        backup = f" (backup: {row['backup']})" if row.get("backup") else ""
        typer.echo(f"{verbs[row['action']]} {row['path']}{backup}")
        if result["dry_run"] and row["diff"]:
            typer.echo(row["diff"].rstrip("\n"))
    for command in result["commands"]:
        typer.echo(f"{shlex.join(command['argv'])}: {command['status']}")
    if not result["changed"] and not result["dry_run"]:
        pending = any(c["status"].startswith("not run") for c in result["commands"])
        typer.echo("memstrata is " + ("not set up there: nothing to take out" if result["uninstall"]
                                     else f"set up for {result['agent']} already: nothing changed"
                                     + ("; the command above is still yours to run" if pending else "")))
    for note in result["notes"]:
        typer.echo(f"note: {note}")
