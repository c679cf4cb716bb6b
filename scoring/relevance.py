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

# Logistic models fitted by bench/fit_relevance.py on the LoCoMo dev conversations (labels:
# annotated evidence turns among the top 10 hits of each question asked of its own tree, and
# none among those of a question asked of another conversation's tree or of an everyday query
# (weather, recipes...: a list of its own, not bench/abstention.py's); it prints the
# leave-one-conversation-out figures. HYBRID has the vector side; TEXT is used when only words are compared (text, grep
# and index strategies), where `cosine` and `agree` are unknown.
HYBRID = {"bias": -4.14, "cosine": 0.584, "text": -7.155, "coverage": 8.936, "names": 0.879, "no_names": -1.285,
          "agree": 0.668, "score": 0.108, "whole": 2.52, "unknown": -3.478, "known": -1.681, "nameless": -4.638,
          "nameless_whole": 12.741}
TEXT = {"bias": -3.266, "cosine": 0.0, "text": -5.331, "coverage": 9.186, "names": 0.602, "no_names": -1.539,
        "agree": 0.0, "score": -0.232, "whole": 0.0, "unknown": -4.0, "known": -1.236, "nameless": -1.744,
        "nameless_whole": 0.0}


def probability(signals: dict, model: dict = HYBRID) -> float:
    """The model's probability that a hit with these signals is relevant (missing ones: 0)."""
    z = model["bias"] + sum(model.get(f, 0.0) * float(signals.get(f) or 0.0) for f in FEATURES)
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
