"""BM25 of the CJK side: character bigrams of the entries' CJK runs (and, lightly, characters), weighted by idf."""
from __future__ import annotations

import math

from memstrata.retrieval.lexical import cjk_text

# BM25 of the CJK side (Robertson's k1, b: the English pair is fitted to chat turns)
CJK_K1, CJK_B = 1.2, 0.75
# what a query character counts beside its bigrams, times its idf (0: bigrams only). A name of one
# rare character (蓍, 鯨) or one split by a question word forms no bigram the passage holds; its
# character still finds it, and a common character's idf is near 0.
CJK_CHAR_WEIGHT = 0.3


class CjkStats:
    """BM25 over the character bigrams of the entries' CJK runs (a run of one character is its
    own term): what each query bigram is worth is its idf, so a rare name (松鸦) outweighs a
    common word (属于) as it does in BM25, for a query of any length; the query's characters
    add CJK_CHAR_WEIGHT of their idf beside the bigrams. Built from the column
    texts once per table version; a term's document frequency is counted when first asked."""

    def __init__(self, texts: list[str]):
        self.runs: dict[int, str] = {}
        lengths = []
        for p, text in enumerate(texts):
            runs = cjk_text(text).split()
            if runs:
                self.runs[p] = " ".join(runs)
                lengths.append(sum(max(1, len(r) - 1) for r in runs))
        self.length = dict(zip(self.runs, lengths))
        self.n = len(lengths)  # entries with CJK text: idf among them, not among English notes
        self.avg_length = sum(lengths) / len(lengths) if lengths else 1.0
        self._df: dict[str, int] = {}

    def df(self, gram: str) -> int:
        got = self._df.get(gram)
        if got is None:
            got = self._df[gram] = sum(1 for t in self.runs.values() if gram in t)
        return got

    def idf(self, gram: str) -> float:
        df = self.df(gram)
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    def weights(self, grams: set[str], chars: set[str] = frozenset()) -> tuple[dict[str, float], dict[str, float]]:
        """What each query term is worth: a bigram its idf, a character (one not already a
        term) CJK_CHAR_WEIGHT times its idf."""
        idf = {g: self.idf(g) for g in grams}
        extra = {c: CJK_CHAR_WEIGHT * self.idf(c) for c in chars if c not in idf} if CJK_CHAR_WEIGHT else {}
        return idf, extra

    def ideal(self, grams: set[str], chars: set[str] = frozenset()) -> float:
        """The BM25 of an average-length entry holding each query term once (the sum of their weights)."""
        idf, extra = self.weights(grams, chars)
        return sum(idf.values()) + sum(extra.values())

    def scores(self, grams: set[str], positions, chars: set[str] = frozenset()) -> dict[int, tuple[float, float]]:
        """Per position: (BM25 over the BM25 of an average-length entry holding each query
        term once, share of the query bigrams' idf weight the entry holds); entries holding
        no bigram or character left out. The share reads bigrams only (what the relevance
        model was calibrated on)."""
        idf, extra = self.weights(grams, chars)
        total = sum(idf.values())
        whole = total + sum(extra.values())
        out: dict[int, tuple[float, float]] = {}
        if whole <= 0:
            return out
        for p in positions:
            text = self.runs.get(p)
            if not text:
                continue
            norm = CJK_K1 * (1.0 - CJK_B + CJK_B * self.length[p] / max(self.avg_length, 1e-9))
            score = held = 0.0
            for g, w in idf.items():
                f = text.count(g)
                if f:
                    score += w * f * (CJK_K1 + 1.0) / (f + norm)
                    held += w
            for c, w in extra.items():
                f = text.count(c)
                if f:
                    score += w * f * (CJK_K1 + 1.0) / (f + norm)
            if score:
                out[p] = (score / whole, held / total if total > 0 else 0.0)
        return out
