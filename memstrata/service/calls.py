"""One forwarded call in a worker thread of the service: the caller's streams, cwd, umask and environment around `main(argv)`; its internal errors logged."""
from __future__ import annotations

import os
import select
import socket
import sys
import threading
import time

from memstrata.retrieval import stats_cache
from memstrata.service import caller_paths, client
from memstrata.service.pool import POOL
from memstrata.service.process import log, log_path
from memstrata.service.threads import (close_streams, env_overlay, call_local, open_streams, private_fs,
                                       process_environ, serial_calls)
from memstrata.service.wire import send_reply
from memstrata.storage import cancel, clock

# Calls after which the index may need upkeep (anything that can write), checked
# upkeep.MAINTAIN_DELAY seconds after the last call when no call is running.
_READ_ONLY = client.LIGHT | {"recall", "read", "autoload", None}


def log_internal_error(exc: BaseException, command: str | None) -> str:
    """Log a call's internal error with its traceback; the note that names the log for its one-line error."""
    log(f"internal error in `mem {command or ''}`: {type(exc).__name__}: {exc}", exc)
    return f" (traceback in {log_path()})"


def caller_zone(caller_tz: str | None, own_tz: str | None):
    """(usable, zone) for a caller's TZ: zone None means the service's own local time (the same TZ);
    usable False when it names no zone file (a POSIX rule such as `XYZ-3`): the caller runs the call.
    The service never calls tzset: the C library's zone is one per process, shared by every call."""
    from datetime import timezone
    from zoneinfo import ZoneInfo

    if caller_tz == own_tz:
        return True, None
    if caller_tz == "":
        return True, timezone.utc  # as the C library reads an empty TZ
    name = "/etc/localtime" if caller_tz is None else caller_tz[1:] if caller_tz.startswith(":") else caller_tz
    try:
        if os.path.isabs(name):
            with open(name, "rb") as f:
                return True, ZoneInfo.from_file(f, key=name)
        return True, ZoneInfo(name)
    except FileNotFoundError:
        return (True, timezone.utc) if caller_tz is None else (False, None)  # no /etc/localtime: UTC
    except (OSError, ValueError, KeyError):
        return False, None


def refusal(message: dict) -> str | None:
    """Why this service cannot run a call as its caller would (None: it can): another mount namespace
    or root (its paths name other files), or a TZ it cannot apply per call. Sets the call's zone."""
    theirs = message.get("ns")
    if theirs is not None and theirs != caller_paths.namespace():
        return "the caller sees other files (another mount namespace or root)"
    env = message.get("env") or {}
    argv, cwd = list(message.get("argv") or []), str(message.get("cwd") or "/")
    if message.get("paths") != caller_paths.identities(argv, cwd, env.get("HOME")):
        return "a path of the call names another file in the service (a link through /dev or /proc)"
    usable, zone = caller_zone(env.get("TZ"), process_environ().get("TZ"))
    if not usable:
        return "the caller's TZ names no time zone file"
    message["zone"] = zone
    return None


def run_call(service, conn, message: dict, fds: list[int], root: str) -> None:
    """Run one forwarded call here, in this worker thread, as its caller: its streams (the fds, taken
    over: the list is emptied), cwd, umask and environment around `main(argv)`; reply started/exit."""
    main = service._load_cli()
    # Every call is watched: a caller gone (a kill) abandons the call's streams (a read of a stdin
    # that never ends), and a cancellable call also stops at its next safe point. Made before the
    # serial lock is taken, so that its failing (no fd left) never leaves the lock held.
    watcher = CallerWatch(conn)
    private = private_fs()
    serial = None if private else serial_calls
    if serial is not None:
        serial.acquire()
    streams = open_streams(fds, message, watcher.gone_fd)
    fds.clear()  # the streams own them now: never closed a second time by _handle
    previous_cwd = None
    try:
        if private:
            os.chdir(message["cwd"])
            os.umask(int(message.get("umask", 0o022)))
        else:
            previous_cwd = os.getcwd()
            os.chdir(message["cwd"])
        call_local.stdin, call_local.stdout, call_local.stderr = streams
        call_local.env = env_overlay(message)
        call_local.memories = {}
        clock.set_local_zone(message.get("zone"))
        if client.command_of(list(message.get("argv") or [])) in client.CANCELLABLE:
            cancel.set_event(watcher.gone)
        with service._state:
            service.requests += 1
            service.last_activity = time.monotonic()  # only calls count as activity, not --status
        send_reply(conn, {"t": "started"})
        message["started"] = True  # from here on an error is the call's own (exit 1), never a re-run
        try:
            code = main(list(message.get("argv") or []))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException as exc:  # noqa: BLE001 - as a crashed process would: one line, exit 1
            note = log_internal_error(exc, client.command_of(list(message.get("argv") or [])))
            try:
                sys.stderr.write(f"mem: error: internal error: {type(exc).__name__}: {exc}{note}\n")
            except Exception:  # noqa: BLE001
                pass
            code = 1
        call_local.stdin = call_local.stdout = call_local.stderr = None
        close_streams(streams)  # before the reply: the caller exits holding the only copies
        watcher.stop()  # before the reply too: a caller that leaves once answered has not "gone away"
        send_reply(conn, {"t": "exit", "code": int(code or 0)})
    finally:
        cancel.set_event(None)
        clock.set_local_zone(None)
        POOL.checkin_all()
        call_local.stdin = call_local.stdout = call_local.stderr = None
        call_local.env = None
        close_streams(streams)
        watcher.stop()  # after the streams: they wait on its fd
        with service._state:
            service.last_activity = time.monotonic()
        if client.command_of(list(message.get("argv") or [])) not in _READ_ONLY:
            service.upkeep.after_write(root)
        stats_cache.release_pages()
        if previous_cwd is not None:
            try:
                os.chdir(previous_cwd)
            except OSError:
                pass
        if serial is not None:
            serial.release()


class CallerWatch:
    """Sets `gone` when the caller closes its end of the call's socket (Ctrl-C, a kill): the call
    then stops at its next safe point (storage/cancel.py). The caller sends nothing after its
    request, so a readable socket means it closed; nothing is read from it."""

    def __init__(self, conn: socket.socket):
        self.gone = threading.Event()
        self._stopped = False
        self._conn = conn
        self._wake_r, self._wake_w = os.pipe()
        self.gone_fd, self._gone_w = os.pipe()  # readable once the caller is gone (the call's streams poll it)
        self._thread = threading.Thread(target=self._watch, name="caller-watch", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        poller = select.poll()
        poller.register(self._conn.fileno(), select.POLLIN | select.POLLHUP | getattr(select, "POLLRDHUP", 0))
        poller.register(self._wake_r, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if self._wake_r in ready:
                return
            try:
                data = self._conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                log("the caller went away: its call stops at the next safe point, its input is abandoned")
                self.gone.set()
                os.write(self._gone_w, b"x")
            return  # closed, or (never expected) data: stop watching either way

    def stop(self) -> None:
        """End the watch (the call ended) before the socket is closed, so no other socket is watched.
        Once: a later call does nothing."""
        if self._stopped:
            return
        self._stopped = True
        os.write(self._wake_w, b"x")
        self._thread.join()
        for fd in (self._wake_r, self._wake_w, self.gone_fd, self._gone_w):
            os.close(fd)
