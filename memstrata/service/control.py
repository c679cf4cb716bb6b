"""The user's service from the outside: start it (in the foreground or detached), its status, stop it."""
from __future__ import annotations

import json
import os
import sys
import time

from memstrata.service import client, rundir
from memstrata.service.process import pid_alive


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


def run_foreground(root: str, idle_minutes: float | None = None, root_idle_minutes: float | None = None):
    """Become the user's service (`mem serve`): this process is replaced by `python -m memstrata.service`.

    The service runs the CLI in-process for every call, so the CLI starts it as a program
    rather than importing it: no import cycle, and the same pid, terminal and signals as before.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    cmd = client.service_command(root, idle_minutes=idle_minutes, root_idle_minutes=root_idle_minutes)
    os.execv(cmd[0], cmd)
