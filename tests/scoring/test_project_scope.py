"""The session start's project (scoring/project_scope.py) and current task (scoring/current_task.py): pure."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from memstrata.retrieval.prompts import has_topic
from memstrata.scoring import current_task, project_scope as ps
from memstrata.scoring.promotion import select
from memstrata.scoring.start_order import in_order
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry

NOW = datetime(2026, 6, 1, 9, 0, tzinfo=timezone.utc)
S = Settings()
KNOWN = ps.known_projects(["projects/alpha", "projects/beta/api", "sessions/gamma", "preferences", "runbooks"],
                          S.project_folders, S.capture_category)
ALPHA = ps.scope_of(["alpha"], True, KNOWN)


def note(name, category, days=1, tags=(), **extra):
    at = NOW - timedelta(days=days)
    return Entry(id=name, title=name, path=f"{category}/{name}.md", category=category, created=at, updated=at,
                 tags=list(tags), extra=dict(extra))


def session(name, project, days, *ids, turns=""):
    e = note(name, f"sessions/{project}", days, tags=("session", "claude-code", project), kind="session",
             project=project, session=ids[0] if ids else name)
    if len(ids) > 1:
        e.extra["sessions"] = list(ids)
    e.body = turns
    return e


def test_known_projects_are_the_project_folders_and_the_captured_ones():
    assert KNOWN == {"alpha", "beta", "gamma"}
    assert ps.known_projects(["work/clients/acme/notes"], "clients", "sessions") == {"acme"}
    assert ps.known_projects(["projects"], "projects", "sessions") == frozenset()


def test_what_belongs_to_the_sessions_project():
    assert ps.membership(note("a", "projects/alpha"), ALPHA) == ps.OWN
    assert ps.membership(note("b", "alpha/decisions"), ALPHA) == ps.OWN          # any level naming it
    assert ps.membership(note("t", "decisions", tags=("Alpha",)), ALPHA) == ps.OWN  # a tag, slugified
    assert ps.membership(note("o", "projects/beta/api"), ALPHA) == ps.OTHER
    assert ps.membership(note("g", "notes", tags=("gamma",)), ALPHA) == ps.OTHER  # a project only sessions name
    assert ps.membership(note("p", "preferences"), ALPHA) == ps.GENERAL
    assert ps.membership(note("r", "runbooks", tags=("runbook", "db")), ALPHA) == ps.GENERAL
    # the frontmatter's `project:` decides over the folder
    assert ps.membership(note("k", "projects/beta", project="alpha"), ALPHA) == ps.OWN
    assert ps.membership(note("k2", "preferences", project=["beta", "gamma"]), ALPHA) == ps.OTHER
    assert ps.membership(session("s", "alpha", 1), ALPHA) == ps.SESSION
    assert ps.membership(session("s", "beta", 1), None) == ps.SESSION
    assert ps.membership(note("o", "projects/beta/api"), None) == ps.GENERAL     # no project: nothing is another's


def test_a_folder_is_a_project_when_it_is_a_repository_or_the_tree_names_it():
    assert ps.scope_of(["alpha"], False, KNOWN).names == {"alpha"}     # no repository, but the tree knows it
    assert ps.scope_of(["newapp"], True, KNOWN).names == {"newapp"}    # a repository nobody wrote about yet
    assert ps.scope_of(["dev"], False, KNOWN) is None                  # the home folder: no project
    assert ps.scope_of([], True, KNOWN) is None


def test_the_start_lists_its_project_first_and_no_other_projects_notes_nor_sessions():
    entries = [note("alpha-db", "projects/alpha", 3), note("beta-db", "projects/beta", 0), note("theme", "preferences", 3),
               session("yesterday", "alpha", 0)]
    stream = sorted(entries, key=lambda e: e.last_touched, reverse=True)

    def order(scope, everything=False):
        return [e.id for e, _ in in_order([], stream, NOW, S, 1, factor=lambda e: ps.start_factor(
            e, scope, S.autoload_project_boost, everything), factor_max=S.autoload_project_boost)]

    assert order(ALPHA) == ["alpha-db", "theme"]  # written together: its own project first (x2)
    assert order(None) == ["beta-db", "theme", "alpha-db"]  # no project: every note by its score (a tie: the path)
    assert set(order(ALPHA, everything=True)) == {e.id for e in entries}  # the fallback: everything


def test_the_last_session_of_the_project_is_its_latest_but_never_the_one_starting():
    old = session("old", "alpha", 9, "s-old")
    last = session("last", "alpha", 2, "s-last")
    beta = session("beta", "beta", 0, "s-beta")
    resumed = session("resumed", "alpha", 1, "s-first", "s-now")  # `claude --resume`: the new id added
    assert current_task.last_session([old, last, beta], ALPHA).id == "last"
    assert current_task.last_session([old, last, beta, resumed], ALPHA, current="s-now").id == "last"
    assert current_task.last_session([old, last, beta, resumed], ALPHA, current="s-other").id == "resumed"
    assert current_task.last_session([beta, note("n", "projects/alpha")], ALPHA) is None
    assert current_task.last_session([old, last], None) is None


def test_the_task_is_the_last_prompts_that_name_a_topic():
    body = "\n\n".join([
        "### 2026-06-01T10:00:00.000Z · user\nwhich database does alpha use for orders?",
        "### 2026-06-01T10:00:20.000Z · assistant\nPostgreSQL 16.",
        "### 2026-06-01T10:05:00.000Z · user\nthe login   session\nexpires too early",
        "### 2026-06-01T10:06:00.000Z · user\nwhich database does alpha use for orders?",
        "### 2026-06-01T10:07:00.000Z · user\nthanks, continue"])
    assert current_task.task_prompts(body, 3, has_topic) == [
        "which database does alpha use for orders?", "the login session expires too early"]
    assert current_task.task_prompts(body, 1, has_topic) == ["which database does alpha use for orders?"]
    assert current_task.task_prompts(body, 0, has_topic) == []


def test_a_captured_session_is_never_promoted():
    """A prompt asked again matches its own earlier turn before any note: the session would come back
    whole and crowd out the note the task needs."""
    old = NOW - timedelta(days=200)
    runbook = Entry(id="rb", title="Failover", status="archived", created=old, updated=old)
    turn = session("ses-1", "alpha", 200)
    turn.status = "archived"
    picked = select([(turn, 0.99), (runbook, 0.55)], NOW, S, relevance={"ses-1": 0.9, "rb": 0.2})
    assert [p.entry_id for p in picked] == ["rb"]


def test_the_most_a_start_factor_gives_is_the_boost_only_where_a_project_is_known():
    """Without a project (a session started outside any repository) no entry is a project's own, so
    the session start's bound is not raised by the boost (it was: twice as loose, every note read)."""
    scope = ps.Scope(names=frozenset({"shop"}), known=frozenset({"shop", "blog"}))
    assert ps.start_factor_max(None, 2.0) == 1.0
    assert ps.start_factor_max(scope, 2.0, everything=True) == 1.0
    assert ps.start_factor_max(scope, 2.0) == 2.0
    general = Entry(id="g", title="Commit style", path="preferences/commit-style.md")
    assert ps.start_factor(general, None, 2.0) <= ps.start_factor_max(None, 2.0)
