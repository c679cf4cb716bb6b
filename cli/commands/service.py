"""`mem serve`: the user's warm local service, serving every tree it is asked for (see memstrata/service/)."""
from __future__ import annotations

import os
from typing import Annotated, Optional

import typer
from memstrata.cli.output import JsonOpt, RootOpt, counted, emit


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)


def serve(
    detach: Annotated[bool, typer.Option("--detach", help="Start in the background (or have the running service open "
                                                          "the tree) and return once it answers.")] = False,
    status: Annotated[bool, typer.Option("--status", help="Say whether your service runs: the trees it holds, its memory.")] = False,
    stop: Annotated[bool, typer.Option("--stop", help="Stop your service, for every tree; with --root, close that "
                                                      "tree only (both wait for the calls in flight).")] = False,
    idle_minutes: Annotated[Optional[float], typer.Option(
        "--idle-minutes", help="Stop after this long without calls, closing trees as soon (default: each tree closes "
                               "after its service_idle_minutes and the service stops once none is open; 0 = never).",
        show_default=False)] = None,
    root_idle_minutes: Annotated[Optional[float], typer.Option(
        "--root-idle-minutes", help="Close a tree after this long without calls for it (overrides its "
                                    "service_idle_minutes; 0 = never).", show_default=False)] = None,
    root: RootOpt = None,
    as_json: JsonOpt = False,
):
    """Keep the model warm once for all your trees, and answer `mem` calls over a socket.

    One service per user serves every tree you use (each kept open while used, closed when
    idle). The CLI uses it when it runs and starts it on demand (config `service: auto`);
    `service: off` (or MEMSTRATA_SERVICE=off) keeps a tree's calls in-process. The socket is
    mem.sock in your private runtime folder ($MEMSTRATA_RUNTIME_DIR, else
    $XDG_RUNTIME_DIR/memstrata, else /tmp/memstrata-UID), for you only. Results are the same
    with or without it. --status is about the whole service; --stop too, unless --root names the
    one tree to close.

    Examples:

    \b
      mem serve --detach
      mem serve --status --json
      mem serve --stop
      mem serve --stop --root ~/work-memory
    """
    from memstrata.storage import tree

    from memstrata.errors import InvalidInput, NotFound
    from memstrata.service import rundir
    from memstrata.service import control as service

    if sum((detach, status, stop)) > 1:
        raise InvalidInput("give at most one of --detach, --status, --stop")
    displaced = rundir.displaced()
    if displaced:
        typer.echo(f"mem: note: {displaced}", err=True)
    if status:
        info = service.status()
        folder, problem = rundir.ensure(create=False)
        busy = service.silent_pid(folder) if info is None else None
        if busy:  # alive but not answering: never "no service" while one holds memory
            problem = f"a memory service (pid {busy}) runs but did not answer within 10 s (busy)"
        blocker = rundir.socket_blocker(folder) if info is None and not busy and not problem else None
        if blocker is not None:  # every call runs in its own process until it is gone
            problem = rundir.blocker_advice(folder, blocker) + "; calls run in their own process meanwhile"
        data = {"running": info is not None, "runtime_dir": folder,
                **({"problem": problem} if problem and info is None and os.path.lexists(folder) else {}),
                **({"busy_pid": busy} if busy else {}),
                **({k: v for k, v in info.items() if k != "t"} if info else {})}
        emit(as_json, data, lambda: _say_status(info, folder, data.get("problem"), busy))
        return
    if stop and root is not None:  # one tree: the service goes on serving the others
        resolved = str(tree.resolve_root(root))
        info = service.stop(root=resolved)
        closed = bool(info and info.get("was_open") and not info.get("busy"))
        emit(as_json, {"closed": closed, "root": resolved, "running": info is not None,
                       "pid": (info or {}).get("pid"), **({"busy": True} if info and info.get("busy") else {})},
             (f"closed {resolved} in the memory service (pid {info['pid']})" if closed else
              f"{resolved} still has calls running in the memory service" if info and info.get("busy") else
              f"{resolved} was not open in the memory service") if info else "no memory service running")
        return
    if stop:
        info = service.stop()
        emit(as_json, {"stopped": info is not None, "pid": (info or {}).get("pid")},
             f"stopped the memory service (pid {info['pid']})" if info else "no memory service running")
        return
    resolved = tree.resolve_root(root)
    if not tree.is_initialised(resolved):
        problem = tree.config_problem(resolved)  # a tree whose config.md cannot be read: said as such
        if problem:
            raise InvalidInput(problem)
        raise NotFound(f"no memory tree at {resolved}; run `mem init` (or pass --root)")
    folder, reason = rundir.ensure(create=True)
    if reason:
        raise InvalidInput(f"{reason}; fix it (chmod 700, or remove it) or set MEMSTRATA_RUNTIME_DIR")
    blocker = rundir.socket_blocker(folder)
    if blocker is not None and not blocker[1]:  # never deleted: the user moves it
        raise InvalidInput(rundir.blocker_advice(folder, blocker))
    if detach:
        info = service.start_detached(resolved, idle_minutes=idle_minutes, root_idle_minutes=root_idle_minutes)
        if info is None:
            raise InvalidInput(f"the service did not start; see {rundir.log_path(folder)}")
        emit(as_json, {k: v for k, v in info.items() if k != "t"},
             f"memory service running (pid {info['pid']}), serving {resolved}")
        return
    service.run_foreground(str(resolved), idle_minutes, root_idle_minutes=root_idle_minutes)


def _say_status(info: dict | None, folder: str, problem: str | None, busy: int | None) -> None:
    if info is None:
        if busy:
            typer.echo(f"{problem} (runtime folder {folder})")
        else:
            typer.echo(f"no memory service running (runtime folder {folder})" + (f"; {problem}" if problem else ""))
        return
    typer.echo(f"memory service: pid {info['pid']}, up {info['uptime_s']}s, {info['requests']} calls, "
               f"{'warm' if info['warm'] else 'warming up'}, rss {info['rss_mb']} MB "
               f"(peak {info['peak_rss_mb']} MB), {len(info['roots'])} tree(s) open")
    code = info.get("code")
    if code:
        from memstrata.service.client import code_home

        mine = code == code_home()
        typer.echo(f"  code: {code}" + ("" if mine else f" (another install: this mem, {code_home()}, "
                                                          "runs its calls in-process)"))
    for r in info["roots"]:
        closes = "never closes" if r["idle_close_minutes"] is None else f"closes after {r['idle_close_minutes']:g} min"
        entries = "?" if r["entries"] is None else r["entries"]
        line = f"  {r['root']}: {counted(entries, 'entry', 'entries')}, {counted(r['calls'], 'call')}, idle {r['idle_s']}s ({closes})"
        sync = r.get("sync")
        if sync:
            line += f"; team sync every {sync['interval_s']}s, {sync['rounds']} rounds" + \
                (f", last error: {sync['error']}" if sync.get("error") else "")
        typer.echo(line)
