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
    assert carried == ["", "new ☃", "数据库迁移", "plain", "x"] and carried.well_formed()
    assert not TextColumn(column.data, column.offsets + 1).well_formed()
    cut = column.offsets.copy()
    cut[3] += 1  # inside 数, the first character of text 3
    assert not TextColumn(column.data, cut).well_formed()
