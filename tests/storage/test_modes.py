"""The pure decisions of storage/modes.py: which rewritten files get their mode back, and the umask's modes."""
from memstrata.storage.modes import new_file_mode, new_folder_mode, to_put_back


def test_a_rewritten_file_gets_its_read_write_bits_back_and_keeps_gits_execute_bit():
    before = {"a.md": 0o600, "b.md": 0o644, "c.md": 0o640, "gone.md": 0o600, "x.sh": 0o644}
    after = {"a.md": 0o644, "b.md": 0o644, "c.md": 0o600, "x.sh": 0o755, "new.md": 0o644}
    assert to_put_back(before, after) == {"a.md": 0o600, "c.md": 0o640}  # x.sh: a pulled chmod +x stays
    assert to_put_back({"y.sh": 0o700}, {"y.sh": 0o755}) == {"y.sh": 0o700}  # private, still executable
    assert to_put_back({"z.sh": 0o640}, {"z.sh": 0o755}) == {"z.sh": 0o750}  # made executable by a peer: stays private


def test_the_umasks_modes_are_what_git_gives():
    assert new_file_mode(0o022) == 0o644 and new_folder_mode(0o022) == 0o755
    assert new_file_mode(0o077) == 0o600 and new_file_mode(0o027) == 0o640
