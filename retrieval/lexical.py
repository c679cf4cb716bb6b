"""Lexical side: the two full-text columns (English stemmed, CJK bigrams), query words, entities, RM3 terms.

Chinese: LanceDB's default tokenizer keeps a whole Chinese phrase as one token, so a
sub-phrase finds nothing. The CJK runs of every entry go to their own column, indexed with
the native `ngram` tokenizer (character bigrams, min = max = 2), and the CJK runs of a
query are searched there. Measured with tests/retrieval/measure_chinese_fts.py (30 Chinese
memories; hit@1 on 120 random 2-4 character sub-phrases / 30 short topic queries):
default .042 / .067, ngram 2-2 .983 / .933, ngram 1-2 .992 / .933, jieba .750 / .867,
icu .783 / .867. Bigrams also need no dictionary file in every process (jieba does) and
matched STACK.md's larger test (first hit 95.0% bigrams vs 90.5% jieba words).
"""
from __future__ import annotations

import functools
import math
import re
from collections import Counter
from datetime import datetime, timezone

from memstrata.retrieval.stemming import derived_forms, light_stem, stem  # noqa: F401  (callers read them here)

EN_COLUMN = "text_en"
CJK_COLUMN = "text_cjk"

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# A hyphen splits a word ("postgres-15", "follow-up", "gpt-4o-mini"): each part is found by itself,
# as LanceDB's own tokenizer splits them.
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’‘ʼ]*")
# Apostrophes as phones, Macs, Slack and docs type them read as the straight one: "QA’s" is the QA's
# a note names, and "don’t" a stop word, as typed on a keyboard.
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'"})

# Words that carry no topic in a query (question words, auxiliaries, pronouns, fillers) and
# the English stop words: removed from the lexical query and from feedback terms.
QUERY_STOPWORDS = frozenset("""
a about above after again against all am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves
out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
theirs them themselves then there there's these they they'd they'll they're they've this those through
to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
where where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're
you've your yours yourself yourselves
also ever kind kinds sort type types thing things something anything likely might may must shall will
get got gets go goes went much many way ways yes ok okay oh hey hi just really like s t
""".split())


# Words that place a question in time relative to now ("the last retro", "what did she do
# recently"): they say when, not what, so they are no query term (a note rarely repeats them;
# counted as terms, they lower the share of the query an answer holds).
TIME_WORDS = frozenset("last latest recent recently previous previously earlier lately ago".split())


# Capitalised words that name times, not entities (they go to the date handling instead).
CALENDAR_WORDS = frozenset("""
january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec
monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow
""".split())


# Chinese question words and sentence-final particles: like the English question words above,
# they carry no topic, so a query's CJK runs are cut at them before its bigrams are formed
# ("护照什么时候过期" asks for 护照 and 过期). Longest first, so 什么时候 goes whole.
CJK_QUESTION_WORDS = ("什么时候", "为什么", "怎么样", "怎么办", "什么", "怎么", "怎样", "如何", "哪里", "哪儿",
                      "哪个", "哪些", "哪天", "多少", "几时", "是不是", "有没有", "谁", "几", "吗", "呢", "吧",
                      "在哪里", "在哪儿", "在哪", "哪一", "哪位", "哪", "何时", "为何", "何处", "是否", "请问",
                      # the same in traditional characters (Taiwan, Hong Kong)
                      "什麼時候", "為什麼", "怎麼樣", "怎麼辦", "什麼", "甚麼", "怎麼", "哪裡", "哪個", "誰", "嗎", "幾時",
                      "幾", "有沒有", "在哪裡", "何時", "為何", "何處", "請問")
_CJK_QUESTION = re.compile("|".join(sorted(map(re.escape, CJK_QUESTION_WORDS), key=len, reverse=True)))


def cjk_without_questions(text: str) -> str:
    """A text with its CJK question words cut out (a space each: runs are split there, so no
    bigram bridges one)."""
    return _CJK_QUESTION.sub(" ", text or "")


def cjk_topic(query: str) -> str:
    """`cjk_without_questions` of a query; the query itself when nothing of its CJK text would be left."""
    cut = cjk_without_questions(query)
    return cut if has_cjk(cut) else query


def cjk_text(text: str) -> str:
    """The CJK runs of a text, space separated (what the CJK column indexes)."""
    return " ".join(_CJK_RUN.findall(text or ""))


def has_cjk(text: str) -> bool:
    return bool(_CJK_RUN.search(text or ""))


def cjk_share(text: str) -> float:
    """Share of the query's meaningful characters that are CJK (0 for English)."""
    cjk = sum(len(r) for r in _CJK_RUN.findall(text or ""))
    latin = sum(len(w) for w in _WORD.findall(text or ""))
    return cjk / (cjk + latin) if cjk + latin else 0.0


def date_words(created: datetime | None) -> str:
    """When an entry was written, as words full-text search can match ("8 May 2023 Monday")."""
    if created is None:
        return ""
    dt = created.astimezone(timezone.utc)
    return f"{dt.day} {dt:%B %Y %A}"


def en_text(full_text: str, created: datetime | None, tags: list[str]) -> str:
    """The English full-text column of an entry: its text, tags and the date it was written."""
    parts = [full_text]
    if tags:
        parts.append(" ".join(tags))
    stamp = date_words(created)
    if stamp:
        parts.append(stamp)
    return "\n".join(parts)


# the date line, with the relative dates of the text resolved after it (retrieval.dates.words)
_STAMP_LINE = re.compile(r"\n\d{1,2} [A-Z][a-z]+ \d{4} [A-Z][a-z]+day(?: (?:\d{1,2} )?(?:[A-Z][a-z]+ )?\d{4})*\Z")


def entry_part(column_text: str, tags: list | None) -> str:
    """The entry's own text (title and body) of an English column text: the tags and date
    lines `en_text` appended are taken off (snippets never show them)."""
    text = _STAMP_LINE.sub("", column_text or "")
    line = " ".join(tags or [])
    if line and text.endswith("\n" + line):
        text = text[: -len(line) - 1]
    return text


# A word is cut to this many characters before it is stemmed or counted: no English word is
# longer, and the Snowball stemmer is quadratic in word length (a 1 MB word took minutes; issue 27).
MAX_WORD_CHARS = 64


def words(text: str) -> list[str]:
    return [w.translate(_APOSTROPHES).strip("'")[:MAX_WORD_CHARS] for w in _WORD.findall(text or "")
            if w.strip("'’‘ʼ")]


def query_terms(query: str) -> list[str]:
    """Topic words of a query for full-text search: lower case, stop/question words dropped."""
    out = []
    for w in words(query):
        lw = w.lower().replace("’", "'")
        if lw in QUERY_STOPWORDS or lw in TIME_WORDS or lw.endswith("'s") and lw[:-2] in QUERY_STOPWORDS:
            continue
        lw = lw[:-2] if lw.endswith("'s") else lw
        if lw and lw not in out:
            out.append(lw)
    return out


def query_entities(query: str) -> list[str]:
    """Names in a query: capitalised words that are not stop/question words (any position).

    An all-capitals word (an acronym) counts too. These are matched case-sensitively as
    whole words against entries (entity boost) and left out of the dense query.
    """
    out = []
    for w in words(query):
        base = w[:-2] if w.endswith(("'s", "’s")) else w
        if (len(base) < 2 or not base[0].isupper() or base.lower() in QUERY_STOPWORDS
                or base.lower() in CALENDAR_WORDS):
            continue
        if base not in out:
            out.append(base)
    return out


# Words that ask about what a query names rather than name a topic of their own: a query left with
# these alone ("Tell me about", "What do you know about") is about the name it dropped.
ASKING_WORDS = frozenset({"tell", "describe", "summarize", "summarise", "summary", "remind", "explain", "know",
                          "info", "information", "anything", "everything", "something"})


def without_entities(query: str, entities: list[str]) -> str:
    """The query with named entities removed (what the dense side embeds); the query itself when
    fewer than two words, or nothing but question, stop and asking words, would be left ("Who is
    Marisol?" embedded as "Who is ?", "Describe Caroline" as "Describe")."""
    if not entities:
        return query
    pattern = re.compile(r"\b(" + "|".join(re.escape(e) for e in entities) + r")(['’]s)?\b")
    stripped = " ".join(pattern.sub(" ", query).split())
    if has_cjk(stripped):
        return stripped
    topic = [w for w in query_terms(stripped) if w not in ASKING_WORDS]
    return stripped if len(words(stripped)) >= 2 and topic else query


@functools.lru_cache(maxsize=1024)
def mention_pattern(entity: str) -> re.Pattern:
    """`entity` as a whole word (what `mentions` looks for)."""
    return re.compile(r"\b" + re.escape(entity) + r"\b")


def mentions(text: str, entity: str) -> bool:
    return mention_pattern(entity).search(text or "") is not None


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """A light suffix stripper for feedback-term statistics (the index stems on its own)."""
    for suffix in ("ing", "edly", "ed", "ies", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def feedback_terms(docs: list[str], doc_freq, n_docs: int, exclude: set[str], n_terms: int) -> list[str]:
    """RM3-style expansion terms: frequent in the top documents, rare in the collection.

    Each document's term distribution (tf / length) is weighted equally, multiplied by idf.
    `doc_freq(stem)` gives a stem's document frequency; one surface word per stem is kept.
    Calendar words are never expansion terms: the date an entry was written is part of its
    indexed text, so the top documents' weekdays and months would otherwise be picked.
    """
    weights: Counter = Counter()
    surface: dict[str, str] = {}
    excluded = {_stem(e) for e in exclude}
    for doc in docs:
        toks = [w.lower() for w in words(doc)]
        toks = [t for t in toks if t not in QUERY_STOPWORDS and t not in CALENDAR_WORDS
                and len(t) > 2 and not t.isdigit()]
        if not toks:
            continue
        counts = Counter(_stem(t) for t in toks)
        for t in toks:
            surface.setdefault(_stem(t), t)
        for stem, c in counts.items():
            if stem in excluded:
                continue
            idf = math.log((n_docs + 1) / (doc_freq(stem) + 0.5))
            weights[stem] += (c / len(toks)) * max(idf, 0.0)
    return [surface[s] for s, _ in weights.most_common(n_terms)]


def _stem_set(text: str) -> set[str]:
    return {_stem(w.lower()) for w in words(text)}


def doc_freqs(texts) -> Counter:
    """Document frequency of each stem over the collection (for feedback idf)."""
    df: Counter = Counter()
    for text in texts:
        df.update(_stem_set(text))
    return df


def doc_freqs_carried(old_df: Counter, old_texts: list[str], reuse: list, texts: list[str]) -> Counter:
    """`doc_freqs(texts)` from the previous collection's: reuse[n] is the old position of an
    entry whose text is unchanged, None for a new or changed one (only those are read)."""
    import numpy as np

    df = old_df.copy()
    dropped = np.ones(len(old_texts), dtype=bool)
    dropped[[j for j in reuse if j is not None]] = False
    for j in np.flatnonzero(dropped).tolist():
        df.subtract(_stem_set(old_texts[j]))
    for n, j in enumerate(reuse):
        if j is None:
            df.update(_stem_set(texts[n]))
    return +df


VOCABULARY_SLACK = 10_000  # stems no entry holds any more, past twice those in use, before renumbering


class TermStats:
    """In-memory BM25 statistics of the English column: per entry its stem counts and length."""

    def __init__(self, texts: list[str]):
        from memstrata.retrieval.term_rows import TermRows

        self.tf = TermRows.build(self._counts(text) for text in texts)
        self.df = self.tf.column_counts()
        self._finish(self.tf.lengths())

    @staticmethod
    def _counts(text: str) -> Counter:
        return Counter(stem(w) for w in words(text) if w.lower() not in QUERY_STOPWORDS)

    def _finish(self, lengths: list[int], postings_from=None) -> None:
        self.n = len(lengths)
        self.length = lengths
        self.avg_length = (sum(lengths) / len(lengths)) if lengths else 1.0
        self._postings = None
        self._postings_from = postings_from  # (old postings, reuse): carried over when first needed
        self._length_array = None

    @classmethod
    def carried(cls, old: "TermStats", reuse: list, texts: list[str]) -> "TermStats":
        """The statistics of a new collection from the previous one's: reuse[n] is the old
        position of an entry whose text is unchanged, None for a new or changed one (counted)."""
        import numpy as np

        self = cls.__new__(cls)
        fresh = {n: cls._counts(texts[n]) for n, j in enumerate(reuse) if j is None}
        self.tf = old.tf.carried(reuse, fresh)
        df = old.df.copy()
        for counts in fresh.values():
            df.update(counts.keys())
        dropped = np.ones(len(old.tf), dtype=bool)
        dropped[[j for j in reuse if j is not None]] = False
        df.subtract(old.tf.column_counts(np.flatnonzero(dropped)))
        self.df = +df
        lengths = [old.length[j] if j is not None else sum(fresh[n].values()) for n, j in enumerate(reuse)]
        built = old._postings
        if len(self.tf.terms) > 2 * len(self.df) + VOCABULARY_SLACK:  # words of removed texts: renumber, rebuild
            self.tf, built = self.tf.compacted(), None
        self._finish(lengths, (built, reuse) if built is not None else None)
        return self

    def postings(self):
        """The inverted index of these statistics (retrieval.postings; built on first use)."""
        import numpy as np

        from memstrata.retrieval.postings import Postings

        if self._postings is None:
            carry = self._postings_from
            self._postings = Postings.carried(carry[0], carry[1], self.tf) if carry else Postings.build(self.tf)
            self._postings_from = None
        if self._length_array is None:
            self._length_array = np.asarray(self.length, dtype=np.float64)
        return self._postings

    def top(self, terms: dict[str, float], k1: float, b: float, limit: int, mask=None) -> dict[int, float]:
        """BM25 (k1, b) of the `limit` best entries for weighted query `terms` {word: weight},
        by position (the sum `bm25` computes), read from the inverted index; entries outside
        `mask` and zero scores left out."""
        postings = self.postings()
        return postings.bm25_top(self._query(terms), self.idf, self._length_array, self.avg_length, k1, b,
                                 limit, mask)

    def _query(self, terms) -> dict[str, float]:
        q: dict[str, float] = {}
        for t in terms:
            s = stem(t)
            q[s] = q.get(s, 0.0) + (terms[t] if isinstance(terms, dict) else 1.0)
        return q

    def idf(self, s: str) -> float:
        return math.log(1.0 + (self.n - self.df.get(s, 0) + 0.5) / (self.df.get(s, 0) + 0.5))

    def ideal(self, terms) -> float:
        """The BM25 of an average-length entry holding each query term once (what `bm25` is
        divided by to give the share of the query's term weight an entry matches)."""
        return sum(wt * self.idf(s) for s, wt in self._query(terms).items())

    def coverage(self, positions, terms) -> dict[int, float]:
        """Share of the query's idf weight whose terms an entry holds at all (in some derived
        form: `derived_forms`), by position."""
        q = self._query(terms)
        idf = {s: wt * self.idf(s) for s, wt in q.items()}
        total = sum(idf.values())
        if total <= 0:
            return {}
        forms = {s: derived_forms(s) for s in idf}
        out = {}
        for p in positions:
            held = self.tf[p]
            out[p] = sum(v for s, v in idf.items() if any(f in held for f in forms[s])) / total
        return out

    def known_share(self, terms) -> float:
        """Share of the query's idf weight whose terms (in some derived form) some entry holds (0 without terms)."""
        idf = {s: wt * self.idf(s) for s, wt in self._query(terms).items()}
        total = sum(idf.values())
        held = sum(v for s, v in idf.items() if any(self.df.get(f, 0) > 0 for f in derived_forms(s)))
        return held / total if total > 0 else 0.0

    def bm25(self, positions, terms: dict[str, float], k1: float, b: float) -> dict[int, float]:
        """BM25 (k1, b) of `positions` for weighted query `terms` {word: weight}; 0 scores left out."""
        q: dict[str, float] = {}
        for t, wt in terms.items():
            s = stem(t)
            q[s] = q.get(s, 0.0) + wt
        idf = {s: math.log(1.0 + (self.n - self.df.get(s, 0) + 0.5) / (self.df.get(s, 0) + 0.5)) for s in q}
        out = {}
        avg = max(self.avg_length, 1e-9)
        for p in positions:
            tf = self.tf[p]
            norm = k1 * (1.0 - b + b * self.length[p] / avg)
            score = 0.0
            for s, wt in q.items():
                f = tf.get(s, 0)
                if f:
                    score += wt * idf[s] * f * (k1 + 1.0) / (f + norm)
            if score > 0:
                out[p] = score
        return out


def fts_configs():
    """(column, FTS index config) of the columns LanceDB indexes: the CJK column only (the
    English column is searched in memory, retrieval.postings, with the statistics recall keeps
    anyway; a native index of it would only cost time at every write)."""
    from lancedb.index import FTS

    return [
        (CJK_COLUMN, FTS(with_position=False, base_tokenizer="ngram", ngram_min_length=2, ngram_max_length=2,
                         lower_case=True, stem=False, remove_stop_words=False)),
    ]


def cjk_query(query: str) -> str:
    """The CJK part of a query as space-separated runs; single characters kept as written."""
    return " ".join(r for r in _CJK_RUN.findall(query or ""))


def cjk_chars(text: str) -> set[str]:
    """The characters of a text's CJK runs."""
    return set("".join(_CJK_RUN.findall(text or "")))


def cjk_bigrams(text: str) -> set[str]:
    """The character bigrams of a text's CJK runs (single-character runs as they are)."""
    out = set()
    for run in _CJK_RUN.findall(text or ""):
        out.update([run] if len(run) == 1 else (run[i:i + 2] for i in range(len(run) - 1)))
    return out

