"""Fit the learned ranker (scoring/ranker.py) by leave-one-conversation-out on the LoCoMo dev trees.

    python bench/fit_ranking.py --reuse DIR    # DIR: the trees bench/locomo.py --reuse DIR built

For every question the real recall pipeline gives the features of the fused ranking's top
100 candidates (scoring.ranker.FEATURES) once; the ranker is then fitted offline: a pairwise
logistic regression (each evidence turn against the 50 best-fused other candidates of its
question), made monotone in the text match and refined by coordinate ascent on recall@10.
For each conversation it is fitted on the other four and measured on it (the fused ranking's recall@10 beside it); the weights
fitted on all five are printed last (they are scoring.ranker.WEIGHTS). The fusion weights
under it (recall_* in storage/config.py) were chosen by LOCO grid search before the ranker
(git history of this script).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # threaded BLAS: 100x slower fits
    os.environ.setdefault(_var, "1")  # on a shared 2-core machine
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import locomo  # noqa: E402

STEPS = (0.0, 0.5, 0.8, 1.25, 2.0, -1.0)  # coordinate ascent: each weight times these in turn


def open_pipeline(root: Path):
    """The warm pieces of a tree's recall: (index, embedder, settings, fusion weights, frame)."""
    from memstrata import Memory
    from memstrata.retrieval import fusion

    m = Memory(root)
    m.recall("warm up", count_access=False)
    state = m._recall.state
    index, embedder, settings = state.vector_index(), state.model(), state.settings
    return index, embedder, settings, fusion.FusionWeights.from_settings(settings), index.frame()


def examples(root: Path, questions):
    """[(features, labels, evidence count)] of each question, from the real pipeline."""
    from memstrata.retrieval.search import Filters, search

    index, embedder, settings, weights, frame = open_pipeline(root)
    out = []
    for q in questions:
        sig: dict = {}
        search(index, embedder, q["query"], 10, Filters(), "hybrid", weights, settings, _signals_out=sig)
        evidence = [frame.pos[i] for i in q["evidence"] if i in frame.pos]
        x = np.zeros((100, len(_features())))
        y = np.zeros(100)
        if "features" in sig:
            c = len(sig["candidates"])
            x[:c] = sig["features"]
            y[:c] = np.isin(sig["candidates"], evidence)
        out.append((x, y, max(len(evidence), 1)))
    return out


def _features():
    from memstrata.scoring.ranker import FEATURES

    return FEATURES


def stack(rows):
    return (np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows]), np.array([r[2] for r in rows]))


def cached_rows(cache: Path | None, name: str, width: int, extract) -> list:
    """The feature rows of one group, from `cache` (NAME.npz) when it holds them with `width` features;
    else `extract()`, kept there for the next run when there are any."""
    path = None if cache is None else Path(cache) / f"{name}.npz"
    if path is not None and path.exists():
        data = np.load(path)
        if data["x"].shape[2] == width:
            return list(zip(data["x"], data["y"], data["n"]))
    rows = extract()
    if path is not None and rows:
        path.parent.mkdir(parents=True, exist_ok=True)
        x, y, n = stack(rows)
        np.savez(path, x=x, y=y, n=n)
    return rows


def recall_at_10(batch, w) -> np.ndarray:
    x, y, n = batch
    top = np.argsort(-(x @ w), axis=1, kind="stable")[:, :10]
    return np.take_along_axis(y, top, 1).sum(1) / n


def fit_pairwise(batch, l2=1.0, iters=30, negatives=50):
    """Pairwise logistic regression by Newton's method over (evidence, other candidate) pairs."""
    x, y, _ = batch
    diffs = []
    for xq, yq in zip(x, y):
        pos, neg = xq[yq == 1], xq[yq == 0][:negatives]
        if len(pos):
            diffs.append((pos[:, None, :] - neg[None, :, :]).reshape(-1, x.shape[2]))
    a = np.vstack(diffs)
    scale = np.abs(a).mean(0) + 1e-9
    a = a / scale
    w = np.zeros(a.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-a @ w))
        grad = a.T @ (p - 1) + l2 * w
        hess = (a * (p * (1 - p))[:, None]).T @ a + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w / scale


# further features that grow with the entry's own text match (scoring.ranker): weights kept >= 0
NONNEG: set = {"xptxt", "xntxt"}


def monotone(w) -> bool:
    """More of the text match never lowers the score: d score / d text = text + costxt x cos >= 0
    for every cosine in [0, 1] and the excess features' weights >= 0 (a repeated query word must
    not push an entry down)."""
    names = _features()
    t, tc = w[names.index("text")], w[names.index("costxt")]
    return t >= 0 and t + tc >= 0 and all(w[names.index(f)] >= 0 for f in NONNEG if f in names)


def project(w):
    names = _features()
    w = w.copy()
    t, tc = names.index("text"), names.index("costxt")
    w[t] = max(w[t], 0.0)
    w[tc] = max(w[tc], -w[t])
    for f in NONNEG:
        if f in names:
            w[names.index(f)] = max(w[names.index(f)], 0.0)
    return w


def ascent(batch, w, rounds=3):
    """Coordinate ascent on mean recall@10 from `w` made monotone (each weight scaled by STEPS,
    or set when 0), keeping it monotone."""
    w = project(w)
    best = recall_at_10(batch, w).mean()
    for _ in range(rounds):
        for j in range(len(w)):
            for f in STEPS:
                v = w.copy()
                v[j] = w[j] * f if w[j] else f * 0.1 * np.abs(w).mean()
                if not monotone(v):
                    continue
                r = recall_at_10(batch, v).mean()
                if r > best + 1e-9:
                    best, w = r, v
    return w


def fit(batch):
    return ascent(batch, fit_pairwise(batch))


def main(argv=None):
    reuse, convs = locomo.questions_of_built_trees(__doc__, argv)
    folds = {}
    for name, questions in convs.items():
        folds[name] = examples(reuse / f"conv{name}", questions)
        sys.stderr.write(f"features of conversation {name}: {len(questions)} questions\n")
    names = list(_features())
    fused = np.eye(len(names))[names.index("score")]
    print("| held-out conversation | questions | fused recall@10 | learned ranker (fitted on the other four) |")
    print("| --- | --- | --- | --- |")
    held, base = [], []
    for name in folds:
        train = stack([r for other in folds if other != name for r in folds[other]])
        test = stack(folds[name])
        r, b = recall_at_10(test, fit(train)), recall_at_10(test, fused)
        held += list(r)
        base += list(b)
        print(f"| {name} | {len(r)} | {b.mean():.3f} | {r.mean():.3f} |")
    print(f"| LOCO, all | {len(held)} | {np.mean(base):.3f} | **{np.mean(held):.3f}** |")
    w = fit(stack([r for rows in folds.values() for r in rows]))
    w = w / max(float(np.abs(w).max()), 1e-9)
    print("\nWEIGHTS = {" + ", ".join(f'"{f}": {v:.4g}' for f, v in zip(names, w)) + "}")


if __name__ == "__main__":
    main()
