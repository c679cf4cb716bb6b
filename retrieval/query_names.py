"""Names in a query (capitalised words, acronyms): which ones the tree knows, which leave the dense query, which rows mention them."""
from __future__ import annotations

import re
from bisect import bisect_left
from itertools import islice

import numpy as np

from memstrata.retrieval import lexical
from memstrata.retrieval.table import VectorIndex, sql_str
from memstrata.retrieval.units import is_unit, units_per


MENTIONS_KEPT = 256  # names whose rows a frame keeps (a session asks about the same people again and again)
_PLAIN_NAME = re.compile(r"[A-Za-z0-9]{1,48}(?: [A-Za-z0-9]{1,48})*")
_CUT_STEM = lexical.MAX_WORD_CHARS - 16  # a stem of a token cut at MAX_WORD_CHARS (a stem drops a few letters)
_VOCABULARY: list = [None]  # (the postings' vocabulary, its size then, its terms sorted, the terms a name may hide in)


def mentioning(frame, texts: list[str], name: str, stats=None) -> list[int]:
    """Positions whose text mentions `name` as a word, kept per frame. Only the texts the English
    column's postings (`stats`, lexical.TermStats) say can hold the name are read (`_candidates`);
    without them, every text (150 ms a name at 330,000 captured turns)."""
    found = frame._mentions.get(name)
    if found is None:
        rows = _candidates(stats, name)
        scan = range(len(texts)) if rows is None else rows.tolist()
        word = lexical.mention_pattern(name)  # lexical.mentions, each text decoded once
        found = [i for i in scan if name in (text := texts[i]) and word.search(text)]
        if len(frame._mentions) >= MENTIONS_KEPT:
            frame._mentions.clear()
        frame._mentions[name] = found
    return found


def _candidates(stats, name: str):
    """The positions whose text can mention `name` (sorted, a superset), from the postings; None when
    only reading every text can tell (a name with other characters, or a word the postings leave out).

    A text where `\bName\b` matches holds a token (lexical.words) that is the name's word, starts
    with it followed by an apostrophe (`Caroline’s`, `Atlas's`), or holds it after one (`O'Brien`).
    The postings keep each token's stem (lexical.stem, lower case): the name's word itself, its stem,
    the stem of its possessive (Snowball strips `'s` first) or, for any other ending after an
    apostrophe, the lower-cased word followed by it (a stem only ever changes a word's end). A word
    after an apostrophe can lose all of itself (`Bob'Ed` -> `bob'`), so every term with an apostrophe
    is read, and every term long enough to be a token cut at lexical.MAX_WORD_CHARS. A word the
    postings leave out (a stop word, or the end of one: `they're`) leaves the narrowing to the others.
    (An attacker's review found each of the last three.)"""
    if stats is None or not _PLAIN_NAME.fullmatch(name):
        return None
    postings = stats.postings()
    ordered, odd = _vocabulary(postings.vocab)
    rows = None
    for word in name.split():
        low = word.lower()
        if low in lexical.QUERY_STOPWORDS or any(s.startswith((low + "'", low + "’")) or "'" + low in s or "’" + low in s
                                                 for s in lexical.QUERY_STOPWORDS):
            continue  # left out of the postings ("it", "let's", "they're"): the other words narrow, or none does
        terms = set()
        for prefix in {low, lexical.stem(low), lexical.stem(low + "'s")}:
            at = bisect_left(ordered, prefix)
            while at < len(ordered) and ordered[at].startswith(prefix):
                terms.add(ordered[at])
                at += 1
        found = postings.rows(terms | odd)
        rows = found if rows is None else np.intersect1d(rows, found)
    return rows


def _vocabulary(vocab: dict) -> tuple[list, set]:
    """The postings' terms sorted, and those any name may hide in (an apostrophe, or a cut token);
    kept for the vocabulary, which only grows (a new table version sorts its new terms in). The new
    terms are copied in one C call, which no other thread interleaves, and counted as copied."""
    kept = _VOCABULARY[0]
    if kept is None or kept[0] is not vocab or kept[1] != len(vocab):
        start = kept[1] if kept is not None and kept[0] is vocab and kept[1] < len(vocab) else 0
        new = list(islice(vocab, start, None))
        ordered = sorted((kept[2] if start else []) + new)
        odd = (kept[3] if start else set()) | {t for t in new if "'" in t or "’" in t or len(t) >= _CUT_STEM}
        kept = _VOCABULARY[0] = (vocab, start + len(new), ordered, odd)
    return kept[2], kept[3]


def known(index: VectorIndex, frame, entities: list[str]) -> list[str]:
    """The names in the query that the tree can know: every word of the name occurs in some entry.
    A capitalised word or acronym no entry holds ("PM", "VS Code") says nothing about which entry
    answers, so it neither boosts nor counts as a name the hits fail to mention."""
    if not entities:
        return []
    df = index.doc_freq(frame)
    return [e for e in entities if all(df.get(lexical._stem(w), 0) > 0 for w in e.lower().split())]


def common(index: VectorIndex, frame, entities: list[str], settings, mask=None) -> list[str]:
    """The names in the query that at least `recall_dense_name_share` of the entries mention, or of
    the captured turns of a project (category) that says them: the people (or projects) a memory is
    by or about. They carry no topic for the embedding model and are handled by the entity boost,
    so they leave the dense query; rarer names (a book, a place, a group) stay in it. Share 0: every
    name leaves.

    Judged where the name is said, a conversation's people leave its dense query among a year of
    other sessions as they do in its project alone: kept, "Caroline" made every short turn that
    names her (0.64 cosine to "What workshop did Caroline attend recently?") outrank the answer
    (rank 1 alone, 140 among 10,000 other turns; docs/performance.md). Each project is judged on
    its own (a stray mention in a large other project changes nothing), and only once its turns say
    the name 1 / share times (one mention in a 20-turn session is no person the project is about).
    The shares count only the rows a filter (`mask`, per position) admits: entries and sessions a
    search leaves out do not shape its query; the floor counts the whole project (a date filter
    that keeps the answer does not put it lower)."""
    share = settings.recall_dense_name_share
    if not entities or share <= 0:
        return entities
    if mask is None:
        df = index.doc_freq(frame)
        out = {e for e in entities if df.get(lexical._stem(e.lower()), 0) >= share * max(len(frame.ids), 1)}
        admitted = turns = turns_by_category(frame)
    else:
        out = set()
        turns = turns_by_category(frame)
        rows = np.flatnonzero(mask).tolist()
        admitted = units_per([frame.ids[p] for p in rows], [frame.cols["category"][p] for p in rows])
    if len(out) == len(entities) or not (turns or mask is not None):
        return [e for e in entities if e in out]
    texts, stats = index.texts(frame), index.term_stats(frame)
    for e in entities:
        if e in out:
            continue
        found = mentioning(frame, texts, e, stats)
        if mask is not None and sum(1 for p in found if mask[p]) >= share * max(int(mask.sum()), 1):
            out.add(e)
        elif _projects_saying(frame, e, found, mask, admitted, share):
            out.add(e)
    return [e for e in entities if e in out]


PROJECTS_MAX = 32  # names said in more projects than this are no one conversation's people


def projects(index: VectorIndex, frame, names: list[str], settings, mask=None) -> list[str]:
    """The categories (projects) whose captured turns say `names` as `common` judges a name said in
    a project (those that say each of them, when some do: "Tim and John" are searched where they
    talk together, not wherever a John talks; else those that say any), when they hold less than
    half of the rows a search admits (`mask`) and are at most PROJECTS_MAX: the conversations those
    people are in, where the vector and BM25 searches
    look again (retrieval/search.py). At 300,000 turns the nearest rows and the best BM25 of a year
    of other sessions crowded out the named conversation's own ("What does Melanie do to destress?"
    had no vector candidate from her sessions); a project alone, or most of the tree, is searched
    enough by the first search."""
    share = settings.recall_dense_name_share
    turns = turns_by_category(frame)
    if not names or share <= 0 or not turns:
        return []
    if mask is None:
        admitted = turns
    else:
        rows = np.flatnonzero(mask).tolist()
        admitted = units_per([frame.ids[p] for p in rows], [frame.cols["category"][p] for p in rows])
    texts, stats = index.texts(frame), index.term_stats(frame)
    each = [_projects_saying(frame, name, mentioning(frame, texts, name, stats), mask, admitted, share)
            for name in names]
    each = [found for found in each if found]
    together = [c for c in each[0] if all(c in found for found in each[1:])] if each else []
    out = together or list(dict.fromkeys(c for found in each for c in found))
    searched = len(frame.ids) if mask is None else int(mask.sum())  # the projects' share of what is admitted
    if len(out) > PROJECTS_MAX or sum(admitted.get(c, 0) for c in out) >= 0.5 * max(searched, 1):
        return []
    return out


def topic_terms(terms: list[str], common: list[str]) -> list[str]:
    """The query's full-text terms without the words of its common names (`common`: the people a
    conversation is by), unless nothing but asking words is left: the BM25 terms of a search that also looks
    within their projects, where `add_names_said` counts the names. As BM25 terms, such a name's
    weight grew as a turn got shorter, and its idf is high when a year of other sessions never says
    it: "Thanks, Caroline!" (every short turn naming her) outranked the answer at 300,000 turns."""
    said = {w.lower() for name in common for w in lexical.words(name)}
    rest = [t for t in terms if t not in said]
    # asking words alone are no topic ("What do you know about Melanie?": BM25 on `know`; an attack)
    return rest if any(t not in lexical.ASKING_WORDS for t in rest) else terms


def add_names_said(scores: dict, index: VectorIndex, frame, stats, names: list[str]) -> None:
    """Add to each scored position (BM25 of the query's other terms) that mentions one of `names`
    the BM25 the name's words give an average-length entry holding them once: the name counts as
    said, whatever the turn's length, and still sets the people's turns above others' (a review:
    with the name left out, other projects' "What did we decide about the search database?" came
    before Priya's decision)."""
    texts = index.texts(frame)
    for name in names:
        weight = stats.ideal([w.lower() for w in lexical.words(name)])
        if weight <= 0:
            continue
        holders = mentioning(frame, texts, name, stats)  # positions in order
        for p in scores:
            at = bisect_left(holders, p)
            if at < len(holders) and holders[at] == p:
                scores[p] += weight


def within(where: str | None, categories: list[str]) -> str:
    """A LanceDB filter: `where` narrowed to the rows of `categories`."""
    scope = f"category IN ({', '.join(sql_str(c) for c in categories)})"
    return f"({where}) AND {scope}" if where else scope


def in_categories(frame, categories: list[str]):
    """Per position, whether its entry is in one of `categories` (the frame's categories numbered once)."""
    coded = frame.__dict__.get("_category_codes")
    if coded is None:
        numbered: dict = {}
        codes = np.fromiter((numbered.setdefault(c, len(numbered)) for c in frame.cols["category"]), dtype=np.int32,
                            count=len(frame.ids))
        coded = frame._category_codes = (numbered, codes)
    numbers = [coded[0][c] for c in categories if c in coded[0]]
    return np.isin(coded[1], numbers)


def turns_by_category(frame) -> dict:
    """The number of captured turns (retrieval.units) in each category, kept per frame."""
    counts = frame.__dict__.get("_turns_by_category")
    if counts is None:
        counts = frame._turns_by_category = units_per(frame.ids, frame.cols["category"])
    return counts


def _projects_saying(frame, name: str, positions: list[int], mask, admitted: dict, share: float) -> list[str]:
    """The categories whose captured turns say `name` (at `positions`) at least 1 / share times in all,
    and in at least `share` of their turns a search admits (`admitted`: turns per category)."""
    said = _turns_saying(frame, name, positions)
    if mask is None:
        said_admitted = said
    else:
        said_admitted = {}
        for p in positions:
            if mask[p] and is_unit(frame.ids[p]):
                category = frame.cols["category"][p]
                said_admitted[category] = said_admitted.get(category, 0) + 1
    return [c for c, n in said.items()
            if n >= 1.0 / share and admitted.get(c, 0) and said_admitted.get(c, 0) >= share * admitted[c]]


def _turns_saying(frame, name: str, positions: list[int]) -> dict:
    """{category: its captured turns that say `name`}, kept per frame as `mentioning` keeps the
    positions (counting them took 10 ms a query for a name said in thousands of turns)."""
    kept = frame.__dict__.setdefault("_turns_saying", {})
    said = kept.get(name)
    if said is None:
        said = {}
        for p in positions:
            if is_unit(frame.ids[p]):
                category = frame.cols["category"][p]
                said[category] = said.get(category, 0) + 1
        if len(kept) >= MENTIONS_KEPT:
            kept.clear()
        kept[name] = said
    return said
