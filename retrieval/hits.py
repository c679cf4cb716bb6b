"""Recall results: one hit per entry or captured turn (id, title, score, snippet, signals) and the answer's strategy."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

SNIPPET_CHARS = 300
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}\s+\S")


def clip(text: str, limit: int = SNIPPET_CHARS) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def best_sentence(text: str, terms: list[str], title: str | None = None, grams=(), shared=None) -> str:
    """The snippet of every strategy: the sentence of the entry's current text holding most query
    terms (Latin `terms`, and CJK `grams`: a query's character bigrams, lexical.cjk_bigrams), the
    first one when none holds any. The title line and the earlier versions the index carries along
    (storage.versions.with_kept_versions) are never the snippet, nor a sentence that is a bare link
    or image (`1、[蚊子喜欢咬谁？](https://...)`, `![](cover.webp)`: the text around it is what it
    says), nor, when another holds as many terms, one `shared(sentence)` says the note shares with
    its siblings (a newsletter's opening boilerplate)."""
    from memstrata.retrieval.chunking import sentences, without_inline_data
    from memstrata.storage.versions import own_text_end

    text = without_inline_data(text)  # a pasted image's base64 is no sentence to show
    cut = own_text_end(text)
    text, earlier = text[:cut], text[cut:]
    first, newline, rest = text.partition("\n")
    if title and newline and first.strip() == title.strip() and rest.strip():
        text = rest  # the title line chunking.entry_text put in front (a body that starts with its title stays whole)
    text = "\n".join(line for line in text.splitlines() if not bare(line)) or text
    units = sentences(text)
    headings = {s for line in text.splitlines() if _HEADING_LINE.match(line) for s in sentences(line)}
    held = [sum(1 for t in terms if t in s.lower()) + sum(1 for g in grams if g in s) for s in units]
    asked = [0]

    def own(sentence: str) -> bool:  # not one the note shares with its siblings (asked SHARED_CHECKS times at most)
        if shared is None or asked[0] >= SHARED_CHECKS:
            return True
        asked[0] += 1
        return not shared(sentence)

    # found by what it said before (more of the query's terms than its current text holds): say so
    before = _earlier_match(earlier, terms, grams, max(held, default=0)) if earlier and (terms or grams) else None
    order = sorted(range(len(units)), key=lambda i: (-held[i], i))  # most terms first, then the earliest
    at = next((i for i in order if units[i] in headings or own(units[i])), order[0] if order else 0)
    best = units[at] if units else ""
    if best in headings:  # a bare heading ("Setup") says where, not what: the text under it goes with it
        after = next((s for s in units[at + 1:] if s not in headings and own(s)), None)
        best = f"{best}: {after}" if after else next((s for s in units if s not in headings), best)
    # never show a credential: a file the guard never saw (hand-made, pulled) or saw in warn mode
    from memstrata.storage.secrets import redact

    return redact(best[:4 * SNIPPET_CHARS] + (f" [matched {before}: mem history]" if before else ""))


def _earlier_match(text: str, terms: list[str], grams, beat: int) -> str | None:
    """Which kept version the index carries ("earlier version v1 (2026-01-12)") holds a sentence with
    more of the query's terms than `beat` (the current text's best sentence); None when none does. A
    hit found by a replaced text says so, without showing that text (recall shows the current version:
    docs/versions.md): "who owns the PDF renderer?" found a meeting note by its v1 and showed v2's
    follow-up, which says nothing of it, as if it answered (a new user's review)."""
    from memstrata.retrieval.chunking import sentences
    from memstrata.storage.versions import EARLIER_HEADING

    found, most = None, beat
    parts = EARLIER_HEADING.split(text)  # ["", heading, what it said, heading, what it said, ...]
    for head, said in zip(parts[1::2], parts[2::2]):
        for sentence in sentences(said):
            held = sum(1 for t in terms if t in sentence.lower()) + sum(1 for g in grams if g in sentence)
            if held > most:
                found, most = head.lower(), held
    return found


SHARED_CHECKS = 3  # the best sentences asked whether the note shares them with its siblings
_LINK = re.compile(r"!?\[[^\]]*\]\([^)]*\)|<[^>]+>|(?:https?|ftp)://\S+")


def bare(sentence: str) -> bool:
    """Whether a sentence is only a link, an image or a URL (with a list number or punctuation)."""
    return not any(ch.isalpha() for ch in _LINK.sub("", sentence))


SIBLINGS = 10  # the entries of its category nearest a hit that a sentence of it is looked for in
SHARED_BY = 2  # a sentence two of them hold too is the category's boilerplate, not the note's own


def sibling_check(frame, texts: list[str], pos: int):
    """`shared(sentence)` for best_sentence: whether SHARED_BY of the SIBLINGS entries nearest entry
    `pos` in its category (frame order, its ids' order) hold the sentence too (a newsletter's opening
    lines, a template's headings)."""
    by_category = getattr(frame, "_by_category", None)
    if by_category is None:
        by_category = {}
        for n, category in enumerate(frame.cols["category"]):
            by_category.setdefault(category, []).append(n)
        frame._by_category = by_category
    mates = by_category.get(frame.cols["category"][pos], [])
    if len(mates) <= SHARED_BY:
        return None
    at = mates.index(pos) if pos in mates else 0
    near = [m for m in mates[max(0, at - SIBLINGS // 2): at + SIBLINGS // 2 + 1] if m != pos][:SIBLINGS]

    def shared(sentence: str) -> bool:
        return sum(1 for m in near if sentence in texts[m]) >= SHARED_BY
    return shared


ONE_LINE_WORDS = 5  # an untitled one-line write this long is a statement (no_text), not a bare title


def no_text(text: str, title: str | None) -> bool:
    """Whether an entry's own text (its indexed text without tags, dates and alias lines) holds
    nothing past its title and headings: a note of frontmatter only, a vault's tag page, a lone
    heading. Such a note answers nothing, though its title may match a question word for word (0.95)."""
    from memstrata.storage.versions import own_text_end

    own = _plain(title or "")  # the earlier versions the index carries (below) are not its text
    lines = [line for line in text[:own_text_end(text)].splitlines() if _plain(line)]
    for line in lines:
        if _plain(line) != own and not _HEADING_LINE.match(line):
            return False
    # an untitled one-line write is titled by its line, and its indexed text is that line alone: a
    # statement (ONE_LINE_WORDS words or more), not a file name over an empty note (LoCoMo's imported
    # turns ranked as empty notes: MRR@10 0.512 against 0.626)
    one_line = len(lines) == 1 and not _HEADING_LINE.match(lines[0])
    return not (one_line and len(own.split()) >= ONE_LINE_WORDS)


def _plain(line: str) -> str:
    """A line's words as compared with a title; '' when it holds none ('---')."""
    words = " ".join(line.split()).casefold()
    return words if any(ch.isalnum() for ch in words) else ""


def text_first(order: list, empty: set) -> list:
    """`order` with the entries that hold text first (they are judged as a list: the top hit's lead
    is over the next hit with text)."""
    return [p for p in order if p not in empty] + [p for p in order if p in empty]


def place_empty(hits: list, empty: list[bool]) -> list:
    """Hits judged in text_first order, each empty note (no_text) placed among them: its relevance
    held to the best of the notes with text, and listed after every one of those at least that
    likely to answer. An empty note may be listed, never above a note that can answer (its title
    alone scored 0.95 and pushed the answer down)."""
    full = [h for h, e in zip(hits, empty) if not e]
    best = max((h.relevance for h in full), default=None)
    out = list(full)
    for hit in (h for h, e in zip(hits, empty) if e):
        hit.no_text = True
        if best is not None:
            hit.relevance = min(hit.relevance, best)
        after = max((i for i, h in enumerate(out) if h.relevance >= hit.relevance), default=-1)
        out.insert(after + 1, hit)
    return out


@dataclass
class RecallHit:
    id: str
    title: str
    score: float
    snippet: str
    category: str = ""
    tier: str = ""
    status: str = ""
    path: str | None = None
    created: str | None = None
    signals: dict | None = None  # only with explain
    shared_root: str | None = None  # set on hits that come from the shared root
    agent: str | None = None  # who wrote a shared hit
    relevance: float | None = None  # calibrated probability that the hit is relevant (scoring.relevance)
    no_text: bool = False  # an empty note (place_empty): a merge by score keeps it below the notes with text
    # a turn of a captured session (retrieval/units.py): its number, and what the session file says of
    # it (features/turns.py): the heading's timestamp verbatim, the session id, agent and project
    turn: int | None = None
    timestamp: str | None = None
    session: str | None = None
    session_agent: str | None = None
    project: str | None = None

    @classmethod
    def from_entry(cls, entry, score: float, snippet: str, signals: dict | None = None,
                   relevance: float | None = None) -> "RecallHit":
        from memstrata.storage.clock import format_datetime
        from memstrata.storage.secrets import redact

        # the title redacted as the snippet is: grep reads files the guard never saw (a flagged note's
        # title and its token reached `mem recall` as is)
        return cls(id=entry.id, title=redact(entry.title), score=float(score), snippet=snippet, category=entry.category,
                   tier=entry.tier, status=entry.status, path=entry.path, created=format_datetime(entry.created),
                   signals=signals, relevance=relevance)

    def to_dict(self) -> dict:
        data = {"id": self.id, "title": self.title, "score": round(float(self.score), 4),
                "relevance": None if self.relevance is None else round(float(self.relevance), 4),
                "snippet": clip(self.snippet), "category": self.category, "tier": self.tier,
                "status": self.status, "path": self.path, "created": self.created}
        if self.turn is not None:
            data.update(turn=self.turn, timestamp=self.timestamp, session=self.session, agent=self.session_agent,
                        project=self.project)
        if self.signals is not None:
            data["signals"] = self.signals
        if self.shared_root is not None:
            data.update(shared=True, agent=self.agent, root=self.shared_root)
        return data


@dataclass
class RecallResult:
    """What recall answered and how: `strategy` is hybrid, vector, text, grep or index."""

    query: str
    strategy: str
    results: list[RecallHit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    best_relevance: float | None = None  # the highest relevance seen, before the cut-off
    min_relevance: float | None = None  # the cut-off applied
    held_back: list[str] = field(default_factory=list)  # matching notes not indexed: possible credentials

    @property
    def nothing_relevant(self) -> bool:
        """True when hits were found but none cleared the cut-off."""
        return not self.results and self.best_relevance is not None

    def to_dict(self) -> dict:
        data = {"query": self.query, "strategy": self.strategy, "results": [h.to_dict() for h in self.results],
                "notes": list(self.notes), "min_relevance": self.min_relevance,
                "best_relevance": None if self.best_relevance is None else round(float(self.best_relevance), 4)}
        if self.info:
            data["info"] = self.info
        if self.held_back:
            data["held_back"] = list(self.held_back)
        return data

    @property
    def ids(self) -> list[str]:
        return [h.id for h in self.results]
