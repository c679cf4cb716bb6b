"""Write-time classification: duplicate, conflict (the same subject: a new version), near-duplicate, new.

Pure: entries and similarities in, a decision out (no model, no files)."""
from __future__ import annotations

import pytest

import dataclasses

from memstrata.scoring.conflicts import (Candidate, classify_write, normalise_tags, normalise_text, pair_dice,
                                         refines, title_key, two_of_a_kind)
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry

S = Settings()  # near_duplicate_threshold 0.92, conflict_similarity 0.45, conflict_title_similarity 0.6


@pytest.mark.parametrize("raw,expected", [
    ("**Hello**   World!!", "hello world"),
    ("  User  prefers\n\n*dark* mode.", "user prefers dark mode"),
    ("snake_case stays", "snake_case stays"),
    ("ＡＢＣ。", "abc"),
    ("`code` and ~~gone~~...", "code and gone"),
    ("Straße", "strasse"),
    ("", ""),
    (None, ""),
])
def test_normalise_text(raw, expected):
    assert normalise_text(raw) == expected


def test_normalise_tags():
    assert normalise_tags(["#UI", "ui ", "Prefs", ""]) == frozenset({"ui", "prefs"})


def test_dark_mode_then_light_mode_same_title_is_conflict():
    old = Entry(id="pref1", title="UI theme preference", body="User prefers dark mode.",
                tags=["ui", "preferences"])
    d = classify_write("UI Theme Preference", "User prefers light mode.", ["ui", "preferences"],
                       [(old, 0.88)], S)
    assert d.kind == "conflict" and d.target_id == "pref1"
    assert d.similarity == pytest.approx(0.88)
    assert "\n" not in d.reason


def test_duplicate_ignores_formatting():
    old = Entry(id="a", title="Deploy", body="Run **make deploy** on  main.")
    d = classify_write("Deploying", "run make deploy on main", [], [(old, 0.99)], S)
    assert (d.kind, d.target_id) == ("duplicate", "a")


def test_same_tags_and_similar_subject_is_conflict():
    old = Entry(id="a", title="Database choice", body="We use Postgres 15.", tags=["db", "infra"])
    d = classify_write("Which database", "We use MySQL 8.", ["#DB", "infra"], [(old, 0.8)], S)
    assert (d.kind, d.target_id) == ("conflict", "a")
    assert d.rule == "tags"
    low = classify_write("Which database", "We use MySQL 8.", ["db", "infra"], [(old, 0.3)], S)
    assert low.kind == "new"
    other_tags = classify_write("Which database", "We use MySQL 8.", ["db"], [(old, 0.8)], S)
    assert other_tags.kind == "new"


def test_empty_tags_never_conflict_by_tags():
    old = Entry(id="a", title="A", body="one")
    assert classify_write("B", "two", [], [(old, 0.9)], S).kind == "new"


def test_near_duplicate():
    old = Entry(id="a", title="Build steps", body="Run make, then make test.")
    d = classify_write("How to build", "Run make and then make test.", [], [(old, 0.95)], S)
    assert (d.kind, d.target_id) == ("near_duplicate", "a")


def test_precedence_and_best_candidate():
    dup = Entry(id="dup", title="X", body="same text")
    clash = Entry(id="clash", title="Y", body="other")
    d = classify_write("Y", "same text", [], [(clash, 0.99), (dup, 0.5)], S)
    assert d.kind == "duplicate" and d.target_id == "dup"
    a = Entry(id="a", title="Y", body="first")
    b = Entry(id="b", title="Y", body="second")
    d = classify_write("Y", "third", [], [(a, 0.6), (b, 0.7)], S)
    assert (d.kind, d.target_id) == ("conflict", "b")


def test_new_when_nothing_matches():
    d = classify_write("Fresh", "brand new", ["x"], [], S)
    assert (d.kind, d.target_id, d.similarity) == ("new", None, None)


def test_expired_candidates_are_ignored():
    old = Entry(id="a", title="Y", body="same", status="expired")
    assert classify_write("Y", "same", [], [(old, 1.0)], S).kind == "new"


# -- the same subject by its name: a new version however it is worded ----------------------------
@pytest.mark.parametrize("a,b", [
    ("Editor theme", "editor theme:"), ("Editor theme", "  Editor   Theme "), ("Editor theme", "**Editor theme**"),
    ("Editor theme", "Editor-theme"), ("Standup time", "Stand-up time"), ("Alice's role", "Alice\u2019s role"),
    ("编辑器主题", "编辑器 主题"), ("编辑器主题", "编辑器主题。"), ("ＡＰＩ style", "API style"),
])
def test_title_key_ignores_case_spacing_and_punctuation(a, b):
    assert title_key(a) == title_key(b) != ""


@pytest.mark.parametrize("a,b", [
    ("C# style", "C style"), ("C++ notes", "C notes"), ("Node 1.2 upgrade", "Node 12 upgrade"),
    ("Staging database", "Production database"), ("Editor theme", "Editor themes v2"),
])
def test_title_key_keeps_what_names_another_subject(a, b):
    assert title_key(a) != title_key(b)


def test_punctuation_only_title_has_no_key():
    assert title_key("???") == "" and title_key("") == "" and title_key(None) == ""


@pytest.mark.parametrize("sim", [0.05, 0.35, 0.57, 0.9, None])
def test_same_title_is_a_new_version_whatever_the_similarity(sim):
    old = Entry(id="t1", title="Editor theme", body="The user prefers dark mode (Dracula) in VS Code and in the terminal.")
    d = classify_write("Editor theme", "The user switched to light mode (Solarized Light) because of glare.",
                       [], [Candidate(old, sim)], S)
    assert (d.kind, d.target_id, d.rule, d.refines) == ("conflict", "t1", "title", False)


def test_a_similarity_threshold_never_removes_a_title_conflict():
    old = Entry(id="t1", title="Standup time", body="Standup is at 9:30.")
    for t in (0.0, 0.5, 0.99, 1.0):
        strict = dataclasses.replace(S, conflict_title_similarity=t, conflict_similarity=t)
        d = classify_write("Standup time", "Standup moved to 10:15 on Zoom.", [], [(old, 0.1)], strict)
        assert d.kind == "conflict"


def test_same_title_in_the_pool_of_another_category_is_not_asked():
    # the caller passes the category's entries only; an empty pool is a new entry
    assert classify_write("Editor theme", "GitHub Light in the docs site.", [], [], S).kind == "new"


def test_refinement_is_a_new_version_that_says_so():
    old = Entry(id="d", title="Deploy steps", body="Deploy with make deploy.")
    d = classify_write("Deploy steps", "Deploy with make deploy, then watch the error rate for ten minutes.",
                       [], [(old, 0.49)], S)
    assert (d.kind, d.rule, d.refines) == ("conflict", "title", True)
    assert refines("部署用 make deploy。", "部署用 make deploy，之后看十分钟错误率。")
    assert not refines("Standup is at 9:30.", "Standup moved to 10:15.")
    assert not refines("Deploy with make deploy and watch it.", "Deploy with make deploy.")  # says less


def test_an_alias_names_the_subject_too():
    old = Entry(id="n", title="PostgreSQL", body="Orders use PostgreSQL 16.")
    d = classify_write("postgres", "Orders moved to PostgreSQL 17.", [], [Candidate(old, 0.2, aliases=("Postgres", "PG"))], S)
    assert (d.kind, d.rule) == ("conflict", "alias")


def test_a_title_several_entries_share_needs_similarity():
    # imported turns, a vault's notes: the title is a kind of note, not one subject
    a = Entry(id="a", title="user", body="I bought a bike yesterday.")
    b = Entry(id="b", title="user", body="My sister lives in Lyon.")
    far = classify_write("user", "The train was late again.", [], [(a, 0.2), (b, 0.3)], S)
    assert far.kind == "new"
    near = classify_write("user", "My sister moved to Paris.", [], [(a, 0.2), (b, 0.7)], S)
    assert (near.kind, near.target_id) == ("conflict", "b")
    assert classify_write("user", "Anything", [], [(a, None), (b, None)], S).kind == "new"  # no model: cannot tell


def test_a_daily_note_is_never_replaced_by_a_write():
    day = Entry(id="day", title="2026-07-18", body="## 09:00\n\nStarted the migration.", category="daily")
    d = classify_write("2026-07-18", "Finished the migration.", [], [Candidate(day, 0.5, record=True)], S)
    assert d.kind == "new"


def test_another_title_same_tags_but_two_of_a_kind_stays_apart():
    staging = Entry(id="s", title="Staging database", body="Staging uses one PostgreSQL 14 instance, reset nightly.",
                    tags=["database"])
    d = classify_write("Production database", "Production runs PostgreSQL 16 with two read replicas.",
                       ["database"], [(staging, 0.56)], S)
    assert d.kind == "new"
    assert two_of_a_kind("Alice's role", "Alice leads payments.", "Jonas's role", "Jonas leads payments since May.")
    assert not two_of_a_kind("Standup time", "Standup is at 9:30.", "Daily standup", "The daily standup moved to 10:15.")
    billing = Entry(id="b", title="Billing database", body="Billing runs on PostgreSQL 15.", tags=["billing", "database"])
    d = classify_write("Billing DB choice", "Billing moved from PostgreSQL to CockroachDB.", ["database", "billing"],
                       [(billing, 0.53)], S)
    assert (d.kind, d.rule) == ("conflict", "tags")


def test_a_tag_set_several_entries_share_is_no_subject():
    a = Entry(id="a", title="Staging DB", body="Staging runs PostgreSQL 14.", tags=["database"])
    b = Entry(id="b", title="Billing DB", body="Billing runs PostgreSQL 15.", tags=["database"])
    d = classify_write("Orders storage", "Orders moved to PostgreSQL 16.", ["database"], [(a, 0.6), (b, 0.55)], S)
    assert d.kind == "new"


def test_mostly_chinese_text_is_not_judged_by_the_english_model():
    # the bundled model finds two Chinese notes on different things 0.8-0.99 alike
    old = Entry(id="z", title="编辑器主题", body="用户喜欢深色主题。")
    d = classify_write("界面颜色", "用户现在改用浅色主题了。", [], [(old, 0.99)], S)
    assert d.kind == "new"  # no near-duplicate: nothing would have been written
    tagged = Entry(id="t", title="测试环境数据库", body="测试环境用一台 PostgreSQL 14。", tags=["数据库"])
    d = classify_write("生产环境数据库", "生产环境的 PostgreSQL 16 有两个只读副本。", ["数据库"], [(tagged, 0.7)], S)
    assert d.kind == "new"
    same = Entry(id="s", title="偏好", body="用户偏好深色模式，在所有编辑器里都是。")
    d = classify_write("模式偏好", "用户偏好深色模式，所有编辑器里都是。", [], [(same, 0.97)], S)
    assert (d.kind, d.target_id) == ("near_duplicate", "s")
    assert pair_dice("用户偏好深色模式", "用户偏好深色模式") == 1.0


def test_near_duplicates_must_agree_on_numbers():
    old = Entry(id="a", title="Standup", body="The standup is at 9:30 every day.")
    d = classify_write("Daily meeting", "The standup is at 9:45 every day.", [], [(old, 0.97)], S)
    assert d.kind == "new"
