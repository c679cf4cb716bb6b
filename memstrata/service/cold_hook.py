"""`mem autoload --hook` with no warm service: a session start answered by the client itself (stdlib only).

Imported by service/client.py before typer or any command module; the answer itself
(features/start_block.py) is imported only when a session start is to be answered.
"""
from __future__ import annotations

import io
import sys
from typing import Callable


def hook_options(argv: list[str]) -> tuple[int | None, bool, bool] | None:
    """(budget, json, promote) of `mem autoload --hook [--promote] [--budget N] [--root R] [--json]`, or
    None for any other argument (typer then parses the call, and says what is wrong)."""
    if not argv or argv[0] != "autoload":
        return None
    budget, as_json, promote, i = None, False, False, 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--promote":
            promote = True
        elif arg == "--hook":
            pass
        elif arg == "--json":
            as_json = True
        elif arg in ("--budget", "--root") and i + 1 < len(argv):
            i += 1
            if arg == "--budget":
                budget = argv[i]
        elif arg.startswith("--budget="):
            budget = arg[len("--budget="):]
        elif not arg.startswith("--root="):
            return None
        i += 1
    try:
        return (None if budget is None else int(budget)), as_json, promote
    except ValueError:
        return None


def cold_hook(argv: list[str], root: str, start: Callable[[], bool] | None, prompt_here: bool) -> int | None:
    """`mem autoload --hook` with no warm service: a session start is answered here at once from the
    catalog and the weights (no model: features/start_block.py); a prompt gets nothing now (the model
    takes seconds to load and a prompt hook never waits), unless `prompt_here`: None then runs it in
    this process (the payload read here handed on as stdin). `start()`, when given, starts the service
    in the background (after the answer), for the prompts that follow, and says whether it could: a
    prompt whose service cannot start is answered in this process, with a note, not left empty for good."""
    options = hook_options(argv)
    if options is None:
        if start:
            start()
        return None if prompt_here else 0
    from memstrata.features import hook_call

    try:
        raw = hook_call.read_raw(sys.stdin.buffer)
        call = hook_call.parse(raw)
    except Exception:  # noqa: BLE001 - a payload that is no JSON: a hook prints nothing
        call = None
        raw = None
    if call is not None and call.context is None:  # a session start: the block, now
        try:
            from memstrata.features.start_block import answer_hook

            answer_hook(root, options[0], options[1], call, sys.stdout, promote=options[2])
        except Exception:  # noqa: BLE001 - a hook must never block or break the agent
            pass
    started = bool(start and start())
    if call is not None and call.context is not None and (prompt_here or (start is not None and not started)):
        if not prompt_here:
            # No service can start (an unsafe runtime folder, a full disk): answering nothing would be
            # for good, on every prompt; this prompt is answered here, cold, and the user told why.
            sys.stderr.write("mem: note: the memory service cannot start (`mem serve --status` says why); "
                             "this prompt was answered without it\n")
        sys.stdin = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")  # the prompt, for the in-process call
        return None
    return 0
