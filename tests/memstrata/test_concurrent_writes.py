"""Several real processes write to one tree at once; nothing is lost and the indexes agree."""
import subprocess
import sys
import textwrap

from memstrata import Memory

WRITES = 12  # per process

WRITER = textwrap.dedent("""
    import sys
    from memstrata import Memory
    m = Memory(sys.argv[1])
    for i in range(int(sys.argv[3])):
        r = m.write(f"note {i} from writer {sys.argv[2]}", title=f"w{sys.argv[2]} n{i}", category=f"load/w{int(sys.argv[2]) % 2}")
        print(r.id, flush=True)
""")


def test_four_processes_write_without_loss(tmp_path):
    root = tmp_path / "mem"
    Memory(root).init()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(n), str(WRITES)], stdout=subprocess.PIPE, text=True)
             for n in range(4)]
    acknowledged = set()
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0
        acknowledged.update(out.split())
    assert len(acknowledged) == 4 * WRITES
    m = Memory(root)
    entries = m.list()
    assert {e.id for e in entries} == acknowledged
    listed = set()
    for category in ("load/w0", "load/w1"):
        rows = [l for l in (root / category / "INDEX.md").read_text().splitlines() if l.startswith("| [")]
        listed.update(row.split(" | ")[1] for row in rows)
    assert listed == acknowledged
    assert not list(root.rglob("*.tmp"))
