"""Commands for agents: mcp (the MCP server), daily, share, export."""
from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer
from memstrata.cli.output import JsonOpt, RootOpt, counted, emit, memory


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
    app.command("daily")(daily)
    app.command("share")(share)
    app.command("export")(export)  # `mem import` lives with recall (cli/commands/recall.py)


def mcp(
    root: RootOpt = None,
    no_warm: Annotated[bool, typer.Option("--no-warm", help="Do not load the model until the first call.")] = False,
    http: Annotated[bool, typer.Option("--http", help="Serve over streamable HTTP (bearer token) instead of "
                                                      "stdio.")] = False,
    host: Annotated[str, typer.Option("--host", help="With --http: the address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="With --http: the port (0: any free one).")] = 8765,
):
    """Serve the memory over MCP (stdio): write, recall, read, list, update, delete, restore, history,
    autoload, promote, maintain, daily.

    Add it to an agent, e.g. Claude Code:

    \b
      claude mcp add memstrata -- mem mcp
      claude mcp add memstrata -- mem mcp --root ~/memory

    Over HTTP for agents without a clone (a bearer token; docs/team.md):

    \b
      mem mcp --http --port 8765
      claude mcp add --transport http memstrata http://127.0.0.1:8765/mcp --header "Authorization: Bearer TOKEN"
    """
    if http:
        from memstrata.cli.commands.team import mcp_http

        return mcp_http(root, host, port, warm=not no_warm)
    from memstrata.mcp.server import serve

    serve(root, warm=not no_warm)


def daily(
    text: Annotated[str, typer.Argument(help="The note; '-' reads stdin.")],
    share_: Annotated[bool, typer.Option("--share", help="Also copy the day's note into the shared space.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Append a note to today's daily note, daily/YYYY-MM-DD.md (created on first use).

    Example: mem daily "Fixed the login bug; next: rate limits"
    """
    from memstrata.cli.output import read_body

    result = memory(root).daily(read_body(text, None), share=share_)
    emit(as_json, result.to_dict(), lambda: typer.echo(f"{result.message} [{result.id}]"))


def share(
    ref: Annotated[str, typer.Argument(help="Entry id or path to copy into the shared space.")],
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Copy an entry into the shared space (shared_root in config.md, or $MEMSTRATA_SHARED).

    Example: mem share 3f2a9c1b7d4e
    """
    result = memory(root).share(ref)
    emit(as_json, result, f"shared as {result.get('path')} in {result.get('root')} "
                          f"({result.get('action')}, agent {result.get('agent')})")


def export(
    file: Annotated[Optional[str], typer.Argument(help="Output file (default: stdout).")] = None,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="JSON lines, one entry per line (the only format).")] = True,
    root: RootOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="With a FILE: print the result (entries, path) as one "
                                                         "JSON document. To stdout the export itself is JSON "
                                                         "Lines, and the count goes to stderr.")] = False,
):
    """Export every entry as JSON lines (frontmatter fields, category, path, body).

    `mem import` of that file into an empty root gives the same entries and frontmatter.

    \b
      mem export --jsonl backup.jsonl
      mem export --jsonl > backup.jsonl
    """
    from memstrata.errors import InvalidInput

    if not jsonl:
        raise InvalidInput("JSONL is the only export format (--jsonl)")
    m = memory(root)
    if file in (None, "-") or _is_own_stdout(file):
        result = m.export_jsonl(sys.stdout)
        if as_json:
            sys.stderr.write(f"exported {counted(result['entries'], 'entry', 'entries')}\n")
        return
    result = m.export_jsonl(file)
    emit(as_json, result, f"exported {counted(result['entries'], 'entry', 'entries')} to {result['path']}")


def _is_own_stdout(path: str) -> bool:
    """Whether `path` (/dev/stdout, /proc/self/fd/1, a link to them) is this process's standard output:
    opened again it starts at offset 0 of a redirected file, and the export and the closing message
    overwrote each other's first bytes."""
    import os

    try:
        return os.path.samestat(os.stat(os.path.expanduser(path)), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):
        return False
