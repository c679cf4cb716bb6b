"""Fit the calibrated relevance model (scoring/relevance.py) on the LoCoMo dev trees; prints LOCO figures.

    python bench/fit_relevance.py --reuse DIR    # DIR: the trees bench/locomo.py --reuse DIR built

Examples: the top 10 hits of every question asked of its own conversation's tree (label 1
for an annotated evidence turn, else 0) and of the next conversation's tree (all 0: those
turns cannot answer it). A logistic regression over the absolute signals of
scoring.relevance.FEATURES; for each conversation it is fitted on the other four and its
calibration measured on it (log loss, Brier score, mean predicted vs observed rate).
The coefficients fitted on all five are printed last, for HYBRID and TEXT.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import locomo  # noqa: E402


def examples(m, questions, own: bool, strategy: str = "auto"):
    from memstrata.scoring.relevance import FEATURES

    rows, labels = [], []
    for q in questions:
        res = m.recall(q["query"], k=10, explain=True, min_relevance=0, strategy=strategy, count_access=False)
        for hit in res.results:
            sig = hit.signals["relevance_signals"]
            rows.append([float(sig.get(f) or 0.0) for f in FEATURES])
            labels.append(1.0 if own and hit.id in q["evidence"] else 0.0)
    return np.array(rows), np.array(labels)


def fit(x, y, l2=1e-2, iters=50):
    """Logistic regression by Newton's method (bias first)."""
    x1 = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(x1.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-x1 @ w))
        grad = x1.T @ (p - y) + l2 * np.r_[0, w[1:]]
        hess = (x1 * (p * (1 - p))[:, None]).T @ x1 + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w


def predict(w, x):
    return 1 / (1 + np.exp(-(w[0] + x @ w[1:])))


def main(argv=None):
    from memstrata import Memory
    from memstrata.scoring.relevance import FEATURES

    reuse, convs = locomo.questions_of_built_trees(__doc__, argv)
    names = list(convs)
    data = {"hybrid": {}, "text": {}}
    for i, name in enumerate(names):
        m = Memory(reuse / f"conv{name}")
        other = convs[names[(i + 1) % len(names)]]
        for mode, strategy in (("hybrid", "auto"), ("text", "text")):
            xo, yo = examples(m, convs[name], True, strategy)
            xf, yf = examples(m, other, False, strategy)
            data[mode][name] = (np.vstack([xo, xf]), np.r_[yo, yf])
        sys.stderr.write(f"examples of conversation {name}\n")
    for mode, folds in data.items():
        cols = [FEATURES.index(f) for f in FEATURES if mode == "hybrid" or f not in ("cosine", "agree")]
        print(f"\n### {mode}: leave one conversation out\n")
        print("| held-out | hits | relevant share | mean predicted | log loss | Brier |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name in folds:
            x = np.vstack([folds[o][0] for o in folds if o != name])[:, cols]
            y = np.concatenate([folds[o][1] for o in folds if o != name])
            w = fit(x, y)
            xt, yt = folds[name][0][:, cols], folds[name][1]
            p = np.clip(predict(w, xt), 1e-6, 1 - 1e-6)
            ll = -np.mean(yt * np.log(p) + (1 - yt) * np.log(1 - p))
            print(f"| {name} | {len(yt)} | {yt.mean():.3f} | {p.mean():.3f} | {ll:.3f} | {np.mean((p - yt) ** 2):.3f} |")
        x = np.vstack([f[0] for f in folds.values()])[:, cols]
        y = np.concatenate([f[1] for f in folds.values()])
        w = fit(x, y)
        coef = {"bias": round(float(w[0]), 3)}
        coef.update({f: 0.0 for f in FEATURES})
        coef.update({FEATURES[c]: round(float(v), 3) for c, v in zip(cols, w[1:])})
        print(f"\n{mode.upper()} = {coef}")


if __name__ == "__main__":
    main()
