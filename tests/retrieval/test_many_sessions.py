"""Recall among many captured sessions: a turn repeated word for word is one hit, and a conversation's people send both searches into their project."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capture"))
from transcripts import Claude  # noqa: E402

CAROLINE = "5a1e0000-1111-4aaa-8bbb-00000000c0de"


def _session(tmp_path, n: int, cwd: str, lines: list[str], day: int) -> str:
    talk = Claude(session=f"5a1e0000-1111-4aaa-8bbb-{n:012d}", cwd=str(tmp_path / cwd))
    for i, text in enumerate(lines):
        (talk.user if i % 2 == 0 else talk.reply)(text, f"2026-05-{day:02d}T10:{i:02d}:00.000Z")
    return talk.write(tmp_path)


def _many_sessions(mem, tmp_path) -> None:
    """Caroline and Melanie's one session (16 turns, mostly their names) beside twelve sessions of
    another project that say the same few things about stress and running, word for word."""
    talk = Claude(session=CAROLINE, cwd=str(tmp_path / "caroline"))
    said = ["Caroline: Hey Melanie!", "Melanie: Hi Caroline!", "Caroline: Thanks, Melanie!",
            "Melanie: Running farther after work is how I de-stress these days.", "Caroline: Wow, Melanie!",
            "Melanie: Thanks, Caroline!", "Caroline: Melanie, you are the best.", "Melanie: Yeah, Caroline.",
            "Caroline: See you soon, Melanie!", "Melanie: Bye Caroline!", "Caroline: Melanie, hi again!",
            "Melanie: Caroline, good to see you.", "Caroline: Same here, Melanie.", "Melanie: Oh Caroline!",
            "Caroline: Right, Melanie.", "Melanie: Sure, Caroline."]
    for i, text in enumerate(said):
        (talk.user if i % 2 == 0 else talk.reply)(text, f"2026-05-01T10:{i:02d}:00.000Z")
    paths = [talk.write(tmp_path)]
    other = ["How do you destress after a long week?", "I go jogging in the park to relieve stress.",
             "Does running help with stress at work?", "A long run is the best way to unwind and destress."]
    paths += [_session(tmp_path, n, "fitness", other, 2 + n) for n in range(12)]
    assert mem.capture(paths)["turns"] == 16 + 12 * 4


def test_a_turn_said_in_many_sessions_is_one_hit(mem, tmp_path):
    _many_sessions(mem, tmp_path)
    hits = mem.recall("How do people relieve stress by jogging?", k=6, min_relevance=0, count_access=False).results
    texts = [mem.read(h.id, count_access=False).body for h in hits]
    said = [t for t in (h.snippet for h in hits)]
    assert len(hits) == 6
    assert len(set(said)) == len(said), said  # twelve copies of each fitness turn: one each
    assert any("jogging in the park" in t for t in texts)


def test_a_conversations_people_send_the_searches_into_its_project(mem, tmp_path):
    """With few candidates per search, the fitness sessions' nearest turns and best words fill both
    lists; Melanie's answer is found by the searches within her project (issue 41: "What does Melanie
    do to destress?" had no candidate from her sessions among 300,000 turns)."""
    _many_sessions(mem, tmp_path)
    from memstrata.scoring.relevance import CUT_DEPTH  # the depth recall asks for at least

    mem.settings.recall_candidates = mem.settings.recall_text_candidates = CUT_DEPTH
    mem.settings.recall_dense_name_share = 0.2
    result = mem.recall("What does Melanie do to destress?", k=3, min_relevance=0, count_access=False, explain=True)
    found = [h for h in result.results if h.session == CAROLINE and "Running farther" in h.snippet]
    assert found, [(h.session, h.snippet) for h in result.results]
    top = found[0]
    assert "Melanie" not in result.info["dense_query"]
    assert result.info["projects"] == [top.category]  # both searches ran again within her project
    # her project searched alone: nothing changes (it is the whole of what the filter admits)
    alone = mem.recall("What does Melanie do to destress?", k=3, min_relevance=0, count_access=False, explain=True,
                       category=top.category)
    assert alone.results[0].id == top.id and alone.info["projects"] == []


def test_people_named_together_are_searched_where_they_talk_together(mem, tmp_path):
    """John talks in three projects, Tim in one of them: a question naming both is searched within
    that one (the union, John's three, would be most of the tree, searched by the first search)."""
    from memstrata.retrieval import query_names

    paths = [_session(tmp_path, 1, "travel", [f"Tim: John, trip plan {n}." for n in range(6)], 1),
             _session(tmp_path, 2, "chess", [f"John: Sara, chess game {n}." for n in range(6)], 2),
             _session(tmp_path, 3, "garden", [f"Ann: John, garden bed {n}." for n in range(6)], 3),
             _session(tmp_path, 4, "billing", [f"Invoice batch {n} exported." for n in range(30)], 4)]
    assert mem.capture(paths)["turns"] == 48
    mem.settings.recall_dense_name_share = 0.2
    mem.recall("warm up", count_access=False)
    index = mem.state.vector_index()
    frame = index.frame()
    by_project = {frame.cols["category"][p].rsplit("/", 1)[-1]: frame.cols["category"][p] for p in range(len(frame.ids))}
    found = query_names.projects(index, frame, ["Tim", "John"], mem.settings)
    assert found == [by_project["travel"]]
    assert query_names.projects(index, frame, ["Tim"], mem.settings) == [by_project["travel"]]
    # John alone: his three projects, 18 of 48 turns
    assert sorted(query_names.projects(index, frame, ["John"], mem.settings)) == sorted(
        by_project[p] for p in ("travel", "chess", "garden"))
    # never said together: where each is said
    assert query_names.projects(index, frame, ["Sara", "Ann"], mem.settings) == [by_project["chess"], by_project["garden"]]


def test_a_copy_passed_over_is_not_merged_back_by_grep(mem):
    """A small category scope merges the exact grep matches the index missed: a copy of a hit's text
    is not one (the search passed over it), and the note saying so would be false (a new user's review)."""
    text = "Deploys go out on Tuesdays and Thursdays, never on Fridays."
    mem.write(text, title="Deploy days", category="projects/a")
    mem.write(text, title="Deploy days", category="projects/b")
    mem.write("Staging runs in Frankfurt.", title="Staging", category="projects/a")
    result = mem.recall("when do we deploy?", category="projects", min_relevance=0, count_access=False)
    assert [h.title for h in result.results].count("Deploy days") == 1
    assert not any("grep" in n for n in result.notes), result.notes
    assert len(mem.recall("when do we deploy?", category="projects/a", min_relevance=0).results) == 2  # the copy, filtered



def test_a_name_leaves_the_bm25_terms_only_when_a_topic_is_left():
    from memstrata.retrieval.query_names import topic_terms

    assert topic_terms(["melanie", "destress"], ["Melanie"]) == ["destress"]
    # asking words alone are no topic: "What do you know about Melanie?", "Describe Melanie" (an attack)
    assert topic_terms(["know", "melanie"], ["Melanie"]) == ["know", "melanie"]
    assert topic_terms(["describe", "melanie"], ["Melanie"]) == ["describe", "melanie"]
    assert topic_terms(["melanie"], ["Melanie"]) == ["melanie"]


def test_a_querys_searches_run_side_by_side_in_order():
    import threading
    from memstrata.retrieval.ann import searched_together

    barrier = threading.Barrier(3, timeout=30)  # all three searches in flight at once, or it breaks

    def search(scope):
        barrier.wait()
        return scope, threading.current_thread() is threading.main_thread()

    assert searched_together(search, ["tree", "projects", "third"]) == [("tree", True), ("projects", False),
                                                                       ("third", False)]
    assert searched_together(lambda scope: scope, ["alone"]) == ["alone"]
