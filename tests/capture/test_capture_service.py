"""The hook's background capture runs in the warm service when one runs (the model loaded there)."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .test_capture_cli import _wait, session_file
from .transcripts import Claude, stamp

sys.path.insert(0, str(Path(__file__).parents[1] / "memstrata"))
from service_helpers import status, wait_for  # noqa: E402

RUN = tempfile.mkdtemp(prefix="memstrata-capture-run-")  # this module's own service
atexit.register(shutil.rmtree, RUN, True)  # the xdist controller imports this module too and runs no teardown


@pytest.fixture(scope="module", autouse=True)
def _stop_module_service(stop_service):
    yield
    stop_service(RUN)


def mem(root, *args, service="auto", stdin=None):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update({"MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": service, "HF_HUB_OFFLINE": "1",
                "MEMSTRATA_RUNTIME_DIR": RUN})
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=300)


def test_the_hooks_capture_runs_in_the_warm_service(tmp_path):
    root = tmp_path / "mem"
    assert mem(root, "init", service="off").returncode == 0
    assert mem(root, "serve", "--detach", "--json", service="off").returncode == 0
    assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=180)
    before = status(RUN)["requests"]
    t = Claude(cwd=str(tmp_path)).user("Which region hosts staging?", stamp(1)).reply("Frankfurt, since March.", stamp(1, 2))
    payload = json.dumps({"session_id": t.session, "transcript_path": t.write(tmp_path), "cwd": str(tmp_path),
                          "hook_event_name": "Stop"})
    done = mem(root, "capture", "--hook", "--json", stdin=payload)
    assert done.returncode == 0 and done.stderr == ""
    _wait(json.loads(done.stdout)["pid"])
    assert "Frankfurt, since March." in session_file(root)
    assert status(RUN)["requests"] > before  # the background capture was a call of the service
    last = json.loads(mem(root, "capture", "--status", "--json").stdout)["last"]
    assert last["turns"] == 2 and last["errors"] == []
