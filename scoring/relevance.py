"""Calibrated relevance: the probability that a recall hit answers, from its absolute signals and its lead over the next hit."""
from __future__ import annotations

import math

# The signals, each an absolute figure of one hit (never scaled over the other candidates):
#   cosine    best chunk cosine between the query and the entry (vector side)
#   text      BM25 over the BM25 of an average entry holding each query term once (at most 1)
#   coverage  share of the query's term weight (idf) whose terms the entry holds
#   names     share of the names the query uses that the entry mentions (0 without names)
#   no_names  1 when the query names someone or something and the entry mentions none of them
#   agree     1 when the entry is in the top 10 of both the vector and the text side
#   score     the fused score (retrieval.fusion: absolute signals and priors, no scaling)
#   whole     cosine between the query and the mean of the entry's chunk vectors (0 when unknown)
#   unknown   share of the names the query uses that no entry of the tree mentions (per query)
#   known     share of the query's term weight (idf) whose terms some entry of the tree holds
#             (per query: what `coverage` could reach)
#   nameless  1 when the query names nothing (per query); nameless_whole: nameless x whole
#   cjk_joint cjk_local cjk_phrase cjk_title cjk_mass cjk_cos   for a query with CJK text, the hit's
#             signals that read Chinese (scoring.cjk_ranker's features of the same names; 0 otherwise)
FEATURES = ("cosine", "text", "coverage", "names", "no_names", "agree", "score", "whole", "unknown", "known",
            "nameless", "nameless_whole", "cjk_joint", "cjk_local", "cjk_phrase", "cjk_title", "cjk_mass", "cjk_cos")

# Signals derived from those: `cjk_cover`, the coverage no English term of the query explains
# (coverage with `known` 0 only comes from CJK bigrams), and `nameless_cosine`, the best chunk's
# cosine for a query that names nothing.
DERIVED = {"cjk_cover": lambda s: float(s.get("coverage") or 0.0) * (1.0 - float(s.get("known") or 0.0)),
           "nameless_cosine": lambda s: float(s.get("nameless") or 0.0) * float(s.get("cosine") or 0.0),
           # for a query with CJK text, how much it says (its terms' idf over log(1 + entries): "谢谢"
           # or "你是" is one common bigram, a real question several rare ones), and the idf the hit's
           # title and the hit as a whole hold in those units (a one-bigram query fully held is little)
           "cjk_qmass": lambda s: _qmass(s),
           "cjk_tmass": lambda s: _qmass(s) * float(s.get("cjk_title") or 0.0),
           "cjk_jmass": lambda s: _qmass(s) * float(s.get("cjk_joint") or 0.0)}


def _qmass(s: dict) -> float:
    """The query's idf over log(1 + entries) (retrieval.cjk_rank: mass = local x that)."""
    local = float(s.get("cjk_local") or 0.0)
    return float(s.get("cjk_mass") or 0.0) / local if local > 0 else 0.0

# Logistic models fitted by bench/fit_relevance.py on every corpus together (LoCoMo conversations,
# the notes corpora til, rustbook, vault, zettel, vuezh, weekly and advjava, Chinese passages, tiny
# trees of five entries; each corpus weighs the same): label 1 for an answer among a question's first
# CUT_DEPTH hits, 0 for the other hits and for every hit of an everyday prompt or an off-topic
# question; then calibrated on the questions' hits alone (`calibration`: the logit, and the top hit's
# margin over the second), so a relevance reads as the share of such hits that answer (docs/recall.md:
# the reliability table, held out). HYBRID serves queries without CJK text that the vector side
# judges and reads the best chunk's cosine, not `whole` (a long note's mean chunk vector is far from
# any question: a docs vault's answers looked weak); CJK queries with CJK text (the bundled model is
# English: what reads Chinese, retrieval.cjk_rank, beside the words' shares); TEXT the text, grep and
# index strategies, where the vector signals are unknown; TEXT and CJK leave out `known` (a Chinese
# query with English words is fully known and looked like an English one). All are on one scale, and
# one recall_min_relevance cuts them. Refitted for issue 40 (2026-12-05, Chinese corpora in).
HYBRID = {"bias": -5.32, "cosine": 3.858, "text": 2.339, "coverage": -0.508, "names": 0.318, "no_names": -1.116,
          "agree": 1.097, "score": 0.378, "unknown": -2.536, "known": -1.166, "nameless": -3.697,
          "nameless_cosine": 6.241, "calibration": {"bias": -0.644, "logit": 0.82, "gap": 0.749}}
TEXT = {"bias": -6.027, "text": 2.347, "coverage": -2.85, "names": -0.477, "no_names": -1.102, "score": 1.729,
        "unknown": -2.249, "calibration": {"bias": -0.696, "logit": 0.853, "gap": 2.189}}
CJK = {"bias": -7.649, "text": 2.364, "coverage": -3.18, "names": -0.832, "no_names": -1.851, "score": 0.991,
       "unknown": -4.233, "cjk_joint": 0.244, "cjk_local": -0.288, "cjk_phrase": -0.017, "cjk_title": 1.419,
       "cjk_mass": 1.266, "cjk_cos": 6.046, "cjk_qmass": -0.099, "cjk_tmass": 2.539, "cjk_jmass": 0.696,
       "calibration": {"bias": -0.878, "logit": 0.834, "gap": 0.596}}


def logit(signals: dict, model: dict = HYBRID) -> float:
    """The model's log-odds that a hit with these signals answers (missing ones: 0), before calibration."""
    z = model["bias"] + sum(model.get(f, 0.0) * float(signals.get(f) or 0.0) for f in FEATURES)
    return z + sum(model.get(f, 0.0) * derive(signals) for f, derive in DERIVED.items() if model.get(f))


def relevances(signals: list[dict], model: dict = HYBRID) -> list[float]:
    """The calibrated probability that each hit answers, for one query's hits in rank order: the
    hit's logit and, for the top hit, its margin over the second (an answer far ahead of the rest
    is no 0.01; recall asks for CUT_DEPTH hits at least, so the margin does not depend on k)."""
    z = [logit(s, model) for s in signals]
    c = model["calibration"]
    gap = z[0] - z[1] if len(z) > 1 else 0.0
    out = []
    for n, v in enumerate(z):
        x = c["bias"] + c["logit"] * v + (c["gap"] * gap if n == 0 else 0.0)
        out.append(1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x)))))
    return out


def probability(signals: dict, model: dict = HYBRID) -> float:
    """The calibrated probability for a hit judged alone: a top hit with no second to be ahead of."""
    return relevances([signals], model)[0]


# A hit found by words alone (grep, index) has no fused score; TEXT reads one, so such a hit is
# given the score a top answer holding every query word has on the benchmarks (per corpus, the
# median is 3.0-4.0: the lowest is taken), in proportion to the share of the words it holds.
WORDS_SCORE = 3.0


def words_only(share: float) -> float:
    """Relevance of a hit found by words alone that holds `share` of the query's words."""
    return probability({"text": share, "coverage": share, "score": WORDS_SCORE * share}, TEXT)


# The cut-off is decided on this many hits whatever k a caller asks for (recall asks for this
# many, or k when larger), and the hits kept are then cut to k: a smaller k only shortens the
# same list (never "nothing relevant" where a larger k answers, never a hit a larger k drops).
CUT_DEPTH = 10


def keep(relevances: list[float], min_relevance: float, relative: float = 0.0, k: int | None = None,
         floor: float = 0.0) -> list[int]:
    """Positions of the first `k` (None: all) hits kept: none when the best relevance among the
    first CUT_DEPTH hits is below `min_relevance` (the query is not answered), else those that
    reach `relative` x that best (a weak tail below a clear answer is noise); `min_relevance` 0
    keeps every hit.

    `min_relevance` judges the query by its best hit, not each hit: an answer ranked below a wrong
    top hit has weak signals of its own (a paraphrase, a terse note) and was dropped with them
    (issue 24: the Obsidian vault, held out, kept 0.965 of its answers; 0.988 so, and silence on
    off-topic questions does not move, as it depends on the best hit alone). `floor` drops every
    hit below it as well: a cut-off a user asks for by name (`--min-relevance 0.5`) means "no hit
    less likely than this", whatever the best."""
    if min_relevance <= 0:
        kept = list(range(len(relevances)))
    else:
        best = max(relevances[:CUT_DEPTH], default=0.0)
        least = max(relative * best, floor)
        kept = [i for i, r in enumerate(relevances) if r >= least] if best >= min_relevance else []
    return kept if k is None else kept[:k]


def used(relevances: list[float | None], cut: float, share: float) -> list[bool]:
    """Which of a recall's hits count as a use of their memory: those at `cut` at least and at `share`
    (autoload_min_relevance) x the best hit's relevance, the hits the prompt hook would inject. A hit
    listed below (recall_relative_relevance 0 shows every hit with its relevance) is no use: a 0.02
    "JS package manager" under a 0.9 "Editor theme" kept an unrelated note warm. A hit without a
    relevance (none was computed) counts."""
    best = max((r for r in relevances if r is not None), default=0.0)
    floor = max(cut, share * best)
    return [r is None or r >= floor for r in relevances]
