"""A text that repeats what an entry said before its current version (scoring.superseded), decided on term sets."""
from __future__ import annotations

from memstrata.features.replaced_text import grams_of, spoken, terms_of
from memstrata.scoring.conflicts import refines
from memstrata.scoring.superseded import Replaced, repeated, replaced
from memstrata.scoring.superseded import repeats as _repeats

OLD = "The user prefers dark mode (Dracula) in VS Code and in the terminal."
NEW = "The user switched to light mode (Solarized Light) because of glare in the new office."


def _version(old=OLD, new=NEW, entry_id="theme") -> Replaced:
    record = replaced(entry_id, 1, terms_of(old), terms_of(new), grams_of(old), refines(old, new))
    assert record is not None
    return record


def repeats(terms, version, text=None) -> bool:
    """scoring.superseded.repeats of a text given by its terms, its 3-grams read from `text`."""
    return _repeats(terms, version, grams_of(text) if text is not None else ())


def says(text: str, version: Replaced) -> bool:
    return repeats(terms_of(text), version, text)


def test_a_quote_of_the_old_version_repeats_it():
    assert says("According to the memory, " + OLD, _version())


def test_a_quote_of_the_current_version_does_not():
    assert not says("We wrote this down earlier: " + NEW, _version())


def test_a_paraphrase_of_the_old_fact_repeats_it():
    assert says("You like the Dracula dark theme, in VS Code and the terminal too.", _version())


def test_a_text_that_tells_the_change_is_not_stale():
    said = "The user dropped dark mode (Dracula) in VS Code and the terminal: light mode (Solarized Light) now, the new office has glare."
    assert not says(said, _version())


def test_one_shared_word_on_another_subject_is_not_a_repeat():
    assert not says("Ship the feature behind a dark launch flag first.", _version())
    assert not says("Install VS Code on the build agents.", _version())


def test_a_version_that_only_added_detail_replaced_nothing():
    assert replaced("standup", 1, terms_of("Standup is at 9:30."),
                    terms_of("Standup is at 9:30 in the Aquarium room, 15 minutes, blockers first.")) is None


def test_a_changed_number_is_a_replaced_fact():
    version = _version("Daily standup is at 9:30 in the Aquarium room.", "Daily standup is at 10:15 online.")
    assert says("Here is what we have: Daily standup is at 9:30 in the Aquarium room.", version)
    assert not says("Here is what we have: Daily standup is at 10:15 online.", version)


def test_chinese_text_is_read_by_its_bigrams():
    version = _version("alpha 的测试环境部署在上海区域，数据库每天同步。", "alpha 的测试环境已迁移到北京区域，数据库每周日同步一次。")
    assert says("根据记忆：alpha 的测试环境部署在上海区域，数据库每天同步。", version)
    assert not says("根据记忆：alpha 的测试环境已迁移到北京区域，数据库每周日同步一次。", version)


def test_an_entry_never_repeats_its_own_old_version():
    version = _version()
    assert repeated(terms_of(OLD), [version], own_id="theme", text_grams=grams_of(OLD)) is None
    assert repeated(terms_of(OLD), [version], own_id="other", text_grams=grams_of(OLD)) == version


def test_the_same_words_on_another_subject_are_no_repeat():
    """A new-user review: "Lena is on call this week" -> "Marek is on call this week"; a turn about
    Lena calling a vendor this week shares lena, call and week, but none of the old text's 3-grams."""
    version = _version("Lena is on call this week.", "Marek is on call this week.")
    assert says("According to the memory, Lena is on call this week.", version)
    assert not says("Lena will call the Stripe account manager this week about the duplicated invoice.", version)


def test_a_refinement_replaced_nothing_even_when_it_rewords_a_little():
    """"it adds to v1": the old words kept (nearly all) and more said; a turn quoting v1 is still true."""
    old = "The user prefers dark mode (Dracula) in VS Code and in the terminal."
    new = "Dark mode (Dracula) in VS Code and the terminal; the user also wants the minimap off."
    assert refines(old, new)
    assert replaced("theme", 1, terms_of(old), terms_of(new), grams_of(old), refines(old, new)) is None


def test_a_turns_headings_are_not_what_was_said():
    turn = "### 2026-05-10T10:00:20.000Z · assistant\nAccording to the memory, the deploy is on Friday."
    assert spoken(turn) == "According to the memory, the deploy is on Friday."
    assert "assistant" not in terms_of(spoken(turn))


def test_a_fact_moved_to_another_note_was_not_replaced():
    """An attacker's review: "Postgres runs on port 5432. Redis ... 6379." cut to the Redis part (the
    Postgres fact has a note of its own now): a turn saying Postgres runs on 5432 is still current."""
    old, new = "Postgres runs on port 5432. Redis cache runs on port 6379.", "Redis cache runs on port 6379."
    assert replaced("ports", 1, terms_of(old), terms_of(new), grams_of(old), refines(old, new)) is None
