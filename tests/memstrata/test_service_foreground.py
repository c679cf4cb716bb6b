"""`mem serve` in the foreground: the process becomes the service (same pid), and `mem serve --stop` ends it with 0."""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from service_helpers import status, wait_for  # noqa: E402

RUN = tempfile.mkdtemp(prefix="memstrata-fg-run-")
atexit.register(shutil.rmtree, RUN, True)  # the xdist controller imports this module too and runs no teardown


@pytest.fixture(scope="module", autouse=True)
def _stop_module_service(stop_service):
    yield
    stop_service(RUN)


def env_for(root) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update({"MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": "off", "HF_HUB_OFFLINE": "1",
                "MEMSTRATA_RUNTIME_DIR": RUN})
    return env


def test_serve_in_the_foreground_is_the_service_process(tmp_path):
    root = tmp_path / "mem"
    cli = [sys.executable, "-m", "memstrata.cli.app"]
    assert subprocess.run(cli + ["init"], env=env_for(root), capture_output=True, timeout=120).returncode == 0
    serve = subprocess.Popen(cli + ["serve", "--idle-minutes", "5"], env=env_for(root),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        info = wait_for(lambda: (status(RUN) or {}).get("roots") and status(RUN), timeout=120)  # the tree opened
        assert info and info["pid"] == serve.pid  # `mem serve` became the service: not a child, not a daemon
        assert [r["root"] for r in info["roots"]] == [str(root)]
        stop = subprocess.run(cli + ["serve", "--stop"], env=env_for(root), capture_output=True, text=True,
                              timeout=120)
        assert stop.stdout.strip() == f"stopped the memory service (pid {serve.pid})"
        code = serve.wait(timeout=60)
        assert code == 0, serve.stderr.read()[-3000:]
        assert status(RUN) is None
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
