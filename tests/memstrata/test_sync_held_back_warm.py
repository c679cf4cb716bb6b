"""`mem sync` through the warm service says every note it holds back as a possible credential, each
time, also when nothing changed (a new-user review: only the first sync after the service started said it)."""
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

from memstrata import Memory

sys.path.insert(0, str(Path(__file__).parent))
from service_helpers import status, wait_for  # noqa: E402

RUN = tempfile.mkdtemp(prefix="memstrata-heldback-run-")
atexit.register(shutil.rmtree, RUN, True)  # the xdist controller imports this module too and runs no teardown
KEY = "AK" + "IA" + "Q7ZK4M2XWPLR9TBV"


@pytest.fixture(scope="module", autouse=True)
def _stop_module_service(stop_service):
    yield
    stop_service(RUN)


def mem(root, *args, service="auto"):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update({"MEMSTRATA_HOME": str(root), "MEMSTRATA_SERVICE": service, "HF_HUB_OFFLINE": "1",
                "MEMSTRATA_RUNTIME_DIR": RUN})
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args], capture_output=True, text=True,
                          env=env, timeout=240)


def test_every_warm_sync_says_the_held_back_note(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    m.write("The CI runs on GitHub Actions.", title="CI", category="knowledge")
    (m.root / "knowledge" / "ci-credentials.md").write_text(f"---\ntitle: CI credentials\n---\nThe deploy key is {KEY}.\n")
    assert mem(m.root, "serve", "--detach", service="off").returncode == 0
    assert wait_for(lambda: (status(RUN) or {}).get("warm"), timeout=180)
    for _ in range(3):
        done = mem(m.root, "sync", "--json")
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert "knowledge/ci-credentials.md" in result.get("flagged", {}), result
        assert KEY not in done.stdout + done.stderr
