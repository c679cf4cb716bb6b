"""A long call through the warm service stops when its caller goes away (Ctrl-C, kill): the service
notices the closed socket and stops between two model runs (an import's batch is rolled back, a sync's
part is not written, a reindex restores the index from before); a rerun resumes. Real processes."""
from __future__ import annotations

import atexit
import json
import os
import queue
import re
import shutil
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
atexit.register(shutil.rmtree, RUN, True)  # the xdist controller imports this module too and runs no teardown
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


def _as_from_a_terminal():
    """A Ctrl-C reaches the command as from a terminal: a suite started in the background by a
    non-interactive shell (`pytest ... &`) has SIGINT ignored, and an ignored signal is inherited."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _rows(path):
    with open(path, "w", encoding="utf-8") as f:
        for i in range(ROWS):
            f.write(json.dumps({"title": f"turn {i}", "category": "conversation",
                                "body": f"Speaker {i % 5} says build {i} listens on port {30000 + i}."}) + "\n")


def _import_then(root, src, sig) -> tuple[int, list[str]]:
    """`mem import` through the service, sent `sig` once the second batch is being embedded; (exit code or
    None when killed, every stderr line, the service's included)."""
    proc = subprocess.Popen([sys.executable, "-m", "memstrata.cli.app", "import", str(src)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=_env(root), preexec_fn=_as_from_a_terminal)
    lines: queue.Queue = queue.Queue()
    seen: list[str] = []
    reader = threading.Thread(target=lambda: [lines.put(l.rstrip("\n")) for l in proc.stderr], daemon=True)
    reader.start()
    while True:
        line = lines.get(timeout=240)
        seen.append(line)
        m = LINE.match(line)
        if m and 256 + 32 <= int(m.group(1)) < 512:  # inside the second batch, its first model runs done
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
    assert written == 256, (written, lines[-5:])  # stopped inside the second batch: its rows not written
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


def _hand_notes(root, first, count):
    """Notes written by hand (or pulled by git): not in the index until a sync embeds them."""
    folder = Path(root) / "conversation"
    folder.mkdir(exist_ok=True)
    for i in range(first, first + count):
        (folder / f"turn-{i}.md").write_text(f"---\nid: {i:012x}\ntitle: turn {i}\n---\n\n"
                                             f"Speaker {i % 5} says build {i} listens on port {30000 + i}.\n")


def _indexed(root) -> int:
    import lancedb

    return lancedb.connect(str(Path(root) / ".vectors")).open_table("chunks").count_rows("chunk = 0")


def _stop_after_some_embedding(root, command, sig) -> tuple[int, list[str]]:
    """`mem COMMAND` through the service, sent `sig` once two model runs are done; (exit code, stderr lines)."""
    proc = subprocess.Popen([sys.executable, "-m", "memstrata.cli.app", command], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=_env(root), preexec_fn=_as_from_a_terminal)
    seen: list[str] = []
    for line in proc.stderr:
        seen.append(line.rstrip("\n"))
        m = re.match(r"^embedding: (\d+)/(\d+) ", line)
        if m and int(m.group(1)) >= 64:
            proc.send_signal(sig)
            break
    seen.extend(l.rstrip("\n") for l in proc.stderr)  # the service holds the caller's stderr until its call ends
    return proc.wait(timeout=120), seen


def _healthy(root) -> bool:
    out = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "doctor", "--json"], capture_output=True,
                         text=True, env={**_env(root), "MEMSTRATA_SERVICE": "off"}, timeout=300)
    return out.returncode == 0 and json.loads(out.stdout).get("healthy") is True


def test_a_sync_and_a_reindex_through_the_service_stop_when_their_caller_goes_away(tmp_path, embedder):
    """Neither goes on to the end of its 2,000-entry part: a stopped reindex leaves the index as it was
    (recall not worse), a stopped sync writes none of the part it was embedding; the next sync finishes."""
    root = tmp_path / "mem"
    m = Memory(root, embedder=embedder)
    m.init()
    _hand_notes(root, 0, 300)
    m.sync()
    assert _indexed(root) == 300
    started = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "serve", "--detach"], capture_output=True,
                             text=True, env={**_env(root), "MEMSTRATA_SERVICE": "off"}, timeout=120)
    assert started.returncode == 0, started.stderr
    assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=180)

    code, lines = _stop_after_some_embedding(root, "reindex", signal.SIGINT)
    assert wait_for(_idle, timeout=120)
    assert code == 130, lines[-5:]
    stop = [l for l in lines if "reindex stopped" in l]
    assert len(stop) == 1 and "as it was before" in stop[0], lines[-5:]
    assert _indexed(root) == 300  # the table from before the reindex, whole
    assert Memory(root, embedder=embedder).recall("which build listens on port 30177?", k=1).results[0].title == "turn 177"
    assert _healthy(root)

    _hand_notes(root, 300, 300)
    code, lines = _stop_after_some_embedding(root, "sync", signal.SIGKILL)
    assert wait_for(_idle, timeout=120)
    assert status(RUN) is not None  # the sync ran in the service
    assert _indexed(root) == 300, lines[-5:]  # the part being embedded was not written
    assert any("sync stopped after 0 of 300 entries" in l for l in lines), lines[-5:]
    again = Memory(root, embedder=embedder).sync()
    assert again["embedded"] == 300 and _indexed(root) == 600
    assert _healthy(root)


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
