"""Facts and settings of the service's process: its log (service.log), whether a pid is alive, its memory, malloc arenas."""
from __future__ import annotations

import json
import os
import sys
import threading
import time

from memstrata.service import rundir

_LOG_LOCK = threading.Lock()


def log(message: str, exc: BaseException | None = None) -> None:
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


_FOLDER: list[str] = []  # the runtime folder this process serves, once known


def set_folder(folder: str) -> None:
    """The runtime folder this process serves (its log is there)."""
    _FOLDER[:] = [folder]


def log_path() -> str:
    """The service.log of the runtime folder this process serves."""
    return rundir.log_path(_FOLDER[0] if _FOLDER else rundir.candidate())


def note_previous_end(folder: str) -> None:
    """Say in the log when the previous service ended without its 'stopping' line (killed, crashed):
    its pid file is still there and names a process that is gone."""
    try:
        with open(rundir.pid_path(folder), encoding="utf-8") as f:
            pid = int(json.loads(f.read(4096)).get("pid") or 0)
    except (OSError, ValueError, TypeError, AttributeError):
        return
    if pid > 0 and pid != os.getpid() and not pid_alive(pid):
        log(f"the previous service (pid {pid}) ended without stopping (killed or crashed; "
            "a crash of the interpreter leaves its traceback above)")


# --------------------------------------------------------------------------- process facts


def pid_alive(pid: int) -> bool:
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


def rss_mb() -> float | None:
    return _status_mb("VmRSS")


def peak_rss_mb() -> float | None:
    """VmHWM, the kernel's high-water mark of VmRSS (ru_maxrss counts differently and could
    read below the current figure)."""
    return _status_mb("VmHWM")


# --------------------------------------------------------------------------- process settings


def few_malloc_arenas() -> None:
    """glibc gives each thread that contends for memory its own arena (up to 8 per core); in a
    long-lived service with a thread per call that fragments the heap. Two arenas: about 80 MB
    less resident memory at 100,000 entries, no measurable cost."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-8, 2)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass
