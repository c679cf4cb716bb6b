"""The autoload block as an agent receives it: fenced memories under one preamble, and what each part costs."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from memstrata import clock
from memstrata.retrieval.fence import PREAMBLE, escape, fence, quoted
from memstrata.storage.entry import Entry

# A memory brings at most this many tokens of its body: for a relevant hit, the part of the note
# the context asks about (retrieval.prompts.relevant_part); for a hot entry, its opening. Never a
# whole long note: `mem read` has the rest.
HIT_TOKENS = 300
# The budget bounds characters too: a 10 MB single word is a few tokens to WordPiece (one [UNK]
# per capped word) but 10 MB to the agent's context. English runs ~4-5 characters a token.
CHARS_PER_TOKEN = 8
TITLE_CHARS = 200  # a header shows at most this much of a title (a hand-made file's title can be a 10 MB word)
CUT_MARK = " …"
# What the budget measures: the Markdown block (the prompt hook, `mem autoload`), or the whole JSON
# answer that carries it (MCP): there the block is JSON-escaped (a newline is `\n`, two tokens to
# WordPiece) and each memory has its entry in `entries`; counting the block alone, a budget of 2,000
# answered 3,193 tokens.
FORMS = ("markdown", "json")
CONTEXT_CHARS = 160  # the JSON answer echoes at most this much of the context: the caller has it whole

HEAD = "\n".join(["# Memories for this session (memstrata)", "", PREAMBLE, ""])
SECTIONS = (("relevant", "## Relevant to the task"), ("brought", "## Brought back for this project's last session"),
            ("hot", "## Recent and weighty"))


def cut_chars(text: str, limit: int) -> tuple[str, bool]:
    """`text` within `limit` characters (cut at a character, never inside a surrogate pair, since str
    indexes code points), and whether it was cut; the caller marks the cut (CUT_MARK)."""
    return (text, False) if len(text) <= limit else (text[:max(0, limit)].rstrip(), True)


def block(entry: Entry, text: str, truncated: bool, shared: bool) -> str:
    """One memory as the agent sees it: its title, a line with its path, tier and date, and its text,
    inside a `<memory id="...">` fence (the id `mem read` takes)."""
    date = (clock.format_datetime(entry.updated or entry.created) or "")[:10]
    origin = f" · shared by {entry.agent or 'another agent'}" if shared else ""
    where = entry.path or entry.category  # the note's file: where `mem read` or an editor finds the rest
    # a compressed body is key points or a line: the agent is told the whole text is there to read
    short = f" · compressed, whole text: mem decompress {entry.ref} --show" if entry.is_compressed else ""
    inner = "\n".join([f"### {entry.title}", f"{where} · {entry.tier} · {date}{origin}{short}", "",
                       text.strip() + (CUT_MARK if truncated else "")])
    return fence(inner, entry.ref)


@dataclass
class AutoloadItem:
    """One memory in the autoload block; `text` is the part of its body shown (before fencing)."""

    entry: Entry
    section: str  # "relevant", "brought" (by the session start, for the project's last session) or "hot"
    score: float
    text: str
    tokens: int  # what its fenced block costs in the budget
    truncated: bool
    shared: bool = False  # from the shared root (written by another agent)
    relevance: float | None = None  # a relevant hit's calibrated relevance (recall's)

    def fenced(self) -> str:
        return block(self.entry, self.text, self.truncated, self.shared)

    def to_dict(self) -> dict:
        # An index of the memories in `markdown`, not their text again: each memory's fenced block is
        # in `markdown` once (it was here too: with budget 500 the tool answered 1,457 tokens). Every
        # string taken from a note (title, path, agent, a hand-made file's `path:` id) is
        # escaped as the fence escapes text: outside a fence a title "x </memory><system>..." must
        # not read as tags to the model that reads this JSON.
        # Its tier, date and category are on the block's own line in `markdown`: not repeated here.
        e = self.entry
        return {"id": escape(e.ref), "title": escape(e.title), "path": None if e.path is None else escape(e.path),
                "section": self.section, "relevance": None if self.relevance is None else round(self.relevance, 4),
                "tokens": self.tokens, "truncated": self.truncated,
                "shared": self.shared, "agent": None if e.agent is None else escape(e.agent)}

    def row(self) -> dict:
        """Its entry in the JSON answer (form "json"): to_dict without what is null or false (a hot
        entry's relevance, truncated, shared, agent: ~25 tokens of each memory's share of the budget)."""
        return entry_row(self.entry, self.section, self.relevance, self.tokens, self.truncated, self.shared)


def entry_row(e: Entry, section: str, relevance: float | None, tokens: int, truncated: bool, shared: bool) -> dict:
    row = {"id": escape(e.ref), "title": escape(e.title), "path": None if e.path is None else escape(e.path),
           "section": section, "tokens": tokens}
    if relevance is not None:
        row["relevance"] = round(relevance, 4)
    if truncated:
        row["truncated"] = True
    if shared:
        row.update(shared=True, agent=None if e.agent is None else escape(e.agent))
    return row


@dataclass
class AutoloadResult:
    """What an agent should start with: a Markdown block within a token budget (all of it: the
    preamble, headings and fences count, not only the memories' text)."""

    context: str | None
    budget: int
    items: list[AutoloadItem] = field(default_factory=list)
    promoted: list[dict] = field(default_factory=list)
    strategy: str | None = None
    notes: list[str] = field(default_factory=list)
    frame_tokens: int = 0  # the preamble, section headings and promoted line, once there are items
    form: str = "markdown"  # what the budget measures (FORMS): the block, or the JSON answer with it

    @property
    def tokens(self) -> int:
        return (self.frame_tokens + sum(i.tokens for i in self.items)) if self.items else 0

    def markdown(self) -> str:
        if not self.items:
            return ""
        lines = [HEAD]
        for section, heading in SECTIONS:
            chosen = [i for i in self.items if i.section == section]
            if chosen:
                lines += [heading, ""] + [x for i in chosen for x in (i.fenced(), "")]
        if self.promoted:
            lines.append(promoted_line(self.promoted))
        return "\n".join(lines).rstrip() + "\n"

    def to_dict(self) -> dict:
        if self.form == "json":  # the answer the budget measured: compact entries, the context echoed cut
            context, cut = cut_chars(self.context or "", CONTEXT_CHARS)
            return {"context": (context + CUT_MARK if cut else context) or None, "budget": self.budget,
                    "tokens": self.tokens, "strategy": self.strategy, "promoted": [quoted(p) for p in self.promoted],
                    "entries": [i.row() for i in self.items], "notes": self.notes, "markdown": self.markdown()}
        return {"context": self.context, "budget": self.budget, "tokens": self.tokens, "strategy": self.strategy,
                "promoted": [quoted(p) for p in self.promoted], "entries": [i.to_dict() for i in self.items],
                "notes": self.notes,
                "markdown": self.markdown()}


def promoted_line(promoted: list[dict]) -> str:
    return "_Brought back to hot for this task: " + ", ".join(p["id"] for p in promoted) + "_"


class Costs:
    """What parts of the block cost in the budget: the larger of the model's tokens and the
    characters / CHARS_PER_TOKEN, each part with the blank line that follows it. `counter` counts
    and cuts in the model's tokens (models.tokens.TokenCounter: its tokenizer, never the model)."""

    def __init__(self, counter, form: str = "markdown"):
        self.counter = counter
        self.as_json = form == "json"
        self.special = counter.count_tokens("")  # [CLS] and [SEP]: counted once for the block (HEAD), not per part

    def of(self, text: str) -> int:
        text += "\n\n"
        if self.as_json:  # as the JSON answer carries it: `\n`, `\"` and `\u0001` cost more than the characters
            text = json.dumps(text, ensure_ascii=False)[1:-1]
        return max(self.counter.count_tokens(text) - self.special, -(-len(text) // CHARS_PER_TOKEN))

    def whole(self, text: str) -> int:
        """What a text costs as it is sent (the model's tokens, special ones included, or its characters)."""
        return max(self.counter.count_tokens(text), -(-len(text) // CHARS_PER_TOKEN))

    def frame(self, result: "AutoloadResult") -> int:
        """The JSON answer's own fields with no memory in it yet (0 for the Markdown form)."""
        if not self.as_json:
            return 0
        return self.whole(json.dumps({**result.to_dict(), "tokens": result.budget}, ensure_ascii=False))

    def row(self, entry: Entry, section: str, relevance: float | None, shared: bool, budget: int) -> int:
        """What a memory's entry in the JSON answer costs (0 for the Markdown form): at most, as
        its token count is not known yet (at most the budget) and it may be marked truncated."""
        if not self.as_json:
            return 0
        text = json.dumps(entry_row(entry, section, relevance, budget, True, shared), ensure_ascii=False) + ", "
        return max(self.counter.count_tokens(text) - self.special, -(-len(text) // CHARS_PER_TOKEN))

    def head(self) -> int:
        return self.of(HEAD) + self.special

    def header(self, entry: Entry, shared: bool) -> int:
        """What a memory's block costs with no text: its fence, title and id line."""
        return self.of(block(entry, "", True, shared))

    def fit(self, entry: Entry, text: str, shared: bool, cap: int, cut: bool,
            extra: int = 0) -> tuple[str, bool, int] | None:
        """(text, truncated, cost of the fenced block plus `extra`, its entry in a JSON answer) for the
        longest prefix of `text` whose block costs at most `cap`, cut where a token ends; None when
        not even the header fits. What is measured is the fenced (escaped) block: `&` `<` `>` cost
        more there than in the note."""
        text, chars_cut = cut_chars(text, cap * CHARS_PER_TOKEN)  # a 10 MB note is not tokenized whole
        whole = self.of(block(entry, text, cut or chars_cut, shared)) + extra
        if whole <= cap:
            return text, cut or chars_cut, whole
        keep = cap - self.header(entry, shared) - extra
        if keep <= 0:
            return None
        text, _ = cut_chars(text, keep * CHARS_PER_TOKEN)
        while keep > 0:
            text = self.counter.truncate_to_tokens(text, keep)
            cost = self.of(block(entry, text, True, shared)) + extra
            if cost <= cap:
                return text, True, cost
            # escaped characters (`&` is `&amp;`) cost more in the block than in the note: cut deeper
            over = cost - cap
            text, _ = cut_chars(text, len(text) * max(0, keep - over) // keep)
            keep -= over
        return None
