"""The local service's server: one warm process per user, answering `mem` calls for every tree over a Unix socket.

`mem serve` (or the thin client, on demand) starts it. It keeps the imported modules and the
embedding model warm once, and each tree it serves open in an LRU (pool.py: the `Memory`
with its vector index, cached frame, catalog and watcher), and runs every forwarded call as
`memstrata.cli.app.main(argv)` in a worker thread, with that thread given the caller's

- stdin/stdout/stderr: the caller's own fds, passed over the socket (SCM_RIGHTS), installed
  as per-thread sys.stdin/stdout/stderr;
- cwd and umask: the thread unshares its filesystem context (Linux unshare(CLONE_FS)), so
  relative paths mean what they mean to the caller; without unshare, calls run one at a time;
- environment: os.environ is a per-thread overlay in this process holding the caller's whole
  environment, and the programs a call starts get it too (threads.py). Calls that reach the
  network, credentials or an identity never come here (client.runs_in_caller; docs/service.md).

So results are identical with and without the service by construction.

Safety: the socket is `mem.sock` in the user's private runtime folder (rundir.py: 0700, ours,
not a symlink), mode 0600, and each peer's uid is checked (SO_PEERCRED). A call names its
tree; one that is not an initialised tree is refused (the caller runs it itself). One service
per user: it holds an flock on `service.lock` there for its whole life (a crash releases it;
the next client removes the stale socket and starts a new one). A tree is closed after its
`service_idle_minutes` without calls; the service stops once no tree is open (or after
--idle-minutes without calls when given), on `mem serve --stop`, on SIGTERM/SIGINT, or when
its socket is removed or replaced. Background upkeep per tree is in upkeep.py.

The entry points around it (run, start detached, status, stop, `python -m memstrata.service`)
are in control.py; the process's log and facts in process.py.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

from memstrata.service import client, rundir
from memstrata.service import threads as service_threads
from memstrata.service.calls import log_internal_error, refusal, run_call
from memstrata.service.pool import POOL, install_memory_factory
from memstrata.service.process import log, log_path, peak_rss_mb, pid_alive, rss_mb
from memstrata.service.threads import call_local
from memstrata.service.upkeep import Upkeep, maintain_index
from memstrata.service.wire import receive, send_reply, same_user, tree_of

# How long a stop waits for the calls in flight (an import, a long recall) before the process exits.
STOP_WAIT = float(os.environ.get("MEMSTRATA_SERVICE_STOP_WAIT", 600))


# --------------------------------------------------------------------------- the service


class Service:
    def __init__(self, folder, idle_minutes: float | None = None, wait_pid: int | None = None,
                 first_root=None, root_idle_minutes: float | None = None):
        self.folder = Path(folder)
        self.sock_path = Path(rundir.socket_path(str(folder)))
        self.first_root = None if first_root is None else str(first_root)
        # None: stop once no tree is open; 0: never; else after that long without calls
        self.idle_seconds = None if idle_minutes is None else float(idle_minutes) * 60.0
        self.root_idle_minutes = root_idle_minutes
        self.wait_pid = wait_pid
        self.started = time.time()
        self.last_activity = time.monotonic()
        self.active = 0    # connections being handled (calls and control requests)
        self.running = 0   # calls (op run) being handled
        self.requests = 0
        self.warm = threading.Event()
        self.stopping = threading.Event()
        self._state = threading.Lock()
        self._lock_fd = None
        self._listener = None
        self._sock_ino = None
        self.main = None
        self._code_mtimes: dict[str, int] = {}
        self.upkeep = Upkeep()

    # -- life cycle ---------------------------------------------------------------------
    def acquire(self, wait: float = 0.0) -> bool:
        """Take the user's service lock (waiting up to `wait` s, e.g. for a stopping
        predecessor); False if another service holds it."""
        import fcntl

        fd = os.open(rundir.lock_path(str(self.folder)), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    return False
                time.sleep(0.1)
        self._lock_fd = fd
        return True

    def bind(self) -> None:
        """Listen on {runtime}/mem.sock (0600); a stale socket or a symlink there is replaced (we hold
        the lock; a link goes, never what it points to). Anything else at that path (a regular file,
        a folder) is never replaced: OSError, with the line that says what to do.
        """
        blocker = rundir.socket_blocker(str(self.folder))
        if blocker is not None and not blocker[1]:
            raise OSError(rundir.blocker_advice(str(self.folder), blocker))
        tmp = self.folder / f".mem.sock.{os.getpid()}.tmp"
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            listener.bind(str(tmp))
        finally:
            os.umask(old_umask)
        os.chmod(tmp, 0o600)
        listener.listen(64)
        os.replace(tmp, self.sock_path)  # atomic: a client never sees a socket nobody listens on
        self._sock_ino = os.stat(self.sock_path).st_ino
        self._listener = listener
        pid_info = {"pid": os.getpid(), "socket": str(self.sock_path), "started": self.started,
                    "python": sys.executable}
        tmp_pid = self.folder / f".{rundir.PID_NAME}.{os.getpid()}.tmp"
        tmp_pid.write_text(json.dumps(pid_info))
        os.replace(tmp_pid, rundir.pid_path(str(self.folder)))

    def _socket_is_ours(self) -> bool:
        try:
            return os.stat(self.sock_path).st_ino == self._sock_ino
        except OSError:
            return False

    def shutdown(self, reason: str) -> None:
        if self.stopping.is_set():
            return
        self.stopping.set()
        log(f"stopping ({reason})")
        if self._socket_is_ours():
            try:
                self.sock_path.unlink()
            except OSError:
                pass
        try:
            pid_file = Path(rundir.pid_path(str(self.folder)))
            if json.loads(pid_file.read_text()).get("pid") == os.getpid():
                pid_file.unlink()
        except (OSError, ValueError):
            pass
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                self._listener.close()
            except OSError:
                pass

    # -- warm-up ------------------------------------------------------------------------
    def warm_up(self) -> None:
        """Import the CLI, load the model and open the first tree; after the spawning call exits."""
        try:
            if self.wait_pid:
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline and pid_alive(self.wait_pid) and not self.stopping.is_set():
                    time.sleep(0.05)
            t0 = time.perf_counter()
            self._load_cli()
            if self.first_root is not None:
                self.open_root(self.first_root)
            self._code_changed()  # record the mtimes of everything loaded so far
            log(f"warm in {time.perf_counter() - t0:.2f}s")
        except Exception as exc:  # noqa: BLE001
            log(f"warm-up failed: {type(exc).__name__}: {exc}", exc)
        finally:
            self.warm.set()

    def open_root(self, root: str) -> None:
        """Open a tree now (model, table, frame) and bring its index up to date."""
        call_local.memories = {}
        try:
            memory = POOL.checkout(root, call=False)
            for problem in memory.warm_up():
                log(problem)
            memory.state.catalog  # noqa: B018 - opened now, so the status counts the tree's entries
        finally:
            POOL.checkin_all()
        maintain_index(root)

    def close_root(self, root: str) -> dict:
        """Close one tree once its calls in flight have finished (up to STOP_WAIT s); other trees' calls
        go on. A call of it arriving later opens it again."""
        deadline = time.monotonic() + STOP_WAIT
        while POOL.is_open(root):
            if POOL.close(root) is not None:
                self.upkeep.forget(root)
                log(f"closed {root} (asked to)")
                return {"root": root, "was_open": True}
            if time.monotonic() > deadline:
                log(f"did not close {root}: its calls still run after {STOP_WAIT:.0f}s")
                return {"root": root, "was_open": True, "busy": True}
            time.sleep(0.05)
        return {"root": root, "was_open": False}

    def root_idle_seconds(self, root: str) -> float | None:
        """How long a tree stays open without calls (None: until the service stops)."""
        if self.root_idle_minutes is not None:
            minutes = self.root_idle_minutes
        elif self.idle_seconds is not None:
            return self.idle_seconds or None
        else:
            minutes = getattr(self.upkeep.settings.of(root), "service_idle_minutes", 15)
        return float(minutes) * 60.0 if minutes and minutes > 0 else None

    def _load_cli(self):
        if self.main is None:
            from memstrata.cli import app as app_module

            getattr(app_module, "app", None)  # build the typer app and register every command
            install_memory_factory()
            app_module.on_internal_error = log_internal_error
            self.main = app_module.main
        return self.main

    # -- serving ------------------------------------------------------------------------
    def serve_forever(self) -> None:
        threading.Thread(target=self.warm_up, name="warm-up", daemon=True).start()
        threading.Thread(target=self._watchdog, name="watchdog", daemon=True).start()
        while not self.stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                if self.stopping.is_set():
                    break
                time.sleep(0.01)
                continue
            with self._state:
                self.active += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()
        self._drain()

    def _drain(self) -> None:
        """Once no new call is accepted: wait for the calls in flight and a team sync round, up to
        STOP_WAIT seconds, and say in the log how it ended."""
        with self._state:
            running = self.running
        if running or self.upkeep.syncing():
            log(f"waiting for {running} call(s) in flight" + (" and a team sync" if self.upkeep.syncing() else ""))
        deadline = time.monotonic() + STOP_WAIT
        while (self.active or self.upkeep.syncing()) and time.monotonic() < deadline:
            time.sleep(0.05)
        with self._state:
            left = self.running
        if left or self.upkeep.syncing():
            log(f"exiting with {left} call(s) still running after {STOP_WAIT:.0f}s (their callers are told "
                 "the service stopped)")
        else:
            log("stopped: no call in flight")

    def _watchdog(self) -> None:
        while not self.stopping.is_set():
            time.sleep(1.0)
            if not self._socket_is_ours():
                self.shutdown("socket removed or replaced")
                break
            if not self.warm.is_set():
                continue
            with self._state:
                quiet = self.active == 0
            if quiet:
                self.upkeep.run_due_maintenance()
            self.upkeep.start_due_syncs()
            for root in POOL.close_idle(self.root_idle_seconds):
                self.upkeep.forget(root)
                log(f"closed {root} (idle)")
            with self._state:
                quiet = self.active == 0
                since = time.monotonic() - self.last_activity
            if not quiet or self.upkeep.syncing():
                continue
            if self.idle_seconds:
                if since > self.idle_seconds:
                    self.shutdown(f"idle for {self.idle_seconds / 60:.1f} min")
                    break
            elif self.idle_seconds is None and not POOL.roots():
                self.shutdown("no tree open (each closed after its service_idle_minutes without calls)")
                break

    def _handle(self, conn: socket.socket) -> None:
        fds: list[int] = []
        message: dict | None = None
        try:
            if not same_user(conn):
                return
            message, fds = receive(conn)
            if message is None:
                return
            op = message.get("op")
            if op == "status":
                send_reply(conn, self.status())
            elif op == "stop":
                send_reply(conn, {"t": "stopping", "pid": os.getpid()})
                threading.Thread(target=self.shutdown, args=("asked to stop",), daemon=True).start()
            elif op == "close":
                root = tree_of(message)
                send_reply(conn, {"t": "closed", "pid": os.getpid(), **self.close_root(root)} if root else
                       {"t": "refused", "message": "not an initialised memory tree"})
            elif op == "ping":
                send_reply(conn, {"t": "pong", "pid": os.getpid()})
            elif op == "open":
                root = tree_of(message)
                if root is None:
                    send_reply(conn, {"t": "refused", "message": "not an initialised memory tree"})
                    return
                with self._state:
                    self.last_activity = time.monotonic()
                threading.Thread(target=self.open_root, args=(root,), name="open", daemon=True).start()
                send_reply(conn, {"t": "opening", "root": root, "pid": os.getpid()})
            elif op == "run":
                if message.get("code") != client.code_home():
                    # a client of another install (checkout, venv, version): it runs the call itself
                    send_reply(conn, {"t": "other-install", "code": client.code_home()})
                    return
                if self._code_changed():
                    # New code on disk (an upgrade, an edit): this process would run the old
                    # code. The caller runs the call itself; the next heavy call starts a fresh service.
                    send_reply(conn, {"t": "outdated"})
                    threading.Thread(target=self.shutdown, args=("code changed on disk",), daemon=True).start()
                    return
                if message.get("hook") and not self.warm.is_set():
                    # A hook never waits for the warm-up (seconds): the client answers a session start
                    # itself (no model) and a prompt with nothing, as on a cold start (docs/hooks.md).
                    send_reply(conn, {"t": "cold"})
                    return
                if len(fds) != 3:
                    send_reply(conn, {"t": "error", "message": "expected 3 file descriptors"})
                    return
                root = tree_of(message)
                if root is None:  # the client checks this too: no tree is ever opened for a plain folder
                    send_reply(conn, {"t": "refused", "message": "not an initialised memory tree"})
                    return
                refused = refusal(message)
                if refused:  # the caller runs it itself, exactly as with MEMSTRATA_SERVICE=off
                    send_reply(conn, {"t": "refused", "message": refused})
                    return
                self._run(conn, message, fds, root)  # takes the fds (clears the list)
            else:
                send_reply(conn, {"t": "error", "message": f"unknown op {op!r}"})
        except Exception as exc:  # noqa: BLE001 - one bad call never takes the service down
            log(f"request failed: {type(exc).__name__}: {exc}", exc)
            if message is not None and message.get("op") == "run" and not message.get("started"):
                # Nothing ran: the caller runs the call itself and tells its user why, in one line.
                text = f"{type(exc).__name__}: {exc}"
                text = text if len(text) <= 240 else text[:240] + "..."
                try:
                    send_reply(conn, {"t": "failed", "message": text, "log": log_path()})
                except Exception:  # noqa: BLE001 - the caller is gone
                    pass
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            try:
                conn.close()
            except OSError:
                pass
            with self._state:
                self.active -= 1

    def _run(self, conn, message: dict, fds: list[int], root: str) -> None:
        with self._state:
            self.running += 1
        try:
            run_call(self, conn, message, fds, root)
        finally:
            with self._state:
                self.running -= 1

    def _code_changed(self) -> bool:
        """True when a loaded memstrata module's source file changed since it was loaded."""
        seen = self._code_mtimes
        for name, module in list(sys.modules.items()):
            if not name.startswith("memstrata"):
                continue
            path = getattr(module, "__file__", None)
            if not path:
                continue
            try:
                mtime = os.stat(path).st_mtime_ns
            except OSError:
                continue
            known = seen.setdefault(path, mtime)
            if known != mtime:
                return True
        return False

    def status(self) -> dict:
        roots = []
        for info in POOL.roots():
            limit = self.root_idle_seconds(info["root"])
            roots.append({**info, "idle_close_minutes": None if limit is None else round(limit / 60, 2),
                          "sync": self.upkeep.sync_status(info["root"])})
        return {"t": "status", "pid": os.getpid(), "socket": str(self.sock_path), "runtime_dir": str(self.folder),
                "uptime_s": round(time.time() - self.started, 1), "requests": self.requests,
                "active": max(0, self.active - 1), "warm": self.warm.is_set(),
                "idle_minutes": None if self.idle_seconds is None else self.idle_seconds / 60,
                "rss_mb": rss_mb(), "peak_rss_mb": peak_rss_mb(), "roots": roots, "code": client.code_home(),
                "pooled_memories": POOL.size(), "per_thread_cwd": service_threads.per_thread_cwd()}
