"""`mem capture`: the sessions coding agents had, kept as Markdown session entries (docs/capture.md)."""
from __future__ import annotations

import sys
from typing import Annotated, List, Optional

import typer
from memstrata.cli.output import JsonOpt, RootOpt, counted, emit, memory, progress, visible


def register(app: typer.Typer) -> None:
    app.command("capture")(capture)


def capture(
    paths: Annotated[Optional[List[str]], typer.Argument(
        help="Transcripts to capture: Claude Code session files, Codex rollout files, plain JSONL "
             "({role, text, timestamp, session} a line), or folders of them (*.jsonl).")] = None,
    agent: Annotated[Optional[str], typer.Option("--agent", help="The format of the files given: claude-code, "
                                                                   "codex or jsonl (default: told by their lines).")] = None,
    codex: Annotated[bool, typer.Option("--codex", help="Capture Codex CLI's sessions on this machine "
                                                        "($CODEX_HOME, else ~/.codex: sessions/, archived_sessions/).")] = False,
    claude: Annotated[bool, typer.Option("--claude", help="Capture Claude Code's sessions on this machine "
                                                          "($CLAUDE_CONFIG_DIR, else ~/.claude: projects/).")] = False,
    since: Annotated[Optional[str], typer.Option("--since", help="With --codex / --claude: only transcripts "
                                                                 "changed on or after this date (ISO 8601).")] = None,
    hook: Annotated[bool, typer.Option("--hook", help="Run as an agent's hook: read the hook's JSON (stdin, or "
                                                      "Codex notify's argument), leave a notice and return at once; "
                                                      "the capture runs in the background. Always exits 0.")] = False,
    drain: Annotated[bool, typer.Option("--drain", help="Capture what the hooks' notices name, now "
                                                        "(what a hook starts in the background).")] = False,
    forget: Annotated[Optional[str], typer.Option("--forget", metavar="SESSION",
                                                  help="Remove a captured session everywhere (its id, the first "
                                                       "characters of it, or its entry's id): to the trash, "
                                                       "index included; it is not captured again.")] = None,
    purge: Annotated[bool, typer.Option("--purge", help="With --forget: delete it at once, not through the "
                                                        "trash (full texts, versions, old index versions too).")] = False,
    status: Annotated[bool, typer.Option("--status", help="What is waiting, the last capture's report, the settings.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Capture the sessions coding agents write (Claude Code, Codex CLI, a plain JSONL) as Markdown
    entries under sessions/<project>/, one per session, turn by turn, with no LLM: the user's
    prompts and the assistant's prose with their timestamps, each tool call as one line; never
    tool output, thinking or images; credentials redacted in place. Only what is new is written,
    however often it runs (docs/capture.md).

    Examples:

    \b
      mem capture ~/.claude/projects/-home-me-app/2f1c....jsonl
      mem capture --codex --since 2026-11-01
      mem capture --hook            # in a Claude Code Stop/SessionEnd/PreCompact hook
      mem capture --forget 2f1c --purge
    """
    from memstrata.errors import InvalidInput

    modes = [name for name, on in (("PATH", bool(paths) and not hook), ("--codex", codex), ("--claude", claude),
                                   ("--drain", drain), ("--forget", forget is not None), ("--status", status),
                                   ("--hook", hook)) if on]
    if len(modes) > 1:
        raise InvalidInput(f"give one of PATH, --codex, --claude, --drain, --forget, --status, --hook (not "
                           f"{' and '.join(modes)})")
    if purge and forget is None:
        raise InvalidInput("--purge goes with --forget SESSION")
    if since is not None and not (codex or claude):
        raise InvalidInput("--since goes with --codex or --claude")
    m = memory(root)
    if hook:  # reached only when the fast path did not run (cli/app.main hands --hook to capture/hook.py)
        from memstrata.capture.hook import run

        raise typer.Exit(run(["capture", "--hook", *(paths or []), *(["--json"] if as_json else []),
                              *(["--root", root] if root else [])]))
    if status:
        result = m.capture_status()
        emit(as_json, result, lambda: _status(result))
        return
    if forget is not None:
        result = m.capture_forget(forget, purge=purge)
        what = "deleted for good" if result["purged"] else "moved to the trash (mem trash; mem restore ID)"
        emit(as_json, result, f"forgot session {result['session']} ({result['agent']}): "
                              f"{counted(len(result['entries']), 'entry', 'entries')} {what}; it is not captured again")
        return
    shown = progress("capturing", as_json)
    if drain:
        result = m.capture_drain(progress=shown)
    elif codex or claude:
        result = m.capture_agent("codex" if codex else "claude", since=since, progress=shown)
    elif paths:
        result = m.capture(paths, agent=agent, progress=shown)
    else:
        result = m.capture_drain(progress=shown)
    emit(as_json, result, lambda: _report(result))
    if result["errors"] and not result["turns"] and not result["unchanged"] and not result["files"]:
        first = result["errors"][0]
        sys.stderr.write(f"mem: error: nothing captured: {first['file']}: {first['error']}\n")
        raise typer.Exit(2)


def _report(result: dict) -> None:
    if result.get("busy") and not result["files"]:
        typer.echo("another capture is running; it takes the waiting transcripts")
        return
    head = (f"captured {counted(result['turns'], 'new turn')} in {counted(result['sessions'], 'session')}"
            + (f" ({result['new_sessions']} new)" if result["new_sessions"] else "")
            + (f", {counted(result['extended'], 'turn')} grown" if result["extended"] else "")
            + f" from {counted(result['files'], 'transcript')}"
            + (f"; {result['unchanged']} unchanged" if result["unchanged"] else ""))
    typer.echo(head)
    for entry in result["entries"][:20]:
        typer.echo(f"  {entry['path']}  ({counted(int(entry['turns'] or 0), 'turn')})")
    if len(result["entries"]) > 20:
        typer.echo(f"  ... and {len(result['entries']) - 20} more (--json lists them)")
    _used(result.get("used") or [])
    if result["skipped"]:
        typer.echo("lines not kept: " + ", ".join(f"{n} {reason}" for reason, n in result["skipped"].items()))
    for item in result["skipped_files"][:10]:
        typer.echo(f"skipped {item['file']}: {item['reason']}")
    for warning in result["warnings"]:
        typer.echo(f"warning: {warning}", err=True)
    for error in result["errors"][:10]:
        typer.echo(f"error: {error['file']}: {error['error']}", err=True)


def _used(used: list) -> None:
    """The memories the session was shown that its replies used: counted as uses, some back hot."""
    if used:
        typer.echo(f"the replies used {counted(len(used), 'memory', 'memories')} the session was shown (a use each):")
    for row in used[:20]:
        back = f"  (back hot and whole from {visible(row['promoted_from'])})" if row.get("promoted_from") else ""
        typer.echo(f"  {visible(row['id'])}  {visible(' '.join(str(row['title']).split()))}{back}")


def _status(result: dict) -> None:
    last = result.get("last") or {}
    typer.echo(f"capture into {result['category']}/ ({'allowed' if result['allowed'] else 'refused: an adopted vault'}); "
               f"team sync of sessions: {'on' if result['team_sync'] else 'off'}"
               + (f"; excluded: {result['exclude']}" if result["exclude"] else ""))
    typer.echo(f"{counted(result['pending'], 'notice')} waiting, {counted(result['transcripts_read'], 'transcript')} "
               f"read so far, {counted(result['forgotten'], 'session')} forgotten")
    if last:
        typer.echo(f"last capture: {last.get('turns', 0)} new turns in {last.get('sessions', 0)} sessions, "
                   f"{len(last.get('errors') or [])} errors" + (f" (first: {last['errors'][0]['file']}: "
                                                                 f"{last['errors'][0]['error']})" if last.get("errors") else ""))
    held = last.get("recent_uses")
    recent = [r for r in held if isinstance(r, dict) and r.get("id")] if isinstance(held, list) else []
    if recent:
        typer.echo("memories the captured replies used lately (a use each):")
        for row in reversed(recent):
            back = f", back hot from {visible(row['promoted_from'])}" if row.get("promoted_from") else ""
            typer.echo(f"  {visible(str(row.get('at') or '')[:16])}  {visible(row['id'])}  {visible(' '.join(str(row.get('title') or '').split()))}{back}")
