"""A long call through the warm service stops when its caller goes away (Ctrl-C, kill): the service
notices the closed socket and stops the import at the next batch boundary; a rerun resumes. Real processes."""
from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

import pytest

from memstrata import Memory

sys.path.insert(0, str(Path(__file__).parent))
from service_helpers import status, wait_for  # noqa: E402

RUN = tempfile.mkdtemp(prefix="memstrata-cancel-run-")
ROWS = 1100  # five import batches
LINE = re.compile(r"^importing: (\d+)/(\d+) ")


@pytest.fixture(scope="module", autouse=True)
def _stop_module_service(stop_service):
    yield
    stop_service(RUN)


def _env(root):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update({"MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": "auto", "HF_HUB_OFFLINE": "1",
                "MEMSTRATA_RUNTIME_DIR": RUN, "MEMSTRATA_PROGRESS_SECONDS": "0"})
    return env


def _rows(path):
    with open(path, "w", encoding="utf-8") as f:
        for i in range(ROWS):
            f.write(json.dumps({"title": f"turn {i}", "category": "conversation",
                                "body": f"Speaker {i % 5} says build {i} listens on port {30000 + i}."}) + "\n")


def _import_then(root, src, sig) -> tuple[int, list[str]]:
    """`mem import` through the service, sent `sig` once its first batch is written; (exit code or
    None when killed, every stderr line, the service's included)."""
    proc = subprocess.Popen([sys.executable, "-m", "memstrata.cli.app", "import", str(src)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=_env(root))
    lines: queue.Queue = queue.Queue()
    seen: list[str] = []
    reader = threading.Thread(target=lambda: [lines.put(l.rstrip("\n")) for l in proc.stderr], daemon=True)
    reader.start()
    while True:
        line = lines.get(timeout=240)
        seen.append(line)
        m = LINE.match(line)
        if m and 256 <= int(m.group(1)) < ROWS:
            proc.send_signal(sig)
            break
    code = proc.wait(timeout=120)
    reader.join(timeout=120)  # the service holds the caller's stderr until its call ends
    while not lines.empty():
        seen.append(lines.get())
    return code, seen


def _count(root) -> int:
    return len(Memory(root).list())


def _idle() -> bool:
    return (status(RUN) or {}).get("active", 1) == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill"])
def test_an_import_through_the_service_stops_when_its_caller_goes_away(tmp_path, embedder, sig):
    root, src = tmp_path / "mem", tmp_path / "turns.jsonl"
    _rows(src)
    Memory(root, embedder=embedder).init()
    started = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "serve", "--detach", "--json"],
                             capture_output=True, text=True, env={**_env(root), "MEMSTRATA_SERVICE": "off"}, timeout=120)
    assert started.returncode == 0, started.stderr
    assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=180)
    code, lines = _import_then(root, src, sig)
    assert wait_for(_idle, timeout=120)
    assert status(RUN) is not None  # the import ran in the service
    written = _count(root)
    assert 256 <= written < ROWS, (written, lines[-5:])  # stopped at a batch boundary, not finished
    assert written % 256 == 0, written
    if sig == signal.SIGINT:
        assert code == 130, lines[-5:]
        stop = [l for l in lines if "import stopped" in l]
        assert len(stop) == 1 and f"{written} of {ROWS}" in stop[0] and "resume" in stop[0], lines[-5:]
        assert not any("Traceback" in l for l in lines)
    again = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "import", str(src), "--json"],
                           capture_output=True, text=True, env=_env(root), timeout=600)
    assert again.returncode == 0, again.stderr[-500:]
    titles = Counter(e.title for e in Memory(root).list())
    assert len(titles) == ROWS and set(titles.values()) == {1}


@pytest.mark.parametrize("service", ["off", "auto"])
def test_a_closed_stdout_ends_the_command_quietly(tmp_path, embedder, service):
    """`mem import FILE | head -1`, `mem export | head -1`: the reader is gone before the output."""
    root, src = tmp_path / "mem", tmp_path / "turns.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for i in range(40):
            f.write(json.dumps({"title": f"row {i}", "body": f"Row {i} is about port {40000 + i}."}) + "\n")
    Memory(root, embedder=embedder).init()
    if service == "auto":
        subprocess.run([sys.executable, "-m", "memstrata.cli.app", "serve", "--detach"], capture_output=True,
                       env={**_env(root), "MEMSTRATA_SERVICE": "off"}, timeout=120)
        assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=180)
    for args in (["import", str(src)], ["export"], ["list"]):
        proc = subprocess.Popen([sys.executable, "-m", "memstrata.cli.app", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={**_env(root), "MEMSTRATA_SERVICE": service})
        proc.stdout.close()  # as `| head -1` does once it has its line (here: before any)
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=300)
        assert code in (0, 141), (args, code, err)
        assert "error" not in err and "Traceback" not in err and "Exception ignored" not in err, (args, err)
    assert len(Memory(root).list()) == 40  # the import was done whole
