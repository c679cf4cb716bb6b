"""The client's connection to the user's service (stdlib only): trust checks before anything is sent, connect, framing, control requests."""
from __future__ import annotations

import json
import os
import socket
import stat
import struct

from memstrata.service import rundir

CONNECT_TIMEOUT = 5.0


def untrusted_reason(my_uid: int, *, dir_uid: int | None, socket_uid: int | None, socket_is_socket: bool,
                     peer_uid: int | None) -> str | None:
    """Why a service socket must not be given this caller's argv, environment and descriptors
    (None: it may). The runtime folder and the socket file must be the caller's, the file a socket,
    and the process at the other end (SO_PEERCRED; None where the platform cannot tell) the same user."""
    if dir_uid != my_uid:
        return f"the service's runtime folder is owned by uid {dir_uid}, not {my_uid}"
    if not socket_is_socket:
        return "the service path is not a socket"
    if socket_uid != my_uid:
        return f"the service socket is owned by uid {socket_uid}, not {my_uid}"
    if peer_uid is not None and peer_uid != my_uid:
        return f"the service process runs as uid {peer_uid}, not {my_uid}"
    return None


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a connected AF_UNIX socket (None if unknown)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is not None:
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
            return struct.unpack("3i", raw)[1]  # struct ucred: pid, uid, gid
        except OSError:
            return None
    return None


def _socket_owner(path: str) -> tuple[bool, int | None]:
    """(is a socket, owner uid) of the service path, without following a symlink."""
    st = os.lstat(path)  # FileNotFoundError passes through
    return stat.S_ISSOCK(st.st_mode), st.st_uid


def _folder(folder: str | None) -> str | None:
    """The runtime folder to use (checked, never created here), or None when it is unusable."""
    if folder is None:
        folder, reason = rundir.ensure(create=False)
    else:
        reason = rundir.check(folder)
    return None if reason else folder


def connect(folder: str | None = None, timeout: float = CONNECT_TIMEOUT) -> socket.socket | None:
    """A connection to the user's live service, or None (no socket, stale socket, not ours).

    Nothing is sent before the socket is known to be the caller's: the runtime folder private
    (0700, ours, no symlink), the socket file owned by the caller, and the peer process of the
    same uid (untrusted_reason).
    """
    folder = _folder(folder)
    if folder is None:
        return None
    path = rundir.socket_path(folder)
    if len(path.encode()) > 107:
        return None  # AF_UNIX path limit: no service possible here
    my_uid = os.getuid()
    try:
        is_socket, socket_uid = _socket_owner(path)
        dir_uid = os.lstat(folder).st_uid
    except OSError:
        return None
    if untrusted_reason(my_uid, dir_uid=dir_uid, socket_uid=socket_uid, socket_is_socket=is_socket,
                        peer_uid=None):
        return None  # run in-process; never touch a path that is not our socket
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except FileNotFoundError:
        sock.close()
        return None
    except (ConnectionRefusedError, socket.timeout):
        sock.close()
        remove_stale_socket(folder)
        return None
    except OSError:
        sock.close()
        return None
    if untrusted_reason(my_uid, dir_uid=dir_uid, socket_uid=socket_uid, socket_is_socket=True,
                        peer_uid=peer_uid(sock)):
        sock.close()
        return None
    return sock


def remove_stale_socket(folder: str | None = None) -> bool:
    """Unlink the socket if no live service holds the service lock (a crash left it).

    Only a socket owned by the caller is ever removed: a regular file (or anything else) at
    the socket's path is left alone.
    """
    import fcntl

    folder = _folder(folder)
    if folder is None:
        return False
    path = rundir.socket_path(folder)
    try:
        is_socket, owner = _socket_owner(path)
    except OSError:
        return False
    if not is_socket or owner != os.getuid():
        return False
    try:
        fd = os.open(rundir.lock_path(folder), os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        fd = None
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False  # a service is alive (starting up or busy): leave its socket alone
        try:
            if _socket_owner(path)[0]:
                os.unlink(path)
                return True
            return False
        except OSError:
            return False
    finally:
        if fd is not None:
            os.close(fd)


def send_message(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    packet = struct.pack("!I", len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [packet], fds)
        if sent < len(packet):
            sock.sendall(packet[sent:])
    else:
        sock.sendall(packet)


class Lines:
    """Reads newline-delimited JSON messages from a socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def next(self) -> dict | None:
        while b"\n" not in self.buf:
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, socket.timeout, OSError):
                return None
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            return None


def request(message: dict, timeout: float = 10.0, folder: str | None = None) -> dict | None:
    """A control request (status, stop, open, ping) to the user's service: its one-line answer, or None."""
    sock = connect(folder, timeout)
    if sock is None:
        return None
    try:
        send_message(sock, message)
        return Lines(sock).next()
    except OSError:
        return None
    finally:
        sock.close()
