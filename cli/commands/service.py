"""`mem serve`: the warm local service of a memory root (see memstrata/service/)."""
from __future__ import annotations

from typing import Annotated, Optional

import typer
from memstrata.cli.output import JsonOpt, RootOpt, emit


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)


def serve(
    detach: Annotated[bool, typer.Option("--detach", help="Start in the background and return once it answers.")] = False,
    status: Annotated[bool, typer.Option("--status", help="Say whether a service runs for the root, and how it is.")] = False,
    stop: Annotated[bool, typer.Option("--stop", help="Stop the root's service (waits for calls in flight).")] = False,
    idle_minutes: Annotated[Optional[float], typer.Option(
        "--idle-minutes", help="Stop after this long without calls (default: config service_idle_minutes; 0 = never).",
        show_default=False)] = None,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Keep the model, the vector table and the tree warm, and answer `mem` calls over a socket.

    The CLI uses the service when it runs and starts it on demand (config `service: auto`);
    `service: off` (or MEMSTRATA_SERVICE=off) keeps every call in-process. The socket is
    {root}/.mem.sock, mode 0600, for its owner only. Results are the same with or without it.

    Examples:

    \b
      mem serve --detach
      mem serve --status --json
      mem serve --stop
    """
    from memstrata.storage import tree

    from memstrata.errors import InvalidInput, NotFound
    from memstrata.service import server as service

    if sum((detach, status, stop)) > 1:
        raise InvalidInput("give at most one of --detach, --status, --stop")
    resolved = tree.resolve_root(root)
    if status:
        info = service.status(resolved)
        data = {"running": info is not None, "root": str(resolved), **({k: v for k, v in info.items() if k != "t"}
                                                                     if info else {})}
        emit(as_json, data, (f"service running for {resolved}: pid {info['pid']}, up {info['uptime_s']}s, "
                             f"{info['requests']} calls, {'warm' if info['warm'] else 'warming up'}, "
                             f"rss {info['rss_mb']} MB") if info else f"no service running for {resolved}")
        return
    if stop:
        info = service.stop(resolved)
        emit(as_json, {"stopped": info is not None, "root": str(resolved), "pid": (info or {}).get("pid")},
             f"stopped the service of {resolved} (pid {info['pid']})" if info else f"no service running for {resolved}")
        return
    if not tree.is_initialised(resolved):
        raise NotFound(f"no memory tree at {resolved}; run `mem init` (or pass --root)")
    if detach:
        info = service.start_detached(resolved, idle_minutes=idle_minutes)
        if info is None:
            raise InvalidInput(f"the service did not start; see {resolved}/.cache/service.log")
        emit(as_json, {k: v for k, v in info.items() if k != "t"},
             f"service running for {resolved} (pid {info['pid']})")
        return
    code = service.run_service(resolved, idle_minutes)
    if code:
        raise typer.Exit(code)
