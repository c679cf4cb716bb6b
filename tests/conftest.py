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
