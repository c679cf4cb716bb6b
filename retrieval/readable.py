"""What an English-only model can read of an entry's chunks: a chunk holding CJK text is embedded as its Latin part, or not at all.

The bundled model (all-MiniLM-L6-v2) is English: it put the right Chinese passage first for 12.5%
of questions (STACK.md), finds any two Chinese texts alike, and embedding Chinese text with it was
most of the cost of adopting Chinese notes (a 9 MB newsletter archive: 12 minutes). With such a
model (`Embedder.reads_cjk` False) the index embeds only what it can read:

- a chunk that holds CJK text (`holds_cjk`: at least CJK_SHARE of its letters) is embedded as its
  Latin part (`latin_part`: the product names, commands, identifiers and English words it holds,
  each once, in order: TCP, HashMap, Redis AOF) when that has LATIN_MIN_WORDS distinct words, and
  gets no row otherwise;
- chunk 0 always keeps its row (its text is what the full-text columns and the doctor read); with no
  Latin part to embed it is a `blank` row, whose vector (its first HEAD_TOKENS tokens) recall never
  counts: its text is found by words alone, the CJK bigram side.

A chunk without CJK text (a code block of its own, an English paragraph in a Chinese note) is
embedded as before. CJK_SHARE 0.1 rather than "mostly CJK" (0.5): a section of a Chinese docs page
mixing a code block with its explanation is 10-50% CJK, and embedding it whole cost the Vue docs
214k tokens against 81k as Latin parts (advanced-java notes: 84k against 39k), for vectors of
text the model reads only in part. A model that reads CJK (any other model, a local path: models.locate.reads_cjk) embeds
every chunk, so configuring a multilingual one and rebuilding gives the dense side back to Chinese.
"""
from __future__ import annotations

import re

from memstrata.retrieval.chunking import Chunk, first_tokens

# A chunk holds CJK text when this share of its letters (CJK characters against Latin letters, link
# targets and URLs left out) is CJK.
CJK_SHARE = 0.1
# A CJK chunk's Latin part is embedded when it has this many distinct words (fewer: a stray
# "API" in a Chinese paragraph says nothing the CJK side does not).
LATIN_MIN_WORDS = 3
# The tokens chunk 0's Latin part or stand-in is cut to (its other chunks are sections or
# sentences, each within the window already).
HEAD_TOKENS = 32
BLANK = "blank"  # the kind of a chunk-0 row whose vector is a stand-in (recall skips it)
# rows whose vector is no match of a part of the entry: a stand-in, and a note's `about` chunk (its
# title and opening: the ranker's `about` feature, chunking.ABOUT_TOKENS)
NOT_A_MATCH = (BLANK, "about")

_NOISE = re.compile(r"\]\([^)\s]*[^)]*\)|<[^>]*>|(?:https?|ftp)://\S+|www\.\S+|\S+@\S+\.\w+|data:\S+")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_.+#'][A-Za-z0-9]+)*[+#]*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def _plain(text: str) -> str:
    """The text without Markdown link targets, HTML tags, URLs and e-mail addresses (no words)."""
    return _NOISE.sub(" ", text or "")


def holds_cjk(text: str) -> bool:
    """Whether at least CJK_SHARE of the text's letters are CJK (Latin letters of link targets and
    URLs not counted)."""
    plain = _plain(text)
    cjk = len(_CJK.findall(plain))
    latin = sum(len(w) for w in _LATIN.findall(plain))
    return cjk > 0 and cjk >= CJK_SHARE * (cjk + latin)


def latin_part(text: str) -> list[str]:
    """The Latin words of a text (names, identifiers, English words), each once (case aside), in order."""
    seen, out = set(), []
    for w in _LATIN.findall(_plain(text)):
        key = w.lower()
        if key not in seen:
            seen.add(key)
            out.append(w)
    return out


def readable(chunks: list[Chunk], count_tokens, budget: int) -> list[Chunk]:
    """The chunks an English-only model is given (see the module's docstring), numbered again from 0.
    `budget` is the tokens a chunk may have (the model's window, less its special tokens)."""
    out: list[Chunk] = []
    for c in chunks:
        kept = readable_chunk(c, count_tokens, budget)
        if kept is not None:
            kept.number = len(out)
            out.append(kept)
    return out


def readable_chunk(c: Chunk, count_tokens, budget: int) -> Chunk | None:
    """What an English-only model is given of one chunk: the chunk as it is when it holds no CJK
    text, else its Latin part, else nothing (chunk 0: a BLANK row). Chunk 0 is judged by its text and
    by what it is embedded as (a note's outline), the others by what they are embedded as. No chunk
    0 is pooled any more (its sentence chunks may be gone)."""
    first = c.number == 0
    if not holds_cjk(c.embedded) and not (first and holds_cjk(c.text)):
        return Chunk(c.number, c.kind, c.text, embed=c.embed)
    words = latin_part(c.text if first else c.embedded)
    if len(words) >= LATIN_MIN_WORDS:
        return Chunk(c.number, c.kind, c.text, embed=first_tokens(" ".join(words), count_tokens,
                                                                   HEAD_TOKENS if first else budget))
    if first:
        return Chunk(0, BLANK, c.text, embed=first_tokens(c.embedded, count_tokens, HEAD_TOKENS))
    return None
