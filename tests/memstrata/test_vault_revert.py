"""`mem revert ID --to 1` gives an adopted note back byte for byte after a title or a tag update
(docs/vault.md promises it): the `title:` and `tags: []` lines the updates added go again."""
from __future__ import annotations

import pytest

from memstrata import Memory

NOTES = {
    "notes/front.md": "---\naliases: [x]\n---\n# Heading\n\nSome body text here.\n",
    "notes/plain.md": "plain note without frontmatter\n",
    "notes/crlf.md": "---\r\ntags: [1, true]\r\n---\r\nA note in CRLF.\r\n",
}


@pytest.mark.parametrize("change", ["title", "tag", "both"])
def test_revert_to_the_adopted_version_gives_the_note_back_byte_for_byte(tmp_path, embedder, change):
    vault = tmp_path / "vault"
    for rel, text in NOTES.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_bytes(text.encode())
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    for rel in NOTES:
        adopted = (vault / rel).read_bytes()
        entry = m.resolve(rel)
        if change in ("title", "both"):
            m.update(entry.id, title="A new title")
        if change in ("tag", "both"):
            m.update(entry.id, tags=["release"])
        assert (vault / rel).read_bytes() != adopted
        m.revert(entry.id, to=1)
        assert (vault / rel).read_bytes() == adopted, rel
        back = m.read(entry.id, count_access=False)
        assert back.tags == m.version(entry.id, 1).tags and back.version > 2
        m.revert(entry.id, to=back.version - 1)  # and forth again: the update's lines come back
        assert b"A new title" in (vault / rel).read_bytes() or b"release" in (vault / rel).read_bytes()
