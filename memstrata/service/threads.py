"""Per-call process state of the service's worker threads: the caller's streams, environment, cwd and umask."""
from __future__ import annotations

import io
import os
import sys
import threading
from collections.abc import MutableMapping


call_local = threading.local()


class _ThreadStream:
    """sys.stdout / sys.stderr / sys.stdin: the current request's stream, else the process's."""

    def __init__(self, name: str, default):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_default", default)

    def _target(self):
        return getattr(call_local, self._name, None) or self._default

    def __getattr__(self, attr):
        return getattr(self._target(), attr)

    def __setattr__(self, attr, value):
        setattr(self._target(), attr, value)

    def __iter__(self):
        return iter(self._target())

    def __repr__(self):
        return f"<thread-local {self._name} -> {self._target()!r}>"


_MISSING = object()


class _ThreadEnviron(MutableMapping):
    """os.environ with a per-thread overlay: the keys a request brought (None = unset for it)."""

    def __init__(self, real):
        self._real = real

    @staticmethod
    def _overlay():
        return getattr(call_local, "env", None)

    def __getitem__(self, key):
        ov = self._overlay()
        if ov is not None and key in ov:
            if ov[key] is None:
                raise KeyError(key)
            return ov[key]
        return self._real[key]

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key):
        try:
            self[key]
            return True
        except KeyError:
            return False

    def __setitem__(self, key, value):
        ov = self._overlay()
        if ov is not None and key in ov:
            ov[key] = value
        else:
            self._real[key] = value

    def __delitem__(self, key):
        ov = self._overlay()
        if ov is not None and key in ov:
            if ov[key] is None:
                raise KeyError(key)
            ov[key] = None
        else:
            del self._real[key]

    def pop(self, key, default=_MISSING):
        try:
            value = self[key]
        except KeyError:
            if default is _MISSING:
                raise
            return default
        del self[key]
        return value

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def _keys(self):
        ov = self._overlay() or {}
        keys = [k for k in self._real if k not in ov]
        keys += [k for k, v in ov.items() if v is not None]
        return keys

    def keys(self):
        return self._keys()

    def __iter__(self):
        return iter(self._keys())

    def __len__(self):
        return len(self._keys())

    def items(self):
        return [(k, self[k]) for k in self._keys()]

    def values(self):
        return [self[k] for k in self._keys()]

    def copy(self):
        return dict(self.items())

    def update(self, other=(), **kw):
        for k, v in dict(other, **kw).items():
            self[k] = v

    def __eq__(self, other):
        return dict(self.items()) == other

    __hash__ = None

    def __repr__(self):
        return f"environ({dict(self.items())!r})"


_CLONE_FS = 0x00000200
_unshare_ok: bool | None = None
serial_calls = threading.Lock()   # used when per-thread cwd is impossible: calls run one at a time


def private_fs() -> bool:
    """Give this thread its own cwd/umask (unshare(CLONE_FS)); False where that is impossible."""
    global _unshare_ok
    if _unshare_ok is False:
        return False
    try:
        if hasattr(os, "unshare"):
            os.unshare(_CLONE_FS)
        else:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.unshare(_CLONE_FS) != 0:
                raise OSError(ctypes.get_errno(), "unshare")
        _unshare_ok = True
        return True
    except (OSError, AttributeError):
        _unshare_ok = False
        return False


def per_thread_cwd() -> bool | None:
    """Whether calls get their own cwd and umask (None: not tried yet)."""
    return None if _unshare_ok is None else bool(_unshare_ok)


_installed = False


def install_process_hooks() -> None:
    """Thread-local streams and environment for this process (idempotent)."""
    global _installed
    if _installed:
        return
    sys.stdout = _ThreadStream("stdout", sys.stdout)
    sys.stderr = _ThreadStream("stderr", sys.stderr)
    sys.stdin = _ThreadStream("stdin", sys.stdin)
    if not isinstance(os.environ, _ThreadEnviron):
        os.environ = _ThreadEnviron(os.environ)
    _children_get_the_callers_env()
    _installed = True


def _children_get_the_callers_env() -> None:
    """A program a call starts (git, an editor) gets the caller's environment, as it would from
    a `mem` process of its own: without env=, subprocess passes the C environment of this
    process, which is the service's."""
    import subprocess

    original = subprocess.Popen.__init__

    def __init__(self, *args, env=None, **kwargs):
        if env is None and getattr(call_local, "env", None) is not None:
            env = dict(os.environ.items())
        original(self, *args, env=env, **kwargs)

    subprocess.Popen.__init__ = __init__


class _CallerFile(io.FileIO):
    """One of the caller's fds, abandoned once the caller is gone (`gone_fd` readable): a read
    raises Interrupted (`sleep 300 | mem write -` whose client was killed ends instead of holding
    the service's stop for ever), a write that would wait is dropped (a writable fd, such as the
    terminal of a client stopped by Ctrl-C, still gets the call's last line)."""

    def __init__(self, fd: int, mode: str, gone_fd: int | None):
        super().__init__(fd, mode, closefd=True)
        self._gone_fd = gone_fd

    def _ready(self, event: int) -> tuple[bool, bool]:
        """(this fd is ready, the caller is gone), waiting for either."""
        if self._gone_fd is None:
            return True, False
        import select

        poller = select.poll()
        poller.register(self.fileno(), event)
        poller.register(self._gone_fd, select.POLLIN)
        ready = {fd for fd, _ in poller.poll()}
        return self.fileno() in ready, self._gone_fd in ready

    def readinto(self, buffer):
        import select

        if self._ready(select.POLLIN)[1]:
            from memstrata.storage.errors import Interrupted

            raise Interrupted("stopped: its caller went away while it read its input")
        return super().readinto(buffer)

    def read(self, size=-1):  # FileIO's own read and readall would wait in C, past the check
        if size is None or size < 0:
            return self.readall()
        buffer = bytearray(size)
        count = self.readinto(buffer)
        return None if count is None else bytes(buffer[:count])

    def readall(self):
        chunks = []
        while True:
            chunk = self.read(1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)

    def write(self, data):
        import select

        ready, gone = self._ready(select.POLLOUT)
        if gone and not ready:
            return len(data)  # nobody reads it any more: dropped rather than waited for
        return super().write(data)


def open_streams(fds: list[int], message: dict, gone_fd: int | None = None):
    """The caller's stdin, stdout and stderr as text streams owning `fds`; with `gone_fd` (readable
    once the caller is gone) a read or write that would wait is abandoned then."""
    enc = message.get("enc") or {}
    stdin = io.TextIOWrapper(io.BufferedReader(_CallerFile(fds[0], "r", gone_fd)),
                             encoding=enc.get("stdin") or "utf-8", errors="strict")
    out_raw = _CallerFile(fds[1], "w", gone_fd)
    err_raw = _CallerFile(fds[2], "w", gone_fd)
    tty_out = out_raw.isatty()
    stdout = io.TextIOWrapper(io.BufferedWriter(out_raw), encoding="utf-8",
                              errors=enc.get("stdout_errors") or "strict", line_buffering=tty_out)
    stderr = io.TextIOWrapper(io.BufferedWriter(err_raw), encoding="utf-8",
                              errors=enc.get("stderr_errors") or "backslashreplace", line_buffering=True)
    return stdin, stdout, stderr


def close_streams(streams) -> None:
    for stream in streams:
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
        try:
            stream.close()
        except (OSError, ValueError):
            pass


def env_overlay(message: dict) -> dict:
    """The caller's whole environment for its call: every variable of the service's own that the
    caller does not have is unset for the call (None)."""
    sent = {str(k): str(v) for k, v in dict(message.get("env") or {}).items()}
    real = process_environ()
    overlay: dict = {k: None for k in real}
    overlay.update(sent)
    term = message.get("term")
    if term and overlay.get("COLUMNS") is None:
        overlay["COLUMNS"] = str(term[0])
    if term and overlay.get("LINES") is None:
        overlay["LINES"] = str(term[1])
    return overlay


def process_environ():
    """The service process's own environment (what its C library sees), not a call's view."""
    return os.environ._real if isinstance(os.environ, _ThreadEnviron) else os.environ
