"""Recall over the notes only (`sessions=False`, `mem recall --no-sessions`): captured sessions' turns are
left out, by the index and by grep."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Memory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capture"))
from transcripts import Claude  # noqa: E402

RETENTION = "Raw events are kept 400 days; personal data columns are dropped after 30 days."
QUERY = "how long are raw events kept"


@pytest.fixture
def tree(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-06-10T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    note = m.write(RETENTION, title="Data retention", category="projects/beta")
    talk = Claude(session="5a1e0000-1111-4aaa-8bbb-000000000001", cwd=str(tmp_path))
    talk.user("how long do we keep raw events?", "2026-05-10T10:00:00.000Z")
    talk.reply("According to the memory, raw events are kept 400 days.", "2026-05-10T10:00:20.000Z")
    assert m.capture([talk.write(tmp_path)])["new_sessions"] == 1
    return m, note


@pytest.mark.parametrize("strategy", ["auto", "grep"])
def test_the_notes_only_leave_every_turn_out(tree, strategy):
    m, note = tree
    everything = m.recall(QUERY, k=10, min_relevance=0.0, strategy=strategy, count_access=False).results
    assert note.id in [h.id for h in everything] and any(h.id != note.id for h in everything)  # the session too
    notes = m.recall(QUERY, k=10, min_relevance=0.0, strategy=strategy, count_access=False, sessions=False).results
    assert [h.id for h in notes] == [note.id]


def test_the_cli_says_no_sessions(tree):
    m, note = tree
    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "MEMSTRATA_NOW": "2026-06-10T09:00:00Z"}
    out = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "recall", QUERY, "--no-sessions", "--no-touch",
                          "--json", "--root", str(m.root)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert [h["id"] for h in json.loads(out.stdout)["results"]] == [note.id]



def test_nothing_found_among_the_notes_says_the_sessions_were_left_out(tree):
    m, _ = tree
    answer = m.recall(QUERY, k=10, count_access=False, sessions=False, category="sessions")
    assert answer.results == [] and any("sessions were left out" in n for n in answer.notes)
