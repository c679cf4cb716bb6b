"""Tries at issue 24's notes MRR target: three ways to lift the answer over a sibling note, leave-one-corpus-out.

    python bench/notes.py --reuse /tmp/spec-trees --no-baselines      # the trees, once
    python bench/experiments/notes_tries.py --notes /tmp/spec-trees --cache /tmp/spec-tries

On each English notes tree, the engine's candidates ordered by NOTES_WEIGHTS (scoring/ranker.py),
against three changes, each setting chosen on the other corpora and measured on the held-out one,
paired over its questions (mean difference in MRR@10 and its standard error):
- specificity: among the first `top` notes within `margin` of the first one's score, the one whose
  names (title, aliases, path; with `headings` also its heading paths) hold the query's rarest
  matched term (idf over the tree's names, not its bodies) goes first (a tie-break, not a weight);
- chunk shape: one feature of the note's chunk cosines (second best, best two, the gap between
  them, the share or count within 0.05 of the best, log of the rows, best - mean, mean) added to
  NOTES_WEIGHTS with a weight (a hub penalty is a negative weight on the count or share);
- the dense query stripped of its question words (a leading "how do I", the question words, or
  only the text side's terms), the rest of the pipeline unchanged.
"""
from __future__ import annotations

import argparse
import math
import os
import pickle
import re
import sys
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MEMSTRATA_SERVICE", "off")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: fit_ranking, notes

import numpy as np  # noqa: E402

import fit_ranking as fr  # noqa: E402
import notes  # noqa: E402

CORPORA = ("til", "rustbook", "vault", "zettel")
_SEPARATORS = re.compile(r"[/\\_.-]+")
_LEAD = re.compile(r"^\s*(?:(?:how|what|which|why|when|where|who)(?:'s)?\b(?:\s+(?:don't|doesn't|can't|do|does|did|can|"
                   r"could|should|would|is|are|was|were|to))?(?:\s+(?:i|you|we|my))?|is there (?:a|any) way to|"
                   r"can (?:i|you)|(?:do|does|did|is|are) (?:i|you|there|it))\b\s*", re.I)
_QWORDS = frozenset("how what which why when where who whom do does did i can could should would is are was were my me"
                    .split())


def _lead(q: str) -> str:
    return _LEAD.sub("", q).rstrip("?").strip() or q


def _qwords(q: str) -> str:
    return " ".join(w for w in q.rstrip("?").split() if w.lower().strip("?,.") not in _QWORDS) or q


def _terms(q: str) -> str:
    from memstrata.retrieval import lexical

    return " ".join(lexical.query_terms(q)) or q


DENSE = {"none": None, "leading question stripped": _lead, "question words dropped": _qwords, "terms only": _terms}


class _Query:
    """The embedder with the query rewritten before it is embedded; keeps the last query vector."""

    def __init__(self, embedder, rewrite=None):
        self.embedder, self.rewrite, self.last = embedder, rewrite, None

    def embed_query(self, q):
        self.last = self.embedder.embed_query(self.rewrite(q) if self.rewrite else q)
        return self.last

    def __getattr__(self, name):
        return getattr(self.embedder, name)


def _stems(text: str) -> frozenset:
    from memstrata.retrieval import lexical

    return frozenset(lexical.stem(w) for w in lexical.words(text))


def extract(root: Path, questions) -> dict:
    """Per question the candidates' features, labels, names, heading paths and chunk cosines;
    and the MRR@10 of each dense-query variant."""
    from memstrata.retrieval import lexical, names
    from memstrata.retrieval.search import Filters, search
    from memstrata.scoring import ranker as rk

    index, embedder, settings, weights, frame = fr.open_pipeline(root)
    texts = index.texts(frame)
    named = [_stems(f"{frame.cols['title'][p] or ''} {' '.join(names.aliases_in(texts[p]))} "
                    f"{_SEPARATORS.sub(' ', (frame.cols['path'][p] or '').removesuffix('.md'))}")
             for p in range(len(frame.ids))]
    rows = index.table().search().select(["id", "vector", "kind", "text"]).limit(None).to_arrow()
    vec = np.asarray(rows.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False),
                     dtype=np.float32).reshape(rows.num_rows, -1)
    of, heads = {}, {}
    for i, (rid, kind, text) in enumerate(zip(rows.column("id").to_pylist(), rows.column("kind").to_pylist(),
                                              rows.column("text").to_pylist())):
        of.setdefault(rid, []).append(i)
        if kind == "section" and text:  # its heading path, the title left out
            heads.setdefault(rid, set()).add(_stems(" ".join(text.split("\n", 1)[0].split(" > ")[1:])))
    out, dense = [], {v: [] for v in DENSE}
    for q in questions:
        want = {frame.by_path[p] for p in q["notes"] if p in frame.by_path}
        for variant, rewrite in DENSE.items():
            sig: dict = {}
            query = _Query(embedder, rewrite)
            search(index, query, q["question"], 10, Filters(), "hybrid", weights, settings, _signals_out=sig)
            cand = np.asarray(sig.get("candidates", []), dtype=np.int64)
            x = sig.get("features", np.zeros((0, len(rk.FEATURES))))
            top = cand[np.argsort(-rk.rank(x, rk.NOTES_WEIGHTS), kind="stable")[:10]]
            hit = [r for r, p in enumerate(top) if p in want]
            dense[variant].append(1.0 / (hit[0] + 1) if hit else 0.0)
            if rewrite is None:
                qv = np.asarray(query.last, dtype=np.float32)
                out.append({"terms": [lexical.stem(t) for t in lexical.query_terms(q["question"])], "x": x,
                            "y": np.isin(cand, list(want)), "names": [named[p] for p in cand],
                            "heads": [heads.get(frame.ids[p], set()) for p in cand],
                            "sims": [vec[of.get(frame.ids[p], [])] @ qv for p in cand]})
    return {"n": len(frame.ids), "df": Counter(s for n in named for s in n), "questions": out,
            "dense": {v: np.array(r) for v, r in dense.items()}}


def _first(y, order) -> float:
    hit = np.flatnonzero(y[order][:10])
    return 1.0 / (hit[0] + 1) if len(hit) else 0.0


def specificity(data, top, margin, with_heads) -> np.ndarray:
    from memstrata.scoring import ranker as rk

    out = []
    for q in data["questions"]:
        s = rk.rank(q["x"], rk.NOTES_WEIGHTS)
        order = list(np.argsort(-s, kind="stable")[:10])
        window = [i for i in order[:top] if s[order[0]] - s[i] <= margin * abs(s[order[0]])]
        held = {i: set(q["names"][i]) | (set().union(*q["heads"][i]) if with_heads and q["heads"][i] else set())
                for i in window}
        matched = {t for i in window for t in q["terms"] if t in held[i]}
        if matched:
            rarest = max(matched, key=lambda t: (math.log((data["n"] + 1) / (data["df"].get(t, 0) + 0.5)), t))
            best = next(i for i in window if rarest in held[i])
            order = [best] + [i for i in order if i != best]
        out.append(_first(q["y"], np.array(order, dtype=np.int64)))
    return np.array(out)


SHAPES = ("second", "mean2", "gap", "share05", "n05", "logn", "spread", "mean")


def _shape(sims, which: str) -> float:
    s = np.sort(np.asarray(sims, dtype=float))[::-1]
    if not len(s):
        return 0.0
    second = s[1] if len(s) > 1 else s[0]
    near = s >= s[0] - 0.05
    return {"second": second, "mean2": (s[0] + second) / 2, "gap": s[0] - second, "share05": float(near.mean()),
            "n05": float(near.sum()), "logn": math.log(len(s)), "spread": s[0] - s.mean(), "mean": s.mean()}[which]


def chunk_shape(data, which, w, scale) -> np.ndarray:
    from memstrata.scoring import ranker as rk

    out = []
    for q in data["questions"]:
        f = np.array([_shape(s, which) for s in q["sims"]]) / scale
        out.append(_first(q["y"], np.argsort(-(rk.rank(q["x"], rk.NOTES_WEIGHTS) + w * f), kind="stable")))
    return np.array(out)


def loco(title: str, runs: dict, base: dict) -> None:
    """Each corpus held out: the setting best on the others (mean gain), measured on it."""
    print(f"\n{title}\n\n| held out | engine MRR@10 | held out | paired delta (s.e.) | setting chosen on the others |")
    print("| --- | --- | --- | --- | --- |")
    for held in base:
        others = [c for c in base if c != held]
        g = max(runs[held], key=lambda g: np.mean([runs[c][g].mean() - base[c].mean() for c in others]))
        d = runs[held][g] - base[held]
        print(f"| {held} | {base[held].mean():.3f} | {runs[held][g].mean():.3f} | {d.mean():+.3f} "
              f"({d.std(ddof=1) / math.sqrt(len(d)):.3f}) | {g} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", required=True, help="the trees of bench/notes.py --reuse")
    ap.add_argument("--cache", required=True, help="a folder: each corpus's extraction is kept there")
    ap.add_argument("--corpus", action="append")
    args = ap.parse_args(argv)
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    data = {}
    for name in args.corpus or CORPORA:
        f = cache / f"{name}.pkl"
        if not f.exists():
            f.write_bytes(pickle.dumps(extract(Path(args.notes) / name, notes.load_questions(name))))
        data[name] = pickle.loads(f.read_bytes())
    base = {c: specificity(d, 1, 0.0, False) for c, d in data.items()}
    grid = [(t, m, h) for t in (2, 3, 5) for m in (0.02, 0.05, 0.1, 0.2, 0.5) for h in (False, True)]
    loco("Specificity tie-break (top, margin as a share of the first score, with headings)",
         {c: {g: specificity(d, *g) for g in grid} for c, d in data.items()}, base)
    scale = {w: float(np.std([_shape(s, w) for d in data.values() for q in d["questions"] for s in q["sims"]])) or 1.0
             for w in SHAPES}
    grid = [(w, v) for w in SHAPES for v in (-0.3, -0.2, -0.1, -0.05, -0.02, 0.02, 0.05, 0.1, 0.2, 0.3)]
    loco("Chunk shape (feature, weight on the feature over its standard deviation)",
         {c: {g: chunk_shape(d, g[0], g[1], scale[g[0]]) for g in grid} for c, d in data.items()}, base)
    mean2 = float(np.std([_shape(s, "mean2") for d in data.values() for q in d["questions"] for s in q["sims"]]))
    loco("Best two chunks only (the mean of the note's two best chunk cosines, weight chosen)",
         {c: {("mean2", v): chunk_shape(d, "mean2", v, mean2) for v in (0.02, 0.05, 0.1, 0.2, 0.3, 0.5)}
          for c, d in data.items()}, base)
    loco("Dense query rewritten", {c: {v: d["dense"][v] for v in DENSE if v != "none"} for c, d in data.items()},
         {c: d["dense"]["none"] for c, d in data.items()})


if __name__ == "__main__":
    main()
