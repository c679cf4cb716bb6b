"""The service's side of the socket protocol: read a request (with its fds), answer a line, check the peer and the tree."""
from __future__ import annotations

import json
import os
import socket
import struct

from memstrata.service import client


def same_user(conn: socket.socket) -> bool:
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        return uid == os.getuid()
    except (OSError, AttributeError):
        return True  # the 0600 socket in the 0700 runtime folder already limits who can connect


def tree_of(message: dict) -> str | None:
    """The tree a request names, resolved, if it is an initialised memory tree."""
    root = message.get("root")
    if not isinstance(root, str) or not os.path.isabs(root):
        return None
    root = os.path.realpath(root)
    return root if client.is_tree(root) else None


def receive(conn: socket.socket):
    conn.settimeout(10.0)
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    if len(data) < 4:
        return None, list(fds)
    (length,) = struct.unpack("!I", data[:4])
    if length > 64 << 20:
        return None, list(fds)
    body = data[4:]
    while len(body) < length:
        chunk = conn.recv(min(1 << 20, length - len(body)))
        if not chunk:
            return None, list(fds)
        body += chunk
    conn.settimeout(None)
    return json.loads(body[:length]), list(fds)


def send_reply(conn: socket.socket, message: dict) -> None:
    try:
        conn.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        pass
