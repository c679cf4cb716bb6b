"""One garbled page of the SQLite catalog (`.cache/catalog.db`, derived from the files) stopped every
write with `internal error: DatabaseError: database disk image is malformed`. The catalog is rebuilt
from the tree on its own, said once on stderr, and nothing is lost (issue 39, item 4)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from team_scenario import env  # noqa: E402

from memstrata import Memory  # noqa: E402

PAGE = 4096
WORDS = "harbour lantern copper meadow violin glacier orchard pepper canyon saddle".split()


@pytest.fixture(scope="module")
def tree_with_a_catalog(tmp_path_factory, embedder):
    """A tree of 60 entries (a catalog of several pages), the catalog's good bytes set aside."""
    root = tmp_path_factory.mktemp("catalog") / "t"
    m = Memory(root, embedder=embedder)
    m.init()
    (root / "notes").mkdir(exist_ok=True)
    for n in range(60):  # hand-made files with their ids
        words = " ".join(WORDS[(n + k) % len(WORDS)] for k in range(40))
        (root / "notes" / f"n{n:02d}.md").write_text(f"---\nid: note{n:02d}\ntitle: Note {n}\n"
                                                     f"updated: 2026-01-01T00:00:00Z\n---\n{words}\n")
    m.sync()
    assert len(m.list()) == 60 and m.doctor().healthy
    m.state.close()
    db = root / ".cache" / "catalog.db"
    for suffix in ("-wal", "-shm"):  # everything in the main file
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return root, db.read_bytes()


def _garble(root: Path, good: bytes, page: int) -> None:
    db = root / ".cache" / "catalog.db"
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    damaged = bytearray(good)
    damaged[page * PAGE:(page + 1) * PAGE] = os.urandom(PAGE)
    db.write_bytes(bytes(damaged))


def test_every_garbled_page_is_rebuilt_and_writes_go_on(tree_with_a_catalog, embedder, tmp_path, capfd):
    root0, good = tree_with_a_catalog
    pages = len(good) // PAGE
    assert pages >= 4, pages
    for page in range(1, pages):  # page 0 (the header) is the "fully random" case, handled already
        root = tmp_path / f"p{page}"
        shutil.copytree(root0, root)
        _garble(root, good, page)
        m = Memory(root, embedder=embedder)
        written = m.write(f"The ferry to the island leaves at {page} o'clock.", title=f"Ferry {page}",
                          category="notes")
        m.update("note07", "Note seven, rewritten after the catalog was damaged.")
        listed = {e.id for e in m.list()}
        assert len(listed) == 61 and written.id in listed and "note07" in listed, page
        assert m.read("note07", count_access=False).version == 2
        m.state.close()
        again = Memory(root, embedder=embedder)
        assert len(again.list()) == 61 and again.doctor().healthy, (page, [f.__dict__ for f in again.doctor().findings])
        again.state.close()
        shutil.rmtree(root)
    capfd.readouterr()


def test_the_cli_says_once_that_it_rebuilt_the_catalog(tree_with_a_catalog, tmp_path):
    root0, good = tree_with_a_catalog
    root = tmp_path / "t"
    shutil.copytree(root0, root)
    _garble(root, good, len(good) // PAGE - 2)

    def mem(*args):
        return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args, "--root", str(root)],
                              capture_output=True, text=True, env=env(), timeout=300)

    done = mem("write", "The lighthouse keeper retired in May.", "--title", "Lighthouse", "-c", "notes")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "malformed" in done.stderr and "rebuilt" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # one line
    done = mem("list", "--json")
    assert done.returncode == 0 and done.stderr == "", done.stderr  # said once: the catalog is whole again
    assert '"count": 61' in done.stdout
