"""Measure ranking ideas offline, by leave-one-conversation-out, on bench/experiments/ranking_cache.py's cache.

    python bench/experiments/ranking_ideas.py FILE.pkl [IDEA[+IDEA...] ...]   # e.g. "" rand1 adjcap adjcap+rand1
    python bench/experiments/ranking_ideas.py FILE.pkl "" --fit softmax      # another way to fit (FITS, trees2/3)

Each idea is a set of extra candidate features added to scoring.ranker.FEATURES; the ranker is
fitted as bench/fit_ranking.py fits it (pairwise logistic, monotone in the text match,
coordinate ascent on recall@10), on four conversations and measured on the fifth. "rand1",
"rand2", ... add a random feature: how far the figure moves for nothing (the fit's noise).
Ideas (see `extra`): kinds, kinds2, ctxgain (per-chunk-kind cosines), ranks, logrank (dense and
text ranks), bare, baremax (the query without stop words), adj, adjcap, adjprod, nbgate, nbown
(adjacent entries' own match, raw / capped by the entry's own / times it / gated), qinter
(interactions with the query's best cosine and text match), second, sentmean, namefirst,
namepos, entxt, textsq; round three: excess..., asks, propn, firstp; round four: dates, datesx,
datese, atime (the entry says when x the query asks when), atype (time / number / name answer types),
rdate (date nearness of the entry's resolved relative dates), head, headx (cosine of the kind a
"what KIND ..." question asks for), qnorm (cosines over the query's best).
"""
from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

# one BLAS thread: on a shared 2-core machine threaded BLAS made the pairwise fit 100x slower
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: locomo, fit_ranking

import numpy as np  # noqa: E402

import fit_ranking as fr  # noqa: E402
from ranking_features import extra  # noqa: E402  (the features of each idea)

# extra features that grow with the entry's own text match: their weights are kept >= 0 (monotone)
fr.NONNEG.update({"xptxt", "xntxt", "xtxt", "lmtxt", "xp2txt", "xn2txt", "xpbase", "xnbase", "sitgap"})


_EXTRA: dict = {}


def batch(cache: dict, names: list[str], ideas: list[str]):
    rows = {}
    for conv_name, conv in cache.items():
        rs = []
        for q in conv["questions"]:
            x = np.zeros((100, len(names)))
            y = np.zeros(100)
            if q["cand"] is not None:
                c = len(q["cand"])
                cols = [q["x"].copy()]
                for idea in ideas:
                    if idea.startswith("-"):  # a shipped feature left out (its column zeroed)
                        cols[0][:, names.index(idea[1:])] = 0.0
                        continue
                    key = (conv_name, id(q), idea)
                    if key not in _EXTRA:  # the same idea's columns again for each control run
                        _EXTRA[key] = extra(conv, q, idea)
                    e = _EXTRA[key]
                    cols.append(np.stack([e[f] for f in e], axis=1))
                x[:c] = np.concatenate(cols, axis=1)
                y[:c] = np.isin(q["cand"], q["evidence"])
            rs.append((x, y, max(len(q["evidence"]), 1)))
        rows[conv_name] = rs
    return rows


def names_of(cache, ideas):
    from memstrata.scoring.ranker import FEATURES

    conv = next(iter(cache.values()))
    q = next(q for q in conv["questions"] if q["cand"] is not None)
    names = list(FEATURES)[: q["x"].shape[1]]  # the features the cache was made with
    for idea in ideas:
        names += [] if idea.startswith("-") else list(extra(conv, q, idea))
    return names


def softmax_fit(b, l2=1.0, iters=200, lr=0.05):
    """Listwise: softmax over each question's candidates, the evidence as the target (Adam)."""
    x, y, _ = b
    scale = x.reshape(-1, x.shape[2]).std(0) + 1e-9
    valid = y.sum(1) > 0
    xs, yy = x[valid] / scale, y[valid]
    target = yy / yy.sum(1, keepdims=True)
    w, m, v = np.zeros(x.shape[2]), np.zeros(x.shape[2]), np.zeros(x.shape[2])
    for t in range(1, iters + 1):
        s = xs @ w
        p = np.exp(s - s.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        g = np.einsum("qc,qcf->f", p - target, xs) / len(xs) + l2 * w / len(xs)
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        w -= lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    return w / scale


def smooth_fit(b, l2=1e-2, steps=300, lr=0.01):
    """A smoothed recall@10 (sigmoid ranks) maximised by Adam from the pairwise fit (torch)."""
    import torch

    x, y, n = b
    valid = y.sum(1) > 0
    X, Y = torch.tensor(x[valid]), torch.tensor(y[valid])
    N = torch.tensor(n[valid], dtype=torch.float64)
    pad = torch.tensor(x[valid][:, :, 0] == 0)
    scale = x.reshape(-1, x.shape[2]).std(0) + 1e-9
    w0 = fr.fit_pairwise(b) * scale
    w0 = w0 / np.std(x.reshape(-1, x.shape[2]) / scale @ w0)
    w = torch.tensor(w0, requires_grad=True)
    opt = torch.optim.Adam([w], lr=lr)
    for _ in range(steps):
        s = ((X / torch.tensor(scale)) @ w).masked_fill(pad, -1e4)
        rank = 0.5 + torch.sigmoid((s[:, None, :] - s[:, :, None]) / 0.1).sum(2)
        loss = -((torch.sigmoid(10.5 - rank) * Y).sum(1) / N).mean() + l2 * (w ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return fr.project(w.detach().numpy() / scale)


def bagged(b, fitter=None, count=10, seed=0):
    """The mean of `count` fits on bootstrap samples of the questions."""
    x, y, n = b
    rng = np.random.default_rng(seed)
    ws = []
    for _ in range(count):
        i = rng.integers(0, len(x), len(x))
        w = (fitter or fr.fit)((x[i], y[i], n[i]))
        ws.append(w / max(np.abs(w).max(), 1e-9))
    return fr.project(np.mean(ws, 0))


def recall_at(b, w, ks) -> float:
    """Mean over the questions and the cut-offs `ks` of recall@k (a smoother target than recall@10 alone)."""
    x, y, n = b
    order = np.argsort(-(x @ w), axis=1, kind="stable")[:, : max(ks)]
    hit = np.cumsum(np.take_along_axis(y, order, 1), axis=1)
    return float(np.mean([(hit[:, k - 1] / n).mean() for k in ks]))


def ascent_on(b, w, ks=(10,), rounds=3, order=None):
    """fit_ranking.ascent with the target recall@ks and the coordinates visited in `order`."""
    w = fr.project(w)
    best = recall_at(b, w, ks)
    for _ in range(rounds):
        for j in (range(len(w)) if order is None else order):
            for f in fr.STEPS:
                v = w.copy()
                v[j] = w[j] * f if w[j] else f * 0.1 * np.abs(w).mean()
                if not fr.monotone(v):
                    continue
                r = recall_at(b, v, ks)
                if r > best + 1e-9:
                    best, w = r, v
    return w


def _unit(b, w):
    """w scaled so that the scores of the candidates have standard deviation 1."""
    x = b[0].reshape(-1, b[0].shape[2])
    return w / max(float(np.std(x[x[:, 0] != 0] @ w)), 1e-12)


def ensemble(b, count=8, seed=0, sub=1.0, ks=(10,)):
    """The mean of `count` ascents (each from the pairwise fit, visiting the coordinates in a random
    order, on a random `sub` share of the questions), each scaled to unit score spread."""
    x, y, n = b
    rng = np.random.default_rng(seed)
    start = fr.fit_pairwise(b)
    ws = []
    for _ in range(count):
        i = np.sort(rng.choice(len(x), int(sub * len(x)), replace=False)) if sub < 1 else np.arange(len(x))
        part = (x[i], y[i], n[i])
        w = ascent_on(part, fr.fit_pairwise(part) if sub < 1 else start, ks, order=rng.permutation(x.shape[2]))
        ws.append(_unit(b, w))
    return fr.project(np.mean(ws, 0))


FITS = {  # name -> fitter(batch) -> weights
    "ship": lambda b: fr.fit(b), "pairwise": lambda b: fr.project(fr.fit_pairwise(b)),
    "l2=10": lambda b: fr.ascent(b, fr.fit_pairwise(b, l2=10)), "l2=100": lambda b: fr.ascent(b, fr.fit_pairwise(b, l2=100)),
    "neg20": lambda b: fr.ascent(b, fr.fit_pairwise(b, negatives=20)),
    "neg100": lambda b: fr.ascent(b, fr.fit_pairwise(b, negatives=100)),
    "ascent1": lambda b: fr.ascent(b, fr.fit_pairwise(b), rounds=1),
    "softmax": lambda b: fr.project(softmax_fit(b)), "softmax+ascent": lambda b: fr.ascent(b, softmax_fit(b)),
    "smooth=0.001": lambda b: smooth_fit(b, l2=1e-3), "smooth=0.003": lambda b: smooth_fit(b, l2=3e-3),
    "smooth=0.01": lambda b: smooth_fit(b, l2=1e-2), "smooth=0.03": lambda b: smooth_fit(b, l2=3e-2),
    "bag": lambda b: bagged(b), "bag1": lambda b: bagged(b, seed=1),
    "k8-12": lambda b: ascent_on(b, fr.fit_pairwise(b), ks=(8, 9, 10, 11, 12)),
    "k5-20": lambda b: ascent_on(b, fr.fit_pairwise(b), ks=(5, 10, 15, 20)),
    "ens8": lambda b: ensemble(b), "ens8s1": lambda b: ensemble(b, seed=1),
    "ens8sub": lambda b: ensemble(b, sub=0.8), "ens8k": lambda b: ensemble(b, ks=(8, 9, 10, 11, 12)),
}


def trees_recall(train, test, depth):
    """Pointwise gradient-boosted trees (scikit-learn), for comparison: recall@10 per test question."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    tx, ty, _ = train
    keep = tx[:, :, 0] != 0
    clf = HistGradientBoostingClassifier(max_depth=depth, max_iter=100 * (depth - 1), learning_rate=0.05,
                                         random_state=0)
    clf.fit(tx[keep], ty[keep])
    x, y, n = test
    s = clf.predict_proba(x.reshape(-1, x.shape[2]))[:, 1].reshape(x.shape[:2])
    s[x[:, :, 0] == 0] = -1
    top = np.argsort(-s, axis=1, kind="stable")[:, :10]
    return np.take_along_axis(y, top, 1).sum(1) / n


def loco(folds, names, fit="ship"):
    fr._features = lambda: names
    held = []
    per = []
    for name in folds:
        train = fr.stack([r for other in folds if other != name for r in folds[other]])
        test = fr.stack(folds[name])
        if fit.startswith("trees"):
            r = trees_recall(train, test, int(fit[-1]))
        else:
            r = fr.recall_at_10(test, FITS[fit](train))
        held += list(r)
        per.append(r.mean())
    return float(np.mean(held)), per


def main():
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cache")
    ap.add_argument("ideas", nargs="*", default=[""])
    ap.add_argument("--fit", default="ship", help=f"{', '.join(FITS)}, trees2, trees3")
    ap.add_argument("--controls", type=int, default=0,
                    help="also run each idea with rand1..N added and print the mean of the N+1 figures")
    args = ap.parse_args()
    cache = pickle.load(open(args.cache, "rb"))
    for spec in args.ideas:
        scores = []
        for c in range(args.controls + 1):
            ideas = [i for i in spec.split("+") if i] + ([f"rand{c}"] if c else [])
            names = names_of(cache, ideas)
            score, per = loco(batch(cache, names, ideas), names, args.fit)
            scores.append(score)
            print(f"{'+'.join(ideas) or 'shipped features'} ({args.fit}): LOCO recall@10 {score:.4f} "
                  f"({' / '.join(f'{p:.3f}' for p in per)})", flush=True)
        if args.controls:
            print(f"== {spec or 'shipped features'} ({args.fit}): mean of {len(scores)} {np.mean(scores):.4f} "
                  f"(min {min(scores):.4f}, max {max(scores):.4f})", flush=True)


if __name__ == "__main__":
    main()
