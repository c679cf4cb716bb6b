"""The ranking of a query with CJK text: the fused top candidates ordered by signals that read Chinese (scoring/cjk_ranker.py)."""
from __future__ import annotations

import bisect
import math
import re

from memstrata.retrieval import cjk_bm25, lexical, names

_PARAGRAPH = re.compile(r"\n\s*\n")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.+)$", re.M)
_PATH_SEPARATORS = re.compile(r"[/\\_.-]+")


class QueryTerms:
    """A query's terms, each weighed by its idf over the whole tree: the CJK bigrams of its topic
    (question words cut: lexical.cjk_topic), its Latin words and numbers (stemmed as the English
    column is), its CJK characters (at CJK_CHAR_WEIGHT, for BM25 only) and its CJK trigrams."""

    def __init__(self, query: str, stats, cjk, n: int):
        topic = lexical.cjk_topic(query)
        grams = lexical.cjk_bigrams(topic)
        self.grams = {g: _idf(n, cjk.df(g)) for g in grams}
        self.words, self.raw = {}, {}  # stem -> idf; stem -> the query's word (substring tests)
        for w in lexical.query_terms(query) if stats is not None else []:
            s = lexical.stem(w)
            if s not in self.words:
                self.words[s], self.raw[s] = stats.idf(s), w
        self.letters = {c: _idf(n, cjk.df(c)) for c in lexical.cjk_chars(topic)}  # every character, at its idf
        self.chars = {c: cjk_bm25.CJK_CHAR_WEIGHT * w for c, w in self.letters.items()
                      if c not in self.grams} if cjk_bm25.CJK_CHAR_WEIGHT else {}
        runs = [r for r in lexical.cjk_query(lexical.cjk_without_questions(query)).split() if len(r) >= 3]
        self.tris = {r[i:i + 3]: min(self.grams.get(r[i:i + 2], 0.0), self.grams.get(r[i + 1:i + 3], 0.0))
                     for r in runs for i in range(len(r) - 2)}
        self.total = sum(self.grams.values()) + sum(self.words.values())

    def share(self, text: str, low: str | None = None) -> float:
        """The idf share of the terms (bigrams and words) a text holds (words found as substrings
        of the lower-cased text, in their query form or stem)."""
        if self.total <= 0:
            return 0.0
        low = text.lower() if low is None else low
        held = sum(w for g, w in self.grams.items() if g in text)
        held += sum(w for s, w in self.words.items() if s in low or self.raw[s] in low)
        return held / self.total


    def found(self, low: str) -> dict:
        """The terms a lower-cased text holds: {term: (idf, start offsets)} (a word by its query form
        or its stem)."""
        out = {}
        for term, w in self.grams.items():
            at = _offsets(low, term)
            if at:
                out[term] = (w, at)
        for s, w in self.words.items():
            at = sorted(set(_offsets(low, s)) | set(_offsets(low, self.raw[s])))
            if at:
                out[s] = (w, at)
        return out


def _offsets(text: str, term: str) -> list[int]:
    out, at = [], text.find(term)
    while at >= 0:
        out.append(at)
        at = text.find(term, at + 1)
    return out


def layout(frame, texts: list[str], p: int) -> tuple[str, list[int], list[tuple[int, int]]]:
    """An entry's text lower-cased, its paragraphs' start offsets and its heading lines' spans (kept
    on the frame for LAYOUT_CACHE entries: a query with CJK text reads them for its 100 candidates)."""
    cache = frame.__dict__.setdefault("_cjk_layout", {})
    got = cache.get(p)
    if got is None:
        low = (texts[p] or "").lower()
        got = (low, [0] + [m.end() for m in _PARAGRAPH.finditer(low)], [m.span() for m in _HEADING.finditer(low)])
        if len(cache) < LAYOUT_CACHE:
            cache[p] = got
    return got


LAYOUT_CACHE = 20000


def _local_and_head(q: QueryTerms, found: dict, starts: list[int], heads: list) -> tuple[float, float]:
    """The best idf share of the query's terms held by one passage (two adjacent paragraphs: a
    heading and its text, an item and its comment), and by one heading line, from the terms'
    offsets (each paragraph and heading is not searched again)."""
    if not found or q.total <= 0:
        return 0.0, 0.0
    head_starts = [a for a, _ in heads]
    paras: dict[int, set] = {}
    in_head: dict[int, set] = {}
    for term, (_, at) in found.items():
        for pos in at:
            paras.setdefault(bisect.bisect_right(starts, pos) - 1, set()).add(term)
            h = bisect.bisect_right(head_starts, pos) - 1
            if h >= 0 and pos < heads[h][1]:
                in_head.setdefault(h, set()).add(term)

    def weight(terms) -> float:
        return sum(found[t][0] for t in terms) / q.total

    local = max(weight(held | paras.get(i + 1, set())) for i, held in paras.items())
    return local, max((weight(held) for held in in_head.values()), default=0.0)


def _idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def features(query: str, cand: list[int], texts: list[str], frame, stats, cjk, dense: dict, cjk_share: float):
    """The feature matrix (len(cand) x len(scoring.cjk_ranker.FEATURES)) of candidate positions `cand`:
    `texts` the entries' English column texts (title, body, tags, date), `stats` the English term
    statistics (lexical.TermStats, None without), `cjk` the CJK statistics (cjk_bm25.CjkStats),
    `dense` the best chunk cosine by position (readable chunks only: retrieval/readable.py)."""
    import numpy as np

    from memstrata.scoring.cjk_ranker import FEATURES

    n = max(len(frame.ids), 1)
    q = QueryTerms(query, stats, cjk, n)
    floor = min(dense.values()) if dense else 0.0
    rows = []
    ideal = q.total + sum(q.chars.values())
    for p in cand:
        text = texts[p] or ""
        low, starts, heads = layout(frame, texts, p)
        found = q.found(low)
        f = {"joint": _joint(q, p, stats, cjk) / ideal if ideal > 0 else 0.0,
             "held": sum(w for w, _ in found.values()) / q.total if q.total > 0 else 0.0}
        f["local"], f["head"] = _local_and_head(q, found, starts, heads)
        tris = sum(q.tris.values())
        f["phrase"] = sum(w for t, w in q.tris.items() if t in text) / tris if tris > 0 else 0.0
        named = " ".join([frame.cols["title"][p] or "", " ".join(names.aliases_in(text)),
                          _PATH_SEPARATORS.sub(" ", (frame.cols["path"][p] or "").removesuffix(".md"))])
        f["title"] = q.share(named)
        f["cos"] = (1.0 - cjk_share) * dense.get(p, floor)
        f["mass"] = f["local"] * q.total / math.log(1.0 + n)
        f["chars"] = _bm25(q.letters, cjk.runs.get(p), cjk, p)
        rows.append([f[name] for name in FEATURES])
    return np.asarray(rows, dtype=np.float64).reshape(len(cand), len(FEATURES))


def _joint(q: QueryTerms, p: int, stats, cjk) -> float:
    """BM25 of entry `p` over every term of the query: bigrams and characters on its CJK runs (CJK
    length norm), words on its English column (word length norm), each term at its idf."""
    k1, b = cjk_bm25.CJK_K1, cjk_bm25.CJK_B
    score = 0.0
    runs = cjk.runs.get(p)
    if runs:
        norm = k1 * (1.0 - b + b * cjk.length[p] / max(cjk.avg_length, 1e-9))
        for term, w in list(q.grams.items()) + list(q.chars.items()):
            tf = runs.count(term)
            if tf:
                score += w * tf * (k1 + 1.0) / (tf + norm)
    if q.words and stats is not None:
        counts = stats.tf[p]
        norm = k1 * (1.0 - b + b * stats.length[p] / max(stats.avg_length, 1e-9))
        for s, w in q.words.items():
            tf = counts.get(s, 0)
            if tf:
                score += w * tf * (k1 + 1.0) / (tf + norm)
    return score


def _bm25(terms: dict, runs: str | None, cjk, p: int) -> float:
    """BM25 of an entry's CJK runs over `terms` ({term: idf}), over the BM25 of an average entry holding each once."""
    ideal = sum(terms.values())
    if not runs or ideal <= 0:
        return 0.0
    k1, b = cjk_bm25.CJK_K1, cjk_bm25.CJK_B
    norm = k1 * (1.0 - b + b * cjk.length[p] / max(cjk.avg_length, 1e-9))
    score = 0.0
    for term, w in terms.items():
        tf = runs.count(term)
        if tf:
            score += w * tf * (k1 + 1.0) / (tf + norm)
    return score / ideal


def order(score, query: str, frame, texts: list[str], stats, cjk, dense: dict, cjk_share: float, inactive=None,
          archived_factor: float = 1.0, signals_out: dict | None = None):
    """The fused ranking's top candidates (scoring.cjk_ranker.CANDIDATES) ordered by the CJK ranker,
    the others below them in their fused order (a recall asking for more hits gets those too), and
    each candidate's features by position ({feature: value}: the relevance model reads them);
    `signals_out` (bench/fit_chinese.py) gets the candidates and their feature matrix."""
    import numpy as np

    from memstrata.retrieval.rerank import below_ranked, distinct_entries
    from memstrata.scoring import cjk_ranker, ranker

    finite = np.isfinite(score)
    top = distinct_entries(score, cjk_ranker.CANDIDATES, frame)
    cand = np.asarray(top[finite[top]], dtype=np.int64)
    if not len(cand):
        return score, {}
    x = features(query, cand.tolist(), texts, frame, stats, cjk, dense, cjk_share)
    if signals_out is not None:
        signals_out.update(cjk_candidates=cand, cjk_features=x)
    out = np.full(len(score), -np.inf)
    out[cand] = ranker.status_scaled(cjk_ranker.rank(x), None if inactive is None else inactive[cand],
                                     archived_factor)
    below_ranked(out, score, cand, finite)
    return out, {int(p): dict(zip(cjk_ranker.FEATURES, row.tolist())) for p, row in zip(cand, x)}
