"""An adopted note is never rewritten by the engine (a new user's review): a delete and restore gives
it back byte for byte, recall and `mem maintain` never write into it (aging counts from the user's
last edit, reads stay in the journal), and a team merge of two clones' edits writes the user's own
frontmatter and the merged body, none of the engine's keys (its metadata stays in `.memstrata/`)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Memory

from .test_vault_team import adopted_pair, git

# The engine's keys: none of them may appear in a note the user wrote without them.
ENGINE_KEYS = ("title:", "updated:", "created:", "tier:", "layer:", "status:", "version:", "last_access:",
               "access_count:", "weight:", "history:", "importance:", "important:", "context_correlation:")

NOTES = {
    "Notes/git.md": "---\ntags: [git]\naliases: [gs]\n---\n# Git states\n\nFiles are modified, staged or committed.\n",
    "Notes/hash.md": "# Hashing\n\nPython hashes strings with SipHash.\n",
    "Notes/crlf.md": "---\r\nuid: u-1\r\n---\r\n\r\nWritten on Windows about sailing.\r\n",
    "Zettel/rdd.md": "---\nid: 202301011200\n---\nRDDs versus dataframes in Spark.",
    "heredoc.md": "Heredocs feed a block of text to a shell command.\n",
}


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def adopted_vault(folder: Path, embedder) -> tuple[Memory, dict[str, bytes]]:
    """A vault of NOTES last edited on 2026-01-01, adopted; its notes' bytes right after adoption."""
    for rel, text in NOTES.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(text.encode("utf-8"))
    m = Memory(folder, embedder=embedder)
    m.init(adopt=True)
    for rel in NOTES:
        os.utime(folder / rel, (1767225600, 1767225600))  # 2026-01-01T00:00:00Z
    return m, notes_of(folder)


def notes_of(folder: Path) -> dict[str, bytes]:
    return {rel: (folder / rel).read_bytes() for rel in NOTES}


def mem(root: Path, *args: str, now: str | None = None) -> dict:
    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "HF_HUB_OFFLINE": "1"}
    if now:
        env["MEMSTRATA_NOW"] = now
    done = subprocess.run([str(Path(sys.executable).parent / "mem"), *args, "--json", "--root", str(root)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_delete_then_restore_gives_each_note_back_byte_for_byte(tmp_path, monkeypatch, embedder):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:00:00Z")
    m, adopted = adopted_vault(tmp_path / "v", embedder)
    by_path = {e.path: e.id for e in m.list()}
    for rel in NOTES:
        m.delete(by_path[rel])
        assert not (tmp_path / "v" / rel).exists()
        assert {i.id: i.title for i in m.trash_list()}[by_path[rel]] == m_title(rel)
        m.restore(by_path[rel])
        assert (tmp_path / "v" / rel).read_bytes() == adopted[rel], rel
    assert m.read(by_path["Notes/hash.md"], count_access=False).title == "Hashing"


FLOW_NOTES = {
    "n/flow.md": "---\n{title: Flow note, tags: [a, b]}\n---\nbody\n",
    "n/json.md": '---\n{"title": "json fm"}\n---\nbody\n',
    "n/json-lines.md": '---\n{\n  "tags": ["x"],\n  "aliases": ["y"]\n}\n---\nbody\n',
}


def test_delete_then_restore_keeps_flow_and_json_frontmatter_byte_for_byte(tmp_path, embedder):
    """A `key:` line after `{...}` would not parse: the trash's keys go inside the flow mapping and
    leave it again on restore (it took the engine's full rendering before)."""
    root = tmp_path / "v"
    for rel, text in FLOW_NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    m = Memory(root, embedder=embedder)
    m.init(adopt=True)
    adopted = {rel: (root / rel).read_bytes() for rel in FLOW_NOTES}
    by_path = {e.path: e.id for e in m.list()}
    for rel in FLOW_NOTES:
        m.delete(by_path[rel])
        assert "status:" not in next((root / ".memstrata" / "trash").glob(f"{by_path[rel]}--*.md")).read_text()
        m.restore(by_path[rel])
        assert (root / rel).read_bytes() == adopted[rel], rel


def m_title(rel: str) -> str:
    """A note's title: its first H1, else its file name (issue 40; never written into the note)."""
    return {"Notes/git.md": "Git states", "Notes/hash.md": "Hashing", "Notes/crlf.md": "crlf", "Zettel/rdd.md": "rdd",
            "heredoc.md": "heredoc"}[rel]


def test_recall_and_maintain_never_write_a_note_and_age_it_from_its_last_edit(tmp_path, embedder):
    root = tmp_path / "v"
    m, adopted = adopted_vault(root, embedder)
    del m
    assert mem(root, "recall", "which files does git stage?", now="2026-03-01T10:00:00Z")["results"]
    assert mem(root, "recall", "how does python hash strings?", now="2026-03-01T10:00:00Z")["results"]
    for now in ("2026-03-01T10:00:00Z", "2026-03-20T10:00:00Z", "2027-06-01T10:00:00Z"):
        dry = mem(root, "maintain", "--dry-run", now=now)
        real = mem(root, "maintain", now=now)
        assert real["changes"] == [] and dry["changes"] == [], (now, real["changes"])
        assert notes_of(root) == adopted, now
    # aging counts from the user's last edit (2026-01-01) or the last read (2026-03-01), whichever is later:
    # on 2026-03-20 the two recalled notes are warm (19 days), the others cold (78 days), never the reverse
    tiers = {e["path"]: e["tier"] for e in mem(root, "list", now="2026-03-20T10:00:00Z")["entries"]}
    assert tiers == {"Notes/git.md": "warm", "Notes/hash.md": "warm", "Notes/crlf.md": "cold",
                     "Zettel/rdd.md": "cold", "heredoc.md": "cold"}, tiers
    read = mem(root, "read", {e["path"]: e["id"] for e in mem(root, "list")["entries"]}["Notes/git.md"],
               now="2026-03-20T10:00:00Z")
    assert read["frontmatter"]["access_count"] >= 1  # the reads are kept in the journal, counted by every read
    assert notes_of(root) == adopted


def test_a_team_merge_of_one_note_writes_the_users_format_and_the_merged_body(tmp_path, embedder):
    a, b = adopted_pair(tmp_path, embedder)
    rel = "Zettel/202301011200 rigging.md"
    on_a, on_b = a.root / rel, b.root / rel
    adopted = on_a.read_text()
    head = adopted[:adopted.index("---\n", 4) + 4]  # the user's block with its mem-id line
    on_a.write_text(head + "The mast is stepped on deck.\n")
    on_b.write_text(head + "The mast is stepped through the deck onto the keel.\n")
    for m in (a, b, a):
        m.sync()
        assert not m.sync_remote()["skipped"]
    for m in (a, b):
        text = (m.root / rel).read_text()
        assert text.startswith(head) and text in (head + "The mast is stepped on deck.\n",
                                                  head + "The mast is stepped through the deck onto the keel.\n")
        assert not [line for line in text.splitlines() if line.startswith(ENGINE_KEYS)], text
        assert git(m.root, "status", "--porcelain") == ""
        entry_id = m.read(rel, count_access=False).id
        kept = list((m.root / ".memstrata" / "versions" / entry_id).glob("v*.md"))
        assert kept, "the losing side is kept as a version in .memstrata/versions/"
    assert (a.root / rel).read_bytes() == (b.root / rel).read_bytes()


def test_update_revert_and_promote_keep_the_note_in_its_owners_format(tmp_path, monkeypatch, embedder):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-06-01T10:00:00Z")
    root = tmp_path / "v"
    m, adopted = adopted_vault(root, embedder)
    git_id = {e.path: e.id for e in m.list()}["Notes/git.md"]
    m.update(git_id, "Files are untracked, modified, staged or committed.\n", tags=["git", "vcs"])
    text = (root / "Notes/git.md").read_text()
    assert text == "---\nmem-id: %s\ntags: [git, vcs]\naliases: [gs]\n---\n" % git_id + \
        "Files are untracked, modified, staged or committed.\n"  # the body and the tag asked for, nothing else
    assert [h["version"] for h in m.history(git_id)] == [1, 2]
    m.revert(git_id, to=1)
    assert notes_of(root) == adopted and [h["version"] for h in m.history(git_id)] == [1, 2, 3]
    # a promotion of a cold note is an access in the journal: shown hot, the note not written
    assert {e.id: e.tier for e in m.list()}[git_id] == "hot"  # just updated
    hash_id = {e.path: e.id for e in m.list()}["Notes/hash.md"]
    assert {e.id: e.tier for e in m.list()}[hash_id] == "cold"
    question = "how does python hash strings with siphash"
    assert [(h.id, h.tier) for h in m.recall(question, tier="cold", count_access=False).results][:1] == [(hash_id, "cold")]
    promoted = m.promote("how does python hash strings with siphash", threshold=0.3)["promoted"]
    assert hash_id in [p["id"] for p in promoted]
    assert {e.id: e.tier for e in m.list()}[hash_id] == "hot"
    assert hash_id not in [h.id for h in m.recall(question, tier="cold", count_access=False).results]  # the tier reads show
    assert [(h.id, h.tier) for h in m.recall(question, tier="hot", count_access=False).results][:1] == [(hash_id, "hot")]
    assert not m.promote("how does python hash strings with siphash", threshold=0.3)["promoted"]
    assert notes_of(root) == adopted


def test_an_adopted_vault_is_never_advised_to_split_and_split_refuses(tmp_path, embedder):
    from memstrata.engine.split_advice import split_advised

    assert split_advised(3, 2, adopted=False) and not split_advised(3, 2, adopted=True)
    assert not split_advised(2, 2, adopted=False)
    m, before = adopted_vault(tmp_path / "v", embedder)
    m.config_set("split_threshold", 2)  # Notes/ holds 3 notes: a `mem init` tree would be told to split
    stats = m.stats()
    assert not stats["categories"]["Notes"]["split_advised"]
    assert not [w for w in stats["warnings"] if "split" in w]
    assert not [w for w in m.write("Tacking turns the bow through the wind.", title="Tacking",
                                   category="Notes").warnings if "split" in w]
    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "HF_HUB_OFFLINE": "1"}
    for args in (["split", "Notes", "--by", "year"], ["split", "Notes", "--dry-run"], ["merge", "Notes"]):
        done = subprocess.run([str(Path(sys.executable).parent / "mem"), *args, "--root", str(m.root)],
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 2 and done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1 and "never moved" in done.stderr
    assert notes_of(m.root) == before
    assert not [p for p in (m.root / "Notes").iterdir() if p.is_dir()]


def test_a_mem_init_tree_is_still_advised_to_split(tmp_path, embedder):
    m = Memory(tmp_path / "t", embedder=embedder)
    m.init()
    m.config_set("split_threshold", 2)
    for n in range(3):
        result = m.write(f"Boat note number {n} about rigging.", title=f"Boat {n}", category="boats")
    assert [w for w in result.warnings if "mem split boats --by year" in w]
    assert m.stats()["categories"]["boats"]["split_advised"]
