"""The user's service process: entry points (run, status, stop, start detached, `python -m`), log, pid/RSS, malloc arenas."""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

from memstrata.service import client, rundir
from memstrata.service.threads import install_process_hooks


def _log(message: str, exc: BaseException | None = None) -> None:
    """A line in service.log (the service's stderr), with the traceback of `exc` when given.

    Never the caller's environment or argv: a traceback names code lines and the exception only.
    """
    stream = getattr(sys, "__stderr__", None)
    if stream is None:
        return
    text = time.strftime("%Y-%m-%dT%H:%M:%SZ ", time.gmtime()) + message + "\n"
    if exc is not None:
        import traceback

        text += "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    with _LOG_LOCK:  # lines of concurrent calls never interleave
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):
            pass


_LOG_LOCK = threading.Lock()


_FOLDER: list[str] = []  # the runtime folder this process serves, once known


def log_path() -> str:
    """The service.log of the runtime folder this process serves."""
    return rundir.log_path(_FOLDER[0] if _FOLDER else rundir.candidate())


def _note_previous_end(folder: str) -> None:
    """Say in the log when the previous service ended without its 'stopping' line (killed, crashed):
    its pid file is still there and names a process that is gone."""
    try:
        with open(rundir.pid_path(folder), encoding="utf-8") as f:
            pid = int(json.loads(f.read(4096)).get("pid") or 0)
    except (OSError, ValueError, TypeError, AttributeError):
        return
    if pid > 0 and pid != os.getpid() and not _pid_alive(pid):
        _log(f"the previous service (pid {pid}) ended without stopping (killed or crashed; "
             "a crash of the interpreter leaves its traceback above)")


# --------------------------------------------------------------------------- process facts


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _status_mb(field: str) -> float | None:
    """A memory figure of this process from /proc/self/status (VmRSS, VmHWM ...), in MB."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def _rss_mb() -> float | None:
    return _status_mb("VmRSS")


def _peak_rss_mb() -> float | None:
    """VmHWM, the kernel's high-water mark of VmRSS (ru_maxrss counts differently and could
    read below the current figure)."""
    return _status_mb("VmHWM")


# --------------------------------------------------------------------------- entry points


def _few_malloc_arenas() -> None:
    """glibc gives each thread that contends for memory its own arena (up to 8 per core); in a
    long-lived service with a thread per call that fragments the heap. Two arenas: about 80 MB
    less resident memory at 100,000 entries, no measurable cost."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-8, 2)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def run_service(root, idle_minutes: float | None = None, wait_pid: int | None = None,
                root_idle_minutes: float | None = None) -> int:
    """Run the user's service in this process, opening the tree `root` first, until stopped.

    0 also when the user's service already runs (it is asked to open the tree); 3 when `root`
    is not a tree (nothing is started), 4 when the runtime folder is not safe.
    `idle_minutes`: stop after that long without calls and close trees as soon (0: never);
    None: each tree closes after its own service_idle_minutes and the service stops once none
    is open. `root_idle_minutes` sets the trees' idle time alone.
    """
    _few_malloc_arenas()
    from memstrata.storage import tree

    root = tree.resolve_root(root)
    if not tree.is_initialised(root):
        _log(f"no memory tree at {root}")
        return 3
    folder, reason = rundir.ensure(create=True)
    if reason:
        _log(reason)
        return 4
    from memstrata.service.server import Service

    service = Service(folder, idle_minutes, wait_pid, first_root=str(root), root_idle_minutes=root_idle_minutes)
    if not service.acquire(wait=5.0):  # a service that is stopping (e.g. idle) holds the lock a moment longer
        client.request({"op": "open", "root": str(root)}, folder=folder)
        _log(f"the service already runs (asked it to open {root})")
        return 0
    _FOLDER[:] = [folder]
    _note_previous_end(folder)
    try:
        import faulthandler

        faulthandler.enable(file=sys.__stderr__)  # a fatal crash (a signal in native code) leaves its stacks here
    except (OSError, ValueError, AttributeError):
        pass
    install_process_hooks()
    service.bind()
    _log(f"serving on {service.sock_path} (pid {os.getpid()}), opening {root}; idle stop: "
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
    return pid if pid > 0 and _pid_alive(pid) else None


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
    while pid and _pid_alive(pid) and time.monotonic() < deadline:
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


def _main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memstrata.service")
    parser.add_argument("--root")
    parser.add_argument("--idle-minutes", type=float)
    parser.add_argument("--wait-pid", type=int)
    parser.add_argument("--root-idle-minutes", type=float)
    args = parser.parse_args(argv)
    return run_service(args.root, args.idle_minutes, args.wait_pid, args.root_idle_minutes)
