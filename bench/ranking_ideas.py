"""Measure ranking ideas offline, by leave-one-conversation-out, on bench/ranking_cache.py's cache.

    python bench/ranking_ideas.py FILE.pkl [IDEA[+IDEA...] ...]   # e.g. "" rand1 adjcap adjcap+rand1
    python bench/ranking_ideas.py FILE.pkl "" --fit softmax      # another way to fit (FITS, trees2/3)

Each idea is a set of extra candidate features added to scoring.ranker.FEATURES; the ranker is
fitted as bench/fit_ranking.py fits it (pairwise logistic, monotone in the text match,
coordinate ascent on recall@10), on four conversations and measured on the fifth. "rand1",
"rand2", ... add a random feature: how far the figure moves for nothing (the fit's noise).
Ideas (see `extra`): kinds, kinds2, ctxgain (per-chunk-kind cosines), ranks, logrank (dense and
text ranks), bare, baremax (the query without stop words), adj, adjcap, adjprod, nbgate, nbown
(adjacent entries' own match, raw / capped by the entry's own / times it / gated), qinter
(interactions with the query's best cosine and text match), second, sentmean, namefirst,
namepos, entxt, textsq.
"""
from __future__ import annotations

import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import fit_ranking as fr  # noqa: E402


def _rank_of(values: np.ndarray) -> np.ndarray:
    order = np.argsort(-values, kind="stable")
    r = np.empty(len(values))
    r[order] = np.arange(1, len(values) + 1)
    return r


def _at(values, link):
    return np.where(link >= 0, values[np.maximum(link, 0)], 0.0)


def extra(conv: dict, q: dict, idea: str) -> dict:
    """name -> one value per candidate."""
    cand = q["cand"]
    k = q["kinds"]
    kb = q["kinds_bare"]
    prev, nxt, session = conv["structure"]
    cos = q["cosine"].astype(np.float64)
    text = q["text"].astype(np.float64)
    ent = np.zeros(len(cos)) if q["entity"] is None else q["entity"].astype(np.float64)
    out = {}
    entry, sent, ctx, win = (np.nan_to_num(k[:, j], nan=0.0).astype(np.float64) for j in range(4))
    has_sent = ~np.isnan(k[:, 1])
    if idea == "kinds":
        out.update(c_entry=entry[cand], c_sent=sent[cand], c_ctx=ctx[cand], has_sent=has_sent[cand].astype(float))
    if idea == "kinds2":
        own = np.fmax(k[:, 0], k[:, 1])
        out.update(c_own=np.nan_to_num(own)[cand], c_ctx=ctx[cand])
    if idea == "ctxgain":
        own = np.nan_to_num(np.fmax(k[:, 0], k[:, 1]))
        out.update(ctx_gain=np.maximum(ctx - own, 0)[cand])
    if idea == "ranks":
        dr, tr = _rank_of(cos), _rank_of(np.where(text > 0, text, -1))
        out.update(rr_dense=(1 / (10 + dr))[cand], rr_text=np.where(text > 0, 1 / (10 + tr), 0)[cand])
    if idea == "logrank":
        dr, tr = _rank_of(cos), _rank_of(np.where(text > 0, text, -1))
        out.update(lr_dense=-np.log(dr)[cand], lr_text=np.where(text > 0, -np.log(tr), -np.log(len(cos)))[cand])
    if idea in ("bare", "baremax"):
        bcos = np.nan_to_num(np.nanmax(kb, axis=1), nan=0.0)
        if idea == "bare":
            out.update(c_bare=bcos[cand])
        else:
            out.update(c_max=np.maximum(bcos, cos)[cand])
    if idea.startswith("nbown"):
        # a neighbour's own match counts only as far as the entry itself matches
        own = np.minimum(_at(cos, prev), cos) + np.minimum(_at(cos, nxt), cos)
        out.update(nb_cos_capped=own[cand],
                   nb_text_capped=(np.minimum(_at(text, prev), text) + np.minimum(_at(text, nxt), text))[cand])
    if idea == "nbgate":
        has = (text > 0).astype(float)
        out.update(nb_cos_g=(has * (_at(cos, prev) + _at(cos, nxt)))[cand],
                   nb_text_g=(has * (_at(text, prev) + _at(text, nxt)))[cand])
    if idea == "entxt":
        out.update(ent_text=(ent * text)[cand], ent_cos=(ent * cos)[cand])
    if idea == "adjtraw":  # the adjacent entries' raw text match alone
        t2 = np.minimum(text, 2)
        out.update(ptxt_raw=_at(t2, prev)[cand], ntxt_raw=_at(t2, nxt)[cand])
    if idea == "qinter":
        mc, mt = float(np.max(cos[cand])), float(np.max(np.minimum(text[cand], 2)))
        out.update(cos_mt=cos[cand] * mt, text_mc=text[cand] * mc, text_mt=text[cand] * mt, cos_mc=cos[cand] * mc)
    if idea == "second":
        srt = np.sort(np.nan_to_num(k, nan=-1.0), axis=1)
        out.update(c_second=np.maximum(srt[:, -2], 0)[cand])
    if idea == "sentmean":
        out.update(c_gap=(np.nan_to_num(np.nanmax(k, axis=1)) - entry)[cand])
    if idea in ("namefirst", "namepos"):
        from memstrata.retrieval import lexical

        names = [e for e in lexical.query_entities(q["query"])]
        texts = conv["texts"]
        first, pos = np.zeros(len(cand)), np.zeros(len(cand))
        for j, p in enumerate(cand):
            low = texts[p].lower()
            ws = low.split()
            for e in names:
                el = e.lower()
                i = low.find(el)
                if i >= 0:
                    pos[j] += (1.0 - i / max(len(low), 1)) / len(names)
                    if el in " ".join(ws[:3]):
                        first[j] += 1.0 / len(names)
        out.update(name_first=first) if idea == "namefirst" else out.update(name_pos=pos)
    if idea.startswith("rand"):
        import zlib

        rng = np.random.default_rng(zlib.crc32(f"{idea} {q['query']}".encode()))
        out.update(rand=rng.random(len(cand)))
    if idea in ("adj", "adjcap", "adjprod", "adjce"):
        def pair(v):
            a, b = _at(v, prev), _at(v, nxt)
            if idea == "adjcap":
                a, b = np.minimum(a, v), np.minimum(b, v)
            if idea == "adjprod":
                a, b = a * v, b * v
            return a, b
        for nm, v in (("cos", cos), ("txt", np.minimum(text, 2)), ("ent", ent)):
            if idea == "adjce" and nm == "txt":
                continue
            a, b = pair(v if idea != "adjce" else v)
            if idea == "adjce":
                a, b = np.minimum(a, v), np.minimum(b, v)
            out[f"p{nm}"], out[f"n{nm}"] = a[cand], b[cand]
    if idea == "textsq":
        out.update(text2=np.minimum(text, 2)[cand] ** 2)
    return out


def batch(cache: dict, names: list[str], ideas: list[str]):
    rows = {}
    for conv_name, conv in cache.items():
        rs = []
        for q in conv["questions"]:
            x = np.zeros((100, len(names)))
            y = np.zeros(100)
            if q["cand"] is not None:
                c = len(q["cand"])
                cols = [q["x"]]
                for idea in ideas:
                    e = extra(conv, q, idea)
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
        names += list(extra(conv, q, idea))
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
    args = ap.parse_args()
    cache = pickle.load(open(args.cache, "rb"))
    for spec in args.ideas:
        ideas = [i for i in spec.split("+") if i]
        names = names_of(cache, ideas)
        score, per = loco(batch(cache, names, ideas), names, args.fit)
        print(f"{spec or 'shipped features'} ({args.fit}): LOCO recall@10 {score:.4f} "
              f"({' / '.join(f'{p:.3f}' for p in per)})", flush=True)


if __name__ == "__main__":
    main()
