"""Ranking pieces: the neighbour prior (pure), feedback terms, which names leave the dense query."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

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


def test_a_name_said_in_most_turns_of_its_project_leaves_the_dense_query(mem, tmp_path):
    """Among many other entries a conversation's people are rare in the tree, but they are in most turns
    of their project's sessions: they leave the dense query as they do in that project alone (issue 41,
    quality among many sessions). A place said once stays; a name in notes alone is judged on the tree."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capture"))
    from transcripts import Claude

    for n in range(24):
        mem.write(f"Build step {n} of the release pipeline runs the linters.", title=f"step {n}", category="ops")
    mem.write("Dana set up the new release pipeline.", title="pipeline owner", category="ops")
    talk = Claude(session="5a1e0000-1111-4aaa-8bbb-00000000c0de", cwd=str(tmp_path / "caroline"))
    said = ["Caroline: I went to a pottery workshop in Paris last weekend.", "Melanie: That sounds lovely, Caroline!",
            "Caroline: Thanks Mel, the teacher was great.", "Melanie: Caroline, will you go again?",
            "Caroline: Yes, next month I think.", "Melanie: I should come with you."]
    for n, text in enumerate(said):
        (talk.user if n % 2 == 0 else talk.reply)(text, f"2026-05-10T10:0{n}:00.000Z")
    assert mem.capture([talk.write(tmp_path)])["turns"] == 6
    short = Claude(session="5a1e0000-1111-4aaa-8bbb-00000000beef", cwd=str(tmp_path / "trips"))
    short.user("Book the train to Lisbon for Friday.", "2026-05-11T10:00:00.000Z")
    short.reply("Done: the 9:05 train, seat 42.", "2026-05-11T10:00:30.000Z")
    assert mem.capture([short.write(tmp_path)])["turns"] == 2
    work = Claude(session="5a1e0000-1111-4aaa-8bbb-00000000f00d", cwd=str(tmp_path / "billing"))
    for n in range(30):
        text = "Caroline from accounting asked for the invoice export." if n == 7 else f"Run the billing job {n}."
        (work.user if n % 2 == 0 else work.reply)(text, f"2026-05-12T10:{n:02d}:00.000Z")
    assert mem.capture([work.write(tmp_path)])["turns"] == 30
    # Caroline: 6 of 63 entries and turns (0.10); 5 of her project's 6 turns, once in billing's 30: each
    # project is judged on its own (the two together, 6 of 36, are under 0.2)
    mem.settings.recall_dense_name_share = 0.2
    info = mem.recall("What workshop did Caroline attend in Paris?", explain=True).info
    assert "Caroline" not in info["dense_query"] and "Paris" in info["dense_query"], info["dense_query"]
    info = mem.recall("What workshop did Caroline attend in Paris?", explain=True, since="2026-05-10T10:03:00Z").info
    assert "Caroline" not in info["dense_query"]  # 2 of the 3 turns admitted: the floor counts the whole project
    info = mem.recall("When is the train to Lisbon?", explain=True).info
    assert "Lisbon" in info["dense_query"]  # half of its project's turns, but said once: fewer than 1 / 0.2 times
    info = mem.recall("What workshop did Caroline attend in Paris?", explain=True, sessions=False).info
    assert "Caroline" in info["dense_query"]  # sessions left out of the search do not shape its query
    info = mem.recall("Who is Caroline?", explain=True).info
    assert info["dense_query"] == "Who is Caroline?"  # nothing but question words would be left
    mem.settings.recall_dense_name_share = 0.08  # 6 of 63 rows: common in the tree, in none of its notes
    assert "Caroline" not in mem.recall("Which workshop, Caroline?", explain=True).info["dense_query"]
    info = mem.recall("Which workshop, Caroline?", explain=True, sessions=False).info
    assert "Caroline" in info["dense_query"]  # the whole tree's share counts the rows the search admits too
    mem.settings.recall_dense_name_share = 0.2
    info = mem.recall("Who set up the pipeline, Dana?", explain=True).info
    assert "Dana" in info["dense_query"]  # one note of 25 in its category: notes are judged on the whole tree


def test_a_query_of_names_and_question_words_keeps_its_names():
    assert lexical.without_entities("Who is Marisol?", ["Marisol"]) == "Who is Marisol?"
    assert lexical.without_entities("What did Caroline and Melanie do?", ["Caroline", "Melanie"]) == (
        "What did Caroline and Melanie do?")
    assert lexical.without_entities("What did Caroline paint?", ["Caroline"]) == "What did paint?"
    for query in ("Describe Caroline", "Tell me about Caroline.", "What do you know about Caroline?", "Caroline birthday?"):
        assert lexical.without_entities(query, ["Caroline"]) == query  # asking words, or one word, are no topic


def test_only_a_conversation_has_neighbours():
    # turns a few seconds apart, short: linked; notes written in one bulk write (the same time) or
    # long files written minutes apart: no neighbours, each its own sitting
    created = [0.0, 10.0, 20.0, 500.0, 500.0, 900.0, 960.0]
    sizes = [300, 400, 350, 800, 800, 30_000, 25_000]
    prev, nxt, session = fusion.time_structure(["c"] * 3 + ["v"] * 4, created, 3600.0, sizes)
    assert list(prev[:3]) == [-1, 0, 1] and list(nxt[:3]) == [1, 2, -1] and len(set(session[:3])) == 1
    assert list(prev[3:]) == [-1] * 4 and list(nxt[3:]) == [-1] * 4 and len(set(session[3:])) == 4


def test_dialogue_features_are_zero_on_a_note():
    from memstrata.scoring import ranker

    created = [0.0, 10.0, 20.0, None]
    structure = fusion.time_structure(["c", "c", "c", "notes"], created, 3600.0, [300, 300, 300, 9000])
    cos = np.array([0.2, 0.6, 0.3, 0.6])
    text = np.array([0.0, 0.5, 0.0, 0.5])
    x = ranker.features(np.array([1, 3]), cos + text, cos, text, np.zeros(4), None, None, structure,
                        np.array([0.5, 0.5]), 1.0, 1.0, 0.0, asks=np.array([1.0, 1.0]), says=np.array([1.0, 1.0]),
                        title=np.array([0.0, 1.0]))
    f = dict(zip(ranker.FEATURES, x.T))
    # Among a conversation's turns, a note (or a turn that lost its neighbours) has no neighbour
    # features, and its own match is its excess, as it was for every entry before: a deleted
    # neighbour must not sink an entry below the turns around it.
    for name in ("nb1", "nb2", "nbmax"):
        assert f[name][1] == 0.0, name
    assert f["xpcos"][1] == pytest.approx(0.6) and f["xptxt"][1] == pytest.approx(0.5) and f["sit"][1] > 0
    assert f["xpcos"][0] > 0 and f["asks"][0] == 1.0 and f["sit"][0] > 0 and f["title"][1] == 1.0
    # Among notes only (a vault: nothing linked), every dialogue feature is 0.
    x = ranker.features(np.array([3]), cos + text, cos, text, np.zeros(4), None, None, structure,
                        np.array([0.5]), 1.0, 1.0, 0.0, asks=np.array([1.0]), says=np.array([1.0]),
                        title=np.array([1.0]))
    f = dict(zip(ranker.FEATURES, x.T))
    for name in ("nb1", "nb2", "nbmax", "sit", "xpcos", "xncos", "xptxt", "xntxt", "asks", "says"):
        assert f[name][0] == 0.0, name


def test_a_vault_copied_across_a_second_boundary_is_no_conversation():
    # a cloned or copied vault: 20 short notes of one folder written over two seconds (the files'
    # times, whole seconds); the last of the first second and the first of the next look like two
    # turns. Two linked notes among twenty candidates are no conversation; turns are.
    from memstrata.scoring import ranker

    created = [100.0] * 10 + [101.0] * 10
    structure = fusion.time_structure(["notes"] * 20, created, 3600.0, [600] * 20)
    prev, nxt, _ = structure
    assert int(((prev >= 0) | (nxt >= 0)).sum()) == 2  # the stray pair is still linked
    assert not ranker.is_conversation(structure, np.arange(20))
    turns = fusion.time_structure(["c"] * 20, [10.0 * i for i in range(20)], 3600.0, [300] * 20)
    assert ranker.is_conversation(turns, np.arange(20))


def test_notes_are_ordered_by_the_notes_weights_and_turns_by_the_conversation_weights(tmp_path, embedder,
                                                                                       monkeypatch):
    # the weight set follows the data: the candidates of a query on an adopted vault (no entry linked
    # to a neighbour) are notes; one linked turn among them makes it a conversation
    from memstrata import Memory
    from memstrata.scoring import ranker

    created = [0.0, 10.0, 20.0, None]
    structure = fusion.time_structure(["c", "c", "c", "notes"], created, 3600.0, [300, 300, 300, 9000])
    assert ranker.is_conversation(structure, np.array([3, 1])) and not ranker.is_conversation(structure, np.array([3]))
    assert ranker.NOTES_WEIGHTS != ranker.WEIGHTS and ranker.NOTES_WEIGHTS["whole"] > 0
    vault = tmp_path / "vault"
    (vault / "os").mkdir(parents=True)
    for name, body in [("Crontab", "A daemon wakes every minute and runs the commands whose five time fields match."),
                       ("Niceness", "A value from -20 to 19; a higher value gives the process a lower priority."),
                       ("Umask", "The permission bits a new file does not get, three octal digits.")]:
        (vault / "os" / f"{name}.md").write_text(f"{body}\n")
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    seen = []
    real = ranker.rank

    def spy(x, weights=None):
        seen.append(weights)
        return real(x, weights)

    monkeypatch.setattr(ranker, "rank", spy)  # the real ranker runs; the spy sees which weights it got
    hits = m.recall("how do I make a job run every night", min_relevance=0, count_access=False).results
    assert hits[0].path == "os/Crontab.md"
    assert seen == [ranker.NOTES_WEIGHTS]
