"""The warm local service: identical results, start on demand, idle stop, crash and stale-socket
recovery, several clients at once; the torch-free query path; ANN index and compaction."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.service import rundir

sys.path.insert(0, str(Path(__file__).parent))
from service_helpers import status, wait_for  # noqa: E402

PY = sys.executable
# This module's own runtime folder: its service is never the user's, nor another module's.
RUN = tempfile.mkdtemp(prefix="memstrata-svc-run-")
atexit.register(shutil.rmtree, RUN, True)  # the xdist controller imports this module too and runs no teardown
SOCK = Path(RUN) / rundir.SOCKET_NAME


@pytest.fixture(scope="module", autouse=True)
def _stop_module_service(stop_service):
    yield
    stop_service(RUN)


def _env(root, service="auto", **extra):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update({"MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": service, "HF_HUB_OFFLINE": "1",
                "MEMSTRATA_RUNTIME_DIR": RUN})
    env.update({k: str(v) for k, v in extra.items()})
    return env


def mem(root, *args, service="auto", stdin=None, cwd=None, timeout=300, **env):
    return subprocess.run([PY, "-m", "memstrata.cli.app", *args], input=stdin, capture_output=True, text=True,
                          env=_env(root, service, **env), cwd=cwd, timeout=timeout)


def start(root, idle=None, warm=True):
    args = ["serve", "--detach", "--json"] + (["--idle-minutes", str(idle)] if idle is not None else [])
    proc = mem(root, *args, service="off")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    # wait until warm, so timing does not leak into what the tests check
    assert not warm or wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=180)
    return info


def stop(root):
    mem(root, "serve", "--stop", service="off", timeout=60)


ENTRIES = [
    ("We chose Postgres for the alpha project because of JSONB support.", "DB choice", "projects/alpha", "db"),
    ("The billing service retries failed invoices three times, then alerts.", "Billing retries", "projects/billing", "ops"),
    ("Weekly meeting: ship the dark mode toggle on Friday.", "Dark mode", "meetings", "ui"),
    ("Kubernetes upgrade to 1.31 planned for next sprint; freeze on Thursday.", "K8s upgrade", "projects/infra", "ops"),
    ("Alice prefers short standups and async written updates.", "Team habits", "long-term", "people"),
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("svc") / "mem"
    assert mem(root, "init", service="off").returncode == 0
    # The entries go in through the API on the session's model: the tests compare what the CLI
    # answers through the service and without it, not how the tree was filled (five cold processes).
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEMSTRATA_NOW", "2026-11-01T09:00:00Z")
        m = Memory(root, embedder=embedder)
        for body, title, category, tag in ENTRIES:
            m.write(body, title=title, category=category, tags=[tag])
    assert mem(root, "sync", service="off").returncode == 0
    yield root
    stop(root)


IDENTICAL = [
    ("recall", "which database did we pick?", "--json", "--no-touch"),  # hits count as accesses otherwise
    ("recall", "dark mode release day", "--no-touch"),
    ("recall", "ops", "--category", "projects", "--json", "--explain", "--no-touch"),
    ("list", "--json"),
    ("list",),
    ("stats", "--json"),
    ("read", "projects/alpha/db-choice.md", "--no-touch", "--json"),
    ("read", "0123456789ab"),
    ("read", "0123456789ab", "--json"),
    ("list", "--tier", "lukewarm"),
    ("write", "x", "--category", "../etc"),
    ("--help",),
    ("recall", "--help"),
    ("config", "get", "hot_days"),
    ("nosuchcommand",),
]


def test_results_identical_with_and_without_service(tree):
    off = {args: mem(tree, *args, service="off") for args in IDENTICAL}
    start(tree)
    before = status(RUN)["requests"]
    for args in IDENTICAL:
        on = mem(tree, *args)
        assert (on.returncode, on.stdout, on.stderr) == (off[args].returncode, off[args].stdout, off[args].stderr), args
    assert status(RUN)["requests"] - before == len(IDENTICAL)  # every call went through the service


def test_service_uses_callers_cwd_stdin_env_and_umask(tree, tmp_path):
    start(tree)
    (tmp_path / "body.md").write_text("Body read from a file relative to the caller's cwd.")
    before = status(RUN)["requests"]
    w = mem(tree, "write", "--file", "body.md", "--category", "meetings", "--title", "From file", "--json",
            cwd=tmp_path, MEMSTRATA_NOW="2020-02-02T02:02:02Z")
    assert w.returncode == 0, w.stderr
    s = mem(tree, "write", "-", "--category", "meetings", "--title", "From stdin", "--json", stdin="piped\n")
    assert s.returncode == 0, s.stderr
    assert status(RUN)["requests"] - before == 2
    entry = json.loads(mem(tree, "read", json.loads(w.stdout)["id"], "--no-touch", "--json", service="off").stdout)
    assert entry["body"].startswith("Body read from a file")
    assert entry["frontmatter"]["created"].startswith("2020-02-02T02:02:02")
    piped = json.loads(mem(tree, "read", json.loads(s.stdout)["id"], "--no-touch", "--json", service="off").stdout)
    assert piped["body"] == "piped\n"
    for r in (w, s):
        path = Path(tree) / json.loads(r.stdout)["path"]
        assert (path.stat().st_mode & 0o777) == 0o600 or (path.stat().st_mode & 0o077) == 0
        mem(tree, "delete", json.loads(r.stdout)["id"], service="off")


def test_several_clients_at_once(tree):
    start(tree)
    # Let the service's index upkeep after the previous test's writes finish first: LanceDB's
    # full-text scores differ slightly between optimized and unoptimized tables, in-process too.
    time.sleep(6)
    queries = ["database choice", "invoice retries", "dark mode", "kubernetes freeze", "standups"] * 2
    expected = {q: mem(tree, "recall", q, "--json", "-k", "3", service="off").stdout for q in set(queries)}
    results = {}

    def one(i, q):
        results[i] = mem(tree, "recall", q, "--json", "-k", "3")

    threads = [threading.Thread(target=one, args=(i, q)) for i, q in enumerate(queries)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, q in enumerate(queries):
        assert results[i].returncode == 0, results[i].stderr
        assert results[i].stdout == expected[q]


def test_socket_is_private(tree):
    start(tree)
    assert SOCK.is_socket() and (SOCK.stat().st_mode & 0o777) == 0o600
    assert (Path(RUN).stat().st_mode & 0o777) == 0o700
    assert not (Path(tree) / ".mem.sock").exists()  # nothing of the service lives in the tree


def test_status_and_stop(tree):
    start(tree)
    p = mem(tree, "serve", "--status", "--json", service="off")
    data = json.loads(p.stdout)
    assert data["running"] and data["warm"] and data["pid"] > 0
    stop(tree)
    assert status(RUN) is None and not SOCK.exists()
    assert json.loads(mem(tree, "serve", "--status", "--json", service="off").stdout)["running"] is False


def _tree_calls(info, tree):
    return next(r["calls"] for r in info["roots"] if r["root"] == str(Path(tree).resolve()))


def test_auto_start_on_demand_then_used(tree):
    stop(tree)
    first = mem(tree, "recall", "database", "--json")  # no service: runs in-process, starts one
    assert first.returncode == 0
    info = wait_for(lambda: (status(RUN) or {}).get("warm") and status(RUN), timeout=180)
    assert info, (Path(RUN) / rundir.LOG_NAME).read_text()
    before = info["requests"]
    assert _tree_calls(info, tree) == 0  # opening the tree is not a call
    second = mem(tree, "recall", "database", "--json")
    assert second.stdout == first.stdout
    after = status(RUN)
    assert after["requests"] == before + 1 and _tree_calls(after, tree) == 1


def test_no_auto_start_when_off_or_light(tree):
    stop(tree)
    assert mem(tree, "recall", "database", service="off").returncode == 0
    assert mem(tree, "list").returncode == 0  # catalog-only commands start nothing
    time.sleep(1.0)
    assert status(RUN) is None


def test_idle_stop(tree):
    stop(tree)
    info = start(tree, idle=0.03, warm=False)  # about 2 s without calls
    assert info["pid"] > 0
    assert wait_for(lambda: status(RUN) is None, timeout=30)
    assert not SOCK.exists()
    # the socket goes first, then the pid file: the service process is still exiting here
    assert wait_for(lambda: not (Path(RUN) / rundir.PID_NAME).exists(), timeout=10)


def test_crashed_service_is_replaced(tree):
    stop(tree)
    info = start(tree)
    os.kill(info["pid"], signal.SIGKILL)
    from memstrata.service.process import pid_alive
    wait_for(lambda: not pid_alive(info["pid"]), timeout=10)
    time.sleep(0.3)
    assert SOCK.exists()  # left behind by the crash
    expected = mem(tree, "recall", "billing", "--json", service="off").stdout
    p = mem(tree, "recall", "billing", "--json")  # finds the dead socket: in-process, starts a new service
    assert p.returncode == 0 and p.stdout == expected and "Traceback" not in p.stderr
    new = wait_for(lambda: status(RUN), timeout=180)
    assert new and new["pid"] != info["pid"]


def test_stale_socket_is_not_an_error(tree):
    stop(tree)
    path = SOCK
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()  # a socket file nobody listens on
    assert path.exists()
    p = mem(tree, "list", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["count"] >= len(ENTRIES)
    assert not path.exists()


def test_service_died_mid_call_is_reported(tree, tmp_path):
    """A fake service that accepts, says 'started' and dies: the client reports it, exit 1."""
    stop(tree)
    path = SOCK
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)

    def fake():
        conn, _ = srv.accept()
        _, fds, _, _ = socket.recv_fds(conn, 65536, 3)
        for fd in fds:  # the caller's stdout/stderr: keep no copy, or its pipes never close
            os.close(fd)
        conn.sendall(b'{"t": "started"}\n')
        conn.close()

    t = threading.Thread(target=fake)
    t.start()
    p = mem(tree, "list", "--json")
    t.join()
    srv.close()
    path.unlink()
    assert p.returncode == 1 and "stopped while running" in p.stderr


def test_not_started_falls_back_in_process(tree):
    """A service that closes before 'started' (or says outdated): the call runs in-process."""
    stop(tree)
    path = SOCK
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)

    def fake():
        conn, _ = srv.accept()
        _, fds, _, _ = socket.recv_fds(conn, 65536, 3)
        for fd in fds:
            os.close(fd)
        conn.sendall(b'{"t": "outdated"}\n')
        conn.close()

    t = threading.Thread(target=fake)
    t.start()
    p = mem(tree, "list", "--json")
    t.join()
    srv.close()
    path.unlink()
    assert p.returncode == 0 and json.loads(p.stdout)["count"] >= len(ENTRIES)


# --------------------------------------------------------------------------- torch-free query path

def test_recall_path_never_imports_torch(tree):
    stop(tree)
    # the ONNX export is made (once, cached) by whoever loads the model first
    warm = subprocess.run([PY, "-c", "from memstrata.models.embedder import get_embedder; "
                           "print(get_embedder('bundled').backend)"], capture_output=True, text=True,
                          env=_env(tree, "off"), timeout=600)
    assert warm.stdout.strip() == "onnx", warm.stderr
    code = (
        "import sys\n"
        "from memstrata.cli.app import main\n"
        "rc = main(['recall', 'which database', '--json'])\n"
        "bad = [m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules]\n"
        "print('BAD', bad, rc, file=sys.stderr)\n"
        "sys.exit(3 if bad else rc)\n"
    )
    p = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=_env(tree, "off"), timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["results"]


def test_client_import_is_stdlib_only():
    code = ("import sys; before = set(sys.modules); from memstrata.service import client; "
            "new = set(sys.modules) - before; "
            "bad = [m for m in new if m.split('.')[0] in ('typer', 'click', 'rich', 'yaml', 'numpy', 'lancedb')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    assert subprocess.run([PY, "-c", code], capture_output=True, timeout=60).returncode == 0


def test_hand_edit_is_seen_by_recall_through_the_service(tree):
    """The service's tree watcher lets recall skip the walk only while nothing changed."""
    start(tree)
    before = json.loads(mem(tree, "recall", "quokka sanctuary", "--json", "-k", "3").stdout)
    assert not any("quokka" in (h.get("snippet") or "") for h in before["results"])
    path = Path(tree) / "long-term" / "team-habits.md"
    text = path.read_text()
    path.write_text(text.replace("async written updates", "async written updates and the quokka sanctuary trip"))
    try:
        on = json.loads(mem(tree, "recall", "quokka sanctuary", "--json", "-k", "1").stdout)
        assert on["results"][0]["title"] == "Team habits"
        assert "quokka" in on["results"][0]["snippet"]
    finally:
        path.write_text(text)
        mem(tree, "sync", service="off")


def test_a_prompt_hook_never_waits_for_a_cold_start(tree, tmp_path, embedder):
    """With no warm service, the hook answers nothing at once and starts one; the next prompt
    gets the full answer through it. A service already warm for another tree answers at once."""
    stop(tree)
    root = tmp_path / "hooked"
    m = Memory(root, embedder=embedder)
    m.init()
    m.write("We chose Postgres for the alpha project because of JSONB support.", title="DB choice",
            category="projects/alpha")
    try:
        first = mem(root, "autoload", "--hook", stdin=json.dumps({"prompt": "which database for alpha?",
                                                                   "session_id": "s1"}))
        assert first.returncode == 0 and first.stdout == ""
        assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=180)
        second = mem(root, "autoload", "--hook", stdin=json.dumps({"prompt": "which database for alpha?",
                                                                    "session_id": "s1"}))
        assert second.returncode == 0 and "Postgres" in second.stdout
        # the same service, warm already, gets the first prompt of a session in another tree
        other = mem(tree, "autoload", "--hook", stdin=json.dumps({"prompt": "when does dark mode ship?",
                                                                   "session_id": "s2"}))
        assert other.returncode == 0 and "dark mode" in other.stdout
        assert str(Path(tree).resolve()) in {r["root"] for r in status(RUN)["roots"]}
    finally:
        stop(root)
