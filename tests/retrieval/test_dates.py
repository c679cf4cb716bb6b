"""Relative dates resolved against the day a text was written (retrieval.dates, pure)."""
from datetime import date, datetime, timezone

from memstrata.retrieval import dates, lexical

MONDAY = date(2023, 5, 8)


def test_day_words_and_weekdays():
    assert dates.resolve("I went to a support group yesterday", MONDAY) == [(date(2023, 5, 7), "day")]
    assert dates.resolve("I ran a charity race last Saturday", MONDAY) == [(date(2023, 5, 6), "day")]
    # "last Monday" written on a Monday is a week back; "next Monday" a week ahead
    assert dates.resolve("last Monday", MONDAY) == [(date(2023, 5, 1), "day")]
    assert dates.resolve("next Monday", MONDAY) == [(date(2023, 5, 15), "day")]
    assert dates.resolve("this Friday", MONDAY) == [(date(2023, 5, 12), "day")]
    assert dates.resolve("the day before yesterday", MONDAY) == [(date(2023, 5, 6), "day")]
    assert dates.resolve("Tomorrow!", MONDAY) == [(date(2023, 5, 9), "day")]


def test_spans_keep_their_precision():
    assert dates.resolve("my school event last week", MONDAY) == [(date(2023, 5, 1), "month")]
    assert dates.resolve("camping next month", date(2023, 12, 20)) == [(date(2024, 1, 1), "month")]
    assert dates.resolve("made ten years ago", MONDAY) == [(date(2013, 1, 1), "year")]
    assert dates.resolve("two weeks ago", MONDAY) == [(date(2023, 4, 24), "month")]
    assert dates.resolve("in 3 days", MONDAY) == [(date(2023, 5, 11), "day")]
    assert dates.resolve("a couple of months ago", MONDAY) == [(date(2023, 3, 1), "month")]


def test_words_for_full_text():
    written = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert dates.words("Yesterday and last year, and yesterday again", written) == "7 May 2023 2022"
    assert dates.words("I like dogs", written) == ""
    assert dates.words("yesterday", None) == ""


def test_the_date_line_with_resolved_dates_is_not_the_entry():
    column = "Ana: I went yesterday\n8 May 2023 Monday 7 May 2023 April 2023 2022"
    assert lexical.entry_part(column, None) == "Ana: I went yesterday"


def test_time_questions_and_time_statements():
    assert dates.asks_time("When did Caroline go to the support group?")
    assert dates.asks_time("How long has she had her friends?")
    assert dates.asks_time("In what year did we migrate?")
    assert not dates.asks_time("What books has Tim read?")
    assert dates.states_time("We moved in May 2021")
    assert dates.states_time("I saw it last week")
    assert not dates.states_time("You may like it")  # "may" the verb is no month
    assert not dates.states_time("I like dogs")
