"""The in-memory inverted index ranks exactly as BM25 over every entry, and carries over intact."""
from __future__ import annotations

import random

import numpy as np

from memstrata.retrieval import lexical
from memstrata.retrieval.postings import Postings

WORDS = ["billing", "database", "postgres", "deploy", "friday", "zebra", "crossing", "lunch", "invoice",
         "kafka", "queue", "laptop", "python", "style", "release"]


def _texts(rng, n):
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12))) for _ in range(n)]


def _by_term(postings: Postings) -> dict:
    m = postings.matrix.tocsc()
    out = {}
    for term, c in postings.vocab.items():
        rows = m.indices[m.indptr[c]:m.indptr[c + 1]]
        if len(rows):
            out[term] = dict(zip(rows.tolist(), m.data[m.indptr[c]:m.indptr[c + 1]].tolist()))
    return out


def test_top_entries_are_those_of_bm25_over_every_entry():
    rng = random.Random(3)
    stats = lexical.TermStats(_texts(rng, 400))
    for query in (["zebra"], ["billing", "database"], ["python", "style", "release", "unknownword"], ["lunch"] * 2):
        terms = {t: 1.0 for t in query}
        every = stats.bm25(range(stats.n), terms, 0.9, 0.5)
        # a stable sort of the full list: ties (equal texts) go to the lower position
        expected = sorted(every, key=lambda p: (-every[p], p))[:25]
        top = stats.top(terms, 0.9, 0.5, 25)
        assert list(top) == expected
        assert all(abs(top[p] - every[p]) < 1e-9 for p in top)


def test_a_mask_keeps_only_admitted_entries():
    rng = random.Random(4)
    stats = lexical.TermStats(_texts(rng, 200))
    mask = np.zeros(stats.n, dtype=bool)
    mask[::3] = True
    top = stats.top({"invoice": 1.0}, 0.9, 0.5, 1000, mask)
    every = stats.bm25(range(stats.n), {"invoice": 1.0}, 0.9, 0.5)
    assert top and set(top) == {p for p in every if p % 3 == 0}


def test_carried_index_equals_a_fresh_build():
    rng = random.Random(5)
    old_texts = _texts(rng, 300)
    old = lexical.TermStats(old_texts)
    old.postings()
    # a new version: some entries gone, some changed, some new (with a word never seen), order kept
    texts, reuse = [], []
    for j, t in enumerate(old_texts):
        if j % 7 == 0:
            continue
        if j % 11 == 0:
            texts.append(t + " brandnewword")
            reuse.append(None)
        else:
            texts.append(t)
            reuse.append(j)
    texts.insert(5, "zebra zebra brandnewword")
    reuse.insert(5, None)
    carried = lexical.TermStats.carried(old, reuse, texts)
    fresh = lexical.TermStats(texts)
    assert _by_term(carried.postings()) == _by_term(fresh.postings())
    for q in ({"zebra": 1.0}, {"brandnewword": 1.0, "deploy": 1.0}):
        assert carried.top(q, 0.9, 0.5, 50) == fresh.top(q, 0.9, 0.5, 50)
