"""The texts and term statistics are read where they lie in the mapped disk cache, through writes and a rewrite of the cache."""
from __future__ import annotations

import pytest

from memstrata import Memory
from memstrata.retrieval import frame as frame_mod
from memstrata.retrieval import lexical, stats_cache


def _full_count(index, frame):
    texts = [index._en_texts(None)[i] or "" for i in frame.ids]
    return texts, lexical.TermStats(texts)


def _same_as_a_full_count(index, frame):
    texts, full = _full_count(index, frame)
    stats = index.term_stats(frame)
    assert list(index.texts(frame)) == texts
    assert ([dict(c) for c in stats.tf], stats.df, stats.length) == ([dict(c) for c in full.tf], full.df, full.length)
    for query in ({"postgres": 1.0, "replication": 1.0}, {"note": 1.0}, {"lunch": 2.0, "fridays": 1.0}):
        assert stats.top(query, 0.9, 0.5, 20) == pytest.approx(full.top(query, 0.9, 0.5, 20))
        assert list(stats.top(query, 0.9, 0.5, 20)) == list(full.top(query, 0.9, 0.5, 20))


def _is_mapped(frame) -> bool:
    return isinstance(frame._texts.data, memoryview) and not frame._stats.tf.indices.flags.owndata


def _mapped_tree(tmp_path, embedder, texts):
    """A tree of `texts` (one note each) whose statistics were counted and mapped: (memory, index, frame)."""
    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    for n, text in enumerate(texts):
        m.write(text, title=f"Note {n}", category="work")
    index = m.state.vector_index()
    frame = index.frame()
    index.term_stats(frame)
    assert _is_mapped(frame)
    return m, index, frame


def test_statistics_are_mapped_carried_over_writes_and_mapped_again_past_the_threshold(tmp_path, embedder, monkeypatch):
    monkeypatch.setattr(frame_mod, "REBASE_MIN", 4)  # a tenth of this tree's entries, at least 4: a rewrite soon
    m, index, frame = _mapped_tree(tmp_path, embedder, [f"Postgres note number {n} about replication and backups."
                                                        for n in range(30)])
    assert frame._texts.overlaid() == 0  # counted, written, then read from the file
    _same_as_a_full_count(index, frame)
    base = frame._texts.data

    m.write("Lunch at noon on Fridays.", title="Lunch", category="work")  # one new entry: carried
    frame = index.frame()
    index.term_stats(frame)
    assert frame._texts.data is base and frame._texts.overlaid() == 1 and frame._stats.tf.overlaid() == 1
    _same_as_a_full_count(index, frame)

    for n in range(5):  # past max(4, 31 // 10): written again and mapped
        m.write(f"Postgres note number {n} now says logical replication.", title=f"Note {n}", category="work")
    frame = index.frame()
    index.term_stats(frame)
    assert frame._texts.data is not base and _is_mapped(frame) and frame._texts.overlaid() == 0
    _same_as_a_full_count(index, frame)
    assert m.recall("logical replication", strategy="text", min_relevance=0).results[0].title.startswith("Note")


def test_mapped_statistics_stay_readable_when_the_file_is_replaced(tmp_path, embedder):
    """Every writer replaces the cache by a rename (another process counting, a privacy purge
    deleting it): a process reading the old file keeps reading it whole."""
    import os

    m, index, frame = _mapped_tree(tmp_path, embedder, [f"Kafka topic {n} keeps seven days of events." for n in range(8)])
    before, top = list(frame._texts), frame._stats.top({"kafka": 1.0, "events": 1.0}, 0.9, 0.5, 5)
    cache = index.dir / stats_cache.CACHE_FILE
    junk = index.dir / "junk"
    junk.write_bytes(b"x" * 100)
    os.replace(junk, cache)
    os.unlink(cache)
    assert list(frame._texts) == before and frame._stats.top({"kafka": 1.0, "events": 1.0}, 0.9, 0.5, 5) == top
    assert Memory(m.root, embedder=embedder).recall("kafka events", strategy="text", min_relevance=0).ids


def test_a_write_carries_the_feedback_statistics_with_the_term_statistics(tmp_path, embedder):
    """A recall naming someone reads the feedback statistics (query_names), whatever the feedback
    weight: once the previous frame was let go after the term statistics, they were counted again
    from every text after each write (19 s at 300,000 captured turns)."""
    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    for n in range(6):
        m.write(f"Caroline went to pottery class number {n}.", title=f"Pottery {n}", category="life")
    m.recall("What did Caroline do?", min_relevance=0)
    index = m.state.vector_index()
    m.write("Melanie painted a sunrise by the lake.", title="Sunrise", category="life")
    frame = index.frame()
    index.term_stats(frame)
    assert frame._df is not None and frame._reuse is None  # carried from the changed entry, the old frame let go
    texts, _ = _full_count(index, frame)
    assert frame._df == lexical.doc_freqs(texts)


@pytest.mark.parametrize("change", ["truncate", "rewrite", "unlink"])
def test_a_cache_changed_in_place_or_deleted_under_a_process_is_let_go(tmp_path, embedder, change):
    """Writers replace the cache by a rename, but a tool may cut or rewrite it in place (a truncate
    stopped the process with SIGBUS at its next read; bytes copied over it raised IndexError), and a
    privacy purge deletes it (a process kept reading the deleted file). The next recall lets the
    mapped file go and carries from what is in its place."""
    import os

    m, index = _mapped_tree(tmp_path, embedder, [f"Kafka topic {n} keeps {n + 3} days of billing events."
                                                 for n in range(12)])[:2]  # the frame not held here: it is let go
    expected = m.recall("kafka billing events", strategy="text", min_relevance=0).ids
    cache = index.dir / stats_cache.CACHE_FILE
    size = cache.stat().st_size
    if change == "truncate":
        os.truncate(cache, size // 3)
    elif change == "rewrite":
        with open(cache, "r+b") as f:  # same inode, same size, other bytes
            f.seek(size // 2)
            f.write(b"\xff" * (size - size // 2))
    else:
        os.unlink(cache)
    assert m.recall("kafka billing events", strategy="text", min_relevance=0).ids == expected
    frame = index.frame()
    _same_as_a_full_count(index, frame)
    assert stats_cache.intact(frame._texts.data)  # what it reads now is as it was mapped
    import gc

    gc.collect()
    assert f"{cache} (deleted)" not in open("/proc/self/maps").read()
