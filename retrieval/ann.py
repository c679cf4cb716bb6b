"""Indexes of the vector table at scale: ANN on `vector`, scalar indexes, incremental upkeep.

The table (retrieval/table.py) answers vector search by brute force until it holds
`ann_min_rows` rows (config; measured in bench/perf.py and docs/performance.md); past that
`maintain()` builds an IVF_HNSW_SQ index (metric l2 on unit vectors, so `_distance` keeps
its meaning: similarity = 1 - d/2). Scalar indexes come with the first rows: BTREE on `id`
(every upsert/delete filters `id IN (...)`) and BITMAP on `category` (the category filter).

Upkeep is incremental (`optimize`): the small fragments that single writes leave are compacted,
rows written after a build go into the scalar and full-text indexes and into a delta of the vector
index of their own, never into its base: LanceDB's `table.optimize()` rewrote the whole vector
index each time, even with nothing new (60 s at 200,000 rows), and the rewritten IVF_HNSW_SQ index
searched ten times slower (bench/results/scale.md, ninth round). The IVF partitions are retrained
(the index built again) only when the table has doubled since they were trained, or once for an
index an earlier version let `table.optimize()` rewrite. Build and retrain are slow (seconds to
minutes at 100k rows), so they run from `mem sync`, from `mem reindex` and in the background of
the warm service, never inside a single write.

All functions take a `VectorIndex`; callers that write hold the tree lock.
"""
from __future__ import annotations

import functools
import time
from datetime import timedelta

VECTOR_INDEX = "vector_idx"
SCALAR_INDEXES = (("id", "BTREE", "id_idx"), ("category", "BITMAP", "category_idx"))
ANN_TYPE = "IVF_HNSW_SQ"
UNINDEXED_OPTIMIZE_SHARE = 0.02   # optimize when this share of rows sits outside an index ...
MIN_UNINDEXED = 20                # ... and at least this many rows
MAX_FRAGMENTS = 32                # or when small writes have left more fragments than this
RETRAIN_GROWTH = 2.0              # retrain IVF partitions when the table has grown this much
MAX_VECTOR_DELTAS = 8             # past this many deltas of the vector index, the newest are merged into one ...
DELTA_MERGE_MAX_ROWS = 20000      # ... as many as hold this many rows at most: a merge builds the graphs of all
                                  # it merges again (ten deltas of 10 rows: 0.05 s; two of 150,000 rows: 86 s)
MAX_VECTOR_SEGMENTS = 24          # more segments than this, or deltas holding ...
DELTA_REBUILD_SHARE = 0.5         # ... this share of the base's rows: `maintain` builds the index again
# meta["ann"]["layout"] of an index built as one base with deltas beside it (`optimize`); an index
# without it may have been rewritten by `table.optimize()` and is built again once
LAYOUT = 2


def _indices(table) -> dict:
    out = {}
    try:
        for cfg in table.list_indices():
            name = getattr(cfg, "name", None) or str(cfg)
            out[name] = {"type": str(getattr(cfg, "index_type", "")),
                         "columns": list(getattr(cfg, "columns", []) or [])}
    except Exception:  # noqa: BLE001 - an unreadable index list means "none"
        pass
    return out


def _vector_index_name(indices: dict) -> str | None:
    for name, info in indices.items():
        if "vector" in info["columns"]:
            return name
    return None


def _max_unindexed(table, indices: dict) -> int:
    """The most rows any index (vector, scalar, full-text) has not seen yet."""
    worst = 0
    for name in indices:
        try:
            st = table.index_stats(name)
        except Exception:  # noqa: BLE001
            continue
        worst = max(worst, int(getattr(st, "num_unindexed_rows", 0) or 0))
    return worst


def _fragments(table) -> int | None:
    try:
        return len(table.to_lance().get_fragments())
    except Exception:  # noqa: BLE001 - needs pylance
        return None


def stats(index) -> dict:
    """Rows, fragments, versions and each index with its indexed/unindexed rows."""
    table = index.table()
    if table is None:
        return {"rows": 0, "indices": {}}
    out = {"rows": table.count_rows(), "version": int(table.version), "indices": _indices(table)}
    try:
        out["fragments"] = len(table.to_lance().get_fragments())
    except Exception:  # noqa: BLE001 - needs pylance; informative only
        pass
    for name, info in out["indices"].items():
        try:
            st = table.index_stats(name)
        except Exception:  # noqa: BLE001
            st = None
        if st is not None:
            info["indexed_rows"] = getattr(st, "num_indexed_rows", None)
            info["unindexed_rows"] = getattr(st, "num_unindexed_rows", None)
    return out


def build_vector_index(index, num_partitions: int | None = None) -> float:
    """(Re)build the ANN index on `vector`; seconds taken."""
    table = index.table()
    rows = table.count_rows()
    t0 = time.perf_counter()
    parts = num_partitions or max(1, min(256, rows // 4096))
    from lancedb.index import IvfHnswSq

    table.create_index("vector", config=IvfHnswSq(distance_type="l2", num_partitions=parts), replace=True,
                       name=VECTOR_INDEX)
    took = time.perf_counter() - t0
    meta = index.meta()
    meta["ann"] = {"type": ANN_TYPE, "rows_at_build": rows, "partitions": parts, "built": time.time(),
                   "seconds": round(took, 2), "layout": LAYOUT}
    index._write_meta(meta)
    return took


def vector_segments(table) -> list[int]:
    """Rows of each segment of the vector index (the fragments it covers), its base first, then its
    deltas oldest first; [] without one."""
    name = _vector_index_name(_indices(table))
    if name is None:
        return []
    ds = table.to_lance()
    physical = {f.fragment_id: f.metadata.physical_rows for f in ds.get_fragments()}
    found = [d for d in ds.describe_indices() if d.name == name]
    segments = sorted(found[0].segments, key=lambda seg: seg.dataset_version_at_last_update) if found else []
    return [sum(physical.get(f, 0) for f in seg.fragment_ids) for seg in segments]


def _deltas_to_merge(segments: list[int]) -> int:
    """How many of the newest deltas `optimize` merges with the new rows: none until there are
    MAX_VECTOR_DELTAS, then the newest that hold DELTA_MERGE_MAX_ROWS rows at most (two or more)."""
    deltas = segments[1:]
    if len(deltas) < MAX_VECTOR_DELTAS:
        return 0
    held, count = 0, 0
    for rows in reversed(deltas):
        if held + rows > DELTA_MERGE_MAX_ROWS:
            break
        held, count = held + rows, count + 1
    return count if count >= 2 else 0


def _deltas_too_many(segments: list[int]) -> bool:
    """Whether the vector index should be built again as one base: too many segments to search, or
    deltas (whose partitions were never trained on their rows) holding a large share of the rows."""
    return len(segments) > MAX_VECTOR_SEGMENTS or \
        (len(segments) > 1 and sum(segments[1:]) >= DELTA_REBUILD_SHARE * max(segments[0], 1))


def drop_vector_index(index) -> bool:
    """Drop the ANN index (its base holds a quantized copy of every row it was built on: a privacy
    purge must not keep the removed rows' there); searches are exact until `maintain` builds it again.
    Caller holds the tree lock. False when there was none."""
    table = index.table()
    name = _vector_index_name(_indices(table)) if table is not None else None
    if name is None:
        return False
    table.drop_index(name)
    meta = index.meta()
    meta.pop("ann", None)
    index._write_meta(meta)
    return True


def maintain(index, force_optimize: bool = False, build: bool = True) -> dict:
    """Bring the table's indexes up to date; returns what was done.

    - scalar indexes (id, category) once the table has rows;
    - the ANN index once rows >= settings.ann_min_rows (build=False skips a build: for calls
      that must stay fast);
    - `optimize` (compaction, the new rows into every index, a delta for the ANN index's) when more
      than 2% of the rows (and at least 20) are outside an index, when more than 32 fragments have
      piled up, or when asked;
    - the ANN index built again (its IVF partitions retrained) when the table has doubled since the
      last build, when its deltas pile up (`_deltas_too_many`), or once for an index without this
      version's `layout` mark (or an unreadable `ann` entry in meta.json).
    """
    table = index.table()
    done: dict = {"actions": []}
    if table is None:
        return done
    rows = table.count_rows()
    done["rows"] = rows
    if rows == 0:
        return done
    indices = _indices(table)
    for column, kind, name in SCALAR_INDEXES:
        if not any(info["columns"] == [column] for info in indices.values()):
            try:
                from lancedb.index import Bitmap, BTree

                table.create_index(column, config=BTree() if kind == "BTREE" else Bitmap(), replace=True, name=name)
                done["actions"].append(f"{kind.lower()} index on {column}")
            except Exception as exc:  # noqa: BLE001 - a scalar index is an optimisation only
                done.setdefault("errors", []).append(f"{column}: {exc}")
    threshold = int(getattr(index.settings, "ann_min_rows", 20000))
    vname = _vector_index_name(indices)
    optimized = False
    if vname is None:
        if build and rows >= threshold:
            took = build_vector_index(index)
            done["actions"].append(f"{ANN_TYPE} index built over {rows} rows in {took:.1f}s")
    else:
        meta = index.meta().get("ann")
        meta = meta if isinstance(meta, dict) else {}  # a hand-edited meta.json: built again, which rewrites it
        try:
            built_rows = int(meta.get("rows_at_build") or 0)
        except (TypeError, ValueError):
            built_rows = 0
        if build and built_rows and rows >= RETRAIN_GROWTH * built_rows:
            took = build_vector_index(index)
            done["actions"].append(f"{ANN_TYPE} index rebuilt ({built_rows} -> {rows} rows) in {took:.1f}s")
        elif build and meta.get("layout") != LAYOUT:
            took = build_vector_index(index)
            done["actions"].append(f"{ANN_TYPE} index rebuilt as a base with deltas ({rows} rows) in {took:.1f}s")
        elif build and _deltas_too_many(segments := vector_segments(table)):
            took = build_vector_index(index)
            done["actions"].append(f"{ANN_TYPE} index rebuilt from a base and {len(segments) - 1} deltas "
                                   f"({rows} rows) in {took:.1f}s")
    unindexed = _max_unindexed(table, _indices(table))
    fragments = _fragments(table)
    done["unindexed"], done["fragments"] = unindexed, fragments
    if not done["actions"] or force_optimize:
        if force_optimize or unindexed > max(MIN_UNINDEXED, UNINDEXED_OPTIMIZE_SHARE * rows) or \
                (fragments is not None and fragments > MAX_FRAGMENTS):
            optimize(table)
            optimized = True
            done["actions"].append(f"optimize: {unindexed} rows merged into the indexes, {fragments} fragments compacted")
    if force_optimize and not optimized:
        optimize(table)
        done["actions"].append("optimize")
    if done["actions"]:
        index._frame = None
    return done


def optimize(table, cleanup_older_than: timedelta = timedelta(days=7)) -> None:
    """`table.optimize()` without rewriting the vector index: fragments compacted (the indexes are
    remapped, not rebuilt), new rows merged into the scalar and full-text indexes and put in a delta
    of the vector index (small deltas merged with each other past MAX_VECTOR_DELTAS, never with the
    base; `maintain` builds the index again when they pile up), versions older than
    `cleanup_older_than` removed. Caller holds the tree lock."""
    def step(action) -> None:
        action(table.to_lance())
        table.checkout_latest()  # the next step commits on top of this one (not a "commit conflict")

    step(lambda ds: ds.optimize.compact_files())
    indices = _indices(table)
    vector = _vector_index_name(indices)
    if others := [name for name in indices if name != vector]:
        step(lambda ds: ds.optimize.optimize_indices(index_names=others))
    if vector is not None:
        # 0 makes a delta of the new rows (none: nothing is written); n >= 1 merges the newest n
        # segments with them, never the base (`_deltas_to_merge` counts deltas only)
        merge = _deltas_to_merge(vector_segments(table))
        step(lambda ds: ds.optimize.optimize_indices(index_names=[vector], num_indices_to_merge=merge))
    step(lambda ds: ds.cleanup_old_versions(older_than=cleanup_older_than))


# Query-time settings for the ANN index. Measured on 10k clustered 384-d rows (bench/perf.py,
# ann_probe): default search recall@10 0.89; ef=100 0.976; refine_factor=5 0.996 at ~1.6x
# the default latency, still below brute force. refine_factor re-ranks with the full vectors
# (exact `_distance`), but it multiplies the rows HNSW must find: for recall's wide candidate
# lists (200 rows) at 100k entries, ef=1000/refine 5 took 52 ms and ef=200 without refine
# 15 ms, with the top-20 similarities off by at most 0.004 (scalar quantisation). So narrow
# queries are refined, wide ones are not.
REFINE_FACTOR = 5
REFINE_MAX_LIMIT = 20
FLAT_MAX_ENTRIES = 5000  # a filter admitting this many entries or fewer is searched exactly (tune_query)
EF = 100
# IVF partitions probed (LanceDB's default 20). At 1.65 million rows (256 partitions) a recall's 200-row
# search took 55 ms with 20 and 26 ms with 10 (43 and 24 within two projects); recall@10 of 380 LoCoMo
# questions in that tree: 0.784 with 20, 0.786 with 10, 0.787 searched exactly (docs/performance.md,
# "Fewer partitions probed"). A search that finds too few rows in them looks further (`filled`).
NPROBES = 10


def has_vector_index(index) -> bool:
    """Whether the table has an ANN index (cached per table version: no round trip per query)."""
    table = index.table()
    if table is None:
        return False
    version = int(table.version)
    cached = getattr(index, "_ann_has_index", None)
    if cached is not None and cached[0] == version:
        return cached[1]
    found = _vector_index_name(_indices(table)) is not None
    index._ann_has_index = (version, found)
    return found


def tune_query(query, index, limit: int, admitted: int | None = None, widen: bool = False):
    """Limit a LanceDB vector query to `limit` rows, with the ANN query settings when the table
    has the index (HNSW's `ef` must cover the rows it fetches: `limit` times the refine factor;
    lists longer than REFINE_MAX_LIMIT are not refined). A query whose filter admits at most
    FLAT_MAX_ENTRIES entries (`admitted`) searches their rows exactly instead: at 300,000 turns a
    prefiltered HNSW search within one conversation's project (600 entries of 330,000) found half of
    its 50 nearest rows, in about 35 ms; the exact search reads their vectors, 14-32 ms up to 4,000.
    NPROBES partitions are probed; `widen`: as many more as it takes to fill `limit` (a search that
    came back short: `filled`).

    Every vector search of recall and promotion goes through it by `nearest_rows`.
    """
    query = query.limit(limit)
    if not has_vector_index(index):
        return query
    if not probed(index, admitted):
        return query.bypass_vector_index()
    refine = REFINE_FACTOR if limit <= REFINE_MAX_LIMIT else 1
    # the maximum too: LanceDB probes past the minimum up to it (an unfiltered search with 10 as its
    # minimum, 20 its maximum, took 43 ms at 1.65 million rows, with both at 10 26 ms)
    query = query.minimum_nprobes(NPROBES).maximum_nprobes(0) if widen else query.nprobes(NPROBES)
    try:
        return query.ef(max(EF, limit * refine)).refine_factor(refine)
    except AttributeError:
        return query.refine_factor(refine)


def probed(index, admitted: int | None) -> bool:
    """Whether a search admitting `admitted` entries goes through the ANN index's partitions
    (tune_query): the table has the index and the search admits more than FLAT_MAX_ENTRIES."""
    return has_vector_index(index) and (admitted is None or admitted > FLAT_MAX_ENTRIES)


def nearest_rows(table, index, vector, limit: int, admitted: int, where: str | None, columns: list) -> dict:
    """`columns` of the `limit` rows of `table` nearest `vector` within the SQL filter `where` (None: all),
    which admits `admitted` entries: tuned by tune_query, widened when short (`filled`)."""
    def run(widen: bool) -> dict:
        q = tune_query(table.search(vector.tolist(), vector_column_name="vector"), index, limit, admitted, widen=widen)
        return (q.where(where, prefilter=True) if where else q).select(columns).to_arrow().to_pydict()

    return filled(run, limit, admitted) if probed(index, admitted) else run(False)


def filled(run, limit: int, admitted: int) -> dict:
    """`run(widen)`'s rows (a vector search, tune_query): searched again widened when the partitions
    probed held fewer than the `limit` rows asked for while the search admits more entries than those
    rows cover (an entry has several rows: counting rows let a filter's entries go unscored, and a
    `-k` past recall_candidates asks for every row; an attacker's review found both)."""
    rows = run(False)
    if len(rows["id"]) < limit and len(set(rows["id"])) < admitted:
        return run(True)
    return rows


@functools.cache
def _beside():
    """The threads of the searches run beside a query's first (made on first use)."""
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="vector-search")


def searched_together(search, scopes: list) -> list:
    """`[search(scope) for scope in scopes]`, the first here and the rest at the same time in other
    threads: LanceDB searches in its own threads with the GIL released, so a query's search within
    its projects (retrieval/query_names.py) costs the tree's search little more on two cores (two
    searches at 300,000 turns: 75 -> 49 ms). Results in the order of `scopes`."""
    if len(scopes) < 2:
        return [search(scope) for scope in scopes]
    beside = [_beside().submit(search, scope) for scope in scopes[1:]]
    first = search(scopes[0])
    return [first] + [future.result() for future in beside]


def damaged_indexes(index) -> dict[str, str]:
    """name -> error of each index of the table that a query using it cannot read (a garbled or
    missing file under `_indices/`): each is probed with the smallest query that opens it. A damaged
    id index sends every recall to grep and breaks every upsert; the table's rows are intact."""
    out = {}
    table = index.table()
    try:
        configs = list(table.list_indices())
    except Exception:  # noqa: BLE001 - no readable list: the table itself is the doctor's finding
        return out
    for cfg in configs:
        name = getattr(cfg, "name", None) or str(cfg)
        kind = str(getattr(cfg, "index_type", "")).upper()
        columns = list(getattr(cfg, "columns", []) or [])
        if not columns:
            continue
        column = columns[0]
        try:
            if "FTS" in kind or "INVERTED" in kind:
                table.search("memstrata probe", query_type="fts", fts_columns=column).limit(1).to_list()
            elif column == "vector":
                dim = int(index.meta().get("dim") or 384)
                table.search([0.0] * dim, vector_column_name="vector").limit(1).to_list()
            else:
                table.search().where(f"{column} = 'memstrata-probe'").limit(1).to_list()
        except Exception as exc:  # noqa: BLE001 - whatever lance raises, the index cannot be used
            out[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    return out


def rebuild_indexes(index, names) -> list[str]:
    """Drop the named (damaged) indexes and build them again from the table's rows: the full-text
    index at once, the scalar and ANN ones by `maintain`. Caller holds the tree lock."""
    table = index.table()
    dropped = []
    for name in names:
        table.drop_index(name)
        dropped.append(name)
    index.forget()
    index.rebuild_fts()
    maintain(index)
    return dropped
