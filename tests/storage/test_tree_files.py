"""The tree's own files: .gitignore lines a tree needs are added, the user's kept."""
from memstrata.storage import tree


def test_an_old_gitignore_gets_the_lines_it_lacks_and_keeps_its_own(tmp_path):
    (tmp_path / ".gitignore").write_text(".vectors/\n.trash/\n# mine\n*.bak")
    assert tree.ensure_gitignore(tmp_path) is True
    lines = (tmp_path / ".gitignore").read_text().splitlines()
    assert lines[:4] == [".vectors/", ".trash/", "# mine", "*.bak"] and ".quarantine/" in lines and ".cache/" in lines
    assert tree.ensure_gitignore(tmp_path) is False  # nothing more to add


def test_a_linked_gitignore_is_never_written_through(tmp_path):
    outside = tmp_path / "outside"
    outside.write_text("x\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / ".gitignore").symlink_to(outside)
    assert tree.ensure_gitignore(root) is False and outside.read_text() == "x\n"


def test_processes_opening_a_new_catalog_at_once_all_get_its_table(tmp_path):
    """Two agents sharing at the same moment opened the shared tree's new catalog together and one
    dropped the table the other had just made ("no such table: entries")."""
    import subprocess
    import sys

    code = ("import sys\nfrom pathlib import Path\nfrom memstrata.storage.catalog import Catalog\n"
            "c = Catalog(Path(sys.argv[1]))\nprint(c.count())\n")
    for round_ in range(5):
        root = tmp_path / f"t{round_}"
        root.mkdir()
        procs = [subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0 and out.strip() == "0", err
