"""The ranker of queries with CJK text: a linear score over signals that read Chinese, fitted leave-one-corpus-out."""
from __future__ import annotations

import numpy as np

# The features of one candidate entry for a query with CJK text (retrieval/cjk_rank.py computes them;
# each in [0, 1]). A query term is a CJK bigram of the query's topic (question words cut) or a Latin
# word or number of the query; every term weighs its idf over the whole tree, whichever side it
# comes from, so a mixed query's English word counts as much as its rarity says, not as half the query:
#   joint   BM25 over all the query's terms (bigrams on the entry's CJK text, words on its English
#           column; the query's single characters at cjk_bm25.CJK_CHAR_WEIGHT) over the BM25 of an
#           average entry holding each term once
#   held    idf share of the query's terms the entry holds anywhere
#   local   the best idf share of the query's terms held by one passage (two adjacent paragraphs):
#           the words of the question close together, not scattered over a 20 KB page
#   phrase  idf share of the query's CJK trigrams (two adjacent bigrams) the entry holds: its
#           phrases, not only its pairs of characters
#   title   idf share of the query's terms in the entry's title, aliases and path
#   head    the best idf share of the query's terms in one heading line of the entry
#   cos     the best chunk cosine times the query's Latin share (1 - lexical.cjk_share): the bundled
#           model reads only the English of either side (retrieval/readable.py)
#   mass    the idf the best passage holds (`local` times the query's whole idf) over log(1 + the
#           tree's entries): how much the match says, in "rare terms" (one common bigram held is
#           little, however large its share of a two-character query)
#   chars   BM25 over the query's CJK characters alone, each at its full idf: a paraphrase shares
#           characters where it shares no bigram (写进 / 写入, 监听 / 侦听)
FEATURES = ("joint", "held", "local", "phrase", "title", "head", "cos", "mass", "chars")

# Fitted by bench/fit_chinese.py on the Chinese corpora together (vuezh, weekly, advjava: their
# questions with CJK text; 300 CMRC trial questions; pairwise logistic, weights >= 0). Held out, each
# corpus fitted on the others, MRR@10 against `joint` alone (bigram BM25 with idf): vuezh 0.830 /
# 0.770, weekly 0.929 / 0.873, advjava 0.932 / 0.922, CMRC 0.993 / 0.990 (docs/recall.md).
WEIGHTS = {"joint": 0.1861, "held": 0, "local": 0.07556, "phrase": 0, "title": 0.5173, "head": 0.2135, "cos": 1,
           "mass": 0.03709, "chars": 0.103}
CANDIDATES = 100  # the fused ranking's top entries the ranker orders again


def rank(x: np.ndarray, weights: dict | None = None) -> np.ndarray:
    """The ranker's score of each row of a feature matrix (columns: FEATURES)."""
    weights = WEIGHTS if weights is None else weights
    return x @ np.array([weights.get(name, 0.0) for name in FEATURES])
