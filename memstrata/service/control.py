"""The user's service from the outside: run it in this process, start it detached, its status, stop it, `python -m`."""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

from memstrata.service import client, rundir
from memstrata.service.process import few_malloc_arenas, log, note_previous_end, pid_alive, set_folder
from memstrata.service.server import Service
from memstrata.service.threads import install_process_hooks


def run_service(root, idle_minutes: float | None = None, wait_pid: int | None = None,
                root_idle_minutes: float | None = None) -> int:
    """Run the user's service in this process, opening the tree `root` first, until stopped.

    0 also when the user's service already runs (it is asked to open the tree); 3 when `root`
    is not a tree (nothing is started), 4 when the runtime folder is not safe.
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
    service.bind()
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


def silent_pid(folder: str) -> int | None:
    """The pid in the runtime folder's pid file when that process is alive (a service that
    did not answer a status request: busy), else None."""
    try:
        with open(rundir.pid_path(folder), encoding="utf-8") as f:
            pid = int(json.loads(f.read(4096)).get("pid") or 0)
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return pid if pid > 0 and pid_alive(pid) else None


def status() -> dict | None:
    """The user's running service's status (the trees it holds, its memory), or None."""
    return client.request({"op": "status"})


def stop(timeout: float = 660.0, root: str | None = None) -> dict | None:
    """Ask the user's service to stop and wait until it has (it first finishes the calls in flight);
    with `root`, to close that tree only (once its calls are done). None if no service was running."""
    if root is not None:
        return client.request({"op": "close", "root": root}, timeout=timeout)
    info = client.request({"op": "stop"})
    if info is None:
        return None
    pid = info.get("pid")
    deadline = time.monotonic() + timeout
    while pid and pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return info


def start_detached(root, wait: float = 60.0, idle_minutes: float | None = None,
                   root_idle_minutes: float | None = None) -> dict | None:
    """Start the user's service in the background with the tree open (or ask the running one to
    open it) and wait until it answers; its status, or None."""
    from memstrata.storage.tree import resolve_root

    root = str(resolve_root(root))
    if client.request({"op": "open", "root": root}) is not None:
        return status()
    client.spawn(root, idle_minutes=idle_minutes, root_idle_minutes=root_idle_minutes)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        info = client.request({"op": "ping"}, timeout=2.0)
        if info is not None:
            return status()
        time.sleep(0.05)
    return None


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memstrata.service")
    parser.add_argument("--root")
    parser.add_argument("--idle-minutes", type=float)
    parser.add_argument("--wait-pid", type=int)
    parser.add_argument("--root-idle-minutes", type=float)
    args = parser.parse_args(argv)
    return run_service(args.root, args.idle_minutes, args.wait_pid, args.root_idle_minutes)
