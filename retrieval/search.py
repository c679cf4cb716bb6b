"""The recall pipeline: filters, vector and full-text searches on the table, feedback, fusion, hits."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from memstrata.retrieval import (ann, cjk_bm25, cjk_rank, fusion, held_back, lexical, names, prompts, query_names, readable,
                                 rerank)
from memstrata.retrieval.hits import (RecallHit, RecallResult, best_sentence, no_text, place_empty, sibling_check,
                                      text_first)
from memstrata.retrieval.rerank import distinct_entries
from memstrata.retrieval.table import VectorIndex, sql_str
from memstrata.retrieval.units import SEP, entry_of, is_unit, turn_of
from memstrata.storage.turns import is_session

STRATEGIES = ("auto", "hybrid", "vector", "text", "grep", "index")


@dataclass
class Filters:
    category: str | None = None
    tier: str | None = None
    status: str | None = None
    tags: list | None = None
    since: datetime | None = None
    until: datetime | None = None
    sessions: bool = True  # False: captured sessions' turns are left out (`mem recall --no-sessions`)

    def where(self) -> str | None:
        parts = [] if self.sessions else [f"id NOT LIKE '%{SEP}%'"]  # a turn's row key is `<id>#<n>`
        if self.category:
            like = self.category.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"
            parts.append(f"(category = {sql_str(self.category)} OR category LIKE {sql_str(like)})")
        if self.tier:
            parts.append(f"tier = {sql_str(self.tier)}")
        if self.status:
            parts.append(f"status = {sql_str(self.status)}")
        for tag in self.tags or []:
            parts.append(f"array_has(tags, {sql_str(tag)})")
        if self.since is not None:
            parts.append(f"created >= {self.since.timestamp()!r}")
        if self.until is not None:
            parts.append(f"created <= {self.until.timestamp()!r}")
        return " AND ".join(parts) or None

    def admits_entry(self, entry) -> bool:
        if not self.sessions and is_session(entry):
            return False
        return self.admits(entry.category, entry.tier, entry.status, entry.tags,
                           entry.created.timestamp() if entry.created else None)

    def admits(self, category, tier, status, tags, created, rid: str | None = None) -> bool:
        if not self.sessions and rid is not None and is_unit(rid):
            return False
        if self.category and not (category == self.category or (category or "").startswith(self.category + "/")):
            return False
        if self.tier and tier != self.tier or self.status and status != self.status:
            return False
        if self.tags and not set(self.tags) <= set(tags or []):
            return False
        if self.since is not None and (created is None or created < self.since.timestamp()):
            return False
        return not (self.until is not None and (created is None or created > self.until.timestamp()))


def _iso(ts):
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


_MONTHS = {m: i for i, m in enumerate(["january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"], 1)}
_DATE_ISO = re.compile(r"\b(\d{4})-(\d{2})(?:-(\d{2}))?\b")
_DATE_WORDS = re.compile(r"\b(?:(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?)?(" + "|".join(_MONTHS)
                         + r")\.?,?\s*(?:(\d{1,2})(?:st|nd|rd|th)?,?\s*)?(\d{4})\b", re.I)


def named_dates(query: str) -> list[tuple[float, float]]:
    """Date ranges a query names explicitly (2023-05-08, 2023-05, 8 May 2023, May 2023)."""
    out = []
    for y, m, d in _DATE_ISO.findall(query):
        out.append(_span(int(y), int(m), int(d) if d else None))
    for d1, month, d2, y in _DATE_WORDS.findall(query):
        day = d1 or d2
        out.append(_span(int(y), _MONTHS[month.lower()], int(day) if day else None))
    return [s for s in out if s is not None]


def _span(year, month, day):
    try:
        if day:
            start = datetime(year, month, day, tzinfo=timezone.utc)
            return start.timestamp(), start.timestamp() + 86400
        start = datetime(year, month, 1, tzinfo=timezone.utc)
        end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=timezone.utc)
        return start.timestamp(), end.timestamp()
    except ValueError:
        return None


def _fts(table, text: str, column: str, where: str | None, limit: int) -> list[tuple[str, float]]:
    if not text.strip():
        return []
    q = table.search(text, query_type="fts", fts_columns=column)
    if where:
        q = q.where(where, prefilter=True)
    rows = q.select(["id", "_score"]).limit(limit).to_arrow().to_pydict()
    return list(zip(rows["id"], rows["_score"]))


def search(index: VectorIndex, embedder, query: str, k: int, filters: Filters, mode: str,
           weights: fusion.FusionWeights, settings, explain: bool = False,
           _signals_out: dict | None = None) -> RecallResult:
    """Run `mode` (hybrid, vector or text) over the table; `embedder` may be None for text.

    Every hit carries `relevance`, the calibrated probability (scoring.relevance) that it is
    relevant; the caller applies the cut-off."""
    import numpy as np

    from memstrata.scoring import relevance as rel

    table = index.table()
    frame = index.frame()
    result = RecallResult(query=query, strategy=mode)
    if table is None or frame is None or not frame.ids:
        return result
    n = len(frame.ids)
    where = filters.where()
    # a k past recall_candidates widens the pool to k (at most every entry; every chunk row on the
    # vector side), so `-k 500` gets 500 hits, not the default pool's ~100; a smaller k leaves it be
    limit = max(settings.recall_candidates, min(int(k), n))
    vector_rows = limit * 2 if limit == settings.recall_candidates else max(limit * 2, table.count_rows())
    entities = lexical.query_entities(query)
    terms = lexical.query_terms(query)
    cjk_share = lexical.cjk_share(query)
    dense: dict[int, float] = {}
    qv = None
    best_vec: dict[int, object] = {}

    def vector_search(vec) -> None:
        dense.clear()
        with_vectors = bool(weights.dense_feedback)  # only Rocchio feedback reads them (200 x 384 floats)
        columns = ["id", "kind", "_distance"] + (["vector"] if with_vectors else [])

        def rows_within(scope):
            sql, admitted = scope  # a few entries admitted: searched exactly (ann.tune_query)
            return ann.nearest_rows(table, index, vec, vector_rows, admitted, sql, columns)

        scopes = [(where, n if mask is None else int(mask.sum()))]
        if projects:
            scopes.append((query_names.within(where, projects), int(in_projects.sum())))
        for rows in ann.searched_together(rows_within, scopes):
            vectors = rows["vector"] if with_vectors else [None] * len(rows["id"])
            for rid, kind, v, dist in zip(rows["id"], rows["kind"], vectors, rows["_distance"]):
                pos = frame.pos.get(rid)
                if pos is None or kind in readable.NOT_A_MATCH:  # a stand-in vector, a note's `about` chunk
                    continue
                sim = 1.0 - float(dist) / 2.0
                if sim > dense.get(pos, -2.0):
                    dense[pos] = sim
                    best_vec[pos] = v

    if where is None:
        mask = None
    else:
        mask = np.array([filters.admits(frame.cols["category"][i], frame.cols["tier"][i], frame.cols["status"][i],
                                        frame.cols["tags"][i], frame.cols["created"][i], frame.ids[i])
                         for i in range(n)])
    dense_query = query
    projects: list[str] = []
    bm25_terms, common = terms, []  # without the names whose projects are searched (query_names.topic_terms)
    if mode in ("hybrid", "vector") and embedder is not None:
        projects = query_names.projects(index, frame, entities, settings, mask)
        if projects:  # their admitted entries: both searches run again within them
            in_projects = query_names.in_categories(frame, projects)
            in_projects = in_projects if mask is None else in_projects & mask
        common = query_names.common(index, frame, entities, settings, mask)
        dense_query = lexical.without_entities(query, common)
        qv = embedder.embed_query(dense_query)
        vector_search(qv)
        if projects:
            bm25_terms = query_names.topic_terms(terms, common)
    stats = index.term_stats(frame) if terms else None
    ideal = stats.ideal(bm25_terms) if stats is not None else 0.0
    text_scores: dict[int, float] = {}
    cjk_scores: dict[int, float] = {}  # CJK BM25 over an average entry's, and the idf share held
    cjk_cover: dict[int, float] = {}
    cjk_ideal = 0.0
    texts = None
    text_scores = _text_side(stats, bm25_terms, mask, settings, limit)  # vector mode too: it is judged on the words
    if projects and stats is not None:  # the named conversations' own best, as on the dense side
        text_scores.update(_text_side(stats, bm25_terms, in_projects, settings, limit))
        if bm25_terms != terms:
            query_names.add_names_said(text_scores, index, frame, stats, common)
    if lexical.has_cjk(query):
        texts = index.texts(frame)
        topic = lexical.cjk_topic(query)  # question words (什么, 哪里, 吗 ...) are no topic
        found = [frame.pos[rid] for rid, _ in _fts(table, lexical.cjk_query(topic), lexical.CJK_COLUMN, where,
                                                   limit) if rid in frame.pos]
        cjk, grams, chars = _cjk_stats(frame, texts), lexical.cjk_bigrams(topic), lexical.cjk_chars(topic)
        cjk_ideal = cjk.ideal(grams, chars)
        for pos, (share, held) in cjk.scores(grams, found, chars).items():
            cjk_scores[pos], cjk_cover[pos] = share, held
    if mask is None:
        mask = np.ones(n, dtype=bool)
    inactive = _inactive(frame)
    if texts is None and (entities or weights.feedback or terms):
        texts = index.texts(frame)
    entity_share = None
    named = query_names.known(index, frame, entities)  # "PM", "VS Code" that no entry mentions are no names here
    if named and texts is not None:
        entity_share = np.zeros(n)
        for e in named:
            for i in query_names.mentioning(frame, texts, e, stats or frame._stats):
                if mask[i]:
                    entity_share[i] += 1.0
        entity_share /= len(named)
    structure = _structure(index, frame, weights)
    dates = named_dates(query)
    date_near = (fusion.date_proximity(frame.stamps(), dates, 86400.0 * settings.recall_date_after_days)
                 if dates else None)
    text_arr, cjk_arr = fusion.scaled(n, text_scores, ideal), fusion.scaled(n, cjk_scores, 1.0)
    if cjk_ideal > 0 and terms:
        text_arr, cjk_arr = _mixed_sides(n, stats, terms, ideal, mask, settings, text_arr, cjk_arr, cjk_ideal)

    def rank(feedback_scores, words: bool = mode != "vector"):
        cosine = fusion.dense_scores(n, dense) if dense else np.zeros(n)
        return fusion.ranking(weights, cosine, text_arr if words else np.zeros(n),
                              fusion.scaled(n, feedback_scores, fb_ideal[0]), cjk_arr if words else np.zeros(n),
                              cjk_share, structure, entity_share, date_near, inactive, mask)

    fb_ideal = [0.0]
    if _signals_out is not None:  # bench/fit_ranking.py: the signals, to rank offline
        _signals_out.update(n=n, cosine=fusion.dense_scores(n, dense) if dense else np.zeros(n),
                            text=text_arr, cjk=cjk_arr, cjk_share=cjk_share,
                            structure=structure, entity_share=entity_share, date_near=date_near,
                            inactive=inactive, mask=mask)
    score, parts, boosts = rank({})
    fb_terms: list[str] = []
    feedback: dict[int, float] = {}
    if mode in ("hybrid", "text") and weights.feedback and texts is not None and terms:
        top = distinct_entries(score, settings.recall_feedback_docs, frame).tolist()
        if top:
            df = index.doc_freq(frame)
            fb_terms = lexical.feedback_terms([texts[i] for i in top], lambda s: df.get(s, 0), n,
                                              set(terms) | {e.lower() for e in entities},
                                              settings.recall_feedback_terms)
            feedback = _text_side(stats, fb_terms, None if where is None else mask, settings)
            fb_ideal[0] = stats.ideal(fb_terms) if stats is not None and fb_terms else 0.0
            if feedback:
                score, parts, boosts = rank(feedback)
    if qv is not None and weights.dense_feedback and dense:
        # Rocchio feedback on the dense side: the query vector moved towards the best chunks
        # of the top entries, then searched again.
        top = [i for i in distinct_entries(score, settings.recall_feedback_docs, frame).tolist() if i in best_vec]
        if top:
            centroid = np.mean([np.asarray(best_vec[i], dtype=np.float32) for i in top], axis=0)
            moved = qv + weights.dense_feedback * centroid
            vector_search(moved / max(float(np.linalg.norm(moved)), 1e-9))
            score, parts, boosts = rank(feedback)
    whole: dict[int, float] = {}
    fused, judged_parts = score, parts  # the relevance model reads the fused score (one scale with or without the ranker)
    if mode == "vector":  # judged as hybrid judges the same note: the model was fitted with the words' evidence,
        fused, judged_parts, _ = rank({}, words=True)  # and read a body's words as absent (helm: 0.008, not 0.25)
    if qv is not None and dense:
        score, whole = rerank.learned(score, parts, qv, table, frame, stats, terms, entity_share, date_near,
                                      structure, weights, _signals_out, reorder=not cjk_share, inactive=inactive,
                                      texts=(lambda: texts if texts is not None else index.texts(frame)))
    read_cjk: dict[int, dict] = {}  # a query with CJK text: each candidate's signals that read Chinese
    if cjk_ideal > 0 and mode != "vector":  # ordered by them
        score, read_cjk = cjk_rank.order(score, query, frame, texts, stats, _cjk_stats(frame, texts), dense, cjk_share,
                               inactive, weights.archived_factor, _signals_out)
    texts = texts if texts is not None else index.texts(frame)
    order = distinct_entries(score, k, frame).tolist()
    own = {p: names.without_names(lexical.entry_part(texts[p], frame.cols["tags"][p])) for p in order}
    empty = {p for p in order if no_text(own[p], frame.cols["title"][p])}
    order = text_first(order, empty)
    # ranks among the notes that can answer: an empty note's title match above the answer in both
    # lists made the answer rank 2 and dropped its relevance under the cut-off ("nothing relevant")
    dense_rank = {p: r for r, p in enumerate((p for p in sorted(dense, key=lambda p: -dense[p]) if p not in empty), 1)}
    text_rank = {p: r for r, p in enumerate((p for p in sorted(text_scores, key=lambda p: -text_scores[p])
                                             if p not in empty), 1)}
    coverage = stats.coverage(order, terms) if stats is not None else {}
    # a query with CJK text is judged on what reads Chinese (CJK; its English part's cosine among
    # them): the bundled model is English and embeds no CJK text (retrieval/readable.py)
    model = rel.CJK if read_cjk else rel.HYBRID if dense and cjk_share < 0.5 else rel.TEXT
    unknown = (len(entities) - len(named)) / len(entities) if entities else 0.0
    known = stats.known_share(terms) if stats is not None and terms else 0.0
    # the relevance model reads the better of the two sides' shares, as it was calibrated (a
    # share over both, weighted by idf, drops answers to mixed queries: 0.85 kept, not 0.88)
    cover = {p: max(coverage.get(p, 0.0), cjk_cover.get(p, 0.0)) for p in order}
    grams = lexical.cjk_bigrams(lexical.cjk_topic(query)) if cjk_share else set()  # for the snippets
    judged: list[dict] = []  # the hits' signals in rank order: their relevance is judged as a list
    for pos in order:
        c = frame.cols
        signals = relevance_signals(
            cosine=float(parts["dense"][pos]) if dense else None,
            text=_text_signal(judged_parts, pos, cover[pos] if pos in cjk_cover else None, cjk_share),
            coverage=cover[pos],
            names=None if entity_share is None else float(entity_share[pos]),
            agree=dense_rank.get(pos, 10**9) <= 10 and text_rank.get(pos, 10**9) <= 10, score=float(fused[pos]),
            whole=whole.get(pos), unknown=unknown, known=known, nameless=not entities, cjk=read_cjk.get(pos))
        text = own[pos]
        snippet = best_sentence(text, terms, c["title"][pos], grams, sibling_check(frame, texts, pos)) or c["title"][pos]
        hit = RecallHit(id=entry_of(frame.ids[pos]), title=c["title"][pos], score=float(score[pos]), snippet=snippet,
                        category=c["category"][pos], tier=c["tier"][pos], status=c["status"][pos],
                        path=c["path"][pos], created=_iso(c["created"][pos]), turn=turn_of(frame.ids[pos]))
        judged.append(signals)
        if explain:
            low = text.lower()
            hit.signals = {
                "vector_rank": dense_rank.get(pos), "vector_similarity": _r(dense.get(pos)),
                "text_rank": text_rank.get(pos), "text_score": _r(text_scores.get(pos)),
                "cjk_score": _r(cjk_scores.get(pos)), "feedback_score": _r(feedback.get(pos)),
                "matched_terms": [t for t in terms if t in low],
                "relevance_signals": {f: _r(v) for f, v in signals.items()},
                "dense": _r(parts["dense"][pos]), "text": _r(parts["text"][pos]),
                "boosts": {name: _r(v[pos]) for name, v in boosts.items() if v[pos]},
                "status_factor": weights.archived_factor if inactive[pos] else 1.0, "no_text": pos in empty,
            }
        result.results.append(hit)
    # the notes with text are judged as a list of their own: an empty note's title match ahead of the
    # answer gave the top hit a negative margin and dropped it under the cut-off
    with_text = [n for n, p in enumerate(order) if p not in empty]
    own_list = dict(zip(with_text, rel.relevances([judged[n] for n in with_text], model))) if with_text else {}
    # words decide for a hit holding every word of a query that is one identifier, or of any query on the
    # text side alone (`--strategy text`): judged as grep's hits are (the TEXT model, refitted with the
    # Chinese corpora, put a unique word's only holder at 0.009, under the cut-off)
    words_decide = is_identifier(query) or model is rel.TEXT
    topic = prompts.has_topic(query)  # "谢谢", "hello", "ok": a prompt that names nothing is relevant to nothing
    for n, (hit, relevance) in enumerate(zip(result.results, rel.relevances(judged, model))):
        hit.relevance = own_list.get(n, relevance) if topic else 0.0
        if topic and words_decide and judged[n].get("coverage", 0.0) >= 1.0:
            hit.relevance = max(hit.relevance, rel.words_only(1.0))
    result.results = place_empty(result.results, [p in empty for p in order])
    if explain:
        result.info = {"entities": entities, "terms": terms, "feedback_terms": fb_terms,
                       "dense_query": dense_query, "named_dates": len(dates),
                       "projects": projects}
    held_back.say(result, index, query, filters.category)  # a match the index cannot hold is said
    return result


_IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/#:]{3,}")


def is_identifier(query: str) -> bool:
    """A query that is one identifier (`zq0007x`, `ERR-4012`, `v2.13.0`): letters and digits mixed in
    one token, which the model cannot read; a note holding it is judged by the words-only model, as
    grep's hits are (a long note's cosine to it put the one holder under the cut-off)."""
    token = (query or "").strip()
    return bool(_IDENTIFIER.fullmatch(token)) and any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


def relevance_signals(cosine, text: float, coverage: float, names, agree: bool, score: float,
                      whole: float | None = None, unknown: float = 0.0, known: float = 0.0,
                      nameless: bool = False, cjk: dict | None = None) -> dict:
    """The absolute signals scoring.relevance reads, for one hit (None: unknown); `cjk`: the hit's
    signals that read Chinese (retrieval.cjk_rank, for a query with CJK text), 0 without."""
    nameless = 1.0 if nameless else 0.0
    cjk = cjk or {}
    return {"cosine": cosine, "text": text, "coverage": coverage, "names": names or 0.0,
            "no_names": 1.0 if names is not None and names == 0 else 0.0, "agree": 1.0 if agree else 0.0,
            "score": score, "whole": whole, "unknown": unknown, "known": known, "nameless": nameless,
            "nameless_whole": nameless * (whole or 0.0),
            **{f"cjk_{f}": float(cjk.get(f, 0.0)) for f in ("joint", "local", "phrase", "title", "mass", "cos")}}


def _text_signal(parts, pos: int, held: float | None, cjk_share: float) -> float:
    """The relevance model's `text` of a hit: its scaled BM25 (at most 1); for a mostly CJK query
    the idf share of its terms the hit holds (`held`, None when it holds no CJK term), the figure
    the CJK side was calibrated on (a bigram's BM25 grows with repeats that say little about a
    short Chinese query)."""
    if cjk_share >= 0.5 and held is not None:
        return held
    return min(1.0, float(parts["text"][pos]))


def _cjk_stats(frame, texts) -> "cjk_bm25.CjkStats":
    """The CJK BM25 statistics of this table version (kept on its frame)."""
    stats = getattr(frame, "_cjk_stats", None)
    if stats is None:
        stats = frame._cjk_stats = cjk_bm25.CjkStats(texts)
    return stats


def _mixed_sides(n: int, stats, terms: list[str], ideal: float, mask, settings, text_arr, cjk_arr,
                 cjk_ideal: float):
    """The (text, cjk) columns of a query with Latin terms and CJK text; the fused text side is
    the better of the two, so it reads half of one BM25 over all the query's terms (each side
    weighed by its share of their idf, as character-bigram BM25 is) plus half of the better side.
    The joint half keeps an entry holding only the query's year (2007年...) below the one holding
    its Chinese words, so numbers always join the bigrams; the better-side half keeps a Latin word
    that names the topic (v-if, props, body) from counting for little against a long question's
    many bigrams. Measured (MRR@10): vuezh docs 0.811 better side only, 0.760 joint only, 0.839
    both; CMRC passages 0.944, 0.987, 0.987."""
    import numpy as np

    numbers = [t for t in terms if not any(c.isalpha() for c in t)]
    words = [t for t in terms if t not in numbers]
    joined = cjk_arr
    num_ideal = stats.ideal(numbers) if numbers else 0.0
    if numbers:
        nums = fusion.scaled(n, _text_side(stats, numbers, mask, settings), num_ideal)
        joined = (num_ideal * nums + cjk_ideal * cjk_arr) / (num_ideal + cjk_ideal)
    if not words:
        return joined, np.zeros(n)
    word_ideal = stats.ideal(words) if numbers else ideal
    own = fusion.scaled(n, _text_side(stats, words, mask, settings), word_ideal) if numbers else text_arr
    whole = (word_ideal * own + (num_ideal + cjk_ideal) * joined) / (word_ideal + num_ideal + cjk_ideal)
    return 0.5 * (own + whole), 0.5 * (joined + whole)


def _text_side(stats, terms: list[str], mask, settings, at_least: int = 0) -> dict[int, float]:
    """English full-text scores by entry position: the best entries by BM25 with the configured
    k1 and b, from the in-memory inverted index (retrieval.postings; LanceDB's native index
    cannot take k1 and b, and its scores have no fixed scale)."""
    if stats is None or not terms:
        return {}
    limit = max(settings.recall_candidates, settings.recall_text_candidates, at_least)
    return stats.top({t: 1.0 for t in terms}, settings.recall_bm25_k1, settings.recall_bm25_b, limit, mask)


def _r(value):
    return None if value is None else round(float(value), 4)


def _inactive(frame):
    """Per entry, whether its status is not active (kept with the frame: a metadata-only patch
    of the frame drops it, retrieval/table.py)."""
    import numpy as np

    cached = getattr(frame, "_inactive", None)
    if cached is None or len(cached) != len(frame.ids):
        cached = np.array([s != "active" for s in frame.cols["status"]], dtype=bool)
        frame._inactive = cached
    return cached


def _structure(index: VectorIndex, frame, weights):
    key = ("structure", weights.session_gap_seconds)
    cached = getattr(frame, "_structure", None)
    if cached is None or cached[0] != key:
        cached = (key, fusion.time_structure(frame.cols["category"], frame.cols["created"],
                                             weights.session_gap_seconds, frame.cols.get("size"), frame.threads()))
        frame._structure = cached
    return cached[1]
