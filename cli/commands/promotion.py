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
                         help="Similarity needed (default: promote_threshold in config.md).")] = None,
    layer: Annotated[str, typer.Option("--layer", help="Tiers to promote from, comma-separated.")] = "cold,archive",
    max_count: Annotated[Optional[int], typer.Option("--max", help="At most this many (default: promote_max).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would come back; change nothing.")] = False,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Bring cold and archived memories similar to the current task back to hot.

    Example: mem promote --context "fix the login bug in alpha's auth service" --dry-run
    """
    result = memory(root).promote(context, threshold=threshold, layers=layer, max_count=max_count, dry_run=dry_run)

    def human():
        layers, threshold = "/".join(result["layers"]), result["threshold"]
        if not result["candidates"]:
            typer.echo(f"no {layers} entry is similar enough to the context (threshold {threshold:.2f})")
            return
        verb = "would promote" if dry_run else "promoted"
        typer.echo(f"{verb} {len(result['promoted'])} of the {counted(result['candidates'], layers + ' entry', layers + ' entries')} "
                   f"similar to the context (threshold {threshold:.2f})")
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


HOOK_MAX_BYTES = 32 * 1024 * 1024  # a hook payload past this is not read further (the prompt is cut anyway)


def _autoload_hook(promote_first: bool, budget: int | None, root: str | None, as_json: bool) -> None:
    """Hook mode: context from Claude Code's JSON; on any error print nothing and exit 0.

    A prompt (UserPromptSubmit) gets only the relevant memories that clear the cut-off and were
    not injected earlier in the same session (`session_id`); a session start gets the hot ones."""
    import json

    from memstrata.retrieval.query_limits import cut_prompt

    try:
        raw = sys.stdin.buffer.read(HOOK_MAX_BYTES + 1) if not sys.stdin.isatty() else b""
        if len(raw) > HOOK_MAX_BYTES:
            return  # no hook payload is that large: nothing to inject, at once (the hook has 10 s)
        payload = json.loads(raw) if raw.strip() else {}
        if not isinstance(payload, dict):
            return  # `[]`, `5`, `"x"`: no hook's payload, no session start either: nothing is injected
        prompt = payload.get("prompt")
        context = cut_prompt(prompt)[0] if isinstance(prompt, str) and prompt.strip() else None
        if context is None and is_prompt_event(payload):
            return  # a prompt that is no text (5, a list, null, "") asks about nothing: not a session start
        session = payload.get("session_id")
        session = session if isinstance(session, str) and session.strip() else None
        result = memory(root).autoload(context, promote=promote_first and context is not None, budget=budget,
                                       hot=context is None, session_id=session)
        if as_json:
            event = payload.get("hook_event_name") or ("UserPromptSubmit" if context else "SessionStart")
            sys.stdout.write(json.dumps({"hookSpecificOutput": {"hookEventName": event,
                                                                 "additionalContext": result.markdown()}},
                                        ensure_ascii=not utf8_stdout()) + "\n")
        else:
            sys.stdout.write(result.markdown())
    except BaseException:  # noqa: BLE001 - a hook must never block or break the agent
        return


def is_prompt_event(payload: dict) -> bool:
    """Whether a hook payload is a UserPromptSubmit (it has a "prompt", or says so), whatever its prompt
    holds: only a payload that is neither is a session start, which lists the recent notes."""
    return "prompt" in payload or payload.get("hook_event_name") == "UserPromptSubmit"
