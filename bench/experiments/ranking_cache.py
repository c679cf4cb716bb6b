"""A cache of every LoCoMo question's candidate signals, to measure ranking ideas offline.

    python bench/experiments/ranking_cache.py --reuse DIR --out FILE.npz

For each question it keeps what the real pipeline gives (the fused top 100, the ranker's
features, the labels) plus, for every entry of the tree, the cosine of each chunk kind's best
chunk (entry, sentence, context, window) for the dense query and for the query without its
stop words, and the tree's structure; bench/experiments/ranking_ideas.py reads it. Also each entry's best
chunk cosine for the kind a query asks for ("What books has Tim read?" -> "books"; `head`,
nan when the query names no kind). With --resolve-dates the full-text side reads each entry
with its relative dates resolved (retrieval.dates.words after the date line), as an index
built with them would (the tree's own statistics cache is left alone).
"""
from __future__ import annotations

import os
import pickle
import re
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: locomo, fit_ranking

import numpy as np  # noqa: E402

import locomo  # noqa: E402

KINDS = ("entry", "sentence", "context", "window")


def chunk_matrix(table, frame):
    """(positions, kind numbers, vectors) of every chunk in the table."""
    rows = table.search().select(["id", "kind", "vector"]).limit(None).to_arrow()
    vec = np.asarray(rows.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False),
                     dtype=np.float32).reshape(rows.num_rows, -1)
    pos = np.array([frame.pos.get(i, -1) for i in rows.column("id").to_pylist()])
    kind = np.array([KINDS.index(k) for k in rows.column("kind").to_pylist()])
    keep = pos >= 0
    return pos[keep], kind[keep], vec[keep]


def per_kind(pos, kind, cos, n):
    """n x len(KINDS) best cosine of each kind per entry (nan: the entry has no chunk of it)."""
    out = np.full((n, len(KINDS)), -np.inf)
    np.maximum.at(out, (pos, kind), cos)
    out[np.isinf(out)] = np.nan
    return out


def bare(query: str) -> str:
    """The query without its stop words and question words."""
    from memstrata.retrieval import lexical

    kept = [w for w in query.split() if w.strip("?,.!").lower() not in lexical.QUERY_STOPWORDS]
    return " ".join(kept) or query


_AUX = "has|have|had|did|does|do|is|are|was|were|would|could|can|will|might"
_KIND = re.compile(r"^(?:what|which)\s+(?:(?:kinds?|types?|sorts?) of\s+)?((?:[a-z]+\s+){0,2}?[a-z]+)\s+(?:"
                   + _AUX + r")\b", re.I)


def kind_of(query: str) -> str | None:
    """The kind a "what/which KIND ..." question asks for ("What books has Tim read?" -> "books")."""
    m = _KIND.match(query.strip())
    return m.group(1) if m and m.group(1).split()[0].lower() not in _AUX.split("|") else None


def resolved_texts(index, frame):
    """The frame's column texts with each entry's resolved relative dates appended to its date line,
    and its statistics recounted from them (in memory only: the disk cache is not written)."""
    from datetime import datetime, timezone

    from memstrata.retrieval import dates, lexical, stats_cache

    stats_cache.save = lambda *a, **k: None
    texts = index.texts(frame)
    out = []
    for t, c, tags in zip(texts, frame.cols["created"], frame.cols["tags"]):
        w = dates.words(lexical.entry_part(t, tags), datetime.fromtimestamp(c, tz=timezone.utc)) if c else ""
        out.append(t + " " + w if w else t)
    frame._texts, frame._stats, frame._df, frame._reuse = out, None, None, None
    return out


def conversation(root: Path, questions, resolve=False):
    from fit_ranking import open_pipeline
    from memstrata.retrieval import lexical
    from memstrata.retrieval.query_names import common as _common_entities
    from memstrata.retrieval.search import Filters, search

    index, embedder, settings, weights, frame = open_pipeline(root)
    if resolve:
        resolved_texts(index, frame)
    table = index.table()
    pos, kind, vec = chunk_matrix(table, frame)
    n = len(frame.ids)
    texts = index.texts(frame)
    out = {"ids": list(frame.ids), "created": np.array([c or 0.0 for c in frame.cols["created"]]), "texts": texts,
           "questions": []}
    for q in questions:
        sig: dict = {}
        search(index, embedder, q["query"], 10, Filters(), "hybrid", weights, settings, _signals_out=sig)
        entities = lexical.query_entities(q["query"])
        dq = lexical.without_entities(q["query"], _common_entities(index, frame, entities, settings))
        qv = np.asarray(embedder.embed_query(dq), dtype=np.float32)
        qb = np.asarray(embedder.embed_query(bare(dq)), dtype=np.float32)
        rec = {"query": q["query"], "category": q["category"],
               "evidence": [frame.pos[i] for i in q["evidence"] if i in frame.pos],
               "cand": sig.get("candidates"), "x": sig.get("features"), "fused": sig.get("fused"),
               "cosine": sig["cosine"].astype(np.float32), "text": sig["text"].astype(np.float32),
               "entity": None if sig["entity_share"] is None else sig["entity_share"].astype(np.float32),
               "date": None if sig["date_near"] is None else sig["date_near"].astype(np.float32),
               "kinds": per_kind(pos, kind, vec @ qv, n).astype(np.float32),
               "kinds_bare": per_kind(pos, kind, vec @ qb, n).astype(np.float32)}
        head = kind_of(q["query"])
        if head:
            qh = np.asarray(embedder.embed_query(head), dtype=np.float32)
            rec["head"] = np.nan_to_num(np.nanmax(per_kind(pos, kind, vec @ qh, n), axis=1), nan=0.0)
        out["questions"].append(rec)
    out["structure"] = sig["structure"]
    return out


def main():
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--resolve-dates", action="store_true", help="the full-text side reads resolved relative dates")
    args, rest = ap.parse_known_args()
    reuse, convs = locomo.questions_of_built_trees(__doc__, rest)
    cache = {}
    for name, questions in convs.items():
        cache[name] = conversation(reuse / f"conv{name}", questions, args.resolve_dates)
        sys.stderr.write(f"conversation {name}: {len(questions)} questions\n")
    with open(args.out, "wb") as f:
        pickle.dump(cache, f)


if __name__ == "__main__":
    main()
