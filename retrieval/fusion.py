"""Pure ranking: fusion of absolute vector and text signals, then generic priors.

Every function here is a pure function of arrays (one slot per indexed entry) and numbers;
nothing reads files, the table or the clock. The priors, all generic to memory trees:

- entity boost: entries that mention the names a query uses (by or about that entity);
- neighbours: an entry gets a share of the scores of the entries written just before and
  after it in the same category (what was written around it gives it context), and a
  smaller share of those two steps away;
- sitting: entries of one category written close together in time form a sitting; each
  gets a share of its sitting's best score;
- date: entries written near a date the query names;
- status: archived and expired entries are scaled down, so they rank below active ones at
  equal relevance (tiers and weights are scoring/'s business; only status is read here).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class FusionWeights:
    dense: float
    text: float
    feedback: float
    entity: float
    neighbour: float
    session: float
    date: float
    archived_factor: float
    session_gap_seconds: float
    dense_feedback: float = 0.0
    neighbour_second: float = 0.0

    @classmethod
    def from_settings(cls, s) -> "FusionWeights":
        return cls(dense=s.recall_dense_weight, text=s.recall_text_weight, feedback=s.recall_feedback_weight,
                   entity=s.recall_entity_boost, neighbour=s.recall_neighbour_weight,
                   session=s.recall_session_weight, date=s.recall_date_boost,
                   archived_factor=s.recall_archived_factor,
                   session_gap_seconds=60.0 * s.recall_session_gap_minutes,
                   dense_feedback=s.recall_dense_feedback_weight,
                   neighbour_second=s.recall_neighbour_second)


def dense_scores(n: int, dense: dict[int, float]) -> np.ndarray:
    """The best chunk cosine of each entry, an absolute figure. Entries the vector search did not
    return get the lowest cosine it returned (an upper bound of theirs); 0 when it returned none."""
    floor = min(dense.values()) if dense else 0.0
    out = np.full(n, floor, dtype=np.float64)
    if dense:
        idx = np.fromiter(dense.keys(), dtype=np.int64, count=len(dense))
        out[idx] = np.fromiter(dense.values(), dtype=np.float64, count=len(dense))
    return out


def scaled(n: int, scores: dict[int, float], scale: float) -> np.ndarray:
    """Scores divided by a fixed, query-level `scale` (absent entries: 0). Never scaled over
    the candidates themselves: a lone weak match stays weak, the weakest real match stays > 0."""
    out = np.zeros(n, dtype=np.float64)
    if scores and scale > 0:
        idx = np.fromiter(scores.keys(), dtype=np.int64, count=len(scores))
        out[idx] = np.fromiter(scores.values(), dtype=np.float64, count=len(scores)) / scale
    return out


CONVERSATION_MAX_BYTES = 2000  # a turn of a conversation: a file this small (frontmatter included)


class Structure(tuple):
    """(prev, nxt, session) of time_structure, with what every query derives from the links kept:
    each link's valid mask and safe index, and the links two steps away (kept with the frame, as the
    structure is: 6 of the ~15 ms the priors took a query at 330,000 entries)."""

    def links(self) -> tuple:
        """((valid, safe index) of prev, nxt, prev twice, nxt twice)."""
        kept = self.__dict__.get("_links")
        if kept is None:
            prev, nxt, _ = self
            kept = self.__dict__["_links"] = tuple((link >= 0, np.maximum(link, 0))
                                                   for link in (prev, nxt, _step(prev), _step(nxt)))
        return kept


def time_structure(categories: list, created: list, gap_seconds: float, sizes: list | None = None,
                   threads: list | None = None):
    """Per entry: index of the previous and next entry of its category in time (-1 if none), and
    a sitting number (runs of linked entries).

    Two entries are linked only where the data looks like a conversation: written one after the
    other (0 < gap <= `gap_seconds`: not in one bulk write, where notes adopted or imported
    together share a time) and both short (`sizes`, the files' bytes, at most
    CONVERSATION_MAX_BYTES when given). A vault's notes or a docs folder get no neighbours and
    no sitting, so the dialogue priors and ranker features built on them stay at zero there.

    The turns of a captured session (`threads`: per slot (session, turn number), None for an entry
    of its own; retrieval/units.py) are a conversation by what they are: each is linked to the turns
    before and after it in its session, whatever their length and the time between them, and the
    session is their sitting; they are never linked to the entries of their category."""
    n = len(created)
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    session = np.arange(n, dtype=np.int64)
    stamps = np.array([c if c is not None else np.nan for c in created], dtype=np.float64)
    short = (np.ones(n, dtype=bool) if sizes is None else
             np.array([s is None or s < 0 or s <= CONVERSATION_MAX_BYTES for s in sizes], dtype=bool))
    threads = threads if threads is not None else [None] * n
    order = sorted((i for i in range(n) if not np.isnan(stamps[i]) and threads[i] is None),
                   key=lambda i: (categories[i] or "", stamps[i]))
    current = -1
    for a, b in zip([None] + order[:-1], order):
        if (a is not None and categories[a] == categories[b] and 0 < stamps[b] - stamps[a] <= gap_seconds
                and short[a] and short[b]):
            prev[b], nxt[a] = a, b
            session[b] = current
        else:
            current = b
            session[b] = b
    turns = sorted((i for i in range(n) if threads[i] is not None), key=lambda i: threads[i])
    for a, b in zip([None] + turns[:-1], turns):
        if a is not None and threads[a][0] == threads[b][0]:
            prev[b], nxt[a] = a, b
            session[b] = session[a]
    return Structure((prev, nxt, session))


def fuse(w: FusionWeights, cosine: np.ndarray, text: np.ndarray, feedback: np.ndarray, cjk: np.ndarray,
         cjk_share: float) -> tuple[np.ndarray, dict]:
    """The relevance of each entry before priors: a weighted sum of absolute signals, the best
    chunk cosine (`dense_scores`) and the share of the query's term weight matched (`scaled`
    BM25 and CJK bigram shares), each in [0, ~1] whatever the other candidates are.

    The dense side is trusted less the more of the query is CJK (the bundled model is English);
    the text side takes the better of the English and CJK columns, plus the feedback query.
    """
    t = np.maximum(text, cjk) + w.feedback * feedback
    wd = w.dense * (1.0 - cjk_share)
    wt = w.text * (1.0 + cjk_share)
    return wd * cosine + wt * t, {"dense": cosine, "text": t}


def apply_priors(base: np.ndarray, w: FusionWeights, structure, entity_share: np.ndarray | None,
                 date_near: np.ndarray | None, inactive: np.ndarray) -> tuple[np.ndarray, dict]:
    """Add entity, neighbour, sitting and date priors, then scale down archived/expired entries."""
    prev, nxt, session = structure
    score = base.copy()
    boosts: dict[str, np.ndarray] = {}
    if entity_share is not None and w.entity:
        boosts["entity"] = w.entity * entity_share
    relevance = base + boosts.get("entity", 0.0)
    if w.neighbour:
        links = (structure if isinstance(structure, Structure) else Structure(structure)).links()
        at = [np.where(valid, relevance[safe], 0.0) for valid, safe in links[:4 if w.neighbour_second else 2]]
        around = at[0] + at[1]
        if w.neighbour_second:
            around = around + w.neighbour_second * (at[2] + at[3])
        boosts["neighbours"] = w.neighbour * around
    if w.session:
        best = np.zeros(len(base), dtype=np.float64)
        np.maximum.at(best, session, relevance)
        boosts["sitting"] = w.session * best[session]
    if date_near is not None and w.date:
        boosts["date"] = w.date * date_near
    for b in boosts.values():
        score = score + b
    factor = np.where(inactive, w.archived_factor, 1.0)
    return score * factor, boosts


def ranking(w: FusionWeights, cosine: np.ndarray, text: np.ndarray, feedback: np.ndarray, cjk: np.ndarray,
            cjk_share: float, structure, entity_share, date_near, inactive: np.ndarray, mask: np.ndarray):
    """The final score of every entry (`fuse`, then `apply_priors`); -inf where the filters
    refuse an entry or nothing scored it. Returns (score, parts, boosts)."""
    base, parts = fuse(w, cosine, text, feedback, cjk, cjk_share)
    score, boosts = apply_priors(base, w, structure, entity_share, date_near, inactive)
    return np.where(mask & (score > 0), score, -np.inf), parts, boosts


def _step(link: np.ndarray) -> np.ndarray:
    """The link followed twice (the neighbour's neighbour in the same direction), -1 if none."""
    return np.where(link >= 0, link[np.maximum(link, 0)], -1)


def date_proximity(stamps: np.ndarray, targets: list[tuple[float, float]], after_seconds: float) -> np.ndarray:
    """1 for entries written inside a date range the query names, falling off linearly over one
    day before it and over `after_seconds` (or the range's length, if longer) after it: notes
    about an event are mostly written on the day or in the days after ("last week ...").
    `stamps`: the entries' creation times (NaN: unknown; Frame.stamps)."""
    out = np.zeros(len(stamps), dtype=np.float64)
    for start, end in targets:
        after = max(end - start, after_seconds)
        near = np.where(stamps < start, 1.0 - (start - stamps) / 86400.0,
                        np.where(stamps > end, 1.0 - (stamps - end) / after, 1.0))
        out = np.maximum(out, np.nan_to_num(np.clip(near, 0.0, 1.0)))
    return out
