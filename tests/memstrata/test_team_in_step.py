"""An up-to-date `mem sync --remote` in a fresh process tells the index is in step without opening it
(retrieval/in_step.py), and a changed note or table is still seen (real git, real processes, real LanceDB)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from team_scenario import env, two_clones  # noqa: E402

# `mem sync --remote` as the CLI runs it, then whether this process imported LanceDB (on stderr)
RUN = ("import sys\nfrom memstrata.cli.app import main\nsys.argv = ['mem', *sys.argv[1:]]\n"
       "try:\n    main()\nexcept SystemExit as done:\n    code = done.code\nelse:\n    code = 0\n"
       "sys.stderr.write('\\nlancedb loaded: %s\\n' % ('lancedb' in sys.modules))\nsys.exit(code)\n")


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def sync_remote(root: Path) -> tuple[dict, bool]:
    """A fresh `mem sync --remote` process: (its --json answer, whether it loaded LanceDB)."""
    done = subprocess.run([sys.executable, "-c", RUN, "sync", "--remote", "--root", str(root), "--json"],
                          capture_output=True, text=True, env=env(MEMSTRATA_MACHINE="A"), timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), "lancedb loaded: True" in done.stderr


def test_an_up_to_date_sync_does_not_open_the_index_and_a_change_still_reaches_it(tmp_path, embedder):
    from memstrata import Memory

    a, _ = two_clones(tmp_path, embedder)
    note = a.write("The ferry to Kiel leaves at eight.", title="Ferry", category="travel")
    a.sync_remote()
    root = a.root
    del a
    result, loaded = sync_remote(root)  # the first fresh process may check it once (and stamps it)
    assert result["committed"] == [] and "index" not in result
    result, loaded = sync_remote(root)
    assert not loaded and result["committed"] == [] and "index" not in result
    # a hand edit committed with plain git: the tree changed, the table did not: looked at, indexed
    path = root / note.path
    path.write_text(path.read_text().replace("at eight", "at half past nine"))
    subprocess.run(["git", "-C", str(root), "-c", "user.name=a", "-c", "user.email=a@x", "commit", "-qam", "later"],
                   check=True)
    result, loaded = sync_remote(root)
    assert loaded and result["index"]["embedded"] == 1, result
    assert not sync_remote(root)[1]  # in step again: stamped by that sync
    hit = Memory(root, embedder=embedder).recall("when does the ferry to Kiel leave?", k=1).results[0]
    assert "half past nine" in hit.snippet


def test_the_stamp_follows_the_table_and_the_tree(tmp_path, embedder):
    from memstrata import Memory
    from memstrata.retrieval import in_step
    from memstrata.retrieval.sync import behind

    m = Memory(tmp_path / "t", embedder=embedder)
    m.init()
    first = m.write("Staging runs in Dublin.", title="Staging", category="ops")
    m.sync()
    index = m.state.vector_index()
    tree = in_step.tree_part(m.root)
    assert in_step.matches(index, tree) and not behind(index)  # the full sync stamped it
    m.write("Production runs in Frankfurt.", title="Production", category="ops")  # file and table change
    assert not in_step.matches(index, tree) and not in_step.matches(index, in_step.tree_part(m.root))
    assert not behind(index) and in_step.matches(index, in_step.tree_part(m.root))  # checked, stamped again
    path = m.root / first.path
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))  # same bytes, newer file
    assert not in_step.matches(index, in_step.tree_part(m.root))
    (m.root / first.path).unlink()
    assert behind(index)  # a note gone: the stamp never hides it
