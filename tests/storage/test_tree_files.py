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
