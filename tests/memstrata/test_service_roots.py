"""One warm service per user: several trees through one process, the peer uid check, idle trees
closed and reopened, plain folders refused, the private runtime folder, team sync on a timer.
Real processes, a real socket, real git."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from memstrata.service import client, rundir

sys.path.insert(0, str(Path(__file__).parent))
from service_helpers import status, wait_for  # noqa: E402

PY = sys.executable
RUN = tempfile.mkdtemp(prefix="memstrata-roots-run-")
atexit.register(shutil.rmtree, RUN, True)  # the xdist controller imports this module too and runs no teardown
SOCK = Path(RUN) / rundir.SOCKET_NAME


@pytest.fixture(scope="module", autouse=True)
def _stop_module_service(stop_service):
    yield
    stop_service(RUN)


def mem(root, *args, service="auto", run=RUN, timeout=300, **extra):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update({"MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": service, "HF_HUB_OFFLINE": "1",
                "MEMSTRATA_RUNTIME_DIR": str(run), **{k: str(v) for k, v in extra.items()}})
    return subprocess.run([PY, "-m", "memstrata.cli.app", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def open_roots(run=RUN):
    return [r["root"] for r in (status(run) or {}).get("roots", [])]


def stop(root, run=RUN):
    mem(root, "serve", "--stop", service="off", run=run, timeout=60)


def make_tree(path, entries):
    assert mem(path, "init", service="off").returncode == 0
    for body, title, category in entries:
        p = mem(path, "write", body, "--title", title, "--category", category, service="off",
                MEMSTRATA_NOW="2026-11-01T09:00:00Z")
        assert p.returncode == 0, p.stderr
    return Path(path).resolve()


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    base = tmp_path_factory.mktemp("roots")
    a = make_tree(base / "a", [("We chose Postgres for the alpha project because of JSONB support.", "DB choice",
                                "projects/alpha"),
                               ("Alice prefers short standups and async written updates.", "Team habits", "people")])
    b = make_tree(base / "b", [("The billing service retries failed invoices three times, then alerts.",
                                "Billing retries", "projects/billing"),
                               ("Sessions are cached in Redis for thirty minutes.", "Session cache", "ops")])
    yield a, b
    stop(a)


CALLS = [("recall", "which database did we pick?", "--json", "--no-touch"),
         ("recall", "how are invoices retried", "--json", "--no-touch", "-k", "1"),
         ("list", "--json"), ("stats", "--json"), ("recall", "session caching", "--no-touch")]


def test_two_roots_through_one_service_answer_as_in_process(trees):
    a, b = trees
    expected = {(root, call): mem(root, *call, service="off") for root in (a, b) for call in CALLS}
    started = mem(a, "serve", "--detach", "--json", service="off")
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["pid"]
    assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=180)
    before = status(RUN)["requests"]
    for root in (a, b):
        for call in CALLS:
            on = mem(root, *call)
            off = expected[(root, call)]
            assert (on.returncode, on.stdout, on.stderr) == (off.returncode, off.stdout, off.stderr), (root, call)
    info = status(RUN)
    assert info["pid"] == pid and info["requests"] - before == 2 * len(CALLS)  # one process answered all
    assert set(open_roots()) == {str(a), str(b)}
    shown = json.loads(mem(a, "serve", "--status", "--json", service="off").stdout)
    assert shown["running"] and shown["rss_mb"] > 0 and {r["root"] for r in shown["roots"]} == {str(a), str(b)}
    assert all(r["entries"] == 2 for r in shown["roots"])
    text = mem(b, "serve", "--status", service="off").stdout
    assert str(a) in text and str(b) in text and "2 tree(s) open" in text


def test_an_idle_root_is_closed_and_reopened(trees):
    a, b = trees
    stop(a)
    started = mem(a, "serve", "--detach", "--json", "--idle-minutes", "10", "--root-idle-minutes", "0.1",
                  service="off")  # trees close after ~6 s without calls; the service stays
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["pid"]
    assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=180)
    expected = mem(b, "recall", "billing retries", "--json", "--no-touch", service="off").stdout
    assert mem(b, "recall", "billing retries", "--json", "--no-touch").stdout == expected
    assert str(b) in open_roots()
    assert wait_for(lambda: status(RUN) is not None and open_roots() == [], timeout=60)  # both closed
    # the root leaves the pool before its close is logged
    assert wait_for(lambda: "closed " + str(b) in (Path(RUN) / rundir.LOG_NAME).read_text(), timeout=30)
    again = mem(b, "recall", "billing retries", "--json", "--no-touch")
    assert again.returncode == 0 and again.stdout == expected
    info = status(RUN)
    assert info["pid"] == pid and str(b) in open_roots()  # reopened by the same process
    stop(a)


def test_idle_service_stops_once_no_tree_is_open(trees):
    a, _ = trees
    stop(a)
    assert mem(a, "serve", "--detach", "--root-idle-minutes", "0.03", service="off").returncode == 0
    assert wait_for(lambda: status(RUN) is None, timeout=90)
    assert "no tree open" in (Path(RUN) / rundir.LOG_NAME).read_text()


def test_a_folder_that_is_not_a_tree_is_refused(trees, tmp_path):
    a, _ = trees
    plain = tmp_path / "plain"
    plain.mkdir()
    fresh = tmp_path / "run"  # no service anywhere for this folder
    p = mem(plain, "recall", "anything", run=fresh)
    assert p.returncode != 0 and "not a memory tree" in p.stderr and "Traceback" not in p.stderr
    time.sleep(1.0)
    assert not (fresh / rundir.SOCKET_NAME).exists() and status(fresh) is None  # no service was started
    d = mem(plain, "serve", "--detach", service="off", run=fresh)
    assert d.returncode != 0 and "no memory tree" in d.stderr and status(fresh) is None
    # a running service refuses to open it or run a call for it, whatever a client sends
    stop(a)
    assert mem(a, "serve", "--detach", service="off").returncode == 0
    assert client.request({"op": "open", "root": str(plain)}, folder=RUN)["t"] == "refused"
    sock = client.connect(RUN)
    fds = [os.open(os.devnull, os.O_RDWR) for _ in range(3)]
    try:
        client.send_message(sock, {"op": "run", "v": client.PROTOCOL, "code": client.code_home(), "root": str(plain),
                                   "argv": ["init"], "cwd": str(tmp_path), "umask": 0o077, "env": {}, "enc": {},
                                   "term": None}, fds)
        assert client.Lines(sock).next()["t"] == "refused"
    finally:
        sock.close()
    # a client of another install (another checkout or venv) is told so and runs the call itself
    sock = client.connect(RUN)
    try:
        client.send_message(sock, {"op": "run", "v": client.PROTOCOL, "code": "/elsewhere/memstrata", "root": str(a),
                                   "argv": ["write", "from another install", "-c", "notes"], "cwd": str(tmp_path),
                                   "umask": 0o077, "env": {}, "enc": {}, "term": None}, fds)
        answer = client.Lines(sock).next()
        assert answer == {"t": "other-install", "code": client.code_home()}
    finally:
        sock.close()
        for fd in fds:
            os.close(fd)
    assert status(RUN)["code"] == client.code_home()
    assert not any("from another install" in p.read_text() for p in a.rglob("*.md"))
    assert str(plain.resolve()) not in open_roots()
    assert list(plain.iterdir()) == []  # nothing written there


def test_the_server_refuses_a_peer_of_another_uid(trees):
    """As root: a real process of another uid reaches the socket (its folder opened up for the
    test) and the server closes on it without an answer; our own request is answered."""
    if os.getuid() != 0:
        pytest.skip("running a client under another uid needs root")
    a, _ = trees
    if status(RUN) is None:
        assert mem(a, "serve", "--detach", service="off").returncode == 0
    probe = ("import os, socket, struct, json, sys\n"
             "os.setgid(65534); os.setuid(65534)\n"
             "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(20)\n"
             "s.connect(sys.argv[1])\n"
             "data = json.dumps({'op': 'status'}).encode()\n"
             "try:\n"
             "    s.sendall(struct.pack('!I', len(data)) + data)\n"
             "    print(repr(s.recv(65536)))\n"
             "except (ConnectionResetError, BrokenPipeError):  # closed before or while it sent\n"
             "    print('reset')\n")
    mode_dir, mode_sock = os.stat(RUN).st_mode & 0o777, os.stat(SOCK).st_mode & 0o777
    os.chmod(RUN, 0o711)
    os.chmod(SOCK, 0o666)
    try:
        p = subprocess.run([PY, "-c", probe, str(SOCK)], capture_output=True, text=True, timeout=60)
    finally:
        os.chmod(RUN, mode_dir)
        os.chmod(SOCK, mode_sock)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() in ("b''", "reset")  # connected, and closed on without a word
    assert status(RUN)["t"] == "status"


def test_runtime_folder_must_be_private():
    me = os.getuid()
    ok = dict(is_symlink=False, is_dir=True, owner=me, mode=0o40700)
    assert rundir.unsafe_reason(me, **ok) is None
    assert "symlink" in rundir.unsafe_reason(me, **{**ok, "is_symlink": True})
    assert "owned by uid" in rundir.unsafe_reason(me, **{**ok, "owner": me + 1})
    assert "mode is 0755" in rundir.unsafe_reason(me, **{**ok, "mode": 0o40755})
    assert "not a folder" in rundir.unsafe_reason(me, **{**ok, "is_dir": False})
    assert rundir.candidate({rundir.ENV: "/x/y"}) == "/x/y"
    assert rundir.candidate({}, uid=1234) == "/tmp/memstrata-1234"


def test_a_runtime_folder_open_to_others_is_refused(trees, tmp_path):
    a, _ = trees
    for bad in ("open", "link"):
        run = tmp_path / f"run-{bad}"
        if bad == "open":
            run.mkdir(mode=0o755)
            run.chmod(0o755)
        else:
            (tmp_path / "elsewhere").mkdir(mode=0o700)
            run.symlink_to(tmp_path / "elsewhere")
        d = mem(a, "serve", "--detach", service="off", run=run)
        assert d.returncode != 0 and "not safe" in d.stderr and "Traceback" not in d.stderr, d.stderr
        off = mem(a, "recall", "database", "--json", "--no-touch", service="off")
        on = mem(a, "recall", "database", "--json", "--no-touch", run=run)  # runs in-process, starts nothing
        assert on.returncode == 0 and on.stdout == off.stdout
        time.sleep(1.0)
        assert not (run / rundir.SOCKET_NAME).exists() and status(run) is None
    assert not any((tmp_path / "elsewhere").iterdir())


def test_team_sync_runs_on_a_timer_in_the_service(tmp_path):
    bare = tmp_path / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    a, b = tmp_path / "a", tmp_path / "b"
    for root, machine in ((a, "laptop"), (b, "desktop")):
        p = mem(root, "init", "--clone", str(bare), "--machine", machine, service="off")
        assert p.returncode == 0, p.stderr
    assert mem(a, "config", "set", "sync_interval", "2", service="off").returncode == 0
    run = tmp_path / "run"
    try:
        assert mem(a, "serve", "--detach", service="off", run=run).returncode == 0
        assert wait_for(lambda: (status(run) or {}).get("warm"), timeout=180)
        w = mem(a, "write", "The staging database moves to the new cluster on Monday.", "--title", "Staging move",
                "--category", "ops", "--json", run=run)
        assert w.returncode == 0, w.stderr
        path = json.loads(w.stdout)["path"]

        def pushed():
            out = subprocess.run(["git", "--git-dir", str(bare), "log", "--all", "--name-only", "--format="],
                                 capture_output=True, text=True).stdout
            return path in out

        assert wait_for(pushed, timeout=120), (run / rundir.LOG_NAME).read_text()  # no manual sync

        def sync_state():
            roots = (status(run) or {}).get("roots", [])
            return next((r["sync"] or {} for r in roots if r["root"] == str(a.resolve())), {})

        # the push lands before the round that made it is counted: wait for the count too
        assert wait_for(lambda: sync_state().get("rounds", 0) >= 1, timeout=30), sync_state()
        sync = sync_state()
        assert sync["interval_s"] == 2 and sync["error"] is None
        assert mem(b, "sync", "--remote", service="off").returncode == 0
        assert "Staging move" in mem(b, "list", service="off").stdout
    finally:
        stop(a, run=run)


def test_status_never_says_no_service_while_one_is_alive_but_silent(tmp_path):
    """A service that holds its pid file but does not answer (busy) is named, not denied."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    silent = subprocess.Popen([PY, "-c", "import time; time.sleep(120)"])
    try:
        (run / "service.pid").write_text(json.dumps({"pid": silent.pid}))
        done = mem(tmp_path, "serve", "--status", run=run)
        assert done.returncode == 0 and f"pid {silent.pid}" in done.stdout and "did not answer" in done.stdout
        assert "no memory service running" not in done.stdout
    finally:
        silent.kill()
        silent.wait()
    done = mem(tmp_path, "serve", "--status", run=run)
    assert "no memory service running" in done.stdout
