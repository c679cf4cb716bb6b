"""Shared fixtures: one loaded model per test process, a private service folder, a daily-use clock; heaviest files first."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The suite never talks to the user's own warm service: every process it starts uses a runtime
# folder of this session (tests of the service itself use one per module; see test_service.py).
_RUNTIME = tempfile.mkdtemp(prefix="memstrata-test-run-")
os.environ["MEMSTRATA_RUNTIME_DIR"] = _RUNTIME
# ... and never makes or reads the user's own machine-local state (the secrets-allow key)
_STATE = tempfile.mkdtemp(prefix="memstrata-test-state-")
os.environ["XDG_STATE_HOME"] = _STATE
atexit.register(shutil.rmtree, _STATE, True)


def stop_service_and_remove(folder: str) -> None:
    """Stop the service of a test runtime folder (waiting until it has exited), then remove the folder."""
    import shutil
    import time

    from memstrata.service import client
    from memstrata.service.process import pid_alive

    info = client.request({"op": "stop"}, timeout=5, folder=folder)
    deadline = time.monotonic() + 30
    while info and info.get("pid") and pid_alive(info["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    shutil.rmtree(folder, ignore_errors=True)


# The test files that take 30 s or more (measured, docs/testing.md), heaviest first. Under
# `scripts/test.sh` (pytest-xdist, --dist loadfile --no-loadscope-reorder) each file runs on one
# worker, in collection order: starting with these keeps a long file from starting last while the
# other worker sits idle. Files not listed keep pytest's order after them.
HEAVY_FIRST = (
    "tests/memstrata/test_service.py",
    "tests/memstrata/test_service_roots.py",
    "tests/memstrata/test_team_sync.py",
    "tests/cli/test_cli.py",
    "tests/capture/test_capture_cli.py",
    "tests/cli/test_versions_cli.py",
    "tests/memstrata/test_hostile_trees.py",
    "tests/memstrata/test_service_calls.py",
    "tests/memstrata/test_team_recovery.py",
    "tests/memstrata/test_service_stress.py",
    "tests/memstrata/test_concurrent_writes.py",
    "tests/memstrata/test_service_env.py",
    "tests/memstrata/test_bad_input.py",
    "tests/models/test_models_embedder.py",
    "tests/memstrata/test_attacks.py",
    "tests/memstrata/test_secret_ways_in.py",
    "tests/memstrata/test_doctor.py",
    "tests/cli/test_aging_cli.py",
    "tests/memstrata/test_vault_defects.py",
    "tests/memstrata/test_concurrency.py",
    "tests/test_readme.py",
    "tests/memstrata/test_crashes.py",
    "tests/memstrata/test_access_counts.py",
    "tests/memstrata/test_index_snapshots.py",
    "tests/memstrata/test_aging.py",
    "tests/memstrata/test_hook_relevance.py",
    "tests/memstrata/test_session_start.py",
    "tests/memstrata/test_plugin_hooks.py",
    "tests/memstrata/test_mcp.py",
)


def pytest_collection_modifyitems(items):
    rank = {name: n for n, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: files keep their order


@pytest.fixture(scope="session")
def stop_service():
    """stop_service_and_remove, for modules that run a service in a runtime folder of their own."""
    return stop_service_and_remove


def pytest_unconfigure(config):
    """The xdist controller runs no fixtures: its own (unused) runtime folder goes here."""
    import shutil

    shutil.rmtree(_RUNTIME, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _no_service_left_behind():
    """Stop a service some test left in the session's runtime folder."""
    yield
    stop_service_and_remove(_RUNTIME)


@pytest.fixture(scope="session")
def embedder():
    """The bundled model, loaded once per test session."""
    from memstrata.models.embedder import get_embedder

    return get_embedder("bundled")


@pytest.fixture
def use_daily(monkeypatch):
    """A tree in use every day: `run(mem, first, last, entry_id)` reads the entry once a day at 08:00 UTC
    from `first` to `last` (ISO dates, both included). Archive and forgetting count such days."""
    from datetime import date, timedelta

    def run(mem, first: str, last: str, entry_id: str) -> None:
        day, end = date.fromisoformat(first), date.fromisoformat(last)
        while day <= end:
            monkeypatch.setenv("MEMSTRATA_NOW", f"{day.isoformat()}T08:00:00Z")
            mem.read(entry_id)
            day += timedelta(days=1)

    return run
