"""Ranking pieces: the neighbour prior (pure), feedback terms, which names leave the dense query."""
from __future__ import annotations

import numpy as np

from memstrata.retrieval import fusion, lexical


def _weights(**kw):
    base = dict(dense=1.0, text=1.0, feedback=0.0, entity=0.0, neighbour=0.0, session=0.0, date=0.0,
                archived_factor=0.8, session_gap_seconds=3600.0)
    return fusion.FusionWeights(**{**base, **kw})


def test_neighbours_one_and_two_steps_away():
    # six entries of one category, one minute apart, then one a day later (another sitting)
    created = [0.0, 60.0, 120.0, 180.0, 240.0, 300.0, 86400.0]
    structure = fusion.time_structure(["notes"] * 7, created, 3600.0)
    base = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    inactive = np.zeros(7, dtype=bool)
    score, boosts = fusion.apply_priors(base, _weights(neighbour=0.3, neighbour_second=0.5), structure,
                                        None, None, inactive)
    assert np.allclose(boosts["neighbours"], [0.15, 0.3, 0.0, 0.3, 0.15, 0.0, 0.0])
    assert np.allclose(score, base + boosts["neighbours"])
    _, only_adjacent = fusion.apply_priors(base, _weights(neighbour=0.3), structure, None, None, inactive)
    assert np.allclose(only_adjacent["neighbours"], [0.0, 0.3, 0.0, 0.3, 0.0, 0.0, 0.0])


def test_neighbours_stop_at_the_category_and_sitting_edges():
    created = [0.0, 60.0, 120.0, 10_000.0]
    structure = fusion.time_structure(["a", "b", "a", "a"], created, 3600.0)
    base = np.array([1.0, 0.0, 0.0, 0.0])
    _, boosts = fusion.apply_priors(base, _weights(neighbour=0.3, neighbour_second=0.5), structure, None, None,
                                    np.zeros(4, dtype=bool))
    # entry 2 is entry 0's next in category "a"; entry 1 is another category, entry 3 another sitting
    assert np.allclose(boosts["neighbours"], [0.0, 0.0, 0.3, 0.0])


def test_feedback_terms_skip_the_written_date():
    docs = ["Ann: we planted tomatoes and basil in the garden\n8 May 2023 Monday",
            "Ann: the tomatoes need a trellis soon\n9 May 2023 Tuesday"]
    terms = lexical.feedback_terms(docs, lambda s: 1, 100, {"garden"}, 10)
    assert "tomatoes" in terms
    assert not {"may", "monday", "tuesday", "2023"} & set(terms)
    assert "garden" not in terms


def test_only_common_names_leave_the_dense_query(mem):
    for n, text in enumerate(["Alice fixed the login bug today.", "Alice moved the cron job to 6am.",
                              "Alice reviewed the billing pull request.", "Alice read Becoming Nicole last week.",
                              "Bob asked about the staging database."]):
        mem.write(text, title=f"note {n}", category="log")
    mem.settings.recall_dense_name_share = 0.5   # Alice: 4 of 5 entries; Nicole: 1 of 5
    info = mem.recall("What did Alice think of Becoming Nicole?", explain=True).info
    assert "Alice" not in info["dense_query"] and "Becoming Nicole" in info["dense_query"]
    mem.settings.recall_dense_name_share = 0.0   # 0: every name leaves
    info = mem.recall("What did Alice think of Becoming Nicole?", explain=True).info
    assert "Alice" not in info["dense_query"] and "Nicole" not in info["dense_query"]
