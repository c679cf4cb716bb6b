"""Chunking: the texts an entry is embedded as (whole, sentence-level, heading sections of long notes, windows)."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

# Sentence ends: . ! ? and their CJK forms, or a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?。！？；])\s+|(?<=[。！？；])|\n+")
_MIN_SENTENCE_WORDS = 3


@dataclass
class Chunk:
    """One embedded text of an entry: chunk 0 is the whole entry (cut to the window)."""

    number: int
    kind: str  # "entry" | "sentence" | "section" | "about" | "window" | "context" (| "blank": retrieval/readable.py)
    text: str
    pooled: bool = False  # its vector is the mean of the entry's sentence vectors (not embedded)
    embed: str | None = None  # the text the model sees when not `text` (chunk 0 of a note: its head)

    @property
    def embedded(self) -> str:
        """The text embedded for this chunk (`text` is what the row stores and the full text indexes)."""
        return self.text if self.embed is None else self.embed


def entry_text(title: str, body: str) -> str:
    """The indexed text of an entry: its title (unless the body already starts with it) and body
    (without the payload of pasted data: URIs)."""
    title = (title or "").strip()
    body = without_inline_data(body).strip()
    if not title:
        return body
    if _norm(body).startswith(_norm(title.rstrip("…"))) or _norm(body.split("\n", 1)[0].lstrip("#")) == _norm(title):
        return body  # the body opens with the title, or with it as its heading (a note titled by its H1)
    return f"{title}\n{body}" if body else title


# an image or file pasted into a note as a data: URI (![](data:image/png;base64,...)): no words,
# and a screenshot is ~200,000 characters, which came out as 500 chunks of noise to embed
_INLINE_DATA = re.compile(r"(data:[\w.+-]+/[\w.+-]+(?:;[\w=.-]+)*;base64,)[A-Za-z0-9+/=\s]{64,}")


def without_inline_data(text: str | None) -> str:
    """`text` with the payload of every base64 data: URI left out (the URI's head stays)."""
    text = text or ""
    return _INLINE_DATA.sub(r"\1…", text) if "base64," in text else text


def content_hash(title: str, body: str) -> str:
    """Hash of what gets embedded: equal hashes mean the vectors can be reused."""
    return hashlib.sha256(entry_text(title, body).encode("utf-8")).hexdigest()[:32]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def sentences(text: str) -> list[str]:
    """Split text into sentences (Latin and CJK punctuation, line breaks); Markdown marks trimmed."""
    out = []
    for part in _SENTENCE_END.split(text or ""):
        part = part.strip().lstrip("#>-*").strip()
        if part:
            out.append(part)
    return out


def _is_cjk_heavy(text: str) -> bool:
    cjk = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff")
    return cjk * 2 >= len(text.replace(" ", "")) > 0


def chunk_entry(title: str, body: str, count_tokens, max_tokens: int, overlap_tokens: int,
                max_sentences: int, sentence_min_words: int = 0) -> list[Chunk]:
    """The chunks of an entry.

    - chunk 0: title + body (the model truncates it to its window; stored as given); a note
      chunked by sections is embedded as its outline instead (`note_head`: its sections hold the text);
      a note chunked by sections that fits the window shares its first section's vector (HEAD_SHORT_MODE);
    - one chunk per sentence when the entry has several (at most `max_sentences`), each a
      unit of meaning a question may be about: a dense match on one sentence is not
      diluted by the rest of the entry; an entry of fewer than `sentence_min_words` words
      (mostly CJK text excepted: its words are not counted by spaces) gets none;
    - a note with headings or several paragraphs: its heading sections instead
      (`section_texts`), no sentence chunks: a question about one part of a long note meets
      that part with its title and heading path as context;
    - any other entry that does not fit the window: windows of whole sentences that fit it,
      overlapping by about `overlap_tokens`, each starting with the title.
    """
    body = without_inline_data(body)
    full = entry_text(title, body)
    chunks = [Chunk(0, "entry", full)]
    budget = max(16, max_tokens - 8)
    parts = sections(body)
    if WHOLE_NOTE_TOKENS and _is_document(parts) and count_tokens(full) <= min(WHOLE_NOTE_TOKENS, budget):
        return chunks  # a short note: its whole-note vector is the note (no outline, no sections)
    if count_tokens(full) > (budget if DOCUMENT_MIN_TOKENS is None else DOCUMENT_MIN_TOKENS) and _is_document(parts):
        # a note: its heading sections, cut at paragraphs, each with the title and heading
        # path in front (no sentence chunks, no windows: bench/notes.py, docs/recall.md)
        long_note = LONG_SECTION_TOKENS is not None and count_tokens(full) > budget
        groups = section_groups(title, parts, count_tokens, budget, LONG_SECTION_TOKENS if long_note else None)
        if len(groups) == 1 and count_tokens(full) <= budget:
            return chunks  # one section that fits the window is chunk 0 again
        texts = []
        for trail, pieces in groups:
            text = section_text(title, trail, pieces)
            embed = section_text(title, trail, pieces, SECTION_PREFIX)
            chunks.append(Chunk(len(chunks), "section", text, embed=None if embed == text else embed))
            texts.append(embed)
        chunks[0].embed = note_head(title, body, parts, texts, count_tokens, budget)
        if ABOUT_TOKENS:  # what the note is about: its title and opening, as one vector beside its sections
            chunks.append(Chunk(len(chunks), "about", first_tokens(full, count_tokens, ABOUT_TOKENS)))
        return chunks
    sents = [s for s in sentences(body) if len(s.split()) >= _MIN_SENTENCE_WORDS or _is_cjk_heavy(s)]
    if sentence_min_words and len(full.split()) < sentence_min_words and not _is_cjk_heavy(full):
        sents = []
    # A body of one sentence is the entry: its sentence chunk would repeat chunk 0 (title aside).
    if len(sents) > 1 or (len(sents) == 1 and _norm(sents[0]) not in (_norm(full), _norm(" ".join(sentences(body))))):
        for s in sents[:max_sentences]:
            if _norm(s) != _norm(full):
                chunks.append(Chunk(len(chunks), "sentence", s))
    if count_tokens(full) > budget and _sentences_suffice(body, sents, chunks, count_tokens, budget):
        chunks[0].pooled = True
    elif count_tokens(full) > budget:
        head = (title or "").strip()
        head_cost = count_tokens(head) if head else 0
        room = max(8, budget - head_cost)
        window: list[tuple[str, int]] = []
        used = 0
        for s in _split_long(sentences(body), count_tokens, room):
            cost = count_tokens(s)
            if window and used + cost > room:
                chunks.append(Chunk(len(chunks), "window", _join(head, window)))
                keep: list[tuple[str, int]] = []
                kept = 0
                for item in reversed(window):
                    if kept + item[1] > overlap_tokens:
                        break
                    keep.insert(0, item)
                    kept += item[1]
                window, used = keep, kept
            window.append((s, cost))
            used += cost
        if window:
            chunks.append(Chunk(len(chunks), "window", _join(head, window)))
    return chunks


def _sentences_suffice(body: str, sents: list[str], chunks: list[Chunk], count_tokens, budget: int) -> bool:
    """A long CJK entry whose every sentence is already a chunk of its own needs no windows,
    and its whole-entry vector is the mean of its sentence vectors (the model would see only
    the first 256 tokens of it anyway).

    The bundled model is English: on Chinese text its vectors add little next to the CJK
    full-text column (STACK.md), and windows and the truncated whole entry, over sentences
    already embedded one by one, were 60% of such an entry's embedding. English keeps both:
    the windows carry the context across sentences that a question about a long note may
    need, and no benchmark here has shown them idle."""
    if not _is_cjk_heavy(body):
        return False
    return (len(chunks) - 1 == len(sents) == len(sentences(body))
            and all(count_tokens(s) <= budget for s in sents))


def context_text(previous: str, text: str, previous_chars: int = 200) -> str:
    """The context chunk: the end of the entry written just before, then this entry."""
    previous = " ".join(previous.split())
    if len(previous) > previous_chars:
        previous = "…" + previous[-previous_chars:]
    return f"{previous}\n{text}"


def _join(head: str, window: list[tuple[str, int]]) -> str:
    text = " ".join(s for s, _ in window)
    return f"{head}\n{text}" if head else text


def _split_long(items: list[str], count_tokens, room: int) -> list[str]:
    """Sentences longer than `room` tokens cut into word runs that fit (a character run where a
    sentence has no space), each run as long as it can be."""
    out = []
    for s in items:
        if count_tokens(s) <= room:
            out.append(s)
            continue
        sep = " " if " " in s else ""
        words = s.split() if sep else list(s)
        out += _runs(words, sep, count_tokens, room)
    return out


def _runs(words: list[str], sep: str, count_tokens, room: int) -> list[str]:
    """`words` cut into runs: each the longest that fits `room` tokens joined by `sep` (a word
    too long alone is a run of its own).

    Counting the growing join after every word was half an adopt's time (a 5,000-word sentence:
    5,000 tokenisations of up to 5,000 words). A tokeniser splits text at spaces before anything
    else, so a run's count is the sum of its words' own counts: that sum places the cut, and two
    counts of the real joined text confirm it. Where they disagree (characters of a Latin word
    with no space merge into fewer tokens) the cut is found by doubling and halving steps."""
    specials = count_tokens("")
    own = [count_tokens(w) - specials for w in words]
    out, start, last = [], 0, 1
    while start < len(words):
        end, used = start + 1, specials + own[start]
        while end < len(words) and used + own[end] <= room:
            used += own[end]
            end += 1
        if end > start + 1 and count_tokens(sep.join(words[start:end])) > room:
            end = start + 1
        # where the sum misjudges, the run before is the better guess (a base64 blob, a long URL)
        guess = min(start + last, len(words))
        if guess > end and count_tokens(sep.join(words[start:guess])) <= room:
            end = guess
        end = _longest_fit(words, sep, count_tokens, room, start, end)
        out.append(sep.join(words[start:end]))
        start, last = end, end - start
    return out


def _longest_fit(words: list[str], sep: str, count_tokens, room: int, start: int, end: int) -> int:
    """The end of the longest run from `start` that fits, searched up from `end` (a run known to
    fit, or a single word)."""
    step = 1
    while step:
        longer = min(end + step, len(words))
        if longer > end and count_tokens(sep.join(words[start:longer])) <= room:
            end, step = longer, step * 2
        else:
            step //= 2
    return end


_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING_NOISE = re.compile(r"\{#[^}]*\}|<[^>]+>|[`*\\]")
DOCUMENT_MIN_TOKENS = 0  # a note longer than this is chunked by sections (None: the model window; bench/notes.py: 0 was better on til)
SECTION_TOKENS = 128  # paragraphs of a section are grouped up to this (the model was trained on 128-token texts)
LONG_SECTION_TOKENS = None  # a note past the model window groups them up to this instead (None: SECTION_TOKENS)
# A note of headings or paragraphs that fits this many tokens (at most the model window) is chunk 0
# alone, embedded whole, instead of its sections (0: never). Tried for issue 28 (4% fewer tokens on
# the vault, 8% on zettel) and dropped: til's short tips lost 0.035 +- 0.018 MRR@10 (their code and
# prose sections are found apart). bench/chunk0_variants.py `short=N`, docs/performance.md.
WHOLE_NOTE_TOKENS = 0


def sections(body: str) -> list[tuple[tuple[str, ...], list[str]]]:
    """The Markdown body's sections in order: (heading path, paragraphs); a fenced code block
    stays whole inside its paragraph and its lines are never headings."""
    out: list[tuple[tuple[str, ...], list[str]]] = []
    path: list[tuple[int, str]] = []
    paras: list[str] = []
    lines: list[str] = []
    fence = None

    def end_paragraph():
        if lines:
            text = "\n".join(lines).strip()
            if text:
                paras.append(text)
            lines.clear()

    def end_section():
        end_paragraph()
        if paras:
            out.append((tuple(h for _, h in path), list(paras)))
            paras.clear()

    for line in (body or "").splitlines():
        if fence:
            lines.append(line)
            if line.strip().startswith(fence):
                fence = None
            continue
        m = _FENCE.match(line)
        if m:
            fence = m.group(1)
            lines.append(line)
            continue
        h = _HEADING.match(line)
        if h:
            end_section()
            level, text = len(h.group(1)), " ".join(_HEADING_NOISE.sub("", h.group(2)).split())
            path = [(lv, t) for lv, t in path if lv < level] + [(level, text)]
            continue
        if not line.strip():
            end_paragraph()
            continue
        lines.append(line)
    end_section()
    return out


# What chunk 0 of a note chunked by sections is embedded as (its row keeps the whole note):
# "outline": its title, heading outline and first sentence, cut to HEAD_TOKENS; "whole": the note
# (the model sees its first 256 tokens: its first sections again, 29% of an adopt's tokens);
# "first": its first HEAD_TOKENS tokens; "section": its first section's vector. HEAD_LONG_ONLY: only
# notes past the model window. bench/chunk0_variants.py, docs/performance.md: outline 32 holds the
# English notes' recall within noise (vault MRR@10 -0.011 +- 0.012; Chinese vuezh -0.014 +- 0.011)
# for 26-31% fewer tokens on til and the vault; "section" (no tokens) and "first" 64 lost 0.022 and
# 0.018 on the vault.
HEAD_MODE = "outline"
HEAD_TOKENS = 32
HEAD_LONG_ONLY = False
HEAD_FEW_SECTIONS = 0  # a note of at most this many section chunks: chunk 0 is embedded as HEAD_FEW_MODE
HEAD_FEW_MODE = "section"
# Chunk 0 of a note chunked by sections that fits the model window: its first section's vector
# ("section": no tokens of its own; its sections already hold every word of it), not its outline.
# bench/chunk0_variants.py `shorthead=section`, docs/performance.md (issue 28).
HEAD_SHORT_MODE = "section"


# A note chunked by sections also gets an `about` chunk: its first ABOUT_TOKENS tokens (title and
# opening), what a store of whole notes embeds (mem0 keeps a note as one memory: the model reads its
# first 256 tokens). Recall reads its cosine as the ranker's `about` feature and never as a section
# match (retrieval/search.py, rerank.py). 64 tokens: held out on the English notes corpora, the
# feature's MRR@10 gain was the same as with 128 or 256 (docs/recall.md, issue 40); 0: none.
ABOUT_TOKENS = 64


def note_head(title: str, body: str, parts, texts: list[str], count_tokens, budget: int) -> str | None:
    """What chunk 0 of a note chunked by sections is embedded as (None: the note itself); `texts`:
    what its section chunks are embedded as."""
    full = entry_text(title, body)
    mode = HEAD_FEW_MODE if len(texts) <= HEAD_FEW_SECTIONS else HEAD_MODE
    if HEAD_SHORT_MODE and count_tokens(full) <= budget:
        mode = HEAD_SHORT_MODE
    if mode == "whole" or (HEAD_LONG_ONLY and count_tokens(full) <= budget):
        return None
    if mode == "section":
        return texts[0] if texts else None
    if mode == "outline":
        seen: list[str] = []
        for path, _ in parts:
            for h in path:
                if h and _norm(h) != _norm(title or "") and h not in seen:
                    seen.append(h)
        opening = next((s for _, paras in parts for p in paras for s in sentences(p)
                        if len(s.split()) >= _MIN_SENTENCE_WORDS or _is_cjk_heavy(s)), "")
        full = "\n".join(x for x in ((title or "").strip(), " · ".join(seen), opening) if x)
    return first_tokens(full, count_tokens, HEAD_TOKENS)


def first_tokens(text: str, count_tokens, limit: int) -> str:
    """The longest run of `text`'s first words that fits `limit` tokens (line breaks become spaces;
    characters where there is no space, as in Chinese)."""
    runs = _split_long([" ".join(text.split())], count_tokens, limit)
    return runs[0] if runs else ""


def _is_document(parts) -> bool:
    """A note with headings or several paragraphs (not one run of text: a transcript, a log line)."""
    return len(parts) > 1 or (len(parts) == 1 and len(parts[0][1]) > 1)


# What a section chunk is embedded as: its row keeps `title > heading > subheading` in front (the
# ranker's heading feature and the full text read it); the model sees "path" (the same), "nearest"
# (the title and the section's own heading) or "title" (the title alone). Chosen by
# bench/chunk0_variants.py on every notes corpus (docs/performance.md).
SECTION_PREFIX = "path"


def section_text(title: str, trail: tuple[str, ...], pieces: list[str], prefix: str = "path") -> str:
    """A section chunk's text: its paragraphs headed by `title > heading > subheading` (`prefix`
    "nearest": `title > subheading`; "title": the title alone)."""
    title = " ".join((title or "").split())
    trail = list(trail)
    if prefix == "nearest":
        trail = trail[-1:]
    elif prefix == "title" and title:
        trail = []
    elif prefix == "none":
        title, trail = "", []
    head = " > ".join([title] + trail if title else trail)
    return _join(head, [(p, 0) for p in pieces])


def section_texts(title: str, parts, count_tokens, budget: int, target: int | None = None) -> list[str]:
    """The section chunks' texts of a note (`section_groups`, each headed by its heading path)."""
    return [section_text(title, trail, pieces) for trail, pieces in section_groups(title, parts, count_tokens,
                                                                                    budget, target)]


def section_groups(title: str, parts, count_tokens, budget: int,
                   target: int | None = None) -> list[tuple[tuple[str, ...], list[str]]]:
    """One (heading trail, paragraphs) per run of a section's paragraphs of about `target` tokens
    (SECTION_TOKENS; a longer paragraph alone, cut at sentences past `budget` less its heading path);
    the trail leaves out an H1 that repeats the title."""
    target = SECTION_TOKENS if target is None else target
    title = " ".join((title or "").split())
    out = []
    for path, paras in parts:
        trail = [h for h in path if h]
        if trail and title and _norm(trail[0]) == _norm(title):
            trail = trail[1:]  # the H1 repeats the title
        head = " > ".join([title] + trail if title else trail)
        room = max(8, budget - (count_tokens(head) if head else 0))
        group: list[str] = []
        used = 0
        for para in paras:
            cost = count_tokens(para)
            pieces = [para] if cost <= room else _split_long(sentences(para) or [para], count_tokens, room)
            for piece in pieces:
                c = cost if len(pieces) == 1 else count_tokens(piece)
                if group and used + c > max(target, 1):
                    out.append((tuple(trail), group))
                    group, used = [], 0
                group.append(piece)
                used += c
        if group:
            out.append((tuple(trail), group))
    return out
