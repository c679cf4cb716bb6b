"""The learned ranker: a linear score over generic features of the fused ranking's top candidates."""
from __future__ import annotations

import numpy as np

# The features of one candidate entry, each a generic function of the query and the tree (no
# rule knows what kind of text it reads):
#   score    the fused score (retrieval.fusion.ranking: absolute signals and priors)
#   cos      best chunk cosine (entries the vector search did not return: its lowest cosine)
#   text     BM25 share of the query's term weight      cov      idf share of query terms held
#   ent      share of the query's names it mentions     noname   the query names some, it none
#   date     nearness to a date the query names
#   nb1 nb2  relevance (dense + text + names) of the entries written just before/after it in
#            its category, one and two steps away (summed)     nbmax  the better adjacent one
#   sit      the best relevance of its sitting (entries of a category written close in time)
#   cos2 costxt  cos squared, cos x text
#   whole    cosine between the query and the mean of the entry's chunk vectors (the whole entry)
# The adjacent entries' own cos, text, names and coverage as features raised LOCO recall@10 by
# 0.006 more but let an unrelated note written next to a match outrank a weaker real match: left out.
FEATURES = ("score", "cos", "text", "cov", "ent", "noname", "date", "nb1", "nb2", "sit", "nbmax", "cos2", "costxt",
            "whole")

# Fitted by bench/fit_ranking.py on the LoCoMo dev conversations (pairwise logistic over the top
# 100 candidates of each question, then coordinate ascent on recall@10, kept monotone in the text
# match; it prints the leave-one-conversation-out figures: recall@10 0.799 -> 0.819, on trees built
# with chunk_sentence_min_words 15). Used for queries with a vector side and no CJK text (the
# bundled model is English; a Chinese query keeps the fused ranking).
WEIGHTS = {"score": -0.01708, "cos": 0.6731, "text": 0.0, "cov": 0.5512, "ent": 0.1406, "noname": -0.2439,
           "date": 0.2719, "nb1": -0.1262, "nb2": 0.07922, "sit": 0.2995, "nbmax": 0.3061, "cos2": 0.19,
           "costxt": 0.0, "whole": 1.0}
CANDIDATES = 100  # the fused ranking's top entries the ranker orders again


def features(cand: np.ndarray, score: np.ndarray, cos: np.ndarray, text: np.ndarray, coverage: np.ndarray,
             entity_share, date_near, structure, whole: np.ndarray, dense_weight: float, text_weight: float,
             entity_weight: float) -> np.ndarray:
    """The feature matrix (len(cand) x len(FEATURES)) of the candidate positions `cand`.

    Every array but `whole` (one value per candidate) has one slot per indexed entry;
    `coverage` must be filled at least at the candidates. Only the sitting's best needs every
    entry; the rest is read at the candidates and their neighbours (100 of 100k)."""
    n = len(score)
    prev, nxt, session = structure
    base = dense_weight * cos + text_weight * text
    if entity_share is not None:
        base = base + entity_weight * entity_share
    best = np.zeros(n)
    np.maximum.at(best, session, base)

    def at(link):  # base at the linked entries, 0 where there is no link
        return np.where(link >= 0, base[np.maximum(link, 0)], 0.0)

    p1, n1 = prev[cand], nxt[cand]
    p2 = np.where(p1 >= 0, prev[np.maximum(p1, 0)], -1)  # two steps back / ahead
    n2 = np.where(n1 >= 0, nxt[np.maximum(n1, 0)], -1)
    zero = np.zeros(len(cand))
    ent = zero if entity_share is None else entity_share[cand]
    c, t = cos[cand], text[cand]
    f = {"score": score[cand], "cos": c, "text": t, "cov": coverage[cand], "ent": ent,
         "noname": zero if entity_share is None else (ent == 0).astype(float),
         "date": zero if date_near is None else date_near[cand],
         "nb1": at(p1) + at(n1), "nb2": at(p2) + at(n2),
         "sit": best[session[cand]], "nbmax": np.maximum(at(p1), at(n1)),
         "cos2": c ** 2, "costxt": c * t, "whole": whole}
    return np.stack([np.asarray(f[name], dtype=np.float64) for name in FEATURES], axis=1)


def rank(x: np.ndarray, weights: dict | None = None) -> np.ndarray:
    """The ranker's score of each row of a feature matrix."""
    weights = WEIGHTS if weights is None else weights
    return x @ np.array([weights.get(name, 0.0) for name in FEATURES])


def status_scaled(score: np.ndarray, inactive: np.ndarray | None, factor: float) -> np.ndarray:
    """The ranker's scores with an inactive (archived, expired) entry's lowered as the fusion lowers
    it (times `factor` when positive; a negative score moves down by the same share): its features
    do not see the status, so without this an archived copy could outrank the active one."""
    if inactive is None or not inactive.any():
        return score
    return np.where(inactive, score - (1.0 - factor) * np.abs(score), score)
