"""The vector table's indexes (retrieval/ann.py): the ANN index past its threshold, exact search under
narrow filters, and upkeep that compacts small writes and leaves the ANN index's base as it was built."""
from __future__ import annotations


def _table_with_rows(tmp_path, n, dim=32, seed=0, ann_min_rows=200, clusters=0):
    """A table of `n` random unit vectors in 7 categories; with `clusters`, tight clusters around that many
    centres, a category each (row i in cluster i % clusters)."""
    import numpy as np

    from memstrata.retrieval.table import VectorIndex, schema
    from memstrata.storage.config import Settings

    settings = Settings(ann_min_rows=ann_min_rows)
    index = VectorIndex(tmp_path, settings)
    db = index._connect()
    index._table = db.create_table("chunks", schema=schema(dim), mode="overwrite")
    index._write_meta({"schema": 1, "model": "fake", "dim": dim, "optimized_version": 0, "fts": True})
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, dim)).astype("float32")
    if clusters:
        vecs = rng.normal(size=(clusters, dim)).astype("float32")[np.arange(n) % clusters] + 0.01 * vecs
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    categories = clusters or 7
    rows = [{"id": f"e{i:05d}", "chunk": 0, "kind": "full", "text": f"t{i}", "vector": vecs[i].tolist(),
             "category": f"c{i % categories}", "title": f"t{i}", "status": "active", "tier": "hot", "tags": [],
             "path": f"c{i % categories}/t{i}.md"} for i in range(n)]
    index._table.add(rows)
    return index, vecs


def test_ann_index_switches_on_past_threshold_and_stays_exact_enough(tmp_path):
    from memstrata.retrieval import ann

    small, _ = _table_with_rows(tmp_path / "small", 150)
    done = ann.maintain(small)
    assert not any("IVF" in a for a in done["actions"])  # below ann_min_rows: brute force only
    assert ann._vector_index_name(ann._indices(small.table())) is None

    index, vecs = _table_with_rows(tmp_path / "big", 3000, ann_min_rows=2000)
    done = ann.maintain(index)
    assert any("IVF_HNSW_SQ" in a for a in done["actions"]), done
    idx = ann._indices(index.table())
    assert ann._vector_index_name(idx) is not None
    assert any(i["columns"] == ["category"] for i in idx.values())
    assert any(i["columns"] == ["id"] for i in idx.values())
    table = index.table()
    hits = 0
    for q in range(20):
        query = vecs[q * 7].tolist()
        exact = table.search(query).bypass_vector_index().limit(10).select(["id"]).to_arrow()["id"].to_pylist()
        approx = table.search(query).limit(10).select(["id"]).to_arrow()["id"].to_pylist()
        assert approx[0] == exact[0] == f"e{q * 7:05d}"
        hits += len(set(exact) & set(approx))
    assert hits / 200 >= 0.9
    # with the query settings search.py should use (ann.tune_query): >= 0.95 and exact distances
    hits = 0
    for q in range(20):
        query = vecs[q * 7 + 1].tolist()
        exact = table.search(query).bypass_vector_index().limit(10).select(["id"]).to_arrow()["id"].to_pylist()
        tuned = ann.tune_query(table.search(query), index, 10).select(["id"]).to_arrow()["id"].to_pylist()
        hits += len(set(exact) & set(tuned))
    assert hits / 200 >= 0.95
    # as many rows as recall asks for (twice recall_candidates), past HNSW's default ef
    wide = 2 * index.settings.recall_candidates
    rows = ann.tune_query(table.search(vecs[5].tolist()), index, wide).select(["id"]).to_arrow()["id"].to_pylist()
    assert len(rows) == wide and rows[0] == "e00005"
    # ann.NPROBES partitions probed (LanceDB's 20 at 1.65 million rows cost twice the time for the same
    # recall: docs/performance.md); widened, as many as a filter needs
    plan = ann.tune_query(table.search(vecs[5].tolist()), index, wide).explain_plan(True)
    assert f"minimum_nprobes={ann.NPROBES}, maximum_nprobes=Some({ann.NPROBES})" in plan, plan
    plan = ann.tune_query(table.search(vecs[5].tolist()), index, wide, widen=True).explain_plan(True)
    assert f"minimum_nprobes={ann.NPROBES}, maximum_nprobes=None" in plan, plan
    hits = 0
    for q in range(20):  # wide lists are not refined: their top 20 still agree with exact search
        query = vecs[q * 7 + 2].tolist()
        exact = table.search(query).bypass_vector_index().limit(20).select(["id"]).to_arrow()["id"].to_pylist()
        tuned = ann.tune_query(table.search(query), index, wide).select(["id"]).to_arrow()["id"].to_pylist()[:20]
        hits += len(set(exact) & set(tuned))
    assert hits / 400 >= 0.9, hits / 400
    # filtered search through the category index agrees with brute force
    where = "category = 'c3'"
    exact = table.search(vecs[3].tolist()).where(where, prefilter=True).bypass_vector_index().limit(5)
    approx = table.search(vecs[3].tolist()).where(where, prefilter=True).limit(5)
    assert exact.select(["id"]).to_arrow()["id"].to_pylist()[0] == approx.select(["id"]).to_arrow()["id"].to_pylist()[0]


def test_a_filter_admitting_few_entries_is_searched_exactly(tmp_path, monkeypatch):
    from memstrata.retrieval import ann

    index, vecs = _table_with_rows(tmp_path / "big", 3000, ann_min_rows=2000)
    ann.maintain(index)
    table = index.table()
    where = "category = 'c3'"  # 428 of 3,000 entries
    monkeypatch.setattr(ann, "FLAT_MAX_ENTRIES", 500)
    for q in range(10):
        query = vecs[q * 11].tolist()
        exact = table.search(query).where(where, prefilter=True).bypass_vector_index().limit(50)
        want = exact.select(["id", "_distance"]).to_arrow().to_pydict()
        got = ann.tune_query(table.search(query), index, 50, admitted=428).where(where, prefilter=True)
        assert got.select(["id", "_distance"]).to_arrow().to_pydict() == want
    monkeypatch.setattr(ann, "FLAT_MAX_ENTRIES", 400)  # more admitted than that: the index's search
    plan = ann.tune_query(table.search(vecs[0].tolist()), index, 50, admitted=428).where(where, prefilter=True)
    assert "ANNSubIndex" in plan.explain_plan()
    assert "ANNSubIndex" not in ann.tune_query(table.search(vecs[0].tolist()), index, 50, admitted=400).explain_plan()


def test_a_filtered_search_short_of_rows_looks_in_more_partitions(tmp_path, monkeypatch):
    from memstrata.retrieval import ann

    monkeypatch.setattr(ann, "FLAT_MAX_ENTRIES", 10)  # 188 admitted: through the index, not exactly
    index, vecs = _table_with_rows(tmp_path, 3000, ann_min_rows=2000, clusters=16)
    ann.build_vector_index(index, num_partitions=16)
    table, where = index.table(), "category = 'c9'"  # 188 entries, a cluster far from the query's
    short = ann.tune_query(table.search(vecs[0].tolist()), index, 100, admitted=188).where(where, prefilter=True)
    assert len(short.select(["id"]).to_arrow()) < 100  # ann.NPROBES partitions near the query hold few of c9's rows
    got = ann.nearest_rows(table, index, vecs[0], 100, 188, where, ["id"])["id"]
    assert len(set(got)) == 100 and all(int(i[1:]) % 16 == 9 for i in got)

    def rows(ids):
        return lambda widen: {"id": ids, "widened": widen}

    assert ann.filled(rows([f"e{i}" for i in range(100)]), 100, 188)["widened"] is False  # as many rows as asked
    assert ann.filled(rows([f"e{i // 2}" for i in range(32)]), 50, 21)["widened"] is True  # 32 rows, 16 of 21 entries
    assert ann.filled(rows([f"e{i // 2}" for i in range(42)]), 50, 21)["widened"] is False  # every entry admitted
    assert ann.filled(rows([f"e{i}" for i in range(640)]), 5000, 2400)["widened"] is True  # -k past the pool, no filter


def test_small_writes_are_compacted_with_exact_row_counts(tmp_path):
    import numpy as np

    from memstrata.retrieval import ann

    index, _ = _table_with_rows(tmp_path, 2500, ann_min_rows=2000)
    ann.maintain(index)
    table = index.table()
    rng = np.random.default_rng(1)
    for i in range(40):  # 40 single-row writes: 40 fragments outside the index
        v = rng.normal(size=32).astype("float32")
        v /= np.linalg.norm(v)
        table.delete(f"id = 'e{i:05d}'")
        table.add([{"id": f"e{i:05d}", "chunk": 0, "kind": "full", "text": "x", "vector": v.tolist(),
                    "category": "c0", "title": "x", "status": "active", "tier": "hot", "tags": [],
                    "path": "c0/x.md"}])
    for i in range(30):
        table.add([{"id": f"n{i:05d}", "chunk": 0, "kind": "full", "text": "y", "vector": rng.normal(size=32).tolist(),
                    "category": "c1", "title": "y", "status": "active", "tier": "hot", "tags": [],
                    "path": "c1/y.md"}])
    before = ann.stats(index)
    assert before["rows"] == 2530
    done = ann.maintain(index)
    after = ann.stats(index)
    assert after["rows"] == 2530
    ids = table.to_arrow()["id"].to_pylist()
    assert len(ids) == len(set(ids)) == 2530
    assert any("optimize" in a for a in done["actions"]), done
    vinfo = after["indices"][ann._vector_index_name(after["indices"])]
    assert vinfo.get("unindexed_rows", 0) == 0
    if "fragments" in before and "fragments" in after:
        assert after["fragments"] < before["fragments"]


def _row(row_id: str, vector, text: str = "x") -> dict:
    return {"id": row_id, "chunk": 0, "kind": "full", "text": text, "vector": [float(x) for x in vector],
            "category": "c0", "title": text, "status": "active", "tier": "hot", "tags": [], "path": f"c0/{row_id}.md"}


def _segment_ids(table) -> list[str]:
    """The uuid of each segment of the ANN index: its base, then its deltas."""
    found = [d for d in table.to_lance().describe_indices() if d.name == "vector_idx"]
    segments = sorted(found[0].segments, key=lambda seg: seg.dataset_version_at_last_update) if found else []
    return [str(seg.uuid) for seg in segments]


def test_upkeep_puts_new_rows_in_deltas_and_never_rewrites_the_base(tmp_path):
    """LanceDB's own optimize rewrote the whole ANN index at each upkeep (60 s at 200,000 rows, with
    nothing new) and the rewritten index searched ten times slower: new rows go into deltas, merged
    with each other past MAX_VECTOR_DELTAS, and the base stays the file it was built as."""
    import numpy as np

    from memstrata.retrieval import ann

    index, _ = _table_with_rows(tmp_path, 2500, ann_min_rows=2000)
    ann.maintain(index)
    table = index.table()
    base = _segment_ids(table)
    assert len(base) == 1
    rng = np.random.default_rng(7)
    added = {}
    for round_ in range(ann.MAX_VECTOR_DELTAS + 1):
        for i in range(25):
            v = rng.normal(size=32).astype("float32")
            added[f"n{round_}-{i}"] = v / np.linalg.norm(v)
            table.add([_row(f"n{round_}-{i}", added[f"n{round_}-{i}"])])
        ann.optimize(table)
        segments = _segment_ids(table)
        assert segments[0] == base[0]
        # a delta per round, until MAX_VECTOR_DELTAS of them are merged into one with the new rows
        assert len(segments) == (round_ + 2 if round_ < ann.MAX_VECTOR_DELTAS else 2), (round_, segments)
        assert table.index_stats("vector_idx").num_unindexed_rows == 0
    assert table.count_rows() == 2500 + len(added)
    for row_id, v in list(added.items())[::20]:  # rows in the deltas are found by the index's search
        got = ann.tune_query(table.search(v.tolist()), index, 5).select(["id"]).to_arrow()["id"].to_pylist()
        assert got[0] == row_id
    ann.optimize(table)  # the merged delta's small fragments compacted (its segment remapped)
    segments = _segment_ids(table)
    assert len(segments) == 2 and segments[0] == base[0]
    # nothing new: nothing written (LanceDB's optimize wrote the whole index again)
    version = table.version
    ann.optimize(table)
    assert table.version == version
    assert _segment_ids(table) == segments


def test_an_index_of_an_earlier_version_is_built_again_once(tmp_path):
    """An index without the layout mark may have been rewritten whole by LanceDB's optimize (slow to
    search): maintain builds it again, once."""
    from memstrata.retrieval import ann

    index, _ = _table_with_rows(tmp_path, 2500, ann_min_rows=2000)
    ann.maintain(index)
    meta = index.meta()
    del meta["ann"]["layout"]
    index._write_meta(meta)
    before = _segment_ids(index.table())
    done = ann.maintain(index)
    assert any("rebuilt as a base with deltas" in a for a in done["actions"]), done
    assert _segment_ids(index.table()) != before
    assert not any("rebuilt" in a for a in ann.maintain(index)["actions"])
    for damaged in ("garbage", [1, 2], {"rows_at_build": "lots"}):  # meta.json edited by hand: built again, once
        index._write_meta({**index.meta(), "ann": damaged})
        assert any("rebuilt as a base" in a for a in ann.maintain(index)["actions"])
        assert not ann.maintain(index)["actions"]


def test_a_dropped_ann_index_is_built_again_by_maintain(tmp_path):
    """A privacy purge drops the ANN index (its base keeps a quantized copy of every row it was built
    on); searches stay exact meanwhile, and the next upkeep builds it from the rows left."""
    from memstrata.retrieval import ann

    index, vecs = _table_with_rows(tmp_path, 2500, ann_min_rows=2000)
    ann.maintain(index)
    assert ann.drop_vector_index(index)
    assert not _segment_ids(index.table()) and not ann.has_vector_index(index)
    assert "ann" not in index.meta()
    got = ann.tune_query(index.table().search(vecs[3].tolist()), index, 3).select(["id"]).to_arrow()["id"].to_pylist()
    assert got[0] == "e00003"
    assert not ann.drop_vector_index(index)
    done = ann.maintain(index)
    assert any("IVF_HNSW_SQ index built" in a for a in done["actions"]), done
    assert ann.has_vector_index(index)


def test_which_deltas_are_merged_and_when_the_index_is_built_again():
    """Pure decisions on the rows of each segment (the base first)."""
    from memstrata.retrieval import ann

    few = [100_000] + [10] * (ann.MAX_VECTOR_DELTAS - 1)
    assert ann._deltas_to_merge(few) == 0  # not yet: each delta is searched on its own
    assert ann._deltas_to_merge(few + [10]) == ann.MAX_VECTOR_DELTAS
    big = ann.DELTA_MERGE_MAX_ROWS
    # a large delta is left as it is: only the newest small ones are merged (a merge rebuilds what it takes)
    assert ann._deltas_to_merge([100_000, big] + [10] * ann.MAX_VECTOR_DELTAS) == ann.MAX_VECTOR_DELTAS
    assert ann._deltas_to_merge([100_000] + [big // 2] * ann.MAX_VECTOR_DELTAS) == 2
    assert ann._deltas_to_merge([100_000] + [big] * ann.MAX_VECTOR_DELTAS) == 0  # none small enough
    assert not ann._deltas_too_many([100_000]) and not ann._deltas_too_many([])
    assert not ann._deltas_too_many([100_000, 40_000])
    assert ann._deltas_too_many([100_000, 30_000, 20_000])  # half the base's rows in deltas
    assert ann._deltas_too_many([100_000] + [10] * ann.MAX_VECTOR_SEGMENTS)


def test_deltas_holding_half_the_base_get_the_index_built_again(tmp_path):
    import numpy as np

    from memstrata.retrieval import ann

    index, _ = _table_with_rows(tmp_path, 2500, ann_min_rows=2000)
    ann.maintain(index)
    table = index.table()
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(1300, 32)).astype("float32")
    table.add([_row(f"m{i}", v / np.linalg.norm(v)) for i, v in enumerate(vectors)])
    ann.optimize(table)
    assert ann.vector_segments(table) == [2500, 1300]
    done = ann.maintain(index)
    assert any("rebuilt from a base and 1 deltas" in a for a in done["actions"]), done
    assert ann.vector_segments(index.table()) == [3800]
    assert not ann.maintain(index)["actions"]



def test_a_delta_of_few_rows_leaves_no_lines_in_the_log(tmp_path):
    """A delta of a few rows leaves most IVF partitions empty, and Lance warned once for each on stderr
    (the service's log: 256 lines a delta at 300,000 turns): its log is at errors only unless set."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys; sys.path.insert(0, sys.argv[1]); from test_ann import _table_with_rows, _row; "
            "from pathlib import Path; from memstrata.retrieval import ann; "
            "index, vecs = _table_with_rows(Path(sys.argv[2]), 3000, ann_min_rows=2000); "
            "ann.build_vector_index(index, num_partitions=16); "
            "index.table().add([_row('new', vecs[0])]); ann.optimize(index.table()); "
            "print(ann.vector_segments(index.table()))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANCE_")}
    p = subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve().parent), str(tmp_path)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[3000, 1]"
    assert "WARN" not in p.stderr, p.stderr[-2000:]
