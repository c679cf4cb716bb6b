"""Write-time classification: duplicate, conflict, near-duplicate, new."""
from __future__ import annotations

import pytest

from memstrata.scoring.conflicts import classify_write, normalise_tags, normalise_text
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry

S = Settings()  # near_duplicate_threshold 0.92, conflict_similarity 0.75


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
    low = classify_write("Which database", "We use MySQL 8.", ["db", "infra"], [(old, 0.5)], S)
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
