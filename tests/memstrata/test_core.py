"""The Memory core on a real tree: write, read, update, list, delete, restore, trash, indexes."""
import os
import stat

import pytest

from memstrata import Memory
from memstrata.errors import InvalidInput, NotFound
from memstrata.storage import codec


@pytest.fixture
def mem(tmp_path):
    m = Memory(tmp_path / "mem")
    m.init()
    return m


def _index_rows(path):
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("| [")]


def test_init_creates_private_root_and_files(tmp_path):
    m = Memory(tmp_path / "fresh")
    result = m.init()
    root = tmp_path / "fresh"
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    for name in ("config.md", "INDEX.md", ".gitignore", "daily/INDEX.md", "meetings/INDEX.md", "long-term/INDEX.md"):
        assert (root / name).exists(), name
    assert ".vectors/" in (root / ".gitignore").read_text() and ".trash/" in (root / ".gitignore").read_text()
    assert m.init()["created"] == [] and result["created"]


def test_write_nested_cjk_and_read(mem):
    r = mem.write("We chose Postgres.", title="Alpha项目", category="projects/web", tags=["web", "react"],
                  importance=0.8)
    assert r.path == "projects/web/alpha项目.md"
    file = mem.root / r.path
    assert stat.S_IMODE(os.stat(file).st_mode) == 0o600
    entry = mem.read(r.id)
    assert (entry.title, entry.category, entry.tags, entry.importance) == ("Alpha项目", "projects/web", ["web", "react"], 0.8)
    assert entry.access_count == 1 and entry.last_access is not None
    assert mem.read(r.path, count_access=False).id == r.id
    # a title with the same slug gets a distinct file in the same category ("(Alpha项目)" is the same
    # subject as "Alpha项目": written without --force it is the entry's next version)
    assert mem.write("Other text entirely", title="(Alpha项目)", category="projects/web",
                     force=True).path == "projects/web/alpha项目-2.md"
    assert mem.write("C# text", title="C# notes", category="projects/web").path == "projects/web/c-notes.md"
    assert mem.write("C text", title="C notes", category="projects/web").path == "projects/web/c-notes-2.md"


def test_indexes_follow_write_update_delete_restore(mem):
    r = mem.write("body one", title="First", category="projects/web")
    cat_index = mem.root / "projects/web/INDEX.md"
    root_index = mem.root / "INDEX.md"
    assert any(r.id in row for row in _index_rows(cat_index))
    assert "projects/web" in root_index.read_text() and "[web](<web/INDEX.md>)" in (mem.root / "projects/INDEX.md").read_text()
    mem.update(r.id, title="Renamed")
    assert any("Renamed" in row for row in _index_rows(cat_index))
    mem.delete(r.id)
    assert not any(r.id in row for row in _index_rows(cat_index))
    assert mem.trash_list()[0].id == r.id
    restored = mem.restore(r.id)
    assert restored.path == r.path and restored.status == "active"
    assert any(r.id in row for row in _index_rows(cat_index))
    audit = (mem.root / ".trash/INDEX.md").read_text()
    assert "| trash |" in audit and "| restore |" in audit


def test_index_rebuild_matches_incremental(mem):
    for i in range(5):
        mem.write(f"body {i}", title=f"T{i}", category=f"c{i % 2}/sub")
    before = {p: p.read_text() for p in mem.root.rglob("INDEX.md") if ".trash" not in str(p)}
    for p in before:  # starter categories keep their INDEX.md: it holds their description
        if p.parent.name not in ("daily", "meetings", "long-term"):
            p.unlink()
    mem.rebuild_indexes()
    after = {p: p.read_text() for p in mem.root.rglob("INDEX.md") if ".trash" not in str(p)}
    strip = lambda t: "\n".join(l for l in t.splitlines() if not l.startswith("updated:"))
    assert {p: strip(t) for p, t in before.items()} == {p: strip(t) for p, t in after.items()}


def test_list_filters(mem):
    a = mem.write("a", title="A", category="projects/web", tags=["x"])
    mem.write("b", title="B", category="projects", tags=["y"])
    mem.write("c", title="C", category="other")
    assert {e.title for e in mem.list(category="projects")} == {"A", "B"}
    assert [e.id for e in mem.list(tags=["x"])] == [a.id]
    assert mem.list(status="archived") == []
    assert len(mem.list(tier="hot")) == 3


def test_trash_purge_honours_retention(mem, monkeypatch, use_daily):
    r = mem.write("temp", title="Temp", category="scratch")
    kept = mem.write("The tree is in use.", title="Used", category="scratch")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-01-01T00:00:00Z")
    mem.delete(r.id)
    assert [i.id for i in mem.trash_list()] == [r.id]  # listing reports it; only reported items are purged
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-02-05T00:00:00Z")
    assert mem.trash_purge() == [], "35 days, none of them in use"
    use_daily(mem, "2026-01-02", "2026-01-20", kept.id)
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-01-20T00:00:00Z")
    assert mem.trash_purge() == []
    use_daily(mem, "2026-01-21", "2026-02-05", kept.id)  # 35 days of use
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-02-05T00:00:00Z")
    assert [i.id for i in mem.trash_purge()] == [r.id]
    assert mem.trash_list() == []
    with pytest.raises(NotFound):  # purged: no longer in the trash
        mem.restore(r.id)


@pytest.mark.parametrize("category", ["../x", "/abs", "~/home", ".trash", "a/archived"])
def test_bad_categories_refused_and_nothing_written(mem, category):
    with pytest.raises(InvalidInput):
        mem.write("x", title="x", category=category)
    assert mem.list() == []


def test_unknown_fields_and_hand_edits_survive_updates(mem):
    r = mem.write("body", title="Keep", category="k")
    path = mem.root / r.path
    text = path.read_text().replace("title: Keep", "title: Keep\nmy_field: {a: 1}")
    path.write_text(text)
    mem.update(r.id, "new body")
    entry = codec.parse(path.read_text())
    assert entry.extra["my_field"] == {"a": 1} and entry.body == "new body\n"


def test_missing_entries_and_roots_are_clear_errors(mem, tmp_path):
    with pytest.raises(NotFound):
        mem.read("0123456789ab")
    with pytest.raises(InvalidInput):
        mem.read("../../etc/passwd")
    with pytest.raises(NotFound):
        Memory(tmp_path / "nowhere").list()


def test_agent_memory_md_is_never_touched(mem):
    own = mem.root / "projects" / "MEMORY.md"
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text("# agent memory\n")
    mem.write("x", title="x", category="projects")
    mem.rebuild_indexes()
    assert own.read_text() == "# agent memory\n"
    assert all(e.path != "projects/MEMORY.md" for e in mem.list())


def test_clock_override(mem, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2030-05-06T07:08:09Z")
    r = mem.write("x", title="clocked", category="c")
    assert codec.format_datetime(mem.read(r.id, count_access=False).created) == "2030-05-06T07:08:09Z"
    for far in ("9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"):  # the rules add years to now: refused whole
        monkeypatch.setenv("MEMSTRATA_NOW", far)
        with pytest.raises(InvalidInput, match="between the years 1970 and 9000"):
            mem.maintain()


def test_config_md_holds_only_what_was_set(mem):
    mem.config_set("trash_retention_days", "45")
    text = (mem.root / "config.md").read_text()
    assert "trash_retention_days: 45" in text and "hot_days" not in text
    fresh = Memory(mem.root)
    assert fresh.settings.trash_retention_days == 45 and fresh.settings.hot_days == 7
    with pytest.raises(InvalidInput):
        mem.config_set("hot_days", "-1")
    assert "hot_days" not in (mem.root / "config.md").read_text()


def test_a_prefix_of_two_trashed_ids_says_so(mem):
    (mem.root / "notes").mkdir(exist_ok=True)
    for entry_id, title in (("abcd11112222", "First"), ("abcd33334444", "Second")):
        (mem.root / "notes" / f"{title.lower()}.md").write_text(f"---\nid: {entry_id}\ntitle: {title}\n---\n\n{title} note.\n")
        mem.delete(entry_id)
    with pytest.raises(NotFound, match="several trashed ids .*abcd11112222.*abcd33334444.*mem restore"):
        mem.read("abcd")
    with pytest.raises(NotFound, match="is in the trash .*mem restore abcd33334444"):
        mem.read("abcd3333")
