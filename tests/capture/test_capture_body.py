"""The session body format and the merge that never writes a turn twice (pure)."""
from __future__ import annotations

from memstrata.capture import sessions
from memstrata.storage import session_body as body
from memstrata.storage.session_body import BodyTurn


def test_body_round_trips_and_escapes_lines_that_look_like_headings():
    turns = [BodyTurn("2026-11-20T09:01:00.000Z", "user", "How do I write a turn heading?"),
             BodyTurn("2026-11-20T09:01:05.000Z", "assistant",
                      "Like this:\n### 2026-01-01T00:00:00Z · user\nand escaped once more:\n\\### x · assistant")]
    text = body.render(turns, preamble="My own note about this session.")
    assert text.count("\n### ") == 2  # only the two real headings start a turn
    assert "\\### 2026-01-01T00:00:00Z · user" in text and "\\\\### x · assistant" in text
    preamble, back = body.parse(text)
    assert preamble == "My own note about this session." and back == turns


def test_merge_appends_new_turns_and_grows_a_reply_still_being_written():
    held = [BodyTurn("t1", "user", "Plan it"), BodyTurn("t2", "assistant", "Step one.")]
    read = [BodyTurn("t2", "assistant", "Step one.\n→ Edit: a.py\n\nStep two."), BodyTurn("t3", "user", "Go on")]
    merged = body.merge(held, read)
    assert [(t.key, t.text) for t in merged.turns] == [(("t1", "user"), "Plan it"),
                                                       (("t2", "assistant"), "Step one.\n→ Edit: a.py\n\nStep two."),
                                                       (("t3", "user"), "Go on")]
    assert (merged.added, merged.extended) == (1, 1)
    again = body.merge(merged.turns, read + held)
    assert (again.added, again.extended) == (0, 0) and again.turns == merged.turns


def test_merge_keeps_a_persons_edit_of_a_turn():
    held = [BodyTurn("t1", "user", "Plan the [redacted] rollout")]
    merged = body.merge(held, [BodyTurn("t1", "user", "Plan the secret rollout")])
    assert merged.turns[0].text == "Plan the [redacted] rollout" and merged.added == merged.extended == 0


def test_merge_by_occurrence_for_coarse_times():
    held = [BodyTurn("d1", "user", "a"), BodyTurn("d1", "assistant", "b")]
    read_all = held + [BodyTurn("d1", "user", "c")]
    merged = body.merge(held, read_all, unique=False)  # a read from the first line: two held, one new
    assert [t.text for t in merged.turns] == ["a", "b", "c"] and merged.added == 1
    tail = body.merge(held, [BodyTurn("d1", "user", "c")], unique=False, before=held)  # a read of the new lines only
    assert [t.text for t in tail.turns] == ["a", "b", "c"]


def test_parts_keep_their_turns_and_new_ones_fill_the_last_part_then_a_new_one():
    old = [[BodyTurn(f"t{i}", "user", "x" * 100) for i in range(3)]]
    turns = old[0] + [BodyTurn(f"n{i}", "assistant", "y" * 100) for i in range(40)]
    limit = sessions.FRONTMATTER_ROOM + 2000
    parts = sessions.split_parts(old, turns, limit)
    assert parts[0][:3] == old[0] and sum(len(p) for p in parts) == 43 and len(parts) >= 2
    assert all(sum(body.size(t) for t in p) <= 2000 for p in parts)


def test_session_ids_names_and_titles():
    assert sessions.base_id("claude-code", "abc") == sessions.base_id("claude-code", "abc") != sessions.base_id("codex", "abc")
    assert sessions.part_id("ses-1", 1) == "ses-1" and sessions.part_id("ses-1", 3) == "ses-1-3"
    assert sessions.file_name("2026-11-20T23:59:00-05:00", "codex", "7d0e5b1c-2222") == "2026-11-21-codex-7d0e5b1c.md"
    assert sessions.file_name("2026-11-20T09:00:00Z", "jsonl", "conv 26!", 2) == "2026-11-20-jsonl-conv26-part2.md"
    turns = [BodyTurn("t", "assistant", "hello"), BodyTurn("u", "user", "Fix   the\nlogin " + "z" * 100)]
    assert sessions.title("shop", turns).startswith("shop: Fix the login zzz") and len(sessions.title("shop", turns)) <= 86
