"""The rows that mention a name, read from the English column's postings (retrieval/query_names.py): always the
rows a scan of every text finds, for names as people and projects are named and the ways texts write them."""
from __future__ import annotations

import itertools
import random
from types import SimpleNamespace

from memstrata.retrieval import lexical, query_names

NAMES = ["Caroline", "Melanie", "James", "Yvonne", "Kayla", "Atlas", "News", "Andes", "Cosmos", "Howe", "Sky",
         "Early", "Only", "Lying", "Brien", "Jon", "Al", "Ed", "NYC", "R2D2", "Alpha", "Mayday", "Ty", "Des",
         "New York", "Fox News", "Let", "Will", "It", "Joy", "Agnes", "Iris", "Ross", "Gus", "Yusuf",
         "Ness", "ER", "ENT", "RE", "LL", "VE", "Ing", "Able"]  # an attacker's review: endings a stem cuts away
FORMS = ["{n}", "{n}'s", "{n}’s", "{n}'", "{n}’", "{n}s", "{n}'ll", "{n}’d", "{n}'s'", "O'{n}", "d’{n}", "{n}-based",
         "@{n}", "({n})", "{n}.", "{n},", "{N}", "{l}", "{n}ing", "{n}ed", "{n}y", "x{n}", "{n}_x", "{n}9", "’{n}’s",
         "Bob'{n}", "Sara’{n}", "Loch’{n}", "THEY'{n}", "you're {n}", "x'" * 40 + "{n}", "a" * 70 + "'{n}"]
FILLER = "the team met on Tuesday to review the release plan and the budget for next quarter".split()


def corpus(seed: int, n: int = 1500) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        words = rng.sample(FILLER, 6)
        for _ in range(rng.randint(0, 2)):
            name = rng.choice(NAMES)
            form = rng.choice(FORMS).format(n=name, N=name.upper(), l=name.lower())
            words.insert(rng.randint(0, len(words)), form)
        texts.append(" ".join(words))
    return texts


def test_the_postings_find_every_text_a_scan_finds():
    for seed in (1, 2, 3):
        texts = corpus(seed)
        stats = lexical.TermStats(texts)
        narrowed = 0
        for name in NAMES:
            scanned = query_names.mentioning(SimpleNamespace(_mentions={}), texts, name)
            assert query_names.mentioning(SimpleNamespace(_mentions={}), texts, name, stats) == scanned, (seed, name)
            rows = query_names._candidates(stats, name)
            if rows is not None:
                narrowed += 1
                assert set(scanned) <= set(rows.tolist())
        assert narrowed >= len(NAMES) - 8  # all but the stop words ("It", "Will", "Let"), their ends ("RE", "LL", "VE")


def test_a_new_version_of_the_vocabulary_sorts_its_new_terms_in():
    texts = corpus(4, 300)
    stats = lexical.TermStats(texts)
    before = query_names.mentioning(SimpleNamespace(_mentions={}), texts, "Zephyrine", stats)
    assert before == []
    more = texts + ["Zephyrine’s plan for the release"]
    carried = lexical.TermStats.carried(stats, list(range(len(texts))) + [None], more)
    stats.postings()  # the old version's postings built first, so the new one carries them (and their vocabulary)
    carried = lexical.TermStats.carried(stats, list(range(len(texts))) + [None], more)
    assert query_names.mentioning(SimpleNamespace(_mentions={}), more, "Zephyrine", carried) == [len(texts)]
