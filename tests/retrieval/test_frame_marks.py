"""What the ranker reads of a candidate's whole text is computed once per frame (retrieval/frame.py)."""
from memstrata.retrieval.frame import Frame
from memstrata.retrieval.rerank import _text_marks


def test_each_positions_marks_are_computed_once_and_given_in_the_order_asked():
    frame = Frame(1, ["a", "b", "c"], {"path": ["a.md", "b.md", "c.md"]})
    texts = ["What did we pick? Postgres.", "We met on 3 May 2024.", "Plain words."]
    asked = []

    def marks_of(p):
        asked.append(p)
        return _text_marks(texts[p])

    first = frame.text_marks([2, 0, 1], marks_of)
    again = frame.text_marks([1, 2], marks_of)
    assert asked == [2, 0, 1]  # each text read once
    assert first == [(0.0, 0.0), (0.5, 0.0), (0.0, 1.0)] and again == [first[2], first[0]]
    assert Frame(2, ["a"], {"path": ["a.md"]}).text_marks([0], marks_of) and asked[-1] == 0  # a new frame reads again


def test_the_marks_kept_are_bounded(monkeypatch):
    from memstrata.retrieval import frame as frames

    monkeypatch.setattr(frames, "MARKS_KEPT", 3)
    frame = Frame(1, ["a", "b", "c", "d"], {"path": ["a.md", "b.md", "c.md", "d.md"]})
    asked = []
    frame.text_marks([0, 1], lambda p: asked.append(p) or (0.0, 0.0))
    frame.text_marks([2, 3], lambda p: asked.append(p) or (0.0, 0.0))
    assert len(frame._marks) == 2 and asked == [0, 1, 2, 3]
