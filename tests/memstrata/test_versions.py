"""Pre-write checks and versions on a real tree: conflicts keep both versions, dedup, near-dup,
revert, split/merge round trip, rollback on an injected failure, one-way import-builtin."""
import os
import random
import string

import pytest

from memstrata import Memory
from memstrata.errors import InvalidInput, NotFound, SecretDetected
from memstrata.storage import versions


@pytest.fixture
def mem(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-06-01T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    return m


def _entry_files(root, category=None):
    """{relative path: bytes} of every entry file (INDEX.md excluded) in the tree or a category."""
    base = root / category if category else root
    out = {}
    for path in base.rglob("*.md"):
        rel = path.relative_to(root).as_posix()
        if path.name == "INDEX.md" or rel.startswith(".") or "/" not in rel:
            continue
        out[rel] = path.read_bytes()
    return out


def _all_files(root):
    """Every file of the tree except the derived caches (catalog, vectors, lock)."""
    out = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith((".cache/", ".vectors/")) and rel != ".lock":
            out[rel] = path.read_bytes()
    return out


def _secret() -> str:
    rng = random.Random(7)
    return "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))


# -- conflicts and versions -----------------------------------------------------------------
def test_dark_mode_then_light_mode_is_one_entry_at_version_2(mem, monkeypatch):
    first = mem.write("User prefers dark mode", title="UI preference", category="preferences")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-07-18T10:00:00Z")
    second = mem.write("User prefers light mode", title="UI preference", category="preferences")

    assert second.action == "conflict"
    assert second.id == first.id and second.related_id == first.id
    assert second.version == 2
    assert second.message == 'conflict detected with "UI preference" (same title): both versions kept, current is v2'
    assert {k: second.to_dict()[k] for k in ("action", "version", "previous_version", "rule", "refines")} == {
        "action": "conflict", "version": 2, "previous_version": 1, "rule": "title", "refines": False}

    entries = mem.list(category="preferences")
    assert [e.id for e in entries] == [first.id]
    current = mem.read(first.id, count_access=False)
    assert current.version == 2
    assert current.body == "User prefers light mode\n"
    assert "Version history" not in current.body

    rows = mem.history(first.id)
    assert [(r["version"], r["date"], r["current"], r["available"]) for r in rows] == [
        (1, "2026-06-01", False, True), (2, "2026-07-18", True, True)]
    assert rows[0]["summary"] == "User prefers dark mode"
    assert mem.history_show(first.id, 1) == "User prefers dark mode\n"
    assert mem.history_show(first.id, 2) == "User prefers light mode\n"

    text = (mem.root / current.path).read_text(encoding="utf-8")
    assert text.endswith("---\n\nUser prefers light mode\n")
    assert ("history:\n- {version: 1, date: '2026-06-01', summary: User prefers dark mode}\n"
            "- {version: 2, date: '2026-07-18', summary: 'User prefers light mode (conflict, replaced v1)'}\n") in text
    kept = versions.list_snapshots(mem.root, first.id)
    assert list(kept) == [1]
    # a second conflict: one version is current, each line says what it replaced
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-08-01T10:00:00Z")
    assert mem.write("User prefers high contrast mode", title="UI preference", category="preferences").version == 3
    rows = mem.history(first.id)
    assert [r["current"] for r in rows] == [False, False, True]
    assert [r["summary"] for r in rows][1:] == ["User prefers light mode (conflict, replaced v1)",
                                                "User prefers high contrast mode (conflict, replaced v2)"]
    assert "User prefers dark mode" in kept[1].read_text(encoding="utf-8")
    assert "version: 1" in kept[1].read_text(encoding="utf-8")


def test_same_tags_and_similar_subject_is_a_conflict(mem):
    first = mem.write("The team standup happens at 9:30 every morning.", title="Standup time",
                      category="team", tags=["standup", "schedule"])
    second = mem.write("The team standup happens at 10:00 every morning.", title="When is standup",
                       category="team", tags=["schedule", "standup"])
    assert second.action == "conflict" and second.id == first.id and second.version == 2
    assert second.similarity is not None and second.similarity >= mem.settings.conflict_similarity


def test_update_keeps_the_old_version(mem):
    r = mem.write("We chose Postgres.", title="DB choice", category="projects")
    u = mem.update(r.id, "We moved to MySQL.")
    assert u.version == 2
    assert mem.history_show(r.id, 1) == "We chose Postgres.\n"
    assert mem.read(r.id, count_access=False).body == "We moved to MySQL.\n"
    # a change of tags only is a change too: the version before it is kept (README: every change)
    assert mem.update(r.id, tags=["db"]).version == 3
    assert mem.version(r.id, 2).tags == [] and mem.read(r.id, count_access=False).tags == ["db"]
    assert mem.update(r.id, tags=["db"]).version == 3  # no change, no version


def test_revert_is_a_new_version_with_the_old_body(mem):
    r = mem.write("Deploys happen on Fridays.", title="Deploy day", category="ops")
    mem.write("Deploys happen on Tuesdays.", title="Deploy day", category="ops")
    result = mem.revert(r.id, to=1)
    assert result.version == 3 and result.id == r.id
    assert "current v3" in result.message
    assert mem.history_show(r.id, 3) == mem.history_show(r.id, 1) == "Deploys happen on Fridays.\n"
    assert mem.history_show(r.id, 2) == "Deploys happen on Tuesdays.\n"
    assert [row["version"] for row in mem.history(r.id)] == [1, 2, 3]
    with pytest.raises(InvalidInput):
        mem.revert(r.id, to=3)
    with pytest.raises(NotFound):
        mem.history_show(r.id, 9)


# -- dedup and near-duplicates ------------------------------------------------------------------
def test_same_normalised_content_creates_nothing(mem):
    r = mem.write("We deploy on **Fridays**.", title="Deploy day", category="ops")
    before = _entry_files(mem.root)
    again = mem.write("we deploy on  fridays", title="Deploy day", category="ops")
    assert again.action == "duplicate" and again.id == r.id
    assert _entry_files(mem.root) == before
    # another category is another place: written
    assert mem.write("We deploy on **Fridays**.", title="Deploy day", category="other").action == "created"


def test_near_duplicate_is_reported_and_merge_or_force_decide(mem):
    r = mem.write("Production deploys of the web app happen every Friday afternoon.",
                  title="Friday deploys", category="ops")
    before = _entry_files(mem.root)
    near = mem.write("The web app is deployed to production every Friday afternoon.",
                     title="Friday deployments", category="ops")
    assert near.action == "near_duplicate" and near.id == r.id and near.related_id == r.id
    assert near.similarity >= mem.settings.near_duplicate_threshold
    assert "--merge" in near.message and "--force" in near.message
    assert _entry_files(mem.root) == before

    merged = mem.write("The web app is deployed to production every Friday afternoon.",
                       title="Friday deployments", category="ops", tags=["deploy"], merge=True)
    assert merged.action == "merged" and merged.id == r.id and merged.version == 2
    body = mem.read(r.id, count_access=False).body
    assert "Production deploys" in body and "The web app is deployed" in body
    assert "deploy" in mem.read(r.id, count_access=False).tags
    assert mem.history_show(r.id, 1).startswith("Production deploys")

    forced = mem.write("The web app is deployed to production each Friday afternoon.",
                       title="Friday deployments", category="ops", force=True)
    assert forced.action == "created" and forced.id != r.id
    assert len(mem.list(category="ops")) == 2


def test_different_numbers_are_not_near_duplicates(mem):
    mem.write("note 2 from writer 0", title="w0 n2", category="load")
    assert mem.write("note 0 from writer 2", title="w2 n0", category="load").action == "created"


# -- split and merge ----------------------------------------------------------------------------------
def _populate(mem):
    specs = [
        ("Kickoff notes for alpha", "2024-03-01", ["alpha"]),
        ("Alpha budget approved at 40k", "2024-11-20", ["alpha", "budget"]),
        ("Beta launch moved to spring", "2025-02-14", ["beta"]),
        ("Gamma has no tags at all", "2025-08-09", []),
    ]
    ids = []
    for n, (body, created, tags) in enumerate(specs):
        r = mem.write(body, title=f"item {chr(97 + n)}", category="projects", created=created, tags=tags, force=True)
        ids.append(r.id)
    mem.write("A nested entry", title="nested", category="projects/existing", force=True)
    mem.update(ids[0], "Kickoff notes for alpha, revised")  # an entry with a version history
    return ids


@pytest.mark.parametrize("by, subs", [("year", {"2024", "2025"}), ("tag", {"alpha", "beta", "untagged"}),
                                      ("month", {"2024-03", "2024-11", "2025-02", "2025-08"}),
                                      ("status", {"active"})])
def test_split_then_merge_gives_back_the_same_tree(mem, by, subs):
    ids = _populate(mem)
    before = _entry_files(mem.root)
    paths_before = {e.id: e.path for e in mem.list()}

    plan = mem.split("projects", by=by, dry_run=True)
    assert plan["moved"] == 4 and _entry_files(mem.root) == before

    result = mem.split("projects", by=by)
    assert set(result["subcategories"]) == subs
    after = {e.id: e for e in mem.list()}
    assert set(after) == set(paths_before)  # ids kept
    for entry_id in ids:
        entry = after[entry_id]
        assert entry.category.startswith("projects/") and entry.category.split("/")[1] in subs
        assert mem.read(entry_id, count_access=False).id == entry_id
        sub_index = (mem.root / entry.category / "INDEX.md").read_text(encoding="utf-8")
        assert entry_id in sub_index
    parent_index = (mem.root / "projects" / "INDEX.md").read_text(encoding="utf-8")
    assert all(f"({s}/INDEX.md)" in parent_index or f"[{s}]" in parent_index for s in subs)
    assert not any(entry_id in parent_index for entry_id in ids)
    assert after[ids[0]].version == 2 and mem.history_show(ids[0], 1) == "Kickoff notes for alpha\n"
    # the vector index follows the moves
    rows = mem.state.vector_index().fetch_rows([ids[1]])
    assert rows[ids[1]][0]["path"] == after[ids[1]].path

    merged = mem.merge("projects")
    assert merged["moved"] == 4
    assert _entry_files(mem.root) == before
    assert {e.id: e.path for e in mem.list()} == paths_before
    assert not (mem.root / "projects" / ".split.json").exists()
    for s in subs:
        assert not (mem.root / "projects" / s).exists()
    assert (mem.root / "projects" / "existing" / "nested.md").exists()
    root_index = (mem.root / "INDEX.md").read_text(encoding="utf-8")
    assert all(f"projects/{s}" not in root_index for s in subs)
    assert rows and mem.state.vector_index().fetch_rows([ids[1]])[ids[1]][0]["path"] == paths_before[ids[1]]


def test_split_warning_past_the_threshold(mem):
    mem.config_set("split_threshold", 2)
    results = [mem.write(f"entry number {n} about topic {n}", title=f"topic {n}", category="busy", force=True)
               for n in range(3)]
    assert not results[1].warnings
    assert any("mem split busy" in w for w in results[2].warnings)
    assert any("busy" in w for w in mem.stats()["warnings"])
    assert mem.stats()["categories"]["busy"]["split_advised"]


def test_split_refuses_unknown_mode(mem):
    with pytest.raises(InvalidInput):
        mem.split("projects", by="colour")


# -- atomic write with rollback ------------------------------------------------------------------
@pytest.mark.parametrize("step", ["write_indexes", "index"])
def test_failure_after_the_file_write_puts_everything_back(mem, monkeypatch, step):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-05-01T09:00:00Z")
    r = mem.write("User prefers dark mode", title="UI preference", category="preferences")
    path = mem.root / r.path
    before_file = path.read_bytes()
    before_all = _all_files(mem.root)
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-05-02T09:00:00Z")  # a later day: INDEX.md changes too

    def boom(*args, **kwargs):
        raise RuntimeError("injected failure")

    if step == "index":  # the save path's index step
        monkeypatch.setattr(mem.save_path.index, "upsert", boom)
    else:  # its last step, after files, catalog and index
        monkeypatch.setattr(mem.save_path, "write_indexes", boom)
    # a conflicting write (a new version of the existing entry)
    with pytest.raises(RuntimeError):
        mem.write("User prefers light mode", title="UI preference", category="preferences")
    assert path.read_bytes() == before_file
    assert not versions.list_snapshots(mem.root, r.id)
    assert _all_files(mem.root) == before_all
    # an update
    with pytest.raises(RuntimeError):
        mem.update(r.id, "User prefers light mode")
    assert path.read_bytes() == before_file
    assert _all_files(mem.root) == before_all
    # a new entry
    with pytest.raises(RuntimeError):
        mem.write("Completely different subject", title="Another", category="preferences")
    assert _all_files(mem.root) == before_all

    monkeypatch.undo()
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-06-02T09:00:00Z")
    again = mem.write("User prefers light mode", title="UI preference", category="preferences")
    assert again.action == "conflict" and again.version == 2


# -- secrets on every path ----------------------------------------------------------------------------
def test_secrets_are_refused_on_update_merge_revert_and_import(mem, tmp_path):
    r = mem.write("Production deploys of the web app happen every Friday afternoon.",
                  title="Friday deploys", category="ops")
    before = _all_files(mem.root)
    with pytest.raises(SecretDetected):
        mem.update(r.id, f"token {_secret()}")
    with pytest.raises(SecretDetected):
        mem.write(f"The web app is deployed every Friday afternoon. {_secret()}", title="Friday deployments",
                  category="ops", merge=True)
    source = tmp_path / "MEMORY.md"
    source.write_text(f"# Notes\n\n## Tools\n\nUse ripgrep.\n\n## Token\n\nGITHUB={_secret()}\n", encoding="utf-8")
    with pytest.raises(SecretDetected):
        mem.import_builtin(source)
    assert _all_files(mem.root) == before

    mem.config_set("secrets", "warn")
    u = mem.update(r.id, f"token {_secret()}")
    assert u.warnings
    mem.update(r.id, "no secret here any more")
    mem.config_set("secrets", "refuse")
    with pytest.raises(SecretDetected):
        mem.revert(r.id, to=2)
    assert "no secret" in mem.read(r.id, count_access=False).body


# -- import-builtin ----------------------------------------------------------------------------------------
CLAUDE_MD = """# Project notes

These notes are for the agent.

## Build

Run `make` then `make test`.

```
## not a heading (inside code)
```

## Style

- four spaces
- no tabs

## Empty

## People

Ana owns the backend.
"""


def test_import_builtin_twice_adds_nothing_and_never_writes_the_source(mem, tmp_path, monkeypatch):
    source = tmp_path / "agent" / "CLAUDE.md"
    source.parent.mkdir()
    source.write_text(CLAUDE_MD, encoding="utf-8")
    os.chmod(source, 0o444)  # any attempt to write it would fail loudly
    raw, stat_before = source.read_bytes(), source.stat()

    first = mem.import_builtin(source)
    assert first["category"] == "imported/claude"
    assert len(first["created"]) == 4  # preamble, Build, Style, People (Empty has no body)
    titles = sorted(e.title for e in mem.list(category="imported/claude"))
    assert titles == ["Build", "People", "Project notes", "Style"]
    build = next(e for e in mem.list(category="imported/claude") if e.title == "Build")
    assert "## not a heading" in mem.read(build.id, count_access=False).body

    files_after_first = _entry_files(mem.root)
    second = mem.import_builtin(source)
    assert second["created"] == [] and second["updated"] == [] and sorted(second["unchanged"]) == sorted(first["created"])
    assert _entry_files(mem.root) == files_after_first
    assert source.read_bytes() == raw
    assert source.stat().st_mtime_ns == stat_before.st_mtime_ns

    # a section changed in the source becomes a new version of its entry, nothing else moves
    os.chmod(source, 0o644)
    source.write_text(CLAUDE_MD.replace("Ana owns the backend.", "Bo owns the backend."), encoding="utf-8")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-06-05T09:00:00Z")
    third = mem.import_builtin(source)
    assert len(third["updated"]) == 1 and third["created"] == []
    people = mem.read(third["updated"][0], count_access=False)
    assert people.version == 2 and "Bo owns" in people.body
    assert "Ana owns" in mem.history_show(people.id, 1)


def test_import_builtin_refuses_files_inside_the_root(mem):
    inside = mem.root / "notes.md"
    inside.write_text("# x\n\ntext\n", encoding="utf-8")
    with pytest.raises(InvalidInput):
        mem.import_builtin(inside)
    with pytest.raises(NotFound):
        mem.import_builtin(mem.root.parent / "missing.md")


def test_large_category_uses_the_index_neighbours(mem):
    mem.config_set("grep_max_entries", 3)
    topics = ["Cats sleep most of the day.", "Guitar strings need changing monthly.", "Tomatoes like full sun.",
              "The train to Lyon leaves at noon.", "Backups run every night at 2am."]
    for n, body in enumerate(topics):
        mem.write(body, title=f"fact {chr(97 + n)}", category="misc", force=True)
    target = mem.write("Production deploys of the web app happen every Friday afternoon.", title="Friday deploys",
                       category="misc")
    near = mem.write("The web app is deployed to production every Friday afternoon.", title="Friday deployments",
                     category="misc")
    assert near.action == "near_duplicate" and near.id == target.id
    dup = mem.write("production deploys of the web app happen every friday afternoon", title="Deploys",
                    category="misc")
    assert dup.action == "duplicate" and dup.id == target.id
    same_title = mem.write("Deploys moved to Thursdays.", title="Friday deploys", category="misc")
    assert same_title.action == "conflict" and same_title.id == target.id


def test_conflict_with_an_archived_entry_brings_it_back(mem):
    r = mem.write("User prefers dark mode", title="UI preference", category="preferences")
    old = mem.root / r.path
    archived = mem.root / "preferences" / "archived" / old.name
    archived.parent.mkdir()
    text = old.read_text(encoding="utf-8")
    assert "tier: hot" in text
    archived.write_text(text.replace("status: active", "status: archived").replace("tier: hot", "tier: archive")
                        .replace("weight: ", "weight: 0.01 #"), encoding="utf-8")
    old.unlink()
    result = mem.write("User prefers light mode", title="UI preference", category="preferences")
    assert result.action == "conflict" and result.version == 2
    entry = mem.read(r.id, count_access=False)
    assert entry.status == "active" and "/archived/" not in entry.path and not archived.exists()
    # the new version is hot in its file and in what recall returns, not `archive` until a maintain
    assert "tier: hot" in (mem.root / entry.path).read_text(encoding="utf-8")
    assert entry.weight > 0.5
    hits = mem.recall("light mode UI preference", count_access=False).results
    assert hits[0].id == r.id and hits[0].tier == "hot"
    assert "status: archived" in versions.read_snapshot(mem.root, r.id, 1)
