"""Per-entry stem counts as flat arrays read back as the dicts they were built from, through carries."""
from __future__ import annotations

import random
from collections import Counter

from memstrata.retrieval.term_rows import TermRows


def _rows(rng, n):
    words = ["alpha", "beta", "gamma", "delta", "eps"]
    return [Counter(rng.choice(words) for _ in range(rng.randint(0, 5))) for _ in range(n)]


def test_rows_read_back_as_built_with_empty_rows_and_lengths():
    built = [{"alpha": 2}, {}, {}, {"beta": 1, "alpha": 3}, {}]
    rows = TermRows.build(iter(built))
    assert len(rows) == 5 and [rows[p] for p in range(5)] == built and rows == built
    assert rows.lengths() == [2, 0, 0, 4, 0]
    assert rows.column_counts() == Counter({"alpha": 2, "beta": 1})
    assert rows.column_counts([1, 3]) == Counter({"alpha": 1, "beta": 1})
    assert TermRows.build([]).lengths() == [] and TermRows.build([{}, {}]).lengths() == [0, 0]
    matrix = rows.matrix([3, 0]).tocsr()
    assert matrix.shape == (2, 2) and matrix[0, rows.vocab["alpha"]] == 3 and matrix[1, rows.vocab["alpha"]] == 2


def test_carried_rows_equal_rows_built_afresh():
    rng = random.Random(7)
    counts = _rows(rng, 300)
    rows = TermRows.build(counts)
    for step in range(6):
        new, reuse, fresh = [], [], {}
        for j, c in enumerate(counts):
            if (j + step) % 5 == 0:
                continue  # removed
            if (j + step) % 7 == 0:  # changed, with a stem never seen before
                c = Counter({**c, f"new{step}": 1})
                fresh[len(new)] = c
                reuse.append(None)
            else:
                reuse.append(j)
            new.append(c)
        fresh[len(new)] = Counter()  # a new empty entry at the end
        reuse.append(None)
        new.append(Counter())
        rows = rows.carried(reuse, fresh)
        assert rows == new and rows.lengths() == [sum(c.values()) for c in new]
        assert rows.column_counts() == Counter(s for c in new for s in c)
        counts = new


def test_a_text_column_reads_back_its_texts_through_carries():
    from memstrata.retrieval.text_column import TextColumn

    texts = ["plain", "", "café au lait", "数据库迁移", "emoji 🙂 end", ""]
    column = TextColumn.of(texts)
    assert list(column) == texts and column == texts and len(column) == 6 and column[-1] == "" and column.well_formed()
    reuse = [5, None, 3, 0, None]
    carried = column.carried(reuse, {1: "new ☃", 4: "x"})
    assert carried == ["", "new ☃", "数据库迁移", "plain", "x"] and carried.overlaid() == 2
    assert carried.data is column.data  # the base buffer is kept, not copied: it may be mapped from disk
    assert TextColumn(*carried.flat()) == carried and TextColumn(*carried.flat()).well_formed()
    again = carried.carried([1, 0, None, 3], {2: "again"})  # an extra text kept, a base one, a fresh one
    assert again == ["new ☃", "", "again", "plain"] and again.overlaid() == 2 and again.data is column.data
    assert not TextColumn(column.data, column.offsets + 1).well_formed()
    cut = column.offsets.copy()
    cut[3] += 1  # inside 数, the first character of text 3
    assert not TextColumn(column.data, cut).well_formed()


def test_the_statistics_cache_reads_back_what_it_wrote_and_refuses_a_stem_twice_in_a_row(tmp_path):
    import numpy as np

    from memstrata.retrieval import lexical, stats_cache
    from memstrata.retrieval.frame import Frame
    from memstrata.retrieval.text_column import TextColumn

    texts = ["Caroline went to the pottery workshop", "", "数据库 migration 🙂", "pottery again and again"]
    ids = [f"e{n}" for n in range(4)]
    cols = {"hash": ["h"] * 4, "created": [1.0] * 4, "tags": [[]] * 4, "path": [f"{i}.md" for i in ids],
            "category": ["c"] * 4}
    frame = Frame(0, ids, cols)
    frame._texts = TextColumn.of(texts)
    frame._stats = lexical.TermStats(texts)
    frame._stats.postings()
    frame._df = lexical.doc_freqs(texts)
    stats_cache.save(tmp_path, frame, "m")
    loaded = stats_cache.load(tmp_path, "m", Frame)
    assert loaded._texts == texts and loaded._stats.tf == frame._stats.tf
    assert loaded._stats.length == frame._stats.length and loaded._stats._postings is not None
    assert isinstance(loaded._texts.data, memoryview)  # read where it lies in the mapped file
    query = {"pottery": 1.0, "caroline": 1.0}
    assert loaded._stats.top(query, 0.9, 0.5, 5) == frame._stats.top(query, 0.9, 0.5, 5) != {}
    data, _ = stats_cache.read(tmp_path / stats_cache.CACHE_FILE)
    indices = np.frombuffer(data["tf"]["indices"], dtype="<i4").copy()
    first_row = slice(0, int(np.frombuffer(data["tf"]["indptr"], dtype="<i8")[1]))
    indices[first_row] = indices[first_row][0]  # one stem over and over in the first row
    data["tf"]["indices"] = indices.tobytes()
    stats_cache.write(tmp_path / stats_cache.CACHE_FILE, data)
    assert stats_cache.load(tmp_path, "m", Frame) is None


def test_a_vocabulary_of_words_no_entry_holds_is_renumbered():
    """Rewriting entries with new words must not grow the shared vocabulary for ever (the attacker:
    a million stems held for 15,501 in use); the statistics stay those of a full count."""
    from memstrata.retrieval import lexical

    texts = [f"stable words here {n}" for n in range(50)]
    stats = lexical.TermStats(texts)
    stats.postings()
    for step in range(30):
        texts = list(texts)
        texts[0] = " ".join(f"fresh{step}x{k}" for k in range(1500))
        reuse = [None] + list(range(1, 50))
        stats = lexical.TermStats.carried(stats, reuse, texts)
        stats.postings()
    fresh = lexical.TermStats(texts)
    assert len(stats.tf.terms) <= 2 * len(stats.df) + lexical.VOCABULARY_SLACK
    assert (stats.tf, stats.df, stats.length) == (fresh.tf, fresh.df, fresh.length)
    assert stats.top({"fresh29x7": 1.0, "stable": 1.0}, 0.9, 0.5, 5) == fresh.top({"fresh29x7": 1.0, "stable": 1.0}, 0.9, 0.5, 5)


def test_a_cache_that_is_no_file_is_not_read(tmp_path):
    import os

    from memstrata.retrieval import stats_cache
    from memstrata.retrieval.frame import Frame

    import threading

    os.mkfifo(tmp_path / stats_cache.CACHE_FILE)
    got = []
    reader = threading.Thread(target=lambda: got.append(stats_cache.load(tmp_path, "m", Frame)), daemon=True)
    reader.start()
    reader.join(30)  # a read of the fifo would block for ever
    assert not reader.is_alive() and got == [None]


def test_frame_columns_read_from_arrow_share_equal_values_exactly():
    """Tag lists are read through their items' codes (a list per row took 1.9 s at 330,000 entries):
    lists whose joined text looks alike stay apart, equal ones are one object, nulls stay None."""
    import pyarrow as pa

    from memstrata.retrieval.frame import _python_columns

    tags = [["a\x1fb", "c"], ["a", "b\x1fc"], None, [], [None], ["x"], ["a\x1fb", "c"], [""], ["x"]]
    paths = ["p", None, "p", "q", None, "q", "p", "", "q"]
    table = pa.table({"tags": pa.array(tags), "path": pa.array(paths), "size": pa.array(range(9))})
    for source in (table, pa.concat_tables([table.slice(0, 4), table.slice(4)]), table.slice(2)):
        got = _python_columns(source)
        want = {c: source.column(c).to_pylist() for c in source.column_names}
        assert got == want
        first = {}
        for value in got["tags"] + got["path"]:
            if value is not None:
                assert first.setdefault(repr(value), value) is value  # one object per distinct value
    empty = pa.table({"tags": pa.array([], type=pa.list_(pa.string())), "path": pa.array([], type=pa.string())})
    assert _python_columns(empty) == {"tags": [], "path": []}
