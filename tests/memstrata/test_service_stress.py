"""The warm service under a storm of real CLI processes: 4 writers and 2 readers through one
service right after `mem init`, and a `mem serve --stop` in the middle. Every call succeeds or
says exactly why; nothing acknowledged is lost; nothing reported failed is in the tree."""
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

from memstrata.service import rundir

sys.path.insert(0, str(Path(__file__).parent))
from service_helpers import status  # noqa: E402

PY = sys.executable
RUN = tempfile.mkdtemp(prefix="memstrata-stress-run-")
atexit.register(shutil.rmtree, RUN, True)  # the xdist controller imports this module too and runs no teardown
WRITERS, WRITES, READERS, READS = 4, 6, 2, 4


@pytest.fixture(scope="module", autouse=True)
def _stop_module_service(stop_service):
    yield
    stop_service(RUN)


def mem(root, *args, service="auto", timeout=240):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update({"MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": service, "HF_HUB_OFFLINE": "1",
                "MEMSTRATA_RUNTIME_DIR": RUN})
    return subprocess.run([PY, "-m", "memstrata.cli.app", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_a_storm_of_writers_and_readers_with_a_stop_in_the_middle(tmp_path):
    root = tmp_path / "mem"
    assert mem(root, "init", service="off").returncode == 0
    started = mem(root, "serve", "--detach", "--json", service="off")
    assert started.returncode == 0, started.stderr
    deadline = time.monotonic() + 180
    while not (status(RUN) or {}).get("warm") and time.monotonic() < deadline:
        time.sleep(0.1)
    first_pid = json.loads(started.stdout)["pid"]

    writes: list[tuple[str, subprocess.CompletedProcess]] = []
    reads: list[subprocess.CompletedProcess] = []
    done = threading.Semaphore(0)

    def writer(w):
        for i in range(WRITES):
            title = f"storm w{w} n{i}"
            p = mem(root, "write", f"Load test note {i} of writer {w} about the storm.", "--title", title,
                    "--category", f"load/w{w}", "--json", "--root", str(root))
            writes.append((title, p))
            done.release()

    def reader(r):
        for i in range(READS):
            reads.append(mem(root, "recall", f"storm note {i}", "--json", "-k", "3", "--no-touch"))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    threads += [threading.Thread(target=reader, args=(r,)) for r in range(READERS)]
    for t in threads:
        t.start()
    for _ in range(WRITERS * WRITES // 3):  # a third of the writes acknowledged: stop the service
        done.acquire()
    stopped = mem(root, "serve", "--stop", "--json", service="off")
    # a new service at once: the calls that found none meanwhile ran in-process (each loads the model)
    restarted = mem(root, "serve", "--detach", "--json", service="off")
    for t in threads:
        t.join()

    assert stopped.returncode == 0 and json.loads(stopped.stdout)["pid"] == first_pid
    assert restarted.returncode == 0 and json.loads(restarted.stdout)["pid"] != first_pid
    assert len(writes) == WRITERS * WRITES and len(reads) == READERS * READS
    acknowledged = {}
    for title, p in writes:
        assert p.returncode == 0, (title, p.stderr)
        acknowledged[json.loads(p.stdout)["id"]] = title
    for p in reads:
        assert p.returncode == 0, p.stderr
        assert "results" in json.loads(p.stdout)
    listed = json.loads(mem(root, "list", "--json", service="off").stdout)["entries"]
    assert sorted(e["id"] for e in listed) == sorted(acknowledged)  # every acknowledged write, each once
    assert sorted(e["title"] for e in listed) == sorted(t for t, _ in writes)
    log = (Path(RUN) / rundir.LOG_NAME).read_text()
    assert "stopping (asked to stop)" in log
