"""The same subject is one entry: a reworded same-title write becomes its next version, and what a
version replaced is never recalled or injected as current (real model, real LanceDB)."""
import json

import pytest

from memstrata import Memory

DARK = "The user prefers dark mode (Dracula) in VS Code and in the terminal."
LIGHT = "The user switched to light mode (Solarized Light) because of glare in the new office."


@pytest.fixture
def mem(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-06-01T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    return m


def _theme_tree(mem, monkeypatch):
    """The issue's pair among other preferences: Dracula first, Solarized Light a month later."""
    mem.write("The user is vegetarian and likes Thai food for team lunches.", title="Lunch", category="preferences")
    mem.write("The user's terminal font is JetBrains Mono at 13 pt.", title="Terminal font", category="preferences")
    first = mem.write(DARK, title="Editor theme", category="preferences")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-07-01T09:00:00Z")
    second = mem.write(LIGHT, title="Editor theme", category="preferences")
    return first, second


def test_a_reworded_change_of_mind_is_the_next_version(mem, monkeypatch):
    first, second = _theme_tree(mem, monkeypatch)
    assert (second.action, second.id, second.version, second.previous_version, second.rule, second.refines) == (
        "conflict", first.id, 2, 1, "title", False)
    assert second.message == 'conflict detected with "Editor theme" (same title): both versions kept, current is v2'
    assert not (mem.root / "preferences" / "editor-theme-2.md").exists()
    assert [e.title for e in mem.list(category="preferences")].count("Editor theme") == 1
    assert [(r["version"], r["current"]) for r in mem.history(first.id)] == [(1, False), (2, True)]
    assert mem.history_show(first.id, 1) == DARK + "\n"


def test_recall_and_autoload_never_present_the_replaced_text(mem, monkeypatch):
    first, _ = _theme_tree(mem, monkeypatch)
    asked = mem.recall("which colour theme does the user want in VS Code?", count_access=False)
    assert asked.results[0].id == first.id and "Solarized Light" in asked.results[0].snippet
    # a question about the old fact finds the entry by what it said, and answers with what it says now
    for strategy in ("auto", "text", "grep"):
        old = mem.recall("Dracula dark mode", strategy=strategy, min_relevance=0, count_access=False)
        assert first.id in [h.id for h in old.results], strategy
        assert all("Dracula" not in h.snippet for h in old.results), strategy
    for block in (mem.autoload("set up my VS Code theme, dark or light?", budget=400).markdown(),
                  mem.autoload(budget=400).markdown()):  # a prompt's block and the session start's
        assert "Solarized Light" in block and "Dracula" not in block
    # reverting makes v1's text current again (as v3); then it is the one shown
    mem.revert(first.id, to=1)
    back = mem.recall("which colour theme does the user want in VS Code?", count_access=False)
    assert back.results[0].id == first.id and "Dracula" in back.results[0].snippet
    assert "Solarized" not in mem.autoload(budget=400).markdown()


def test_other_categories_and_other_subjects_stay_separate(mem):
    theme = mem.write(DARK, title="Editor theme", category="preferences")
    docs = mem.write("The docs website shows code blocks in the GitHub Light theme.", title="Editor theme",
                     category="projects/website")
    lunch = mem.write("The user is vegetarian and likes Thai food.", title="Lunch", category="preferences")
    staging = mem.write("Staging uses one PostgreSQL 14 instance, reset every night.", title="Staging database",
                        category="projects", tags=["database"])
    prod = mem.write("Production runs PostgreSQL 16 with two read replicas.", title="Production database",
                     category="projects", tags=["database"])
    assert [r.action for r in (theme, docs, lunch, staging, prod)] == ["created"] * 5
    assert len({r.id for r in (theme, docs, lunch, staging, prod)}) == 5


def test_another_title_with_the_same_tags_and_subject_is_a_version(mem):
    first = mem.write("The billing service runs on PostgreSQL 15 in eu-west-1.", title="Billing database",
                      category="decisions", tags=["billing", "database"])
    second = mem.write("Billing moved from PostgreSQL to CockroachDB in March for multi-region writes.",
                       title="Billing DB choice", category="decisions", tags=["database", "billing"])
    assert (second.action, second.id, second.rule) == ("conflict", first.id, "tags")
    assert mem.read(first.id, count_access=False).title == "Billing database"  # the subject keeps its name


def test_a_refinement_is_a_version_that_says_it_adds(mem):
    first = mem.write("Deploy with make deploy.", title="Deploy steps", category="projects")
    more = mem.write("Deploy with make deploy, then watch the error rate in Grafana for ten minutes.",
                     title="deploy steps", category="projects")
    assert (more.action, more.id, more.refines) == ("conflict", first.id, True)
    assert more.message.startswith('new version of "Deploy steps" (same title; it adds to v1)')
    again = mem.write("Deploy with make deploy.", title="Deploy steps", category="projects")
    assert again.action == "conflict" and again.version == 3  # v1's text again is a change from v2: kept


def test_an_exact_duplicate_still_writes_nothing(mem):
    first = mem.write(DARK, title="Editor theme", category="preferences")
    again = mem.write("the user prefers **dark mode** (Dracula) in VS Code and in the terminal",
                      title="Editor theme", category="preferences")
    assert (again.action, again.id, again.version) == ("duplicate", first.id, 1)


def test_import_keeps_rows_that_share_a_title(mem, tmp_path):
    rows = ["I bought a bike yesterday.", "My sister lives in Lyon.", "The train was late again.",
            "We had pizza for dinner.", "I start the new job on Monday."]
    source = tmp_path / "turns.jsonl"
    source.write_text("".join(json.dumps({"title": "user", "body": b, "category": "chat",
                                          "created": f"2026-05-0{n + 1}T10:00:00Z"}) + "\n"
                              for n, b in enumerate(rows)), encoding="utf-8")
    report = mem.import_path(source)
    assert report["imported"] == 5 and len(mem.list(category="chat")) == 5  # rows are records, never folded
    # the title names a kind of note there: a write with it is a version only of the one it is most like
    other = mem.write("I adopted a cat called Miso.", title="user", category="chat")
    assert other.action == "created" and len(mem.list(category="chat")) == 6


def test_a_daily_note_is_never_replaced_by_a_write(mem):
    day = mem.daily("Started the orders migration.", day="2026-06-01")
    wrote = mem.write("Finished the orders migration.", title="2026-06-01", category="daily")
    assert wrote.action == "created" and wrote.id != day.id
    assert "Started the orders migration." in mem.read(day.id, count_access=False).body


def test_update_to_a_title_another_entry_has_warns_and_doctor_lists_shared_titles(mem):
    mem.write(DARK, title="Editor theme", category="preferences")
    other = mem.write("The user's terminal font is JetBrains Mono.", title="Terminal font", category="preferences")
    renamed = mem.update(other.id, title="editor theme")
    assert renamed.action == "updated" and any("has this title too" in w for w in renamed.warnings)
    report = mem.doctor()
    shared = [f for f in report.findings if f.kind == "shared_title"]
    assert len(shared) == 1 and shared[0].notice and "2 entries of preferences" in shared[0].detail
    assert report.healthy  # a notice, no damage
    # an earlier release's split pair (written here with --force) is reported the same way
    mem.write(LIGHT, title="Lunch", category="preferences")
    mem.write("Thai food.", title="Lunch", category="preferences", force=True)
    assert len([f for f in mem.doctor().findings if f.kind == "shared_title"]) == 2


def test_import_builtin_keeps_sections_that_share_a_heading(mem, tmp_path):
    source = tmp_path / "CLAUDE.md"
    source.write_text("# Project\n\n## Rules\n\nUse tabs in Go code.\n\n## Build\n\nRun make.\n\n"
                      "## Rules\n\nNever force-push to main.\n", encoding="utf-8")
    report = mem.import_builtin(source)
    assert len(report["created"]) == 3 and not report["updated"]
    bodies = sorted(mem.read(i, count_access=False).body.strip() for i in report["created"])
    assert bodies == ["Never force-push to main.", "Run make.", "Use tabs in Go code."]
    # the title is shared there: a later write with it needs to be like one of them to be its version
    mine = mem.write("The office plants are watered on Mondays.", title="Rules", category=report["category"])
    assert mine.action == "created"


def test_another_title_leaving_the_value_an_entry_states_is_its_version(mem):
    """Rule "departed": no tags, another title, the write says the entry's value was left."""
    mem.write("The user is vegetarian and likes Thai food for team lunches.", title="Lunch", category="preferences")
    mem.write("The user's terminal font is JetBrains Mono at 13 pt.", title="Terminal font", category="preferences")
    first = mem.write("The user works in iTerm2.", title="Terminal emulator", category="preferences")
    second = mem.write("The user moved from iTerm2 to WezTerm for its Lua config.", title="Terminal app",
                       category="preferences")
    assert (second.action, second.id, second.version, second.rule) == ("conflict", first.id, 2, "departed")
    assert second.message == ('conflict detected with "Terminal emulator" (it leaves iTerm2, which v1 said): '
                              'both versions kept, current is v2')
    now = mem.read(first.id, count_access=False)
    assert (now.title, now.body.strip()) == ("Terminal emulator", "The user moved from iTerm2 to WezTerm for its Lua config.")
    assert mem.history_show(first.id, 1).strip() == "The user works in iTerm2."
    assert len(mem.list(category="preferences")) == 3
    # another subject leaving a value an entry states stays apart: the CDN is not the primary cloud
    cloud = mem.write("Workloads run on AWS in eu-central-1.", title="Primary cloud", category="decisions")
    cdn = mem.write("We moved the CDN from AWS to Cloudflare.", title="CDN", category="decisions")
    assert cdn.action == "created" and cdn.id != cloud.id
    # the same tag set and a left value: a version even at a similarity below conflict_similarity
    hosting = mem.write("Everything runs on AWS in eu-central-1.", title="Hosting", category="infra",
                        tags=["infra", "hosting"])
    moved = mem.write("We moved all workloads from AWS to Hetzner Cloud to save costs.", title="Cloud provider",
                      category="infra", tags=["infra", "hosting"])
    assert (moved.action, moved.id, moved.rule) == ("conflict", hosting.id, "tags")
    assert moved.similarity < mem.settings.conflict_similarity and "it leaves AWS" in moved.message
