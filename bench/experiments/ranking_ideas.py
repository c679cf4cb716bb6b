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

# extra features that grow with the entry's own text match: their weights are kept >= 0 (monotone)
fr.NONNEG.update({"xptxt", "xntxt", "xtxt", "lmtxt", "xp2txt", "xn2txt", "xpbase", "xnbase", "sitgap"})


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
    if idea in ("excess", "excesst", "excessmax", "excessct", "excessraw"):
        # how much better the entry matches than the entry before / after it (monotone in its own)
        for nm, v in (("cos", cos), ("txt", text if idea == "excessraw" else np.minimum(text, 2)), ("ent", ent)):
            if (idea == "excesst" and nm != "txt") or (idea == "excessct" and nm == "ent"):
                continue
            if idea == "excessmax":
                out[f"x{nm}"] = np.maximum(v - np.maximum(_at(v, prev), _at(v, nxt)), 0)[cand]
            else:
                out[f"xp{nm}"] = np.maximum(v - _at(v, prev), 0)[cand]
                out[f"xn{nm}"] = np.maximum(v - _at(v, nxt), 0)[cand]
    if idea == "xbase":  # the same over the fused relevance of the entries (dense + text + names)
        base = 2.0 * cos + np.minimum(text, 2) + 0.35 * ent
        out.update(xpbase=np.maximum(base - _at(base, prev), 0)[cand], xnbase=np.maximum(base - _at(base, nxt), 0)[cand])
    if idea == "xentry":  # excess of the entry chunk's own cosine (the whole text embedded)
        v = entry
        out.update(xpcose=np.maximum(v - _at(v, prev), 0)[cand], xncose=np.maximum(v - _at(v, nxt), 0)[cand])
    if idea == "sitgap":  # how far below the best entry of its sitting it is (0 for the best)
        base = 2.0 * cos + np.minimum(text, 2) + 0.35 * ent
        best = np.zeros(len(base))
        np.maximum.at(best, session, base)
        out.update(sitgap=(base - best[session])[cand])
    if idea in ("asks", "asksq", "propn", "propnI", "firstp"):
        import re

        from memstrata.retrieval import lexical

        qw = {w.lower() for w in lexical.words(q["query"])}
        vals = np.zeros(len(cand))
        for j, p in enumerate(cand):
            body = lexical.entry_part(conv["texts"][p], None)
            sents = [x for x in re.split(r"(?<=[.!?])\s+", body) if x.strip()]
            if idea.startswith("asks"):  # the share of its sentences that are questions
                vals[j] = sum(x.rstrip(" )]\"'").endswith("?") for x in sents) / max(len(sents), 1)
            elif idea == "firstp":  # the writer speaks of itself ("I", "I'm", "I've"), capped at 5
                vals[j] = min(sum(1 for x in sents for w in lexical.words(x) if w.split("'")[0] == "I"), 5) / 5
            else:  # capitalised words not opening a sentence and not in the query (names, titles)
                words = [w for x in sents for w in lexical.words(x)[1:]]
                vals[j] = min(sum(1 for w in words if w[:1].isupper() and w.lower() not in qw
                                  and (idea == "propnI" or w.split("'")[0] != "I")), 5) / 5
        if idea == "asksq":  # ... when the query is a question too
            vals = vals * float(q["query"].rstrip().endswith("?"))
        out[idea] = vals
    if idea == "excess2":  # the same against the entries two steps away
        p2, n2 = np.where(prev >= 0, prev[np.maximum(prev, 0)], -1), np.where(nxt >= 0, nxt[np.maximum(nxt, 0)], -1)
        for nm, v in (("cos", cos), ("txt", np.minimum(text, 2)), ("ent", ent)):
            out[f"xp2{nm}"] = np.maximum(v - _at(v, p2), 0)[cand]
            out[f"xn2{nm}"] = np.maximum(v - _at(v, n2), 0)[cand]
    if idea in ("localmax", "localmaxb"):
        # the entry matches at least as well as both entries beside it (times its own match)
        for nm, v in (("cos", cos), ("txt", np.minimum(text, 2)), ("ent", ent)):
            top = (v >= np.maximum(_at(v, prev), _at(v, nxt))).astype(float)
            out[f"lm{nm}"] = (top * (v if idea == "localmax" else (v > 0)))[cand]
    if idea == "dirnb":  # the entries just before and after it, apart
        base = 2.0 * cos + text + 0.35 * ent
        out.update(nb_prev=_at(base, prev)[cand], nb_next=_at(base, nxt)[cand])
    if idea == "dirnbprod":  # the same, times the entry's own cosine (an unrelated note gains little)
        base = 2.0 * cos + text + 0.35 * ent
        out.update(nbp_prev=(cos * _at(base, prev))[cand], nbp_next=(cos * _at(base, nxt))[cand])
    if idea in ("dates", "datesx", "datese", "atype", "atime"):
        # round four: does the entry say when, and does the query ask when (retrieval.dates)
        from memstrata.retrieval import dates, lexical

        bodies = [lexical.entry_part(conv["texts"][p], None) for p in cand]
        has = np.array([dates.states_time(b) for b in bodies], dtype=float)
        asks = float(dates.asks_time(q["query"]))
        if idea == "datese":  # the entry says when, whatever the query asks
            out.update(time_e=has)
        if idea in ("dates", "datesx", "atime"):
            out.update(time_q=has * asks)
            if idea == "dates":
                out.update(time_e=has)
            if idea == "atime":  # also: a query that does not ask when, entry that says when
                out.update(time_nq=has * (1 - asks))
        if idea == "atype":  # the answer's type: a time, a number, a name (capitalised, not in the query)
            import re

            ql = q["query"].lower()
            qw = {w.lower() for w in lexical.words(q["query"])}
            num_q = float(bool(re.search(r"\bhow (many|much|old|often)\b", ql)))
            name_q = float(bool(re.match(r"\s*(who|where|which|what (?!do|does|did|is|are|was|were)\w+)\b", ql)))
            num_e = np.array([bool(re.search(r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|once|twice)\b",
                                             b, re.I)) for b in bodies], dtype=float)
            name_e = np.array([any(w[:1].isupper() and w.lower() not in qw and w.split("'")[0] != "I"
                                   for x in re.split(r"(?<=[.!?])\s+", b) for w in lexical.words(x)[1:])
                               for b in bodies], dtype=float)
            out.update(time_q=has * asks, num_q=num_e * num_q, name_q=name_e * name_q)
    if idea == "rdate":  # date nearness read also from the entry's resolved relative dates
        from datetime import datetime, timezone

        from memstrata.retrieval import dates, fusion, lexical
        from memstrata.retrieval.search import named_dates

        spans = named_dates(q["query"])
        vals = np.zeros(len(cand))
        if spans:
            for j, p in enumerate(cand):
                c = conv["created"][p]
                if not c:
                    continue
                body = lexical.entry_part(conv["texts"][p], None)
                ts = [datetime(d.year, d.month, d.day, tzinfo=timezone.utc).timestamp() + 43200
                      for d, _ in dates.resolve(body, datetime.fromtimestamp(c, tz=timezone.utc))]
                if ts:
                    vals[j] = float(fusion.date_proximity(ts, spans, 86400.0).max())
        out.update(rdate=vals)
    if idea in ("head", "headx"):  # the kind the query asks for ("books") against the entry
        h = q.get("head")
        hv = np.zeros(len(cand)) if h is None else np.asarray(h, dtype=np.float64)[cand]
        out.update(c_head=hv)
        if idea == "headx":  # its gain over the query's own cosine
            out.update(c_head_gain=np.maximum(hv - cos[cand], 0) * (h is not None))
    if idea == "qnorm":  # the entry's cosines over the best of its query's candidates
        c = cos[cand]
        out.update(cos_rel=c / max(float(c.max()), 1e-6), whole_rel=q["x"][:, 13] / max(float(q["x"][:, 13].max()), 1e-6))
    if idea == "textsq":
        out.update(text2=np.minimum(text, 2)[cand] ** 2)
    return out


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
