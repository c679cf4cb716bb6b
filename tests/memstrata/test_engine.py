"""The engine's shape: every way in (write, update, import) takes the one save path (engine/save.py)."""
import json
import random
import string

import pytest

from memstrata import Memory
from memstrata.errors import SecretDetected


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:00:00Z")


def _token() -> str:
    rng = random.Random(7)
    return "gh" + "p_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))


def _mem(path, embedder):
    m = Memory(path, embedder=embedder)
    m.init()
    return m


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_imported_compressed_entry_is_found_by_its_full_text(tmp_path, embedder, clock):
    """An imported compressed entry is indexed by its original text, exactly as a written one."""
    original = ("---\nid: a1b2c3d4e5f6\ntitle: Lighthouse\n---\n\n"
                "The keeper adopted a three-legged dog named Biscuit during the storm of 1998.\n")
    m = _mem(tmp_path / "m", embedder)
    report = m.import_jsonl(_jsonl(tmp_path / "in.jsonl", [
        {"id": "a1b2c3d4e5f6", "title": "Lighthouse", "category": "notes", "layer": "L2", "tier": "cold",
         "full_content_file": ".full/a1b2c3d4e5f6.md", "full_content": original, "body": "Lighthouse. #notes"},
        {"id": "0f0f0f0f0f0f", "title": "Harbour", "category": "notes", "body": "Boats leave the harbour at dawn."},
    ]))
    assert report["imported"] == 2 and not report["errors"]
    assert (m.root / ".full" / "a1b2c3d4e5f6.md").read_text(encoding="utf-8") == original
    answer = m.recall("three-legged dog named Biscuit", k=3)
    assert answer.strategy == "hybrid"
    assert answer.results[0].id == "a1b2c3d4e5f6"
    # the index row holds the full text, as for an entry compressed by maintain
    rows = m.state.vector_index().fetch_rows(["a1b2c3d4e5f6"])["a1b2c3d4e5f6"]
    assert any("Biscuit" in r["text"] for r in rows)


def test_a_credential_is_refused_on_every_way_in(tmp_path, embedder, clock):
    """The secret guard covers the whole entry: body, extra fields, related ids, category, whether
    the entry is written, updated or imported; nothing of a refused entry reaches the tree."""
    token = _token()
    m = _mem(tmp_path / "m", embedder)
    with pytest.raises(SecretDetected):
        m.write("A plain note.", title="note", category="notes", extra={"origin": f"key {token}"})
    with pytest.raises(SecretDetected):
        m.write("A plain note.", title="note", category="notes", related=[token])
    kept = m.write("A plain note about boats.", title="boats", category="notes")
    with pytest.raises(SecretDetected):
        m.update(kept.id, f"now with {token}")
    assert m.read(kept.id, count_access=False).body.strip() == "A plain note about boats."
    report = m.import_jsonl(_jsonl(tmp_path / "in.jsonl", [
        {"id": "b1b2c3d4e5f6", "title": "leaky", "category": "notes", "body": "fine", "source": token},
        {"id": "c1b2c3d4e5f6", "title": "clean", "category": "notes", "body": "A clean imported note."},
    ]))
    assert report["imported"] == 1 and len(report["errors"]) == 1
    assert [e.id for e in m.list() if e.id in ("b1b2c3d4e5f6", "c1b2c3d4e5f6")] == ["c1b2c3d4e5f6"]
    for path in m.root.rglob("*"):
        if path.is_file() and ".vectors" not in path.parts:
            assert token not in path.read_text(encoding="utf-8", errors="replace"), path


def test_import_of_entries_with_one_long_title_ends(tmp_path, embedder, clock):
    """Entries of one batch with the same title longer than a file name's slug get files of their
    own (the file name's suffix is never cut off with the title; that import used to never end)."""
    m = _mem(tmp_path / "m", embedder)
    title = "A very long title about the migration weekend " * 4  # slug cut to its byte limit
    report = m.import_jsonl(_jsonl(tmp_path / "in.jsonl", [
        {"title": title, "category": "notes", "body": f"Note number {i} about the weekend."} for i in range(3)]))
    assert report["imported"] == 3 and not report["errors"]
    paths = sorted(e.path for e in m.list(category="notes"))
    assert len(set(paths)) == 3 and paths[0].endswith("-2.md") and paths[1].endswith("-3.md")
