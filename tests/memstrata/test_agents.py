"""Several agents, daily notes, import and export (memstrata/features/shared.py, daily.py, transfer.py)."""
import json
import textwrap

import pytest

from memstrata import Memory
from memstrata.errors import InvalidInput, NotFound
from memstrata.storage import codec
from memstrata.storage.catalog import read_entry_file


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:00:00Z")
    monkeypatch.delenv("MEMSTRATA_SHARED", raising=False)
    monkeypatch.delenv("MEMSTRATA_AGENT", raising=False)
    monkeypatch.setenv("TZ", "UTC")


def _mem(path, embedder):
    m = Memory(path, embedder=embedder)
    m.init()
    return m


def _entries(m):
    """Every entry of a root in full, keyed by id: (path, category, frontmatter, body, history)."""
    out = {}
    for meta in m.list():
        e = read_entry_file(m.root, meta.path)
        out[e.id] = (e.path, e.category, codec.entry_to_frontmatter(e), e.body, e.history)
    return out


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


# -- export / import ----------------------------------------------------------------------------
def test_jsonl_round_trip_keeps_entries_and_frontmatter(tmp_path, embedder, clock):
    a = _mem(tmp_path / "a", embedder)
    a.write("We chose PostgreSQL for alpha because we need transactions.", title="DB choice",
            category="projects/alpha", tags=["db", "decision"], importance="high", related=["x1"],
            expires="2027-06-01", extra={"source": "meeting", "reviewers": ["ann", "bo"]})
    a.write("部署流程：先在预发布环境验证，再灰度发布。", title="部署流程", category="projects/alpha",
            tags=["部署"], important=True)
    r = a.write("The user prefers dark mode.", title="UI preference", category="preferences")
    a.update(r.id, "The user prefers light mode now.")
    # Fields the write path does not set (status, tier, layer, review...) travel through JSONL too.
    line = {"id": "old-note-1", "title": "Old note", "body": "Kept for the record.\n", "category": "projects/beta",
            "status": "archived", "tier": "cold", "review_status": "reviewed", "review_count": 2,
            "created": "2025-01-02T03:04:05Z", "updated": "2025-02-03T04:05:06Z", "version": 3,
            "access_count": 7, "weight": 1.25, "agent": "alice", "custom_field": {"nested": [1, 2]}}
    seed = tmp_path / "seed.jsonl"
    seed.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert a.import_jsonl(seed)["imported"] == 1
    a.daily("standup: shipped the importer")

    first = tmp_path / "export.jsonl"
    assert a.export_jsonl(first)["entries"] == 5
    b = Memory(tmp_path / "b", embedder=embedder)
    with pytest.raises(NotFound):  # a folder `mem init` did not make is never written into
        b.import_jsonl(first)
    assert not (tmp_path / "b").exists()
    b.init()
    seen = []
    result = b.import_jsonl(first, progress=lambda done, total: seen.append((done, total)))
    assert result["imported"] == 5 and result["errors"] == [] and result["skipped"] == 0
    assert seen[-1] == (5, 5)
    assert _entries(b) == _entries(a)
    assert (b.root / "projects/beta/archived").is_dir()  # archived entries land in archived/
    second = tmp_path / "again.jsonl"
    b.export_jsonl(second)
    assert second.read_text(encoding="utf-8") == first.read_text(encoding="utf-8")
    # importing again changes nothing: every id is there already
    again = b.import_jsonl(first)
    assert (again["imported"], again["skipped"]) == (0, 5)


def test_jsonl_import_of_foreign_lines_and_bad_lines(tmp_path, embedder, clock):
    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join([
        json.dumps({"title": "Standup time", "content": "Standup moved to 9:30.", "category": "meetings",
                    "tags": "schedule, team", "importance": "low", "created": "2026-03-01"}),
        "not json",
        json.dumps({"id": "../escape", "body": "x"}),
        json.dumps(["a", "list"]),
        "",
        json.dumps({"body": "# Heading as title\nmore text", "category": "../../etc"}),
    ]) + "\n", encoding="utf-8")
    result = m.import_path(src)
    assert result["layout"] == "jsonl" and result["imported"] == 1
    assert sorted(e["line"] for e in result["errors"]) == [2, 3, 4, 6]
    (entry,) = m.list()
    assert (entry.title, entry.category, entry.tags, entry.importance) == \
        ("Standup time", "meetings", ["schedule", "team"], 0.2)
    assert entry.created.isoformat().startswith("2026-03-01")


def test_import_viking_tree(tmp_path, embedder, clock):
    base = tmp_path / "viking" / "agent" / "memories"
    _write(base / "hot" / "2026-03-27-战略决策.md", """
        ---
        id: mem_20260327_153000
        title: "今日重要决策"
        importance: high
        important: false
        tags: [决策, 战略]
        created: 2026-03-27T15:30:00+08:00
        last_access: 2026-03-27T15:30:00+08:00
        access_count: 1
        context_correlation: 1.3
        retention: 90
        current_layer: L0
        target_layer: hot
        weight: 10.0
        review_status: pending_review
        last_reviewed: null
        next_review: null
        review_count: 0
        ---

        # 今日重要决策

        ## 决策内容
        Move the billing service to the new cluster.
        """)
    _write(base / "warm" / "weekly.md", """
        ---
        id: mem_20260301_090000
        title: Weekly summary
        importance: important
        tags: [weekly]
        created: 2026-03-01T09:00:00Z
        current_layer: L1
        target_layer: warm
        ---

        - shipped search
        """)
    _write(base / "cold" / "projects" / "tag-only.md", "# kafka\n\nkafka, streaming\n")
    _write(base / "archive" / "old.md", """
        ---
        id: mem_20251201_080000
        title: Old incident
        importance: medium
        created: 2025-12-01T08:00:00Z
        current_layer: L4
        target_layer: archive
        summary: "DB outage | The primary failed over."
        full_content_file: "old.md.archive.full"
        ---

        DB outage.
        """)
    _write(base / "archive" / "old.md.archive.full", "The primary database failed over at 03:00; we lost 2 minutes.\n")
    _write(base / "daily" / "2026-03-27.md", "# 2026-03-27\n\n- worked on billing\n")
    _write(base / "meetings" / "2026-03-27.md", "---\ntitle: Planning\ntags: [planning]\n---\n\nQ2 planning notes.\n")
    _write(base / "long-term" / "conventions.md", "---\ntitle: Conventions\nimportance: low\n---\n\nUse UTC.\n")
    _write(base / "config" / "layers.md", "not a memory\n")

    m = _mem(tmp_path / "m", embedder)
    result = m.import_path(tmp_path / "viking")  # auto: finds agent/memories/hot ...
    assert result["layout"] == "viking" and result["errors"] == []
    assert result["imported"] == 7
    # the tiers as imported (stored); `mem list`/`read` show the tier maintain would give them today (issue 25)
    by_title = {e.title: m.resolve(e.id) for e in m.list()}
    decision = m.resolve("mem_20260327_153000")
    assert (decision.title, decision.tier, decision.category) == ("今日重要决策", "hot", "general")
    assert decision.importance == 0.8 and decision.tags == ["决策", "战略"]
    assert decision.context_correlation == 1.3 and decision.retention == 90
    assert decision.review_status == "pending_review"
    assert "Move the billing service" in decision.body
    weekly = by_title["Weekly summary"]
    assert (weekly.tier, weekly.important, weekly.layer) == ("warm", True, "L1")
    kafka = by_title["kafka"]
    assert (kafka.tier, kafka.category) == ("cold", "projects")
    old = m.resolve("mem_20251201_080000")
    assert old.tier == "archive" and "lost 2 minutes" in old.body  # the full text came back
    assert old.summary == "DB outage | The primary failed over." and old.layer == "L0"
    assert by_title["2026-03-27"].category == "daily"
    assert by_title["Planning"].category == "meetings" and by_title["Conventions"].category == "long-term"
    assert "layers" not in " ".join(by_title)
    # Frontmatter is written in the canonical vocabulary (aliases read, canonical keys written).
    text = (m.root / decision.path).read_text(encoding="utf-8")
    assert "tier: hot" in text and "target_layer" not in text
    # importing the same tree again changes nothing (files without an id get one derived from their path)
    again = m.import_tree(tmp_path / "viking", layout="viking")
    assert (again["imported"], again["skipped"]) == (0, 7) and again["warnings"][-1].startswith("7 entries")


def test_import_pme_tree(tmp_path, embedder, clock):
    src = tmp_path / "memory"
    _write(src / "INDEX.md", "# Memory index\n\n| category | entries |\n")
    _write(src / "config.md", "---\ntrash_retention_days: 30\n---\n")
    _write(src / "projects" / "INDEX.md", "| Alpha项目 | active | 2026-07 | alpha.md |\n")
    _write(src / "projects" / "alpha.md", """
        ---
        title: Alpha项目
        status: active
        created: 2026-07-18
        updated: 2026-07-18
        version: 1
        tags: [web, react, typescript, tailwind]
        importance: 0.8
        related: [beta-project, tech-stack-decision]
        expires: 2026-12-31
        ---

        ## 项目概要
        技术栈：React + TypeScript + Tailwind
        """)
    _write(src / "projects" / "archived" / "beta.md", """
        ---
        title: beta项目
        status: active
        created: 2026-01-02
        updated: 2026-02-01
        version: 2
        tags: [web]
        ---

        Beta was paused.

        ## 版本历史
        - v1 (2026-01-02)：started
        - v2 (2026-02-01)：paused
        """)
    _write(src / "preferences" / "ui-preferences.md", "---\ntitle: UI偏好\nversion: 2\n---\n\n用户偏好浅色模式\n")
    _write(src / "people" / "team" / "bob.md", "# Bob\n\nBackend lead.\n")
    _write(src / ".trash" / "gone.md", "---\ntitle: gone\n---\n\nforgotten\n")
    _write(src / "MEMORY.md", "agent's own memory: never imported\n")

    m = _mem(tmp_path / "m", embedder)
    result = m.import_path(src)
    assert result["layout"] == "pme" and result["errors"] == [] and result["imported"] == 4
    by_title = {e.title: e for e in m.list()}
    assert set(by_title) == {"Alpha项目", "beta项目", "UI偏好", "Bob"}
    alpha = m.read(by_title["Alpha项目"].id, count_access=False)
    assert alpha.category == "projects" and alpha.tags == ["web", "react", "typescript", "tailwind"]
    assert alpha.importance == 0.8 and alpha.related == ["beta-project", "tech-stack-decision"]
    assert alpha.expires.date().isoformat() == "2026-12-31" and alpha.created.date().isoformat() == "2026-07-18"
    beta = by_title["beta项目"]
    assert beta.status == "archived" and beta.path.startswith("projects/archived/") and beta.version == 2
    assert by_title["Bob"].category == "people/team"
    assert by_title["UI偏好"].version == 2
    assert (m.root / "projects" / "INDEX.md").read_text(encoding="utf-8").count("Alpha") >= 1
    assert result["warnings"] == []
    again = m.import_path(src, layout="pme")
    assert (again["imported"], again["skipped"]) == (0, 4)


def test_layout_detection_and_errors(tmp_path, embedder, clock):
    from memstrata.features.transfer_formats import detect_layout

    (tmp_path / "v" / "hot").mkdir(parents=True)
    (tmp_path / "p" / "projects").mkdir(parents=True)
    (tmp_path / "x.jsonl").write_text("")
    (tmp_path / "x.txt").write_text("")
    assert detect_layout(tmp_path / "v") == "viking"
    assert detect_layout(tmp_path / "p") == "pme"
    assert detect_layout(tmp_path / "x.jsonl") == "jsonl"
    m = Memory(tmp_path / "m", embedder=embedder)
    with pytest.raises(InvalidInput):
        m.import_path(tmp_path / "x.txt")
    with pytest.raises(InvalidInput):
        m.import_path(tmp_path / "v", layout="nonsense")


# -- shared space ---------------------------------------------------------------------------------
def test_two_agents_and_a_shared_root(tmp_path, embedder, clock):
    shared = tmp_path / "shared"
    alice = _mem(tmp_path / "alice", embedder)
    bob = _mem(tmp_path / "bob", embedder)
    alice.config_set("shared_root", str(shared))
    alice.config_set("agent_name", "alice")
    bob.config_set("shared_root", str(shared))
    alice.write("The staging database password rotates every Monday; ask ops for access.",
                title="Staging access", category="ops", tags=["staging"])  # private: not shared
    result = alice.write("Release freeze starts on December 15th; only hotfixes after that.",
                         title="Release freeze", category="decisions", tags=["release"], share=True)
    data = result.to_dict()
    assert data["action"] == "created" and data["shared"]["agent"] == "alice"
    copy = Memory(shared, embedder=embedder).read(result.id, count_access=False)
    assert copy.agent == "alice" and copy.category == "decisions" and "December 15th" in copy.body
    assert "agent: alice" in (shared / copy.path).read_text(encoding="utf-8")
    assert len(Memory(shared, embedder=embedder).list()) == 1  # the private entry stayed private

    # Bob does not see it in his own root, and does with include_shared.
    mine = bob.recall("when does the release freeze start?")
    assert result.id not in mine.ids
    found = bob.recall("when does the release freeze start?", include_shared=True)
    assert found.ids[:1] == [result.id]
    hit = found.to_dict()["results"][0]
    assert hit["shared"] is True and hit["agent"] == "alice"

    # What Alice shares, Bob's autoload shows (marked as shared, with Alice's name).
    loaded = bob.autoload(context="release planning", include_shared=True).to_dict()
    shared_items = [i for i in loaded["entries"] if i["id"] == result.id]
    assert shared_items and shared_items[0]["shared"] is True and shared_items[0]["agent"] == "alice"
    assert "shared by alice" in loaded["markdown"]
    assert result.id not in [i["id"] for i in bob.autoload(context="release planning",
                                                            include_shared=False).to_dict()["entries"]]

    # Sharing again is idempotent; a changed entry updates the shared copy.
    assert alice.share(result.id)["action"] == "unchanged"
    alice.update(result.id, "Release freeze starts on December 18th; only hotfixes after that.")
    assert alice.share(result.id)["action"] == "updated"
    assert "18th" in Memory(shared, embedder=embedder).read(result.id, count_access=False).body


def test_shared_root_from_environment_and_agent_name(tmp_path, embedder, clock, monkeypatch):
    m = _mem(tmp_path / "carol", embedder)
    with pytest.raises(InvalidInput):
        m.write("x", title="x", share=True)  # no shared root anywhere: refused before writing
    assert m.list() == []
    m.write("Lunch is at noon on Fridays.", title="Lunch")
    answer = m.recall("when is lunch?", include_shared=True)  # nothing to include: said, not an error
    assert any("no shared root" in note for note in answer.notes)
    m.delete(m.list()[0].id)
    monkeypatch.setenv("MEMSTRATA_SHARED", str(tmp_path / "team"))
    r = m.write("Lunch is at noon on Fridays.", title="Lunch", share=True)
    shared = Memory(tmp_path / "team", embedder=embedder)
    assert shared.read(r.id, count_access=False).agent == "carol"  # the root folder's name
    monkeypatch.setenv("MEMSTRATA_AGENT", "carol-bot")
    assert m.agent_name == "carol-bot"
    m.config_set("shared_root", str(m.root))
    with pytest.raises(InvalidInput):
        m.share(r.id)


# -- daily notes ----------------------------------------------------------------------------------
def test_daily_appends_one_entry_per_day(tmp_path, embedder, clock, monkeypatch):
    m = _mem(tmp_path / "m", embedder)
    first = m.daily("Fixed the login bug")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T16:45:00Z")
    second = m.daily("Next: rate limits")
    assert first.id == second.id and first.path == "daily/2026-11-30.md" and second.action == "appended"
    body = m.read(first.id, count_access=False).body
    assert body.index("## 10:00") < body.index("Fixed the login bug") < body.index("## 16:45") < body.index("Next:")
    assert second.version == 1 and "Version history" not in (m.root / first.path).read_text(encoding="utf-8")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-12-01T08:00:00Z")
    third = m.daily("Fixed the login bug")  # the same words on another day: a new day's note, not a duplicate
    assert third.path == "daily/2026-12-01.md" and third.id != first.id and third.action == "created"
    assert [e.path for e in m.list(category="daily")] == ["daily/2026-11-30.md", "daily/2026-12-01.md"]
    with pytest.raises(InvalidInput):
        m.daily("   ")


def test_cli_daily_export_and_import(tmp_path, embedder, clock, capsys):
    from memstrata.cli.app import main

    root = tmp_path / "cli"
    assert main(["init", "--root", str(root)]) == 0
    capsys.readouterr()
    assert main(["daily", "from the command line", "--root", str(root), "--json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["path"] == "daily/2026-11-30.md"
    target = tmp_path / "out.jsonl"
    assert main(["export", "--jsonl", str(target), "--root", str(root)]) == 0
    assert "exported 1 entry to " in capsys.readouterr().out
    record = json.loads(target.read_text(encoding="utf-8").splitlines()[0])
    assert record["category"] == "daily" and "from the command line" in record["body"]
    assert main(["import", str(target), "--root", str(tmp_path / "other"), "--json"]) == 3  # not a tree yet
    assert main(["init", "--root", str(tmp_path / "other")]) == 0
    capsys.readouterr()
    assert main(["import", str(target), "--root", str(tmp_path / "other"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["imported"] == 1


def test_cli_import_of_a_tree(tmp_path, embedder, clock, capsys):
    """`mem import DIR` detects the layout (the command itself belongs to the recall module)."""
    from memstrata.cli.app import main

    _write(tmp_path / "v" / "hot" / "a.md", "---\nid: mem_1\ntitle: Hot one\nimportance: high\n---\n\nbody\n")
    _write(tmp_path / "v" / "meetings" / "m.md", "# Kickoff\n\nnotes\n")
    assert main(["init", "--root", str(tmp_path / "m")]) == 0
    capsys.readouterr()
    assert main(["import", str(tmp_path / "v"), "--root", str(tmp_path / "m"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["layout"], result["imported"]) == ("viking", 2)
    m = Memory(tmp_path / "m", embedder=embedder)
    assert {(e.title, e.category, e.tier) for e in m.list()} == {("Hot one", "general", "hot"),
                                                                 ("Kickoff", "meetings", "hot")}


def test_agents_share_at_the_same_moment(tmp_path, embedder, clock):
    """Writers on the shared root take its lock: two agents sharing at once lose nothing."""
    import threading

    shared = tmp_path / "shared"
    topics = {
        "ann": ["Kafka retention is seven days on the events cluster.", "Ann reviews every schema change.",
                "The mobile app ships on Thursdays.", "Grafana dashboards live in the ops folder."],
        "bo": ["Payments use idempotency keys on every POST.", "Bo owns the search relevance tuning.",
               "Staging is rebuilt nightly at 02:00.", "The style guide forbids default exports."],
    }
    agents = {}
    for name in topics:
        agents[name] = _mem(tmp_path / name, embedder)
        agents[name].config_set("shared_root", str(shared))
        agents[name].config_set("agent_name", name)
    errors = []

    def run(name):
        try:
            for n, text in enumerate(topics[name]):
                agents[name].write(text, title=f"{name} note {n}", category="team", share=True, force=True)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(name,)) for name in topics]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    team = Memory(shared, embedder=embedder)
    entries = team.list()
    assert len(entries) == 8 and sorted({e.agent for e in entries}) == ["ann", "bo"]
    index = (shared / "team" / "INDEX.md").read_text(encoding="utf-8")
    assert all(e.id in index for e in entries)
    assert team.stats()["unreadable"] == []


def test_the_author_of_a_shared_version_is_who_wrote_it(tmp_path, embedder, clock):
    """When agent B's conflicting share replaces agent A's shared entry, the entry says B wrote the
    current version and the version history says who wrote each."""
    shared = tmp_path / "shared"
    alice, bob = _mem(tmp_path / "alice", embedder), _mem(tmp_path / "bob", embedder)
    for m, name in ((alice, "alice"), (bob, "bob")):
        m.config_set("shared_root", str(shared))
        m.config_set("agent_name", name)
    first = alice.write("The release freeze starts on December 15th.", title="Release freeze", category="decisions",
                        share=True)
    bob.write("The release freeze moved to December 18th.", title="Release freeze", category="decisions",
              share=True)
    team = Memory(shared, embedder=embedder)
    (current,) = [e for e in team.list() if e.category == "decisions"]
    assert current.id == first.id and current.agent == "bob"
    assert "18th" in team.read(current.id, count_access=False).body
    lines = team.history(current.id)
    assert lines[-1]["summary"].endswith("by bob)") and lines[-1]["current"]
