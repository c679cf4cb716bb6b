"""One forwarded call in a worker thread of the service: the caller's streams, cwd, umask and environment around `main(argv)`; its internal errors logged."""
from __future__ import annotations

import os
import select
import socket
import sys
import threading
import time

from memstrata.service import client
from memstrata.service.pool import POOL
from memstrata.service.process import log, log_path
from memstrata.service.threads import close_streams, env_overlay, call_local, open_streams, private_fs, serial_calls
from memstrata.service.wire import send_reply
from memstrata.storage import cancel

# Calls after which the index may need upkeep (anything that can write), checked
# upkeep.MAINTAIN_DELAY seconds after the last call when no call is running.
_READ_ONLY = client.LIGHT | {"recall", "read", "autoload", None}


def log_internal_error(exc: BaseException, command: str | None) -> str:
    """Log a call's internal error with its traceback; the note that names the log for its one-line error."""
    log(f"internal error in `mem {command or ''}`: {type(exc).__name__}: {exc}", exc)
    return f" (traceback in {log_path()})"


def run_call(service, conn, message: dict, fds: list[int], root: str) -> None:
    """Run one forwarded call here, in this worker thread, as its caller: its streams (the fds, taken
    over: the list is emptied), cwd, umask and environment around `main(argv)`; reply started/exit."""
    main = service._load_cli()
    private = private_fs()
    serial = None if private else serial_calls
    if serial is not None:
        serial.acquire()
    streams = open_streams(fds, message)
    fds.clear()  # the streams own them now: never closed a second time by _handle
    previous_cwd = None
    watcher = None
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
        if client.command_of(list(message.get("argv") or [])) in client.CANCELLABLE:
            watcher = CallerWatch(conn)
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
        send_reply(conn, {"t": "exit", "code": int(code or 0)})
    finally:
        if watcher is not None:
            cancel.set_event(None)
            watcher.stop()
        POOL.checkin_all()
        call_local.stdin = call_local.stdout = call_local.stderr = None
        call_local.env = None
        close_streams(streams)
        with service._state:
            service.last_activity = time.monotonic()
        if client.command_of(list(message.get("argv") or [])) not in _READ_ONLY:
            service.upkeep.after_write(root)
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
        self._conn = conn
        self._wake_r, self._wake_w = os.pipe()
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
                log("the caller went away: its call stops at the next safe point")
                self.gone.set()
            return  # closed, or (never expected) data: stop watching either way

    def stop(self) -> None:
        """End the watch (the call ended) before the socket is closed, so no other socket is watched."""
        os.write(self._wake_w, b"x")
        self._thread.join()
        os.close(self._wake_r)
        os.close(self._wake_w)
