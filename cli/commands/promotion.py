"""`mem promote` and `mem autoload` (with the Claude Code hook mode)."""
from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer
from memstrata.cli.output import JsonOpt, RootOpt, counted, emit, memory, table, utf8_stdout


def register(app: typer.Typer) -> None:
    app.command("promote")(promote)
    app.command("autoload")(autoload)


def promote(
    context: Annotated[Optional[str], typer.Option("--context", help="The task or prompt the memories should serve.")] = None,
    threshold: Annotated[Optional[float], typer.Option("--threshold",
                         help="Promote every entry at least this similar, and nothing else (default: "
                              "the calibrated rule, docs/hooks.md).")] = None,
    layer: Annotated[str, typer.Option("--layer", help="Tiers to promote from, comma-separated.")] = "cold,archive",
    max_count: Annotated[Optional[int], typer.Option("--max", help="At most this many (default: promote_max).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would come back; change nothing.")] = False,
    last_session: Annotated[bool, typer.Option(
        "--last-session", help="The task is what the project's last captured session asked (what a session "
                               "start runs in the background; docs/hooks.md).")] = False,
    cwd: Annotated[Optional[str], typer.Option("--cwd", help="With --last-session: the project's folder "
                                                              "(default: the current one).")] = None,
    session: Annotated[Optional[str], typer.Option("--session", help="With --last-session: the session "
                                                   "starting now (never its own last session; its next "
                                                   "prompt injects what came back).")] = None,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Bring the cold and archived memories the current task needs back to hot (full text, out of archived/).

    Examples:

    \b
      mem promote --context "fix the login bug in alpha's auth service" --dry-run
      mem promote --last-session --cwd ~/src/alpha --dry-run
    """
    from memstrata.errors import InvalidInput

    if last_session:
        if context is not None or threshold is not None or max_count is not None or layer != "cold,archive":
            raise InvalidInput("--last-session takes its task from the last session: give no --context, "
                               "--threshold, --layer or --max with it")
        _promote_last_session(memory(root), cwd, session, dry_run, as_json)
        return
    if cwd is not None or session is not None:
        raise InvalidInput("--cwd and --session go with --last-session (the task of a project's last session)")
    if context is None:
        raise InvalidInput("give --context (the task or prompt) or --last-session")
    result = memory(root).promote(context, threshold=threshold, layers=layer, max_count=max_count, dry_run=dry_run)

    def human():
        layers, rule = "/".join(result["layers"]), result["rule"]
        if not result["promoted"]:
            typer.echo(f"no {layers} entry comes back for this context (rule: {rule})")
            return
        verb = "would promote" if dry_run else "promoted"
        typer.echo(f"{verb} {len(result['promoted'])} of the {counted(result['candidates'], layers + ' entry', layers + ' entries')} "
                   f"close to the context (rule: {rule})")
        table(result["promoted"], ["id", "title", "similarity", "from_tier", "path"])

    emit(as_json, result, human)


def _promote_last_session(mem, cwd: str | None, session: str | None, dry_run: bool, as_json: bool) -> None:
    import os

    result = mem.promote_last_session(os.path.abspath(os.path.expanduser(cwd)) if cwd else os.getcwd(),
                                      session_id=session, dry_run=dry_run)

    def human():
        project = ", ".join(result["project"]) or "no project"
        last = result["last_session"]
        if last is None:
            typer.echo(f"{project}: no captured session to go on from")
            return
        verb = "would promote" if dry_run else "promoted"
        typer.echo(f"{project}: last session {last['title']!r} ({last['id']}), {counted(len(result['prompts']), 'prompt')}; "
                   f"{verb} {len(result['promoted'])}")
        table(result["promoted"], ["id", "title", "similarity", "from_tier", "path"])

    emit(as_json, result, human)


def autoload(
    context: Annotated[Optional[str], typer.Option("--context", help="The task or prompt ('-' reads stdin).")] = None,
    context_file: Annotated[Optional[str], typer.Option("--context-file", help="Read the context from a file.")] = None,
    promote_first: Annotated[bool, typer.Option("--promote", help="Promote relevant old memories first.")] = False,
    budget: Annotated[Optional[int], typer.Option("--budget", help="Token budget (default: autoload_budget, 2000).")] = None,
    hook: Annotated[bool, typer.Option("--hook", help="Read Claude Code's hook JSON on stdin; never fail.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """What an agent should start with, as one Markdown block: for a task (--context), the memories
    relevant to it; with no context (a session start), the recent and weighty ones of every tier.

    Examples:

    \b
      mem autoload --context "plan the alpha release" --budget 1500
      echo '{"prompt": "why did we pick postgres?"}' | mem autoload --hook --promote
    """
    if hook:
        _autoload_hook(promote_first, budget, root, as_json)
        return
    from memstrata.cli.output import read_body

    from memstrata.errors import InvalidInput

    if context is not None and context_file is not None:
        raise InvalidInput("give --context or --context-file, not both")
    text = read_body(context, context_file, allow_empty=True) if (context == "-" or context_file) else context
    result = memory(root).autoload(text, promote=promote_first, budget=budget)
    emit(as_json, result.to_dict(), lambda: typer.echo(result.markdown() or "(no memories to load)\n", nl=False))


def _autoload_hook(promote_first: bool, budget: int | None, root: str | None, as_json: bool) -> None:
    """Hook mode: context from Claude Code's JSON (features/hook_call.py); on any error print nothing
    and exit 0.

    A prompt (UserPromptSubmit) gets only the relevant memories that clear the cut-off and were
    not injected earlier in the same session (`session_id`), and what the session start brought back;
    a session start gets the session-start list (no model: features/start_block.py), then, with
    `--promote`, starts the promotion for the project's last session (features/start_work.py)."""
    from memstrata.features import hook_call

    try:
        call = hook_call.parse(hook_call.read_raw(sys.stdin.buffer))
        if call is None:
            return
        mem = memory(root)
        result = mem.autoload(call.context, promote=promote_first and call.context is not None,
                              budget=budget, hot=call.context is None, session_id=call.session, cwd=call.cwd)
        sys.stdout.write(hook_call.output(call, result.markdown(), as_json, ascii_only=not utf8_stdout()))
        if promote_first and call.context is None:  # what the last session needs, in the background
            sys.stdout.flush()
            from memstrata.features.start_work import after_start

            after_start(mem.root, mem.state.catalog, mem.settings, call)
    except BaseException:  # noqa: BLE001 - a hook must never block or break the agent
        return
