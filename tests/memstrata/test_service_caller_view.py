"""A call through the warm service sees what its caller sees: /dev/stdout, /dev/stdin, `>(cmd)` and a link
through them run in the caller (the service's own fds are service.log and /dev/null); a killed caller's
stdin is abandoned, so its call ends; the caller's TZ sets a daily note's day and hour; a non-socket at
mem.sock is said, never quietly kept. Real service processes, real pipes, real signals."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from memstrata import Memory

sys.path.insert(0, str(Path(__file__).parent))
from service_helpers import status, wait_for  # noqa: E402

PY = sys.executable
RUN = tempfile.mkdtemp(prefix="memstrata-view-run-")
atexit.register(shutil.rmtree, RUN, True)  # the xdist controller imports this module too and runs no teardown
MEM = f"{PY} -m memstrata.cli.app"


@pytest.fixture(scope="module", autouse=True)
def _stop_module_service(stop_service):
    yield
    stop_service(RUN)


def _env(root, service="auto", run=RUN, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", "TZ")}
    env.update({"MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": service, "HF_HUB_OFFLINE": "1",
                "MEMSTRATA_RUNTIME_DIR": run, **{k: str(v) for k, v in extra.items()}})
    return env


def mem(root, *args, service="auto", run=RUN, stdin=None, **extra):
    return subprocess.run([PY, "-m", "memstrata.cli.app", *args], capture_output=True, text=True, stdin=stdin,
                          env=_env(root, service, run, **extra), timeout=240)


def sh(root, script, service="auto", **extra):
    """A bash line (process substitution, redirections) with `mem` as this install's CLI."""
    return subprocess.run(["bash", "-c", f'mem() {{ {MEM} "$@"; }}; {script}'], capture_output=True, text=True,
                          env=_env(root, service, **extra), timeout=240)


@pytest.fixture(scope="module")
def tree(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("view") / "t"
    m = Memory(root, embedder=embedder)
    m.init()
    for i in range(3):
        m.write(f"Note {i}: the billing service listens on port {9000 + i}.", title=f"port {i}", category="ops")
    return root


def warm(root, **env):
    """A warm service of RUN, started with `env` (another TZ, say)."""
    mem(root, "serve", "--stop", service="off")
    assert mem(root, "serve", "--detach", "--json", service="off", **env).returncode == 0
    assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=180)


def test_dev_and_proc_paths_mean_the_callers_own(tree, tmp_path):
    warm(tree)
    log = Path(RUN, "service.log")
    log_before = log.read_text()
    calls = status(RUN)["requests"]
    def entries(text):  # the export's lines, not its "exported 3 entries to /proc/PID/fd/pipe:[...]"
        return "".join(line for line in text.splitlines(keepends=True) if line.startswith('{"id"'))

    off = entries(mem(tree, "export", "--jsonl", "/dev/stdout", service="off").stdout)
    assert off.count("\n") == 3
    assert entries(mem(tree, "export", "--jsonl", "/dev/stdout").stdout) == off
    assert log.read_text().startswith(log_before) and "billing" not in log.read_text()  # the log is the log
    via = sh(tree, f"mem export --jsonl >(cat > {tmp_path}/sub.jsonl); sleep 0.5")
    assert via.returncode == 0, via.stderr
    assert Path(tmp_path, "sub.jsonl").read_text() == off
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"qid": "a", "query": "which port does billing use"}) + "\n")
    link = tmp_path / "in"
    link.symlink_to("/dev/stdin")  # a link through /dev: only a comparison of what it names catches it
    answers = set()
    for path, service in (("/dev/stdin", "off"), ("/dev/stdin", "auto"), (str(link), "auto")):
        with open(queries) as f:
            p = mem(tree, "recall", "--queries", path, stdin=f, service=service)
        assert p.returncode == 0 and p.stdout.strip(), p.stderr
        answers.add(p.stdout)
    assert len(answers) == 1
    assert status(RUN)["requests"] == calls  # all of them ran in their callers
    assert mem(tree, "recall", "--queries", str(queries)).stdout in answers  # a plain file still goes to the service
    assert status(RUN)["requests"] == calls + 1
    with open(queries) as f:
        body = mem(tree, "write", "--file", "/dev/stdin", "--title", "from stdin", "--json", stdin=f)
    assert json.loads(mem(tree, "read", json.loads(body.stdout)["id"], "--json", service="off").stdout)["body"] \
        .strip() == queries.read_text().strip()
    assert status(RUN)["requests"] == calls + 1  # the write ran in its caller too
    assert "went away" not in log.read_text()[len(log_before):]  # callers that left once answered


@pytest.mark.parametrize("args", [["write", "-", "--title", "stuck"], ["autoload", "--hook"]])
def test_a_killed_caller_does_not_leave_its_call_in_flight(tree, args):
    warm(tree)  # a write reads a bounded size, a hook all of its stdin: both ways wait for the caller
    log = Path(RUN, "service.log")
    log_before = log.read_text()
    writer = subprocess.Popen([PY, "-m", "memstrata.cli.app", *args],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=_env(tree))  # we hold its stdin open, as `sleep 300 |` does
    try:
        assert wait_for(lambda: (status(RUN) or {}).get("active") == 1, timeout=60)
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
        assert wait_for(lambda: (status(RUN) or {}).get("active") == 0, timeout=10)
        assert "the caller went away" in log.read_text()[len(log_before):]
        started = time.monotonic()
        assert mem(tree, "serve", "--stop", service="off").returncode == 0
        assert time.monotonic() - started < 30
        assert "stuck" not in mem(tree, "list", "--json", service="off").stdout
    finally:
        writer.stdin.close()


def test_the_callers_time_zone_sets_the_daily_notes_day_and_hour(tree):
    warm(tree, TZ="UTC")
    now = {"MEMSTRATA_NOW": "2026-06-01T20:30:00Z"}
    for tz, day, hour in (("Pacific/Kiritimati", "2026-06-02", "10:30"), ("XYZ-3", "2026-06-01", "23:30"),
                          ("UTC", "2026-06-01", "20:30")):
        for service in ("auto", "off"):
            p = mem(tree, "daily", f"{tz} {service}", "--json", service=service, TZ=tz, **now)
            assert p.returncode == 0, p.stderr
            assert json.loads(p.stdout)["path"] == f"daily/{day}.md"
            assert f"## {hour}\n\n{tz} {service}\n" in (tree / "daily" / f"{day}.md").read_text()
    assert status(RUN)["requests"] >= 2  # Kiritimati and UTC ran in the service; XYZ-3 (no zone file) in its caller


def test_a_non_socket_at_the_sockets_path_is_said_and_never_deleted(tree, stop_service):
    run = tempfile.mkdtemp(prefix="mv-")
    sock = Path(run, "mem.sock")
    sock.write_text("the user's own file\n")
    try:
        p = mem(tree, "recall", "billing port", run=run)
        assert p.returncode == 0 and "port" in p.stdout
        notes = [line for line in p.stderr.splitlines() if line.startswith("mem: note:")]
        assert len(notes) == 1 and "regular file" in notes[0] and "move it away" in notes[0]
        told = json.loads(mem(tree, "serve", "--status", "--json", run=run).stdout)
        assert not told["running"] and "regular file" in told["problem"]
        started = mem(tree, "serve", "--detach", run=run)
        assert started.returncode != 0 and started.stderr.startswith("mem: error: ")
        assert len(started.stderr.splitlines()) == 1
        assert sock.read_text() == "the user's own file\n"
        assert mem(tree, "list", run=run, service="off").stderr == ""  # off: no service wanted, nothing said
        target = Path(run, "target")
        target.write_text("kept\n")
        sock.unlink()
        sock.symlink_to(target)
        assert "symlink" in json.loads(mem(tree, "serve", "--status", "--json", run=run).stdout)["problem"]
        assert mem(tree, "serve", "--detach", run=run).returncode == 0  # the link goes, never its target
        assert sock.is_socket() and target.read_text() == "kept\n"
        assert mem(tree, "recall", "billing port", run=run).stderr == ""
        assert status(run)["requests"] == 1
    finally:
        stop_service(run)


def test_the_doctor_runs_in_its_caller_and_says_the_same(tree):
    """bench/scale.py: one `mem doctor` through the warm service of 300,000 captured turns left the service
    2.1 GB larger for good; it needs no model, so it runs in the caller (whose memory goes back at exit)."""
    off = mem(tree, "doctor", "--json", service="off")
    warm(tree)
    calls = status(RUN)["requests"]
    on = mem(tree, "doctor", "--json")
    assert (on.returncode, on.stdout) == (off.returncode, off.stdout), on.stderr
    assert status(RUN)["requests"] == calls
    assert mem(tree, "stats", "--json").returncode == 0 and status(RUN)["requests"] == calls + 1  # others still go
