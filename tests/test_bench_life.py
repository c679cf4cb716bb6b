"""bench/life.py's scenario and judge: markers name only superseded text, the plan asks only for what exists."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import life  # noqa: E402
import life_scenario  # noqa: E402


def test_each_marker_is_in_the_superseded_text_only():
    life.check_markers()  # raises when a marker is in another memory's text too
    keys = {m.key for m in life_scenario.MEMORIES}
    assert {c.key for c in life_scenario.CHANGES} <= keys


def test_the_plan_asks_only_about_memories_written_before_the_day():
    written = {m.key: m.day for m in life_scenario.MEMORIES}
    days = life_scenario.plan()
    assert len(days) > 80 and all(life_scenario.START.weekday() == 0 for _ in [0])
    for d in days:
        for p in d.prompts:
            assert all(written[k] < d.day for k in p.needs), (d.day, p.text)
    tasks = [p for d in days for p in d.prompts if p.recall_task]
    assert len(tasks) == len(life_scenario.RECALL_TASKS)


def test_the_judge_counts_a_superseded_marker_in_an_injected_block():
    one = life.Life(Path("/nonexistent"), cold_starts=False)
    one.key_of = {"a1": "theme"}
    one.stale = {"Dracula": "theme"}
    blocks = life.injected('<memory id="a1">\n### Editor theme\nDark mode (Dracula).\n</memory>\n'
                           '<memory id="b2">\nLight mode.\n</memory>')
    keys, stale = one.judge(blocks, 70)
    assert keys == ["theme", "?"] and stale == 1
