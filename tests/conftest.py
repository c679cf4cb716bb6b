"""Shared fixtures: one loaded model for the whole suite, fresh roots, a fixed clock, a private service folder."""
from __future__ import annotations

import os
import tempfile

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The suite never talks to the user's own warm service: every process it starts uses a runtime
# folder of this session (tests of the service itself use one per module; see test_service.py).
_RUNTIME = tempfile.mkdtemp(prefix="memstrata-test-run-")
os.environ["MEMSTRATA_RUNTIME_DIR"] = _RUNTIME


@pytest.fixture(scope="session", autouse=True)
def _no_service_left_behind():
    """Stop a service some test left in the session's runtime folder."""
    yield
    from memstrata.service import client

    client.request({"op": "stop"}, timeout=5, folder=_RUNTIME)


@pytest.fixture(scope="session")
def embedder():
    """The bundled model, loaded once per test session."""
    from memstrata.models.embedder import get_embedder

    return get_embedder("bundled")
