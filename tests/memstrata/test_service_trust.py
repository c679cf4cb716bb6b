"""Issue 14 case 6: the client gives its argv, environment and descriptors only to a socket of its own
user in its own private runtime folder, and never deletes anything at the socket path that is not a
socket. Real sockets, a real SO_PEERCRED reading and a real serving process; a different uid is checked
through the decision functions (and, run as root, through a real process of another uid).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from memstrata.service import client, rundir

FAKE_SERVICE = r"""
import os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(1)
print("ready", flush=True)
conn, _ = s.accept()
data = conn.recv(65536)
with open(sys.argv[2], "wb") as out:
    out.write(data)
conn.sendall(b'{"t": "exit", "code": 42}\n')
conn.close()
"""


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A tree, and a private runtime folder of this test (where the sockets live)."""
    r = tmp_path / "r"
    r.mkdir(mode=0o700)
    (r / "config.md").write_text("---\n# memstrata\n---\n")
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv(rundir.ENV, str(run))
    return r


def _sock(root):
    return root.parent / "run" / rundir.SOCKET_NAME


def test_a_socket_of_the_same_user_is_used_and_peer_uid_is_read(root, tmp_path):
    received = tmp_path / "received"
    proc = subprocess.Popen([sys.executable, "-c", FAKE_SERVICE, str(_sock(root)), str(received)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        sock = client.connect()
        assert sock is not None
        assert client.peer_uid(sock) == os.getuid()  # the real SO_PEERCRED reading
        sock.close()
    finally:
        proc.wait(timeout=30)
    # connect() sent nothing: the fake service got an empty read once the client closed
    assert received.read_bytes() == b""


def test_forward_sends_only_after_the_check(root, tmp_path):
    received = tmp_path / "received"
    proc = subprocess.Popen([sys.executable, "-c", FAKE_SERVICE, str(_sock(root)), str(received)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert client.forward(["list"], str(root)) == 42
    finally:
        proc.wait(timeout=30)
    assert b'"argv": ["list"]' in received.read_bytes()


def test_decision_refuses_other_users():
    me = os.getuid()
    other = me + 1000
    ok = dict(dir_uid=me, socket_uid=me, socket_is_socket=True, peer_uid=me)
    assert client.untrusted_reason(me, **ok) is None
    assert "service process runs as uid" in client.untrusted_reason(me, **{**ok, "peer_uid": other})
    assert "socket is owned by uid" in client.untrusted_reason(me, **{**ok, "socket_uid": other})
    assert "runtime folder is owned" in client.untrusted_reason(me, **{**ok, "dir_uid": other})
    assert "not a socket" in client.untrusted_reason(me, **{**ok, "socket_is_socket": False})
    assert client.untrusted_reason(me, **{**ok, "peer_uid": None}) is None  # platform cannot tell: file checks


def test_socket_owned_by_another_uid_is_not_used(root):
    if os.getuid() != 0:
        pytest.skip("chown to another uid needs root")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = _sock(root)
    listener.bind(str(path))
    listener.listen(1)
    try:
        os.chown(path, 65534, 65534)
        assert client.connect() is None
        listener.settimeout(0.5)
        with pytest.raises(socket.timeout):
            listener.accept()  # the client never even connected
    finally:
        listener.close()


def test_a_regular_file_at_the_socket_path_is_never_deleted(root):
    path = _sock(root)
    path.write_text("my notes, not a socket")
    assert client.connect() is None
    assert client.remove_stale_socket() is False
    assert client.run(["list", "--root", str(root)]) is None
    assert path.read_text() == "my notes, not a socket"


def test_a_stale_socket_of_ours_is_still_cleaned_up(root):
    path = _sock(root)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()  # nobody listens: connection refused
    assert client.connect() is None
    time.sleep(0.05)
    assert not path.exists()
