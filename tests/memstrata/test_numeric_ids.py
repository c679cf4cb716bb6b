"""Ids that YAML 1.1 would read as numbers (`031170406351` is octal, 3387034857; `1_000`, `0x1f`,
`1.50`, `yes`) are read as the text written, wherever an id comes from YAML, and written so any YAML
reader reads them back as text. About 1 adopted note in 32,768 gets a 12-hex-digit id of digits 0-7
with a leading 0 (issue 39, item 5)."""
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from team_scenario import mem  # noqa: E402

from memstrata.storage import adopt, codec  # noqa: E402

OCTAL = "031170406351"  # int("031170406351", 8) == 3387034857


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


@pytest.mark.parametrize("written", [OCTAL, "0777", "1_000", "0x1f", "1.50", "yes", "2024-1-2", "12345678"])
def test_an_id_is_read_as_the_text_written(written):
    for key in ("id", "mem-id"):
        entry = codec.parse(f"---\n{key}: {written}\nrelated: [{written}, abc]\n---\nbody\n", id_key=key)
        assert entry.id == written and entry.related == [written, "abc"]
    assert codec.parse(f"---\nid: null\n---\nx\n").id == ""  # no id stays no id


def test_an_id_is_written_so_any_yaml_reader_reads_text():
    added = adopt.text_with_id("# A note\n", OCTAL, "mem-id")
    assert yaml.safe_load(added.split("---")[1])["mem-id"] == OCTAL  # Obsidian, a plain YAML reader
    added = adopt.text_with_id("---\ntags: [a]\n---\nA note\n", OCTAL, "mem-id")
    assert yaml.safe_load(added.split("---")[1]) == {"mem-id": OCTAL, "tags": ["a"]}
    assert codec.parse(added, id_key="mem-id").id == OCTAL
    rendered = codec.render(codec.parse("---\nid: x\n---\nbody\n").copy(id=OCTAL, related=["0123"]))
    assert yaml.safe_load(rendered.split("---")[1])["id"] == OCTAL


def test_an_adopted_note_with_an_octal_looking_id_is_found_by_it(tmp_path, embedder):
    """The real CLI: a vault note carrying `mem-id: 031170406351` (a teammate's clone gave it) is adopted
    without a warning, `mem read` finds it by that id, and the doctor is clean."""
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "ferry.md").write_text(f"---\nmem-id: {OCTAL}\n---\nThe ferry leaves at seven.\n")
    (vault / "notes" / "other.md").write_text("The bakery opens at six.\n")
    adopted = mem("init", "--adopt", "--root", str(vault), machine="laptop")
    assert adopted["skipped"] == [] and adopted["entries"] == 2, adopted
    assert (vault / "notes" / "ferry.md").read_text().startswith(f"---\nmem-id: {OCTAL}\n")  # untouched
    read = mem("read", OCTAL, "--root", str(vault), machine="laptop")
    assert read["id"] == OCTAL and "ferry" in read["body"]
    listed = mem("list", "--root", str(vault), machine="laptop")
    assert OCTAL in {e["id"] for e in listed["entries"]}
    hit = mem("recall", "when does the ferry leave", "--root", str(vault), machine="laptop")["results"][0]
    assert hit["id"] == OCTAL
    mem("update", OCTAL, "The ferry leaves at eight now.", "--root", str(vault), machine="laptop")
    assert [h["version"] for h in mem("history", OCTAL, "--root", str(vault), machine="laptop")["versions"]] == [1, 2]
    doctor = mem("doctor", "--root", str(vault), machine="laptop")
    assert doctor["findings"] == [], doctor


def test_a_hand_made_entry_with_an_octal_looking_id_in_a_tree(tmp_path, embedder):
    root = tmp_path / "t"
    mem("init", "--root", str(root), machine="laptop")
    (root / "notes").mkdir()
    (root / "notes" / "gate.md").write_text("---\nid: '0777'\ntitle: Gate\n---\nThe gate code changed.\n")
    (root / "notes" / "door.md").write_text("---\nid: 0555\ntitle: Door\nrelated: [0777]\n---\nThe door sticks.\n")
    mem("sync", "--root", str(root), machine="laptop")
    assert mem("read", "0555", "--root", str(root), machine="laptop")["frontmatter"]["related"] == ["0777"]
    assert mem("read", "0777", "--root", str(root), machine="laptop")["title"] == "Gate"
    mem("delete", "0555", "--root", str(root), machine="laptop")
    assert [i["id"] for i in mem("trash", "list", "--root", str(root), machine="laptop")["entries"]] == ["0555"]
    assert mem("restore", "0555", "--root", str(root), machine="laptop")["id"] == "0555"
