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
    context: Annotated[str, typer.Option("--context", help="The task or prompt the memories should serve.")],
    threshold: Annotated[Optional[float], typer.Option("--threshold",
                         help="Promote every entry at least this similar, and nothing else (default: "
                              "the calibrated rule, docs/hooks.md).")] = None,
    layer: Annotated[str, typer.Option("--layer", help="Tiers to promote from, comma-separated.")] = "cold,archive",
    max_count: Annotated[Optional[int], typer.Option("--max", help="At most this many (default: promote_max).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would come back; change nothing.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Bring the cold and archived memories the current task needs back to hot (full text, out of archived/).

    Example: mem promote --context "fix the login bug in alpha's auth service" --dry-run
    """
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


def autoload(
    context: Annotated[Optional[str], typer.Option("--context", help="The task or prompt ('-' reads stdin).")] = None,
    context_file: Annotated[Optional[str], typer.Option("--context-file", help="Read the context from a file.")] = None,
    promote_first: Annotated[bool, typer.Option("--promote", help="Promote relevant old memories first.")] = False,
    budget: Annotated[Optional[int], typer.Option("--budget", help="Token budget (default: autoload_budget, 2000).")] = None,
    hook: Annotated[bool, typer.Option("--hook", help="Read Claude Code's hook JSON on stdin; never fail.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """What an agent should start with: relevant and hot memories as one Markdown block.

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
    emit(as_json, result.to_dict(), lambda: typer.echo(result.markdown() or "(no memories to load)", nl=False))


def _autoload_hook(promote_first: bool, budget: int | None, root: str | None, as_json: bool) -> None:
    """Hook mode: context from Claude Code's JSON (features/hook_call.py); on any error print nothing
    and exit 0.

    A prompt (UserPromptSubmit) gets only the relevant memories that clear the cut-off and were
    not injected earlier in the same session (`session_id`); a session start gets the session-start
    list (no model: features/start_block.py)."""
    from memstrata.features import hook_call

    try:
        call = hook_call.parse(hook_call.read_raw(sys.stdin.buffer))
        if call is None:
            return
        result = memory(root).autoload(call.context, promote=promote_first and call.context is not None,
                                       budget=budget, hot=call.context is None, session_id=call.session,
                                       cwd=call.cwd)
        sys.stdout.write(hook_call.output(call, result.markdown(), as_json, ascii_only=not utf8_stdout()))
    except BaseException:  # noqa: BLE001 - a hook must never block or break the agent
        return
