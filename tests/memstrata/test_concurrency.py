"""Several real processes write to one tree at once (API writers, CLI writers, an MCP server, a reader).

Runs bench/safety.py's storm at CI size; `python bench/safety.py` runs the long version
(4 x 250 writes and more). MEMSTRATA_SAFETY_SCALE=N multiplies the sizes here.

Afterwards: every acknowledged write is present, parseable, with a body it was given;
every acknowledged delete is in the trash; both INDEX.md levels match the files; every
entry has exactly one row in the vector table; no lock is held; `mem doctor` finds nothing;
and the reader that parsed every file during the storm never saw a half-written one.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

SCALE = float(os.environ.get("MEMSTRATA_SAFETY_SCALE", "1"))


def load_harness():
    path = Path(__file__).resolve().parents[2] / "bench" / "safety.py"
    spec = importlib.util.spec_from_file_location("memstrata_bench_safety", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def safety():
    return load_harness()


def test_storm_of_writers_loses_nothing(tmp_path, embedder, safety):
    per_writer, cli_writes, mcp_writes = int(14 * SCALE), int(2 * SCALE), int(6 * SCALE)
    result = safety.storm(tmp_path / "mem", api_writers=3, per_writer=per_writer, cli_writers=1,
                          cli_per_writer=cli_writes, mcp_writers=1, mcp_per_writer=mcp_writes,
                          update_rate=0.25, delete_rate=0.12, embedder=embedder)
    assert result["failures"] == []
    assert result["acknowledged_writes"] == 3 * per_writer + cli_writes + mcp_writes
    assert result["entries_lost"] == 0
    assert result["updates"] > 0 and result["deletes"] > 0  # writers touched each other's entries
    assert result["reads_during_storm"] > 0 and result["torn_reads"] == 0
    assert result["doctor_findings"] == 0
    assert safety.lock_is_free(tmp_path / "mem")
    assert not [p for p in (tmp_path / "mem").rglob("*.tmp") if ".vectors" not in p.parts]
