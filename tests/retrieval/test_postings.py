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
    """term -> {entry position: count}, over every segment."""
    out: dict = {}
    for term, c in postings.vocab.items():
        for m, positions in postings.segments:
            if c >= m.shape[1]:
                continue
            for row, f in zip(m.indices[m.indptr[c]:m.indptr[c + 1]], m.data[m.indptr[c]:m.indptr[c + 1]]):
                pos = int(row if positions is None else positions[row])
                if pos >= 0:
                    out.setdefault(term, {})[pos] = float(f)
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


def _next_version(rng, old_texts, step):
    """A new version of a collection: some entries gone, some changed, one new (with a word
    never seen), order kept; returns its texts and the old position of each unchanged one."""
    texts, reuse = [], []
    for j, t in enumerate(old_texts):
        if (j + step) % 7 == 0:
            continue
        if (j + step) % 11 == 0:
            texts.append(t + f" brandnewword{step}")
            reuse.append(None)
        else:
            texts.append(t)
            reuse.append(j)
    texts.insert(5, f"zebra zebra brandnewword{step}")
    reuse.insert(5, None)
    return texts, reuse


def test_carried_index_equals_a_fresh_build_over_many_versions():
    """Carried versions keep the built rows as segments; each one ranks as a fresh build, also
    once the segments are merged again."""
    import pytest

    from memstrata.retrieval import postings as postings_mod

    rng = random.Random(5)
    texts = _texts(rng, 3000)
    stats = lexical.TermStats(texts)
    stats.postings()
    seen_segments = set()
    for step in range(12):
        new_texts, reuse = _next_version(rng, texts, step)
        if step == 9:  # a version nobody queried: the next one carries from a fresh build
            stats = lexical.TermStats.carried(stats, reuse, new_texts)
        else:
            stats = lexical.TermStats.carried(stats, reuse, new_texts)
            seen_segments.add(len(stats.postings().segments))
            fresh = lexical.TermStats(new_texts)
            assert (stats.tf, stats.df, stats.length) == (fresh.tf, fresh.df, fresh.length)
            assert _by_term(stats.postings()) == _by_term(fresh.postings())
            for q in ({"zebra": 1.0}, {f"brandnewword{step}": 1.0, "deploy": 1.0}, {"billing": 2.0}):
                assert stats.top(q, 0.9, 0.5, 50) == pytest.approx(fresh.top(q, 0.9, 0.5, 50))
                assert list(stats.top(q, 0.9, 0.5, 50)) == list(fresh.top(q, 0.9, 0.5, 50))
        texts = new_texts
    assert {1, 2, 3} <= seen_segments  # segments were added, then merged by a rebuild
    assert max(seen_segments) <= postings_mod.MAX_SEGMENTS


def test_a_damaged_cached_index_is_rebuilt():
    from memstrata.retrieval import stats_cache

    stats = lexical.TermStats(["billing database", "zebra crossing", "billing zebra"])
    stats.postings()
    data = stats_cache._postings_data(stats)
    assert stats_cache._postings_from(data, stats.tf) is not None
    other = lexical.TermStats(["billing database", "zebra crossing", "billing zebra", "zebra"]).tf
    assert stats_cache._postings_from(data, other) is None  # for another number of entries
    for key, bad in (("indices", b"\xff\xff\xff\x7f" * 6), ("indptr", b"\x00" * 8), ("columns", None),
                     ("columns", 99), ("data", b"")):
        assert stats_cache._postings_from({**data, key: bad}, stats.tf) is None


def test_a_forged_statistics_cache_is_thrown_away(tmp_path, embedder):
    """Each of these used to load and then crash recall (or change its answers) until the file
    was deleted by hand; now the cache is counted again, and a reindex removes it."""
    import copy

    from memstrata import Memory
    from memstrata.retrieval import stats_cache
    from memstrata.retrieval.frame import Frame

    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    for n in range(6):
        m.write(f"Postgres note number {n} about replication and backups.", title=f"Note {n}", category="work")
    m.write("Lunch at noon on Fridays.", title="Lunch", category="work")
    expected = m.recall("postgres replication", strategy="text", min_relevance=0).ids
    cache = m.root / ".vectors" / stats_cache.CACHE_FILE
    assert cache.is_file()
    good = stats_cache.read(cache)[0]
    good = {k: ({kk: bytes(vv) if isinstance(vv, memoryview) else vv for kk, vv in v.items()} if isinstance(v, dict) else v)
            for k, v in good.items()}  # the mapped parts as bytes, kept after the file is replaced
    whole = cache.read_bytes()

    def forged(change):
        data = copy.deepcopy(good)
        change(data)
        return data

    def values(data, kind):
        raw = np.frombuffer(data["postings"]["data"], dtype="<f4").copy()
        raw[0] = kind
        data["postings"]["data"] = raw.astype("<f4").tobytes()

    cases = [
        lambda d: d["cols"].__setitem__("hash", []),
        lambda d: d.__setitem__("length", d["length"][:-1]),
        lambda d: d["texts"].__setitem__("data", 5),
        lambda d: d["texts"].__setitem__("offsets", (np.frombuffer(d["texts"]["offsets"], dtype="<i8") + 1).tobytes()),
        lambda d: d["texts"].__setitem__("data", d["texts"]["data"][:-1] + b"\xc3"),
        lambda d: d.__setitem__("df", {k: "x" for k in d["df"]}),
        lambda d: d.__setitem__("ids", [d["ids"][0]] * len(d["ids"])),
        lambda d: d.__setitem__("tf", [{"postgres": 1}]),
        lambda d: d["tf"].__setitem__("counts", np.zeros(len(d["tf"]["counts"]) // 4, dtype="<i4").tobytes()),
        lambda d: d["tf"].__setitem__("indices", np.full(len(d["tf"]["indices"]) // 4, 10**6, dtype="<i4").tobytes()),
        lambda d: d["tf"].__setitem__("indices", np.zeros(len(d["tf"]["indices"]) // 4, dtype="<i4").tobytes()),
        lambda d: d["tf"].__setitem__("terms", d["tf"]["terms"][:1] * len(d["tf"]["terms"])),
        lambda d: d["length"].__setitem__(0, -17),
        lambda d: values(d, float("nan")),
        lambda d: d["df"].__setitem__(next(iter(d["df"])), d["df"][next(iter(d["df"]))] + 1),
        lambda d: d["postings"].__setitem__("columns", 0),
        lambda d: d["postings"].__setitem__("data", (np.frombuffer(d["postings"]["data"], dtype="<f4") * 7).tobytes()),
        lambda d: values(d, -1e30),
    ]
    for n, change in enumerate(cases):
        stats_cache.write(cache, forged(change))
        fresh = Memory(m.root, embedder=embedder)
        assert fresh.recall("postgres replication", strategy="text", min_relevance=0).ids == expected, n
    head = len(b"memstrata termstats 6\n")
    for n, damaged in enumerate([whole[:len(whole) // 2], whole[:head + 3], b"", b"x" * len(whole),
                                 whole[:head] + (10**12).to_bytes(8, "little") + whole[head + 8:],
                                 whole[:-1], whole.replace(b"Postgres", b"Postgrez", 1)]):
        # cut short, emptied, overwritten, a header past the end, a letter of a text changed (its checksum)
        cache.write_bytes(damaged)
        assert stats_cache.load(cache.parent, good["model"], Frame) is None, n
        fresh = Memory(m.root, embedder=embedder)
        assert fresh.recall("postgres replication", strategy="text", min_relevance=0).ids == expected, n
    stats_cache.write(cache, forged(cases[0]))
    m.reindex()  # derived from the old table: gone with it
    assert not cache.exists() or stats_cache.read(cache)[0]["cols"]["hash"] != []
