"""A hand-made entry file keeps every line the engine did not change; an engine-made one is rendered anew."""
from datetime import datetime, timezone

import pytest

from memstrata.storage import codec
from memstrata.storage.entry import Entry
from memstrata.storage.frontmatter_edit import edited_text

NOTE = ("---\nid: c1de1d15b382\nstatus: todo\ntags: [a, b]\n# my own comment\ncreated: 2024-01-05\n"
        "aliases: [groceries]\n---\n\nBuy milk and eggs.\nNo newline at the end")


def _parse(text, path="notes/shop.md"):
    return codec.parse(text, category="notes", path=path, fallback_title=path.rsplit("/", 1)[1][:-3])


def test_changed_keys_are_added_and_every_other_line_is_kept():
    entry = _parse(NOTE)
    seen = entry.copy(access_count=2, last_access=datetime(2026, 12, 1, tzinfo=timezone.utc), tier="warm")
    text = edited_text(NOTE, "notes/shop.md", seen)
    assert text == NOTE.replace("aliases: [groceries]\n", "aliases: [groceries]\ntier: warm\n"
                                "last_access: '2026-12-01T00:00:00Z'\naccess_count: 2\n")
    assert codec.entry_to_frontmatter(_parse(text)) == codec.entry_to_frontmatter(seen)


def test_a_changed_value_replaces_its_own_line_and_a_new_body_replaces_the_body():
    entry = _parse(NOTE)
    text = edited_text(NOTE, "notes/shop.md", entry.copy(status="archived", tags=["a"], body="Only eggs.\n"))
    assert "status: archived\ntags: [a]\n# my own comment\ncreated: 2024-01-05\n" in text
    assert text.endswith("---\n\nOnly eggs.\n") and "todo" not in text and "milk" not in text


def test_an_alias_line_is_rewritten_under_the_canonical_name_and_a_dropped_key_goes():
    note = "---\nid: c1de1d15b382\nupdated_at: 2024-02-01\nsummary: |\n  two\n  lines\nmine: 1\n---\nBody.\n"
    entry = _parse(note)
    later = entry.copy(updated=datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc), summary=None)
    text = edited_text(note, "notes/shop.md", later)
    assert text == "---\nid: c1de1d15b382\nupdated: '2025-01-02T03:04:05Z'\nmine: 1\n---\nBody.\n"


def test_an_engine_made_file_is_rendered_in_full_as_before():
    entry = Entry(id="abcdef123456", title="T", body="b\n", category="notes", path="notes/t.md")
    old = codec.render(entry)
    changed = entry.copy(access_count=3)
    assert edited_text(old, "notes/t.md", changed) == codec.render(changed)


@pytest.mark.parametrize("old", [None, "", "no frontmatter at all\n", "---\nbroken: [\n---\nx\n"])
def test_a_file_that_cannot_be_edited_in_place_is_rendered_in_full(old):
    entry = Entry(id="abcdef123456", title="shop", body="x\n", category="notes", path="notes/shop.md")
    assert edited_text(old, "notes/shop.md", entry) == codec.render(entry)


def test_a_move_whose_new_name_would_change_the_title_says_the_title():
    entry = _parse(NOTE)
    moved = entry.copy(path="notes/archived/shop-2.md", status="archived")
    text = edited_text(NOTE, "notes/shop.md", moved)
    assert text == NOTE.replace("status: todo", "status: archived").replace(
        "aliases: [groceries]\n", "aliases: [groceries]\ntitle: shop\n")  # from the old file name: written out


def test_a_crlf_note_keeps_crlf_lines_when_it_gets_an_id_and_when_it_is_edited():
    from memstrata.storage.adopt import text_with_id

    for original in ("Line one.\r\nLine two.\r\n", "---\r\ntitle: Mine\r\n---\r\nLine one.\r\n"):
        with_id = text_with_id(original, "c1de1d15b382")
        assert "\n" not in with_id.replace("\r\n", "")  # no bare LF
        entry = _parse(with_id)
        assert entry.id == "c1de1d15b382" and entry.body.startswith("Line one.\r\n")
        edited = edited_text(with_id, "notes/shop.md", entry.copy(access_count=4))
        assert "\n" not in edited.replace("\r\n", "") and "access_count: 4\r\n" in edited
        assert edited.endswith(entry.body) and _parse(edited).access_count == 4


def test_a_crlf_note_whose_body_changes_keeps_a_clean_closing_line_and_crlf_next_time():
    note = "---\r\nid: c1de1d15b382\r\nstatus: todo\r\n---\r\nOld body.\r\n"
    entry = _parse(note)
    once = edited_text(note, "notes/shop.md", entry.copy(body="New body.\r\n"))
    assert once == "---\r\nid: c1de1d15b382\r\nstatus: todo\r\n---\r\n\r\nNew body.\r\n"
    twice = edited_text(once, "notes/shop.md", _parse(once).copy(body="Newer.\r\n", access_count=1))
    assert "\n" not in twice.replace("\r\n", "") and "status: todo\r\n" in twice and twice.endswith("Newer.\r\n")


def test_a_note_moved_where_its_file_name_no_longer_gives_its_title_gets_one_title_line():
    entry = _parse(NOTE)
    trashed = entry.copy(path=".trash/c1de1d15b382--shop.md")
    text = edited_text(NOTE, "notes/shop.md", trashed)
    assert text == NOTE.replace("aliases: [groceries]\n", "aliases: [groceries]\ntitle: shop\n")
