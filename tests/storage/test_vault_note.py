"""storage/vault_note.py, pure: what the engine writes into an adopted note (no IO)."""
from datetime import datetime, timezone

from memstrata.scoring.lifecycle import Action, for_vault_notes
from memstrata.storage import codec
from memstrata.storage.vault_note import note_text

NOW = datetime(2026, 11, 30, 10, tzinfo=timezone.utc)


def parsed(text: str, rel: str = "Notes/git.md"):
    return codec.parse(text, category="Notes", path=rel, fallback_title="git", id_key="mem-id")


def test_the_engines_keys_never_enter_a_users_note():
    text = "---\nmem-id: abc123\ntags: [git]\naliases: [gs]\n---\n# Git\n\nStaged.\n"
    entry = parsed(text).copy(tier="cold", updated=NOW, version=4, last_access=NOW, access_count=9, weight=2.5,
                              status="archived", history=[{"version": 3, "date": "2026-11-30", "summary": "x"}])
    assert note_text(text, "Notes/git.md", entry) == text


def test_a_new_body_and_the_users_own_keys_are_written_in_the_users_format():
    text = "---\r\nmem-id: abc123\r\nuid: u-1\r\n---\r\n\r\nOld body.\r\n"
    entry = parsed(text).copy(body="New body.\r\n", tags=["boats"], updated=NOW, version=2)
    assert note_text(text, "Notes/git.md", entry) == "---\r\nmem-id: abc123\r\nuid: u-1\r\ntags: [boats]\r\n---\r\n\r\nNew body.\r\n"


def test_a_title_from_the_file_name_is_no_change_and_the_trash_keeps_the_home_name():
    text = "---\nmem-id: abc123\n---\n\nBody.\n"
    entry = parsed(text).copy(path=".memstrata/trash/abc123--git.md")
    entry.extra["trashed_from"] = "Notes/git.md"
    out = note_text(text, entry.path, entry, home="Notes/git.md")
    assert out == "---\nmem-id: abc123\ntrashed_from: Notes/git.md\n---\n\nBody.\n"
    back = parsed(out)
    back.extra.pop("trashed_from")
    assert note_text(out, "Notes/git.md", back) == text


def test_a_note_the_engine_rendered_is_rendered_anew():
    entry = parsed("---\nmem-id: abc123\n---\nBody.\n").copy(title="Git", tier="hot")
    text = codec.render(entry)
    assert note_text(text, "Notes/git.md", entry.copy(tier="warm")) == codec.render(entry.copy(tier="warm"))


def test_aging_applies_only_expiry_to_a_vault_note():
    actions = [Action("a", "retier", "hot", "cold", "old"), Action("a", "archive", "active", "archived", "old"),
               Action("a", "expire", "active", "expired", "expired on 2026-01-01")]
    assert [a.kind for a in for_vault_notes(actions)] == ["expire"]


def test_a_new_body_keeps_the_notes_own_spacing_after_its_block():
    text = "---\nmem-id: abc123\ntags: [git]\n---\n# Git states\n\nOld.\n"
    entry = parsed(text)
    changed = note_text(text, "Notes/git.md", entry.copy(body="New.\n"))
    assert changed == "---\nmem-id: abc123\ntags: [git]\n---\nNew.\n"
    assert note_text(changed, "Notes/git.md", parsed(changed).copy(body=entry.body)) == text
