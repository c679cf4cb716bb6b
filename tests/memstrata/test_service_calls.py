"""The warm service's calls: internal errors logged with their traceback, stops that never drop a
call in flight, hooks that never wait for a warm-up, the status of an open tree. Real processes."""
from __future__ import annotations

import atexit
import json
import os
import shutil
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
RUN = tempfile.mkdtemp(prefix="memstrata-calls-run-")
atexit.register(shutil.rmtree, RUN, True)  # the xdist controller imports this module too and runs no teardown
LOG = Path(RUN) / rundir.LOG_NAME


@pytest.fixture(scope="module", autouse=True)
def _stop_module_service(stop_service):
    yield
    stop_service(RUN)


def _env(root, service, extra):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update({"MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": service, "HF_HUB_OFFLINE": "1",
                "MEMSTRATA_RUNTIME_DIR": RUN, **{k: str(v) for k, v in extra.items()}})
    return env


def mem(root, *args, service="auto", stdin=None, timeout=240, **extra):
    return subprocess.run([PY, "-m", "memstrata.cli.app", *args], input=stdin, capture_output=True, text=True,
                          env=_env(root, service, extra), timeout=timeout)


def popen(root, *args, **extra):
    return subprocess.Popen([PY, "-m", "memstrata.cli.app", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(root, "auto", extra))


def start(root):
    p = mem(root, "serve", "--detach", "--json", service="off")
    assert p.returncode == 0, p.stderr
    assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=180)
    return json.loads(p.stdout)


def stop_all():
    mem(RUN, "serve", "--stop", service="off", timeout=120)


@pytest.fixture(scope="module")
def trees(tmp_path_factory, embedder):
    base = tmp_path_factory.mktemp("calls")
    out = []
    for name in ("a", "b"):
        m = Memory(base / name, embedder=embedder)
        m.init()
        m.write(f"Tree {name}: we chose Postgres for the alpha project.", title="DB choice", category="projects")
        m.sync()
        out.append(base / name)
    return out


def test_an_internal_error_is_logged_with_its_traceback_and_the_line_names_the_log(trees, tmp_path, embedder):
    broken = tmp_path / "broken"
    m = Memory(broken, embedder=embedder)
    m.init()
    m.write("An entry to index.", title="One", category="projects")
    start(broken)
    vectors = broken / ".vectors"
    import shutil

    shutil.rmtree(vectors, ignore_errors=True)
    vectors.write_text("not a folder")  # the index cannot be opened: an error nobody foresaw
    secret = "s3cr3t-value-never-logged"
    p = mem(broken, "sync", AWS_SECRET_ACCESS_KEY=secret)
    assert p.returncode == 1
    errors = [line for line in p.stderr.splitlines() if line.startswith("mem: error:")]
    assert len(errors) == 1 and errors[0].endswith(f"(traceback in {LOG})") and "Traceback" not in p.stderr
    log = LOG.read_text()
    assert "Traceback (most recent call last)" in log and "FileExistsError" in log
    assert "internal error in `mem sync`" in log
    assert secret not in log


def _calls_in_flight():
    return (status(RUN) or {}).get("active", 0)


def test_a_stop_never_drops_a_call_in_flight(trees):
    a, b = trees
    info = start(a)
    assert mem(b, "recall", "database", "--json").returncode == 0  # b open too
    # A call of tree a in flight: a write that reads its body from the caller's stdin, held open.
    slow = popen(a, "write", "-", "--title", "Slow write", "--category", "notes", "--json")
    assert wait_for(lambda: _calls_in_flight() >= 1, timeout=60)

    closed = mem(b, "serve", "--stop", "--root", str(b), "--json", service="off")
    assert closed.returncode == 0 and json.loads(closed.stdout)["closed"] is True
    roots = {r["root"] for r in status(RUN)["roots"]}
    assert str(b.resolve()) not in roots and str(a.resolve()) in roots  # tree b only

    stopper = threading.Thread(target=lambda: mem(a, "serve", "--stop", service="off", timeout=120))
    stopper.start()
    assert wait_for(lambda: not (Path(RUN) / rundir.SOCKET_NAME).exists(), timeout=30)  # accepts no new call
    time.sleep(0.5)
    assert stopper.is_alive() and os.path.exists(f"/proc/{info['pid']}")  # waits for the call in flight
    out, err = slow.communicate("The body came late, after the stop.\n", timeout=120)
    stopper.join(timeout=120)
    assert slow.returncode == 0, err
    written = json.loads(out)["id"]
    assert not stopper.is_alive() and status(RUN) is None
    read = mem(a, "read", written, "--json", "--no-touch", service="off")
    assert json.loads(read.stdout)["body"].startswith("The body came late")
    log = LOG.read_text()
    assert "waiting for 1 call(s) in flight" in log and "stopped: no call in flight" in log


def test_a_hook_never_waits_for_a_warm_up(trees):
    a, _ = trees
    stop_all()
    blocker = subprocess.Popen(["sleep", "120"])  # the service warms up once this process is gone
    service = subprocess.Popen([PY, "-m", "memstrata.service", "--root", str(a), "--wait-pid", str(blocker.pid)],
                               env=_env(a, "auto", {}), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: status(RUN), timeout=60)
        t0 = time.monotonic()
        hook = mem(a, "autoload", "--hook", stdin=json.dumps({"prompt": "which database?", "session_id": "h"}),
                   timeout=60)
        assert hook.returncode == 0 and hook.stdout == "" and hook.stderr == ""
        assert time.monotonic() - t0 < 30  # it would wait for the 120 s blocker if it waited for the warm-up
        assert status(RUN)["warm"] is False
        blocker.kill()
        assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=180)
        full = mem(a, "autoload", "--hook", stdin=json.dumps({"prompt": "which database?", "session_id": "h"}))
        assert full.returncode == 0 and "Postgres" in full.stdout
    finally:
        blocker.kill()
        stop_all()
        service.wait(timeout=60)


def test_status_counts_the_entries_of_an_open_tree(trees):
    a, _ = trees
    start(a)
    info = status(RUN)
    entry = next(r for r in info["roots"] if r["root"] == str(a.resolve()))
    assert entry["entries"] == json.loads(mem(a, "list", "--json", service="off").stdout)["count"] >= 1
    text = mem(a, "serve", "--status", service="off").stdout
    assert "? entries" not in text and f"{entry['entries']} entr" in text


def test_a_call_the_service_fails_before_it_starts_runs_here_and_says_so(trees):
    """The caller's cwd is deeper than PATH_MAX (reached by relative chdirs): the service's chdir to it
    fails before the call starts. A prompt hook used to answer nothing then, with the service warm
    (as with the missing `import time`); now it runs here, prints the block an in-process hook prints,
    and says in one line on stderr why, the traceback in service.log."""
    a, _ = trees
    start(a)
    pid = status(RUN)["pid"]
    prompt = json.dumps({"prompt": "which database for the alpha project?"})
    here = mem(a, "autoload", "--hook", "--root", str(a), stdin=prompt, service="off")
    assert here.returncode == 0 and "Postgres" in here.stdout
    base = tempfile.mkdtemp(prefix="memstrata-deep-")
    # In the child, by relative steps (no absolute path this long can be used), then the CLI.
    deep = (f"import os, runpy, sys; os.chdir({base!r})\n"
            "for _ in range(25):\n    os.mkdir('d' * 200); os.chdir('d' * 200)\n"
            "sys.argv = ['mem', *sys.argv[1:]]; runpy.run_module('memstrata.cli.app', run_name='__main__')")
    try:
        hook = subprocess.run([PY, "-c", deep, "autoload", "--hook", "--root", str(a)], input=prompt,
                              capture_output=True, text=True, env=_env(a, "auto", {}), timeout=240)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert hook.returncode == 0, hook.stderr
    assert hook.stdout == here.stdout
    lines = hook.stderr.strip().splitlines()
    assert len(lines) == 1 and "memory service failed this call" in lines[0] and "File name too long" in lines[0]
    assert "ran in this process instead" in lines[0] and str(LOG) in lines[0]
    log = LOG.read_text()
    assert "request failed: OSError" in log and "Traceback" in log and "os.chdir" in log
    assert status(RUN)["pid"] == pid  # no second service was started for it
