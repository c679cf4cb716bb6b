"""A captured session's body read turn by turn (storage/turns.py, docs/capture.md)."""
from datetime import datetime, timezone

from memstrata.storage import turns

BODY = (
    "Notes before the first turn.\n\n"
    "### 2026-12-05T08:14:49.123Z · user\n"
    "Can you fix the login redirect?\n"
    "\\### 2026-12-05T08:15:00Z · assistant\n"
    "### not a turn heading\n\n"
    "### 2026-12-05T08:15:02.456+01:00 · assistant\n"
    "The loop comes from `next=`.\n"
    "→ Edit src/auth.py\n\n\n"
    "### 2026-12-05T08:16:10Z · user\n"
    "\n"
    "### 2026-12-05T08:17:00 · assistant\n"
    "Done.\n"
)


def test_turns_are_the_heading_lines_and_the_text_under_them():
    preamble, found = turns.parse(BODY)
    assert preamble == "Notes before the first turn."
    assert [(t.number, t.timestamp, t.role) for t in found] == [
        (1, "2026-12-05T08:14:49.123Z", "user"), (2, "2026-12-05T08:15:02.456+01:00", "assistant"),
        (3, "2026-12-05T08:16:10Z", "user"), (4, "2026-12-05T08:17:00", "assistant")]
    # an escaped heading line is text (given back unescaped); `### anything else` is text too
    assert found[0].text == ("Can you fix the login redirect?\n### 2026-12-05T08:15:00Z · assistant\n"
                             "### not a turn heading")
    assert found[1].text == "The loop comes from `next=`.\n→ Edit src/auth.py"
    assert found[2].text == ""  # a turn with no text stays a turn: the numbers are the file's
    assert turns.block(BODY, found[1]) == ("### 2026-12-05T08:15:02.456+01:00 · assistant\n"
                                           "The loop comes from `next=`.\n→ Edit src/auth.py")


def test_a_turn_time_is_read_with_its_zone_or_as_utc():
    _, found = turns.parse(BODY)
    assert found[0].when == datetime(2026, 12, 5, 8, 14, 49, 123000, tzinfo=timezone.utc)
    assert found[1].when == datetime(2026, 12, 5, 7, 15, 2, 456000, tzinfo=timezone.utc)
    assert found[3].when == datetime(2026, 12, 5, 8, 17, tzinfo=timezone.utc)
    assert turns.parse("### yesterday · user\nhi\n")[1][0].when is None


def test_around_picks_the_turn_and_its_neighbours_within_the_session():
    assert [t.number for t in turns.around(BODY, 2, 1)] == [1, 2, 3]
    assert [t.number for t in turns.around(BODY, 1, 2)] == [1, 2, 3]
    assert [t.number for t in turns.around(BODY, 4, 0)] == [4]
    assert turns.around(BODY, 5, 1) == [] and turns.around(BODY, 0, 1) == []
    assert turns.parse("no turns here\n") == ("no turns here", [])
