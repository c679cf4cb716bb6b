"""The catalog's entry count, kept between changes (the service asks after every call): a row this
connection or another process changes is counted."""
from __future__ import annotations

import subprocess
import sys

from memstrata import Memory
from memstrata.storage.catalog import Catalog

NOTE = "---\ntitle: {0}\n---\n{0}: a note.\n"


def test_the_count_follows_this_connections_and_another_process_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    m = Memory(tmp_path / "mem")
    m.init()
    (m.root / "notes").mkdir()
    (m.root / "notes" / "a.md").write_text(NOTE.format("Apple"))
    catalog = Catalog(m.root)
    catalog.refresh()
    assert catalog.count() == 1 and catalog.count() == 1
    (m.root / "notes" / "b.md").write_text(NOTE.format("Banana"))
    catalog.refresh()
    assert catalog.count() == 2  # this connection's write
    (m.root / "notes" / "c.md").write_text(NOTE.format("Cherry"))
    code = "import sys\nfrom pathlib import Path\nfrom memstrata.storage.catalog import Catalog\nCatalog(Path(sys.argv[1])).refresh()\n"
    subprocess.run([sys.executable, "-c", code, str(m.root)], check=True, timeout=120)
    assert catalog.count() == 3  # another process's commit
