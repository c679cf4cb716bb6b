"""Calibrated relevance: the probability that a recall hit is relevant, from absolute signals."""
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
FEATURES = ("cosine", "text", "coverage", "names", "no_names", "agree", "score", "whole", "unknown", "known",
            "nameless", "nameless_whole")

# Signals derived from those: `cjk_cover`, the coverage no English term of the query explains
# (coverage with `known` 0 only comes from CJK bigrams: Chinese text judged on its words).
DERIVED = {"cjk_cover": lambda s: float(s.get("coverage") or 0.0) * (1.0 - float(s.get("known") or 0.0))}

# Logistic models fitted by bench/fit_relevance.py on every corpus together (LoCoMo conversations,
# the notes corpora til, rustbook and vuezh, Chinese passages, tiny trees of five entries; each
# corpus weighs the same): label 1 for an answer among a question's first CUT_DEPTH hits, 0 for
# the other hits and for every hit of an everyday prompt or an off-topic question. It prints the
# leave-one-corpus-out figures (docs/recall.md, "The relevance cut-off"). HYBRID serves queries
# the vector side judges; TEXT mostly Chinese queries (the bundled model is English) and the
# text, grep and index strategies, where the vector signals are unknown; each model's cut-off is
# chosen on its own queries and TEXT's bias shifted so both cut at recall_min_relevance. The fit
# chose 0.003; the default is 0.0075 (docs/recall.md), so TEXT's bias is shifted by the log-odds
# between the two (-6.275 -> -5.354): words-only and Chinese queries keep the cut the fit chose.
HYBRID = {"bias": -4.746, "cosine": -0.279, "text": -0.666, "coverage": 1.975, "names": 0.216, "no_names": -1.479,
          "agree": 0.982, "score": 0.862, "whole": 0.935, "unknown": -2.377, "known": -1.372, "nameless": -4.307,
          "nameless_whole": 9.446}
TEXT = {"bias": -5.354, "cosine": 0.0, "text": 1.561, "coverage": -0.816, "names": 0.11, "no_names": -0.546,
        "agree": 0.0, "score": 1.69, "whole": 0.0, "unknown": -1.74, "known": -1.67, "nameless": 0.434,
        "nameless_whole": 0.0, "cjk_cover": 0.194}


def probability(signals: dict, model: dict = HYBRID) -> float:
    """The model's probability that a hit with these signals is relevant (missing ones: 0)."""
    z = model["bias"] + sum(model.get(f, 0.0) * float(signals.get(f) or 0.0) for f in FEATURES)
    z += sum(model.get(f, 0.0) * derive(signals) for f, derive in DERIVED.items() if model.get(f))
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


# The cut-off is decided on this many hits whatever k a caller asks for (recall asks for this
# many, or k when larger), and the hits kept are then cut to k: a smaller k only shortens the
# same list (never "nothing relevant" where a larger k answers, never a hit a larger k drops).
CUT_DEPTH = 10


def keep(relevances: list[float], min_relevance: float, relative: float = 0.0, k: int | None = None) -> list[int]:
    """Positions of the first `k` (None: all) of the hits whose relevance clears `min_relevance`
    and `relative` x the best relevance among the first CUT_DEPTH hits (a weak tail below a clear
    answer is noise); `min_relevance` 0 keeps every hit."""
    if min_relevance <= 0:
        kept = list(range(len(relevances)))
    else:
        floor = max(min_relevance, relative * max(relevances[:CUT_DEPTH], default=0.0))
        kept = [i for i, r in enumerate(relevances) if r >= floor]
    return kept if k is None else kept[:k]
