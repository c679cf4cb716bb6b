"""Shared fixtures: one loaded model for the whole suite, fresh roots, a fixed clock."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def embedder():
    """The bundled model, loaded once per test session."""
    from memstrata.models.embedder import get_embedder

    return get_embedder("bundled")
