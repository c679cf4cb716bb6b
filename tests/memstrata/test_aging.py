"""Aging without loss, end to end on a real tree with MEMSTRATA_NOW: hot -> warm -> cold ->
archive -> trash -> purge, lossless decompress at every stage, idempotent maintain, dry run.

Archive and forgetting count days the tree was in use (docs/aging.md), so the tests that reach
them use the tree every day (the `use_daily` fixture: one real read a day)."""
import shutil

import pytest

from memstrata import Memory
from memstrata.errors import InvalidInput, NotFound
from memstrata.storage import codec, sidecars
from memstrata.storage.entry import Entry

EN_BODY = (
    "We decided to use Postgres for project alpha.\n"
    "The main reason is its strong transactional guarantees and mature tooling.\n"
    "MySQL was considered but rejected because of the replication issues we had in 2024.\n\n"
    "## Plan\n\n"
    "- The migration is planned for March, after the billing release.\n"
    "- Alice owns the schema work and Bob owns the data import.\n"
    "- Backups run nightly to the NAS and are tested every month.\n\n"
    "We will revisit the decision if hosting costs grow above the agreed budget.\n"
    "Trailing spaces and odd whitespace stay exact.   \n"
)
ZH_BODY = (
    "我们决定在阿尔法项目中使用 Postgres 数据库。主要原因是事务保证强，工具成熟。"
    "曾考虑过 MySQL，但因二〇二四年的复制问题而放弃。迁移计划在三月进行。"
    "备份每晚运行并每月测试一次。如果成本超出预算，我们会重新评估这个决定。\n"
)


def _at(monkeypatch, day: str) -> None:
    monkeypatch.setenv("MEMSTRATA_NOW", f"{day}T09:00:00Z")


def _compressed_db(mem, monkeypatch):
    """The "DB" note written on the fixture's day and compressed to key points (L1) by maintain."""
    r = mem.write(EN_BODY, title="DB", category="projects")
    _at(monkeypatch, "2026-01-20")
    mem.maintain()
    assert mem.resolve(r.id).layer == "L1"
    return r


def _snapshot(root) -> dict:
    """Every file of the tree (bytes), without the derived cache and the lock file."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith((".cache/", ".lock")):
            out[rel] = path.read_bytes()
    return out


def _file_body(root, rel) -> str:
    return codec.split_frontmatter((root / rel).read_text(encoding="utf-8"))[1]


def _index_row(root, category, entry_id):
    rows = [l for l in (root / category / "INDEX.md").read_text(encoding="utf-8").splitlines() if entry_id in l]
    return rows[0] if rows else None


def _restore_on_copy(mem, tmp_path, name, entry_id, from_trash=False) -> tuple[str, object]:
    """Copy the tree, restore the entry there (out of the trash first if asked), return (body, entry)."""
    copy = tmp_path / name
    shutil.copytree(mem.root, copy)
    other = Memory(copy, embedder=mem.embedder)
    if from_trash:
        other.restore(entry_id)
    result = other.decompress(entry_id, restore=True)
    entry = other.resolve(entry_id)
    assert result["restored"] is True and entry.layer == "L0" and entry.tier == "hot"
    assert entry.status == "active" and "/archived/" not in entry.path
    assert entry.full_content_file is None and entry.summary is None
    assert not (copy / sidecars.relative_path(entry_id)).exists()
    return _file_body(copy, entry.path), entry


def _maintain_twice(mem) -> dict:
    """Dry run (writes nothing, predicts the real run), real run, then a second run that changes nothing."""
    before = _snapshot(mem.root)
    dry = mem.maintain(dry_run=True).to_dict()
    assert _snapshot(mem.root) == before, "a dry run must not write anything"
    real = mem.maintain().to_dict()
    assert real["errors"] == []
    assert [(c["id"], c["actions"]) for c in dry["changes"]] == [(c["id"], c["actions"]) for c in real["changes"]]
    assert [p["id"] for p in dry["purged"]] == [p["id"] for p in real["purged"]]
    assert dry["accesses_folded"] == 0 and dry["accesses_to_fold"] == real["accesses_folded"]
    assert real["accesses_to_fold"] == 0
    after = _snapshot(mem.root)
    again = mem.maintain().to_dict()
    assert again["changed"] == 0 and again["changes"] == [] and again["purged"] == []
    assert _snapshot(mem.root) == after, "a second run right after the first must change nothing"
    return real


@pytest.fixture
def mem(tmp_path, embedder, monkeypatch):
    _at(monkeypatch, "2026-01-01")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    return m


def test_aging_end_to_end(mem, tmp_path, monkeypatch, use_daily):
    root = mem.root
    a = mem.write(EN_BODY, title="DB choice", category="projects/alpha", tags=["db", "alpha"], importance="medium")
    zh = mem.write(ZH_BODY, title="数据库选择", category="projects/alpha", tags=["数据库"])
    imp = mem.write(EN_BODY.replace("Postgres", "SQLite"), title="Keep forever", category="long-term",
                    important=True)
    word = mem.write("Never lose this one. It holds the release key ceremony steps.", title="Ceremony",
                     category="long-term", importance="important")
    target = mem.write("The staging cluster lives in eu-west.", title="Staging", category="infra")
    pointer = mem.write("See the staging note.", title="Pointer", category="infra", related=[target.id],
                        important=True)
    exp = mem.write("Temporary: the office is closed until February.", title="Office closed",
                    category="daily", expires="2026-02-01")
    original = {e.id: _file_body(root, e.path) for e in (a, zh, imp, word, target)}
    assert original[a.id] == EN_BODY
    imp_bytes = (root / imp.path).read_bytes()

    # day 3: everything is hot, nothing to do
    _at(monkeypatch, "2026-01-04")
    assert _maintain_twice(mem)["changed"] == 0

    # day 10: warm -> L1 key points, original in .full/ (the tree is in use every day from now on)
    use_daily(mem, "2026-01-02", "2026-01-11", pointer.id)
    _at(monkeypatch, "2026-01-11")
    report = _maintain_twice(mem)
    assert {c["id"] for c in report["changes"]} == {a.id, zh.id, target.id, exp.id}
    e = mem.resolve(a.id)
    assert (e.tier, e.layer, e.status, e.path) == ("warm", "L1", "active", a.path)
    assert e.full_content_file == f".full/{a.id}.md"
    assert e.updated.isoformat().startswith("2026-01-01") and e.last_access is None and e.access_count == 0
    assert len(e.body) < len(EN_BODY) and "- " in e.body and "mem decompress" in e.body
    sidecar_bytes = (root / e.full_content_file).read_bytes()
    assert codec.split_frontmatter(sidecar_bytes.decode())[1] == EN_BODY
    assert "| warm |" in _index_row(root, "projects/alpha", a.id)
    assert mem.decompress(a.id, show=True)["body"] == EN_BODY
    z = mem.resolve(zh.id)  # its five key points and the note would be larger than its six sentences
    assert (z.tier, z.layer, z.body, z.full_content_file) == ("warm", "L0", ZH_BODY, None)
    for entry_id in (a.id,):
        body, _ = _restore_on_copy(mem, tmp_path, f"warm-{entry_id}", entry_id)
        assert body == original[entry_id]

    # day 40: cold -> L2 one line + tags; the sidecar keeps the L0 original; the expired note goes to the trash
    use_daily(mem, "2026-01-12", "2026-02-10", pointer.id)
    _at(monkeypatch, "2026-02-10")
    report = _maintain_twice(mem)
    kinds = {c["id"]: c["actions"] for c in report["changes"]}
    assert kinds[exp.id] == ["expire"]
    e = mem.resolve(a.id)
    assert (e.tier, e.layer) == ("cold", "L2") and "Tags: db, alpha" in e.body
    z = mem.resolve(zh.id)  # one line and its tags are smaller than the whole: compressed now
    assert z.layer == "L2" and len(z.body.encode()) < len(ZH_BODY.encode())
    assert mem.decompress(zh.id, show=True)["body"] == ZH_BODY
    assert (root / e.full_content_file).read_bytes() == sidecar_bytes
    assert "| cold |" in _index_row(root, "projects/alpha", a.id)
    with pytest.raises(NotFound):
        mem.resolve(exp.id)
    trashed = {i.id: i for i in mem.trash_list()}
    assert exp.id in trashed and trashed[exp.id].reason.startswith("expired")
    assert "status: expired" in (root / trashed[exp.id].path).read_text()
    assert _index_row(root, "daily", exp.id) is None
    assert f"| trash | {exp.id} |" in (root / ".trash/INDEX.md").read_text()
    body, _ = _restore_on_copy(mem, tmp_path, "cold", a.id)
    assert body == original[a.id]

    # day 100: archive -> L4, summary in frontmatter, status archived, moved to {category}/archived/
    use_daily(mem, "2026-02-11", "2026-04-11", pointer.id)
    _at(monkeypatch, "2026-04-11")
    report = _maintain_twice(mem)
    e = mem.resolve(a.id)
    assert (e.tier, e.layer, e.status) == ("archive", "L4", "archived")
    assert e.path == "projects/alpha/archived/db-choice.md" and not (root / a.path).exists()
    assert e.summary and " | " in e.summary
    assert "status: archived" in (root / e.path).read_text() and "summary:" in (root / e.path).read_text()
    row = _index_row(root, "projects/alpha", a.id)
    assert "| archived | archive |" in row and "archived/db-choice.md" in row
    assert (root / e.full_content_file).read_bytes() == sidecar_bytes
    assert mem.resolve(target.id).status == "archived"
    assert [p["id"] for p in report["purged"]] == [exp.id], "trashed 60 days ago: purged"
    body, restored = _restore_on_copy(mem, tmp_path, "archive", a.id)
    assert body == original[a.id] and restored.path == a.path

    # important entries: never compressed, archived or forgotten (bytes untouched all along)
    assert (root / imp.path).read_bytes() == imp_bytes
    w = mem.resolve(word.id)
    assert (w.layer, w.status, w.tier) == ("L0", "active", "hot") and _file_body(root, w.path) == original[word.id]

    # day 181: forgotten -> .trash (audit row), except the entry another one lists in `related`
    use_daily(mem, "2026-04-12", "2026-07-01", pointer.id)
    _at(monkeypatch, "2026-07-01")
    report = _maintain_twice(mem)
    assert {c["id"]: c["actions"] for c in report["changes"]}[a.id] == ["forget"]
    forgotten = {f["id"]: f for f in report["forgotten"]}
    assert set(forgotten) == {a.id, zh.id}, "maintain lists what it forgets"
    assert forgotten[a.id]["restore"] == f"mem restore {a.id}" and forgotten[a.id]["title"] == "DB choice"
    with pytest.raises(NotFound):
        mem.resolve(a.id)
    assert mem.resolve(target.id).status == "archived", "referenced entries are not forgotten"
    assert mem.resolve(imp.id).layer == "L0"
    item = {i.id: i for i in mem.trash_list()}[a.id]
    assert item.reason.startswith("forgotten") and item.trashed_from == "projects/alpha/archived/db-choice.md"
    assert (root / sidecars.relative_path(a.id)).exists(), "the original stays while the entry is restorable"
    assert _index_row(root, "projects/alpha", a.id) is None
    body, _ = _restore_on_copy(mem, tmp_path, "trash", a.id, from_trash=True)
    assert body == original[a.id]

    # day 212: past trash_retention_days (of use) -> purged with its sidecar
    use_daily(mem, "2026-07-02", "2026-08-01", pointer.id)
    _at(monkeypatch, "2026-08-01")
    report = _maintain_twice(mem)
    assert {p["id"] for p in report["purged"]} == {a.id, zh.id}
    assert a.id not in {i.id for i in mem.trash_list()}
    assert not (root / sidecars.relative_path(a.id)).exists()
    assert f"| purge | {a.id} |" in (root / ".trash/INDEX.md").read_text()
    assert (root / imp.path).read_bytes() == imp_bytes


def test_read_is_an_access_and_recomputes_weight(mem, monkeypatch):
    r = _compressed_db(mem, monkeypatch)
    assert mem.resolve(r.id).tier == "warm"
    entry = mem.read(r.id)
    assert entry.access_count == 1 and entry.last_access.isoformat().startswith("2026-01-20")
    assert entry.tier == "hot" and entry.layer == "L1", "a read warms the entry; the body stays compressed"
    assert entry.weight == pytest.approx(1.5 * 1.0 * 0.6931, abs=1e-3)
    assert mem.resolve(r.id).access_count == 0, "a read goes to the access journal, not into the file"
    assert mem.maintain().accesses_folded == 1
    stored = mem.resolve(r.id)
    assert (stored.access_count, stored.tier) == (1, "hot") and stored.weight == entry.weight
    assert stored.updated.isoformat().startswith("2026-01-01")
    assert mem.maintain().changed == 0


def test_weight_api(mem, monkeypatch):
    r = mem.write("Some fact.", title="Fact", category="general", importance="high")
    _at(monkeypatch, "2026-01-08")
    info = mem.weight(r.id)
    assert info["importance_label"] == "high" and info["importance_factor"] == 3.0 and info["days"] == 7
    assert info["weight"] == pytest.approx(3.0 / 8 ** 0.3 * 0.693147, abs=1e-3)
    assert info["updated"] is False and mem.resolve(r.id).weight is None
    with pytest.raises(InvalidInput):  # outside 0.5-1.5: refused, not clamped
        mem.weight(r.id, context_correlation=9)
    stored = mem.weight(r.id, update=True, context_correlation=1.2)
    entry = mem.resolve(r.id)
    assert stored["updated"] and entry.weight == stored["weight"] and entry.context_correlation == 1.2
    assert entry.access_count == 0, "asking for the weight is not an access"


def test_update_of_compressed_body_makes_it_full_again(mem, monkeypatch):
    r = _compressed_db(mem, monkeypatch)
    mem.update(r.id, "We moved to MySQL after all.\n")
    e = mem.resolve(r.id)
    assert (e.layer, e.full_content_file, e.body) == ("L0", None, "We moved to MySQL after all.\n")
    kept = list((mem.root / ".full/superseded").glob(f"{r.id}--*.md"))
    assert len(kept) == 1 and codec.split_frontmatter(kept[0].read_text())[1] == EN_BODY
    mem.update(r.id, tags=["db"])  # metadata-only updates of a compressed entry keep it compressed
    assert mem.resolve(r.id).layer == "L0"
    res = mem.decompress(r.id, restore=True)
    assert res["restored"] is False


def test_a_write_is_checked_against_the_full_text_of_a_compressed_entry(mem, monkeypatch):
    r = _compressed_db(mem, monkeypatch)
    stub = mem.resolve(r.id)
    assert stub.layer == "L1" and stub.body != EN_BODY
    again = mem.write(EN_BODY, title="DB", category="projects")  # the same text once more
    assert (again.action, again.id) == ("duplicate", r.id)
    assert mem.resolve(r.id).body == stub.body and len(mem.list(category="projects")) == 1
    changed = mem.write(EN_BODY.replace("Postgres", "MySQL"), title="DB", category="projects")
    assert changed.action in ("conflict", "near_duplicate") and changed.id == r.id


def test_the_version_an_edit_keeps_of_a_compressed_entry_is_its_full_text(mem, monkeypatch):
    r = _compressed_db(mem, monkeypatch)
    mem.update(r.id, "We moved to MySQL after all.\n")
    kept = mem.version(r.id, 1)
    assert kept.body == EN_BODY and kept.layer == "L0"
    mem.revert(r.id, to=1)
    back = mem.resolve(r.id)
    assert (back.body, back.layer, back.full_content_file) == (EN_BODY, "L0", None)
    _at(monkeypatch, "2026-03-20")
    mem.maintain()  # compressed again, from the full text
    again = mem.resolve(r.id)
    assert again.layer != "L0" and mem.decompress(r.id, show=True)["body"] == EN_BODY


def test_what_was_written_into_a_compressed_stub_by_hand_is_kept_when_the_entry_is_updated(mem, monkeypatch):
    """tests/memstrata/test_editor_races.py: an editor appended lines to a compressed note's stub, then `mem update`
    replaced its body; the version kept was the full text alone, and the appended lines were in no file."""
    r = _compressed_db(mem, monkeypatch)
    path = mem.root / mem.resolve(r.id).path
    path.write_text(path.read_text(encoding="utf-8") + "Added by hand: the failover drill is on Fridays.\n",
                    encoding="utf-8")
    mem.update(r.id, "We moved to MySQL after all.\n")
    kept = mem.version(r.id, 1)
    assert kept.body.startswith(EN_BODY.rstrip("\n")) and kept.layer == "L0"
    assert "Added by hand: the failover drill is on Fridays." in kept.body
    assert "Full text in" not in kept.body  # the stub's own note is not carried over
    mem.update(r.id, "Back to Postgres.\n")
    assert mem.version(r.id, 2).body == "We moved to MySQL after all.\n"  # nothing added to a plain note's version


def test_missing_sidecar_is_reported_not_fatal(mem, monkeypatch):
    r = _compressed_db(mem, monkeypatch)
    (mem.root / f".full/{r.id}.md").unlink()
    with pytest.raises(NotFound):
        mem.decompress(r.id, show=True)
    _at(monkeypatch, "2026-02-20")
    report = mem.maintain()
    assert report.errors and report.errors[0]["id"] == r.id and "missing" in report.errors[0]["error"]
    e = mem.resolve(r.id)
    assert e.layer == "L1" and e.tier == "warm", "the entry is left as it was"


def test_review_schedule_and_mastered_goes_to_archive(mem, monkeypatch):
    r = mem.write(EN_BODY, title="Lesson", category="long-term")
    other = mem.write("Other", title="Other", category="long-term")
    res = mem.review_mark(r.id, "pending_review")
    assert res["review_status"] == "pending_review" and mem.resolve(r.id).access_count == 0
    assert [e.id for e in mem.review_due()] == [r.id]
    mem.review_mark(r.id, "reviewing")
    res = mem.review_mark(r.id, "reviewed")
    assert res["next_review"] == "2026-01-02T09:00:00Z" and res["review_count"] == 1
    assert mem.review_due() == []
    _at(monkeypatch, "2026-01-02")
    assert [e.id for e in mem.review_due()] == [r.id]
    assert mem.review_mark(r.id, "Reviewed")["next_review"] == "2026-01-05T09:00:00Z"
    assert [e.id for e in mem.review_list("reviewed")] == [r.id] and mem.review_list("mastered") == []
    stats = mem.review_stats()
    assert stats["statuses"]["reviewed"] == 1 and stats["tracked"] == 1 and stats["due"] == 0
    res = mem.review_mark(r.id, "mastered")
    assert res["archived"] and res["path"] == "long-term/archived/lesson.md"
    e = mem.resolve(r.id)
    assert (e.status, e.tier, e.layer, e.review_status) == ("archived", "archive", "L4", "mastered")
    assert mem.decompress(r.id, show=True)["body"] == EN_BODY
    assert mem.maintain().changed == 0
    with pytest.raises(InvalidInput):
        mem.review_mark(other.id, "done")


def test_important_mastered_stays_put(mem):
    r = mem.write("Key fact. Keep it.", title="Key", category="long-term", important=True)
    res = mem.review_mark(r.id, "mastered")
    assert not res["archived"] and mem.resolve(r.id).status == "active"


def test_trash_purge_follows_the_lifecycle_rule(mem, monkeypatch, use_daily):
    r = mem.write("To delete.", title="Gone", category="general")
    kept = mem.write("In use.", title="Kept", category="general")
    mem.delete(r.id)
    mem.trash_list()  # shown to the user: the retention starts (issue 16: unreported items are never purged)
    use_daily(mem, "2026-01-02", "2026-02-01", kept.id)  # the retention counts days in use
    _at(monkeypatch, "2026-01-31")  # exactly 30 days: not yet
    assert mem.trash_purge() == []
    _at(monkeypatch, "2026-02-01")
    assert [i.id for i in mem.trash_purge()] == [r.id]


def test_sidecar_paths_stay_inside_full(tmp_path):
    with pytest.raises(InvalidInput):
        sidecars.relative_path("../x")
    assert not sidecars.exists(tmp_path, "../etc/passwd")
    with pytest.raises(InvalidInput):
        sidecars.read_bytes(tmp_path, ".full/../../x.md")
    rel = sidecars.write(tmp_path, "abc", b"---\nid: abc\n---\n\nbody \r\n")
    assert sidecars.original_body(tmp_path, rel) == "body \r\n"
    compressed = Entry(id="abc", title="t", body="short", layer="L1", full_content_file=rel)
    assert sidecars.full_body(tmp_path, compressed) == "body \r\n"
    assert sidecars.full_body(tmp_path, compressed.copy(full_content_file=".full/none.md")) == "short"


@pytest.mark.parametrize("strategy", ["text", "grep"])
def test_recall_finds_compressed_entries_by_full_content(mem, monkeypatch, strategy):
    r = mem.write(EN_BODY, title="DB choice", category="projects/alpha", tags=["db"])
    mem.write("Lunch is at noon on Fridays.", title="Lunch", category="projects/alpha")
    _at(monkeypatch, "2026-02-15")
    mem.maintain()
    entry = mem.resolve(r.id)
    assert entry.layer == "L2" and "replication" not in entry.body
    # found by words its summary lost (the relevance cut-off is another test's: the TEXT model refitted with
    # the Chinese corpora, issue 40, rates a two-word full-text match of a compressed entry under 0.01)
    result = mem.recall("replication issues", k=3, strategy=strategy, min_relevance=0)
    assert r.id in [hit.id for hit in result.results]
    mem.reindex()  # a rebuilt index reads the sidecar too
    assert r.id in [hit.id for hit in mem.recall("replication issues", k=3, strategy=strategy, min_relevance=0).results]


def test_forgetting_cascades_through_related_in_one_run(mem, monkeypatch, use_daily):
    t = mem.write("The old staging cluster lived in us-east.", title="Old staging", category="infra")
    r = mem.write("See the old staging note.", title="Pointer", category="infra", related=[t.id])
    keep = mem.write("Still needed.", title="Live", category="infra")
    live = mem.write("Points at the live note.", title="Live pointer", category="infra", related=[keep.id],
                     important=True)
    use_daily(mem, "2026-01-02", "2026-07-15", live.id)
    _at(monkeypatch, "2026-07-15")
    report = _maintain_twice(mem)
    actions = {c["id"]: c["actions"] for c in report["changes"]}
    assert "forget" in actions[r.id] and "forget" in actions[t.id]
    assert "forget" not in actions[keep.id] and mem.resolve(keep.id).status == "archived"
    assert {r.id, t.id} <= {i.id for i in mem.trash_list()}


def test_failed_step_leaves_entries_as_they_were(mem, monkeypatch, use_daily):
    a = mem.write(EN_BODY, title="One", category="projects")
    b = mem.write(ZH_BODY, title="Two", category="projects")
    diary = mem.write("Read every day.", title="Diary", category="journal", important=True)
    use_daily(mem, "2026-01-02", "2026-04-15", diary.id)  # in use daily: archive age is reached
    _at(monkeypatch, "2026-04-15")
    before = {r.id: (mem.root / r.path).read_bytes() for r in (a, b)}

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(mem.save_path, "write_indexes", broken)
    report = mem.maintain()
    assert report.changes == [] and {e["id"] for e in report.errors} == {a.id, b.id}
    monkeypatch.undo()
    _at(monkeypatch, "2026-04-15")
    for r in (a, b):
        assert (mem.root / r.path).read_bytes() == before[r.id]
        assert not (mem.root / "projects/archived").exists() or not list((mem.root / "projects/archived").glob("*.md"))
    report = mem.maintain()
    assert report.errors == [] and mem.resolve(a.id).status == "archived"
    assert mem.decompress(a.id, show=True)["body"] == EN_BODY


def test_a_merge_into_a_compressed_entry_folds_into_its_full_text(mem, monkeypatch):
    r = _compressed_db(mem, monkeypatch)
    added = EN_BODY.replace("Postgres", "Postgres 16")
    merged = mem.write(added, title="DB", category="projects", merge=True)
    assert merged.id == r.id and merged.action == "merged"
    e = mem.resolve(r.id)
    assert e.layer == "L0" and e.full_content_file is None
    assert e.body.startswith(EN_BODY.rstrip()) and "mem decompress" not in e.body and "Postgres 16" in e.body


def test_archive_in_place_when_files_are_not_to_move(mem, monkeypatch, use_daily):
    """`archive_moves_files: false` (set by `mem init --adopt`): archived, found, never moved."""
    mem.config_set("archive_moves_files", "false")
    note = mem.write("The garden shed key hangs behind the door.", title="Shed key", category="home")
    keep = mem.write("Still in use.", title="Reader", category="home", important=True)
    path = mem.resolve(note.id).path
    use_daily(mem, "2026-01-02", "2026-05-01", keep.id)
    _at(monkeypatch, "2026-05-01")
    report = mem.maintain()
    assert any("archive" in c["actions"] for c in report.to_dict()["changes"] if c["id"] == note.id)
    archived = mem.resolve(note.id)
    assert archived.status == "archived" and archived.tier == "archive" and archived.path == path
    assert mem.recall("where is the shed key?", min_relevance=0).results[0].id == note.id


def test_compression_never_makes_an_entry_larger(mem, monkeypatch):
    # a one-sentence entry's summary is the sentence itself plus the note on the full text:
    # compressing it would only make the file larger, so maintain leaves its body whole
    short = mem.write("Lunch is at noon on the terrace.", title="Lunch", category="projects")
    long = mem.write(EN_BODY, title="DB", category="projects")
    before = (mem.root / short.path).read_bytes()
    _at(monkeypatch, "2026-01-20")
    dry = {c["id"]: c["actions"] for c in mem.maintain(dry_run=True).changes}
    real = {c["id"]: c["actions"] for c in mem.maintain().changes}
    assert dry == real and "compress" in real[long.id] and "compress" not in real.get(short.id, [])
    after = mem.resolve(short.id)
    assert after.layer == "L0" and after.full_content_file is None and after.body == "Lunch is at noon on the terrace.\n"
    assert after.body.encode() in before  # its text as written (the retier only adds frontmatter)
    assert not sidecars.exists(mem.root, sidecars.relative_path(short.id))
    assert mem.resolve(long.id).layer == "L1"
    _at(monkeypatch, "2026-02-20")  # cold (L2): still one sentence, still whole
    mem.maintain()
    assert mem.resolve(short.id).layer == "L0" and mem.resolve(long.id).layer == "L2"
    assert mem.maintain().changes == []  # a second run changes nothing


def test_the_session_start_says_where_a_compressed_memorys_whole_text_is(mem, monkeypatch):
    """A new user's review: a compressed runbook reached the agent as its key points alone, with no sign
    that steps were left out (the note's pointer to its full text is not shown)."""
    r = _compressed_db(mem, monkeypatch)
    block = mem.autoload().markdown()
    assert f"compressed, whole text: mem decompress {r.id} --show" in block
    mem.decompress(r.id, restore=True)
    assert "mem decompress" not in mem.autoload().markdown()


def test_a_new_version_of_a_one_line_entry_keeps_its_original_as_v1(mem, monkeypatch):
    """A new user's review: v1 of a runbook compressed to one line held the compressor's "Tags: ..."
    line, as if written by hand into the stub."""
    from memstrata.storage import versions

    steps = "Rotating the Stripe webhook secret:\n\n" + "".join(
        f"- step {n}: in the Stripe dashboard roll the signing secret of endpoint {n}, paste the new one into "
        f"vault under billing/stripe/{n}, restart the billing webhooks deployment and send a test event\n"
        for n in range(1, 7))
    r = mem.write(steps, title="Stripe webhook secret", category="runbooks", tags=["stripe"])
    _at(monkeypatch, "2026-02-20")
    mem.maintain()
    assert mem.resolve(r.id).layer == "L2" and "Tags: stripe" in mem.resolve(r.id).body
    assert mem.write("Stripe secrets are rotated by the platform team now.", title="Stripe webhook secret",
                     category="runbooks").version == 2
    kept = versions.read_snapshot(mem.root, r.id, 1)
    assert "Tags: stripe" not in kept and kept.endswith(steps)


def test_a_tags_line_written_by_hand_into_key_points_is_kept_with_the_original(mem, monkeypatch):
    """A third attack: the compressor's own "Tags:" line is left out of a kept version, but key points
    (L1) write none, so one there was written by hand and was lost."""
    from memstrata.storage import versions

    r = _compressed_db(mem, monkeypatch)
    note = mem.root / mem.resolve(r.id).path
    note.write_text(note.read_text(encoding="utf-8") + "\nTags: db, on-call\n", encoding="utf-8")
    mem.update(r.id, "We moved to MySQL after all.\n")
    assert "Tags: db, on-call" in versions.read_snapshot(mem.root, r.id, 1)
