"""A text that repeats what an entry said before its current version (scoring.superseded), decided on term sets."""
from __future__ import annotations

from memstrata.features.replaced_text import terms_of
from memstrata.scoring.superseded import Replaced, repeated, repeats, replaced

OLD = "The user prefers dark mode (Dracula) in VS Code and in the terminal."
NEW = "The user switched to light mode (Solarized Light) because of glare in the new office."


def _version(old=OLD, new=NEW, entry_id="theme") -> Replaced:
    record = replaced(entry_id, 1, terms_of(old), terms_of(new))
    assert record is not None
    return record


def test_a_quote_of_the_old_version_repeats_it():
    assert repeats(terms_of("According to the memory, " + OLD), _version())


def test_a_quote_of_the_current_version_does_not():
    assert not repeats(terms_of("We wrote this down earlier: " + NEW), _version())


def test_a_paraphrase_of_the_old_fact_repeats_it():
    assert repeats(terms_of("You like the Dracula dark theme, in VS Code and the terminal too."), _version())


def test_a_text_that_tells_the_change_is_not_stale():
    said = "The user dropped dark mode (Dracula) in VS Code and the terminal: light mode (Solarized Light) now, the new office has glare."
    assert not repeats(terms_of(said), _version())


def test_one_shared_word_on_another_subject_is_not_a_repeat():
    assert not repeats(terms_of("Ship the feature behind a dark launch flag first."), _version())
    assert not repeats(terms_of("Install VS Code on the build agents."), _version())


def test_a_version_that_only_added_detail_replaced_nothing():
    assert replaced("standup", 1, terms_of("Standup is at 9:30."),
                    terms_of("Standup is at 9:30 in the Aquarium room, 15 minutes, blockers first.")) is None


def test_a_changed_number_is_a_replaced_fact():
    version = _version("Daily standup is at 9:30 in the Aquarium room.", "Daily standup is at 10:15 online.")
    assert repeats(terms_of("Here is what we have: Daily standup is at 9:30 in the Aquarium room."), version)
    assert not repeats(terms_of("Here is what we have: Daily standup is at 10:15 online."), version)


def test_chinese_text_is_read_by_its_bigrams():
    version = _version("alpha 的测试环境部署在上海区域，数据库每天同步。", "alpha 的测试环境已迁移到北京区域，数据库每周日同步一次。")
    assert repeats(terms_of("根据记忆：alpha 的测试环境部署在上海区域，数据库每天同步。"), version)
    assert not repeats(terms_of("根据记忆：alpha 的测试环境已迁移到北京区域，数据库每周日同步一次。"), version)


def test_an_entry_never_repeats_its_own_old_version():
    version = _version()
    assert repeated(terms_of(OLD), [version], own_id="theme") is None
    assert repeated(terms_of(OLD), [version], own_id="other") == version
