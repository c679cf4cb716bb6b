"""Fixtures of the retrieval tests: an initialised tree on the shared real model."""
import pytest

from memstrata import Memory


@pytest.fixture()
def mem(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    return m
