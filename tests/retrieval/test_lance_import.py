"""LanceDB imported without its REST namespace client's API classes, which load when first used."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_lancedb_works_without_the_rest_api_classes_and_they_load_on_first_use(tmp_path):
    # a fresh interpreter: the test process may have imported lancedb already
    script = textwrap.dedent(f"""
        import sys
        from memstrata.retrieval.lance_import import import_lancedb
        lancedb = import_lancedb()
        assert "lancedb" in sys.modules
        assert "lance_namespace_urllib3_client.api" not in sys.modules, "the API classes were imported"
        import pyarrow as pa
        db = lancedb.connect({str(tmp_path)!r})
        data = pa.table({{"id": ["a", "b"], "vector": pa.array([[1.0, 0.0], [0.0, 1.0]], pa.list_(pa.float32(), 2))}})
        table = db.create_table("t", data=data)
        assert table.search([1.0, 0.0]).limit(1).to_arrow().column("id").to_pylist() == ["a"]
        import lance_namespace_urllib3_client as client
        assert client.ApiClient.__name__ == "ApiClient"  # the package's own names: its __init__ runs now
        assert "lance_namespace_urllib3_client.api" in sys.modules
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
