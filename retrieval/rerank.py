"""The learned ranker's stage of a recall: the fused ranking's top candidates, their features, ordered again."""
from __future__ import annotations

import re

from memstrata.retrieval import dates, lexical, names
from memstrata.retrieval.readable import BLANK, NOT_A_MATCH
from memstrata.retrieval.table import sql_str


def learned(score, parts, qv, table, frame, stats, terms, entity_share, date_near, structure, weights,
             signals_out=None, reorder: bool = True, inactive=None, texts=None):
    """The fused ranking's top candidates ordered again by the learned ranker (scoring.ranker);
    the other entries drop out (-inf). Also returns each candidate's whole-entry cosine by position.
    Without `reorder` (a query with CJK text: the bundled model is English) the fused order stays.
    `texts` gives the entries' column texts when called (read only when the ranker runs).
    `signals_out` (bench/fit_ranking.py) gets the features."""
    import numpy as np

    from memstrata.scoring import ranker as rk

    finite = np.isfinite(score)
    top = distinct_entries(score, rk.CANDIDATES, frame)
    cand = np.asarray(top[finite[top]], dtype=np.int64)
    if not len(cand):
        return score, {}
    # the heading paths cost a read of the candidates' chunk texts: only when `head` has a weight
    # (or bench/fit_notes.py asks for the features)
    chosen = rk.WEIGHTS if rk.is_conversation(structure, cand) else rk.NOTES_WEIGHTS
    with_heads = bool(reorder and chosen.get("head")) or signals_out is not None
    with_links = bool(reorder and chosen.get("link")) or signals_out is not None
    whole, heads, about = _whole_cosines(table, frame, qv, cand, with_heads)
    by_pos = dict(zip(cand.tolist(), whole.tolist()))
    if not reorder or not (chosen or signals_out is not None):
        return score, by_pos
    coverage = np.zeros(len(score))
    if stats is not None and terms:
        for p, v in stats.coverage(cand.tolist(), terms).items():
            coverage[p] = v
    column = texts() if texts is not None else None
    marks = None
    if column:
        marks = frame.text_marks(cand.tolist(), lambda p: _text_marks(lexical.entry_part(column[p], frame.cols["tags"][p])))
    asks = None if marks is None else np.array([m[0] for m in marks], dtype=np.float64)
    says = None if marks is None else np.array([m[1] for m in marks], dtype=np.float64)
    title = (None if stats is None or not terms else
             np.array([title_share(stats, terms, frame.cols["title"][p], frame.cols["path"][p],
                                   names.aliases_in(column[p]) if column else ()) for p in cand.tolist()]))
    head = (None if stats is None or not terms or not with_heads else
            np.array([heading_share(stats, terms, heads.get(frame.ids[p], ())) for p in cand.tolist()]))
    links = candidate_links(cand.tolist(), column, frame) if column and with_links else None
    x = rk.features(cand, np.where(finite, score, 0.0), parts["dense"], parts["text"], coverage, entity_share,
                    date_near, structure, whole, weights.dense, weights.text, weights.entity, asks=asks, says=says,
                    title=title, head=head, links=links, about=about)
    if signals_out is not None:
        signals_out.update(candidates=cand, features=x, fused=score)
    if not chosen:
        return score, by_pos
    out = np.full(len(score), -np.inf)
    out[cand] = rk.status_scaled(rk.rank(x, chosen), None if inactive is None else inactive[cand],
                                 weights.archived_factor)
    below_ranked(out, score, cand, finite)
    return out, by_pos


def below_ranked(out, score, cand, finite) -> None:
    """The candidates past the ranker's (a recall asking for more than rk.CANDIDATES hits) keep
    their fused order, all below the ranked ones: `-k 500` gets 500 hits, and its first
    rk.CANDIDATES are what a smaller k gets."""
    import numpy as np

    rest = finite.copy()
    rest[cand] = False
    if not rest.any():
        return
    lowest = float(np.min(out[cand]))
    out[rest] = lowest - 1.0 - (float(np.max(score[rest])) - score[rest])


_PATH_SEPARATORS = re.compile(r"[/\\_.-]+")


def title_share(stats, terms: list[str], title: str | None, path: str | None, aliases=()) -> float:
    """The idf share of the query's terms that the entry's title, its aliases (other titles:
    retrieval.names) or its path (folder and file names) holds: a note is named for what it is about."""
    q = {lexical.stem(t) for t in terms}
    total = sum(stats.idf(s) for s in q)
    if total <= 0:
        return 0.0
    named = f"{title or ''} {' '.join(aliases)} {_PATH_SEPARATORS.sub(' ', (path or '').removesuffix('.md'))}"
    held = {lexical.stem(w) for w in lexical.words(named)}
    return sum(stats.idf(s) for s in q & held) / total


# [[Target]], [[Folder/Target#Heading|shown]]; a Markdown link to a note's file, or to the page a
# docs site builds from it ([shown](ch04-01.html#anchor), [shown](../git/undo.md))
_WIKILINK = re.compile(r"\[\[([^\]|#\n]+)[^\]\n]*\]\]")
_FILE_LINK = re.compile(r"\]\(([^)\s#]+?)\.(?:md|html)(?:#[^)\s]*)?\)")


def link_targets(text: str) -> set[str]:
    """The lower-cased names (file stems) of the notes a text links to."""
    from urllib.parse import unquote

    found = {m.strip().rsplit("/", 1)[-1] for m in _WIKILINK.findall(text or "")}
    found |= {unquote(m).rsplit("/", 1)[-1] for m in _FILE_LINK.findall(text or "")}
    return {f.lower() for f in found if f}


def candidate_links(cand: list[int], column, frame):
    """The (source, target) pairs of positions in `cand` where one candidate links another (by its
    title, file stem or id: a `related:` entry may name the engine's id): a vault's graph among the
    notes a query brought up."""
    import numpy as np

    named: dict[str, list[int]] = {}
    for j, p in enumerate(cand):
        stem = (frame.cols["path"][p] or "").rsplit("/", 1)[-1].removesuffix(".md").lower()
        for name in {stem, (frame.cols["title"][p] or "").lower(), frame.ids[p].lower()} - {""}:
            named.setdefault(name, []).append(j)
    pairs = {(j, i) for j, p in enumerate(cand) for t in link_targets(column[p]) for i in named.get(t, ()) if i != j}
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)


def heading_share(stats, terms: list[str], heads) -> float:
    """The best idf share of the query's terms that one heading path of the note holds (its
    section chunks' `Title > Heading > Subheading` lines, the title left out: `title_share` has
    it); 0 for an entry with no sections (a chat turn, a short note)."""
    if not heads:
        return 0.0
    q = {lexical.stem(t) for t in terms}
    idf = {s: stats.idf(s) for s in q}
    total = sum(idf.values())
    if total <= 0:
        return 0.0
    return max(sum(idf[s] for s in q & held) for held in heads) / total


def _heading_stems(text: str) -> frozenset:
    """The stems of a section chunk's heading path (its first line), title (the first part) left out."""
    path = text.split("\n", 1)[0].split(" > ")[1:]
    return frozenset(lexical.stem(w) for w in lexical.words(" ".join(path)))


def _text_marks(body: str) -> tuple[float, float]:
    """What the ranker reads of an entry's whole text: its share of questions, whether it states a time."""
    from memstrata.scoring import ranker as rk

    return rk.question_share(body), float(dates.states_time(body))


def _whole_cosines(table, frame, qv, cand, with_heads: bool = False):
    """Per candidate: the cosine between the query vector and the mean of its chunk vectors, and the
    cosine of what it is about (a note's `about` chunk: its title and opening; else its chunk 0, a
    short entry whole; 0 for a BLANK row); by id, the heading paths (stem sets) of its section
    chunks (when `with_heads`)."""
    import numpy as np

    ids = [frame.ids[int(p)] for p in cand]
    where = "id IN (" + ",".join(sql_str(i) for i in ids) + ")"
    columns = ["id", "chunk", "kind"] + (["text"] if with_heads else [])
    # the rows first, then their vectors by row id: one filtered read with the vector column took
    # 40-90 ms at 1.6 million rows, these two 25-35 ms (bench/scale.py)
    rows = table.search().where(where).select(columns).with_row_id(True).limit(None).to_arrow()
    row_ids = rows.column("_rowid").to_pylist()
    taken = table.take_row_ids(row_ids).select(["vector"]).with_row_id().to_arrow() if row_ids else None
    at = {} if taken is None else {r: n for n, r in enumerate(taken.column("_rowid").to_pylist())}
    vectors = (np.zeros((0, 0), dtype=np.float32) if taken is None else
               np.asarray(taken.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False),
                          dtype=np.float32).reshape(taken.num_rows, -1))
    sums, heads, about = {}, {}, {}
    rids = rows.column("id").to_pylist()
    q = np.asarray(qv, dtype=np.float32)
    for rid, row_id, kind, number in zip(rids, row_ids, rows.column("kind").to_pylist(), rows.column("chunk").to_pylist()):
        if row_id not in at:
            continue  # deleted since the rows were read (another process's write)
        v = vectors[at[row_id]]
        if kind == "about" or (number == 0 and kind != BLANK and rid not in about):
            about[rid] = float(v @ q)  # the note's `about` chunk, else its chunk 0 (a short entry whole)
        if kind not in NOT_A_MATCH:  # a stand-in vector of text the model cannot read (retrieval/readable.py)
            sums[rid] = sums[rid] + v if rid in sums else v.copy()
    if with_heads:
        for rid, kind, text in zip(rids, rows.column("kind").to_pylist(), rows.column("text").to_pylist()):
            if kind == "section" and text:
                heads.setdefault(rid, set()).add(_heading_stems(text))
    out = np.zeros(len(ids))
    for n, rid in enumerate(ids):
        v = sums.get(rid)
        if v is not None:
            out[n] = float(v @ q) / max(float(np.linalg.norm(v)), 1e-9)
    return out, heads, np.array([about.get(rid, 0.0) for rid in ids])


def distinct_entries(score, k: int, frame):
    """distinct_top over a frame's entries: their title and body compared by the content hash of what
    is embedded (chunking.content_hash; a row without one is its own), the newest copy kept among
    equal scores. Reading each candidate's text for it cost 40 ms a query at 300,000 turns."""
    import numpy as np

    kept = frame.__dict__.get("_text_codes")
    if kept is None or len(kept[0]) != len(score):
        numbered: dict = {}
        n = len(frame.ids)
        codes = np.fromiter((numbered.setdefault(h or f"#{i}", len(numbered)) for i, h in enumerate(frame.cols["hash"])),
                            dtype=np.int64, count=n)
        created = np.fromiter((-np.inf if c is None else c for c in frame.cols["created"]), dtype=np.float64, count=n)
        kept = frame._text_codes = (codes, created)
    return distinct_top(score, k, *kept)


def distinct_top(score, k: int, codes, created=None) -> "np.ndarray":
    """top_k's entries, one per text: an entry whose text (`codes`, a number per text, by position) is
    that of a better-scored one is passed over, so k entries with k different texts (fewer when the
    finite scores run out), each in the place of its text's best; among copies of equal score the
    newest by `created` (per position, -inf: unknown) is kept, then the first. A year of captured
    sessions repeats turns word for word (the same prompt, error or answer in many sessions): at
    300,000 turns nine copies of one turn filled a top ten and the ranker's candidates, and pushed the
    answer out; copies tie, and the first by position was kept (a review: a test failing in 20
    sessions was shown as failing once, in January)."""
    import numpy as np

    n = len(score)
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    width = min(n, max(4 * k, k + 32))
    while True:
        top = top_k(score, width)
        top = top[np.isfinite(score[top])]
        _, first = np.unique(codes[top], return_index=True)
        if len(first) >= k or width >= n or len(top) < width:
            break
        width = min(n, width * 4)
    floor = score[top[np.sort(first)[k - 1]]] if len(first) >= k else -np.inf
    if created is not None and width < n and len(top) == width and score[top[-1]] >= floor:
        pool = np.flatnonzero(score >= floor)  # copies tied with the last kept may run past the window
        pool = pool[np.argsort(-score[pool], kind="stable")]
    else:
        pool = top[score[top] >= floor]
    c = codes[pool]
    _, first = np.unique(c, return_index=True)
    first = np.sort(first)[:k]
    if created is None or not len(pool):
        return pool[first]
    order = np.lexsort((np.arange(len(pool)), -created[pool], -score[pool], c))  # by text, best score, newest, first
    heads = order[np.r_[True, c[order][1:] != c[order][:-1]]]
    best = dict(zip(c[heads].tolist(), pool[heads].tolist()))
    return np.asarray([best[code] for code in c[first].tolist()], dtype=np.int64)


def top_k(score, k: int):
    """np.argsort(-score, kind="stable")[:k] without sorting every entry: the entries scoring at
    least the k-th best score, in stable order (ties by position), cut to k."""
    import numpy as np

    n = len(score)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k >= n:
        return np.argsort(-score, kind="stable")
    kth = np.partition(-score, k - 1)[k - 1]
    idx = np.flatnonzero(-score <= kth)
    return idx[np.argsort(-score[idx], kind="stable")][:k]
