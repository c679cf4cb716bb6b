"""LanceDB's native warnings stay out of a command's output (a user can still ask for them)."""
import os
import subprocess
import sys

BUILD = """
import memstrata  # sets the default before LanceDB loads
import tempfile
import numpy as np
import pyarrow as pa
import lancedb
from lancedb.index import IvfHnswSq
vectors = np.tile(np.random.default_rng(0).random(384, dtype=np.float32), (600, 1))
vectors[:10] += np.random.default_rng(1).random((10, 384), dtype=np.float32)
table = lancedb.connect(tempfile.mkdtemp()).create_table(
    "t", data=pa.table({"id": [str(i) for i in range(600)], "vector": list(vectors)}))
table.create_index("vector", config=IvfHnswSq(distance_type="l2", num_partitions=64))
print("built")
"""


def _build(env):
    return subprocess.run([sys.executable, "-c", BUILD], capture_output=True, text=True, env=env, timeout=300)


def test_index_build_over_repetitive_vectors_prints_no_native_warnings():
    env = {k: v for k, v in os.environ.items() if k != "LANCEDB_LOG"}
    quiet = _build(env)
    assert quiet.returncode == 0 and "built" in quiet.stdout, quiet.stderr
    assert "KMeans" not in quiet.stderr and "WARN" not in quiet.stderr, quiet.stderr[:500]
    loud = _build({**env, "LANCEDB_LOG": "warn"})  # the same build, warnings asked for: they are there
    assert loud.returncode == 0 and "KMeans" in loud.stderr
