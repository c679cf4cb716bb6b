"""The user's service in this process: set it up, serve until stopped (`python -m memstrata.service`)."""
from __future__ import annotations

import os
import signal
import sys
import threading
from typing import NoReturn

from memstrata.service import client, rundir
from memstrata.service.process import few_malloc_arenas, log, note_previous_end, set_folder
from memstrata.service.server import Service
from memstrata.service.threads import install_process_hooks


def run_service(root, idle_minutes: float | None = None, wait_pid: int | None = None,
                root_idle_minutes: float | None = None) -> int:
    """Run the user's service in this process, opening the tree `root` first, until stopped.

    0 also when the user's service already runs (it is asked to open the tree); 3 when `root`
    is not a tree (nothing is started), 4 when the runtime folder is not safe, 5 when
    something that is not a socket (and not a symlink) takes the socket's path.
    `idle_minutes`: stop after that long without calls and close trees as soon (0: never);
    None: each tree closes after its own service_idle_minutes and the service stops once none
    is open. `root_idle_minutes` sets the trees' idle time alone.
    """
    few_malloc_arenas()
    from memstrata.storage import tree

    root = tree.resolve_root(root)
    if not tree.is_initialised(root):
        log(f"no memory tree at {root}")
        return 3
    folder, reason = rundir.ensure(create=True)
    if reason:
        log(reason)
        return 4
    service = Service(folder, idle_minutes, wait_pid, first_root=str(root), root_idle_minutes=root_idle_minutes)
    if not service.acquire(wait=5.0):  # a service that is stopping (e.g. idle) holds the lock a moment longer
        client.request({"op": "open", "root": str(root)}, folder=folder)
        log(f"the service already runs (asked it to open {root})")
        return 0
    set_folder(folder)
    note_previous_end(folder)
    try:
        import faulthandler

        faulthandler.enable(file=sys.__stderr__)  # a fatal crash (a signal in native code) leaves its stacks here
    except (OSError, ValueError, AttributeError):
        pass
    install_process_hooks()
    try:
        service.bind()
    except OSError as exc:  # something that is not ours at the socket's path: one line, no traceback
        log(f"not serving: {exc}")
        return 5
    log(f"serving on {service.sock_path} (pid {os.getpid()}), opening {root}; idle stop: "
         + ("never" if service.idle_seconds == 0 else "once no tree is open" if service.idle_seconds is None
            else f"{idle_minutes} min without calls"))

    def _on_signal(signum, _frame):
        threading.Thread(target=service.shutdown, args=(signal.Signals(signum).name,), daemon=True).start()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        service.serve_forever()
    finally:
        service.shutdown("exit")
    return 0


def main(argv: list[str] | None = None) -> NoReturn:
    """The service process's entry point: serve, then end the process at once with the exit code."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memstrata.service")
    parser.add_argument("--root")
    parser.add_argument("--idle-minutes", type=float)
    parser.add_argument("--wait-pid", type=int)
    parser.add_argument("--root-idle-minutes", type=float)
    args = parser.parse_args(argv)
    code = run_service(args.root, args.idle_minutes, args.wait_pid, args.root_idle_minutes)
    # Everything is saved and closed by now. A stop during warm-up leaves the model loading in a
    # native thread, which the interpreter's own shutdown turns into SIGABRT ("terminate called
    # without an active exception"): the process ends here instead, with its real exit code.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
