"""The warm service's calls: internal errors logged with their traceback, stops that never drop a
call in flight, hooks that never wait for a warm-up, the status of an open tree. Real processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.service import client, rundir

PY = sys.executable
RUN = tempfile.mkdtemp(prefix="memstrata-calls-run-")
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


def status():
    return client.request({"op": "status"}, timeout=5, folder=RUN)


def wait_for(predicate, timeout=120.0, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def start(root):
    p = mem(root, "serve", "--detach", "--json", service="off")
    assert p.returncode == 0, p.stderr
    assert wait_for(lambda: (status() or {}).get("warm"), timeout=180)
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
