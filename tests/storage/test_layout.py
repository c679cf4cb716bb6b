"""storage/layout.py and the namespaced key: an adopted vault keeps the engine's files in `.memstrata/`
and its id in `mem-id:`; a user's `id:` is theirs; a tree made by `mem init` keeps its layout."""
from memstrata.storage import adopt, codec, layout, tree
from memstrata.storage.catalog import is_entry_path, iter_entry_files, printable_name
from memstrata.storage.config import Settings, load_settings


def test_paths_of_each_layout(tmp_path):
    old, vault = tmp_path / "old", tmp_path / "vault"
    old.mkdir()
    vault.mkdir()
    tree.initialise(old)
    made = tree.initialise(vault, Settings(compress_bodies=False), adopted=True)
    assert made == [".memstrata/config.md"] and sorted(p.name for p in vault.iterdir()) == [".memstrata"]
    assert not layout.is_adopted(old) and layout.is_adopted(vault) and tree.is_initialised(vault)
    for legacy, adopted in ((".trash", ".memstrata/trash"), (".cache/catalog.db", ".memstrata/cache/catalog.db"),
                            ("config.md", ".memstrata/config.md"), (".lock", ".memstrata/.lock"),
                            (".memstrata/trash", ".memstrata/trash")):
        assert layout.at(old, legacy) == legacy and layout.at(vault, legacy) == adopted
    assert load_settings(vault).compress_bodies is False and layout.id_key(vault) == "mem-id"
    assert tree.ensure_gitignore(vault) is False and (vault / ".memstrata" / ".gitignore").exists()


def test_a_users_id_is_never_the_engines():
    text = "---\nid: 202301011200\nuid: u-1\n---\nBody.\n"
    entry = codec.parse(text, id_key="mem-id")
    assert entry.id == "" and entry.extra["id"] == "202301011200"  # an id is read as the text written
    given = adopt.text_with_id(text, "3f2a9c01b7de", "mem-id")
    assert given == "---\nmem-id: 3f2a9c01b7de\nid: 202301011200\nuid: u-1\n---\nBody.\n"
    again = codec.parse(given, id_key="mem-id")
    assert again.id == "3f2a9c01b7de" and again.extra["id"] == "202301011200"
    rendered = codec.render(again.copy(title="T"))  # quoted: any YAML reader reads the id as text
    assert rendered.startswith("---\nmem-id: 3f2a9c01b7de\n") and "\nid: '202301011200'\n" in rendered
    assert codec.parse(given).id == "202301011200"  # the old layout's key, for comparison
    crlf = "---\r\naliases: [x]\r\n---\r\n\r\nWindows.\r\n"
    assert adopt.text_with_id(crlf, "3f2a9c01b7de", "mem-id") == \
        "---\r\nmem-id: 3f2a9c01b7de\r\naliases: [x]\r\n---\r\n\r\nWindows.\r\n"


def test_names_no_entry_can_have_are_skipped_and_named(tmp_path):
    import os

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "ok.md").write_text("fine\n")
    (tmp_path / "notes" / "two\nlines.md").write_text("x\n")
    with open(os.path.join(os.fsencode(tmp_path / "notes"), b"bad\xff.md"), "wb") as handle:
        handle.write(b"x\n")
    bad: list = []
    assert [rel for rel, _ in iter_entry_files(tmp_path, bad_names=bad)] == ["notes/ok.md"]
    assert sorted(bad) == ["notes/bad\\xff.md", "notes/two\\nlines.md"]
    assert not is_entry_path("notes/two\nlines.md") and printable_name("a\udcffb") == "a\\xffb"
