"""Extractive, offline summaries (key points, one sentence, a paragraph) for English and Chinese."""
from __future__ import annotations

# How it works: the text is cut into units (sentences; Markdown headings, list items and
# code fences as whole units). Units are compared with a blend of the embedder's cosine
# similarity and a lexical similarity (words for Latin script, character bigrams for CJK);
# the blend leans lexical for Chinese because the bundled English model does not understand
# it. Each unit gets a centrality score (mean similarity to the others, a small lead bias,
# a penalty for fragments and code), then maximal marginal relevance picks diverse units,
# returned in their original order. Headings are structure, not content: they are left out
# of summaries unless the text has nothing else. All functions are pure functions of the
# text and the embedder (no IO, no clock).

import math
import re
from collections import Counter

import numpy as np

__all__ = ["split_sentences", "key_points", "one_sentence", "paragraph"]

_MMR_LAMBDA = 0.7  # relevance vs novelty
_LEAD_BIAS = 0.05  # bonus for the first units, fading to 0 at the end
_DUPLICATE = 0.95  # a unit this similar to a chosen one is never chosen
_CODE_FACTOR = 0.5  # code blocks rarely make key points
_QUESTION_FACTOR = 0.8  # nor do questions, as often as statements
_DEFINE_LEAD = 0.1  # one_sentence: bonus of a note's first prose sentence (half for the second...)

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_LIST = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])\s+")
_RULE = re.compile(r"^\s{0,3}([*_])(\s*\1){2,}\s*$")
_QUOTE = re.compile(r"^\s*>\s?")
_CHECKBOX = re.compile(r"^\[[ xX]\]\s+")
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_RE = re.compile(f"[{_CJK}]")
_LATIN_RE = re.compile(r"[A-Za-z]")
# A sentence end: Latin .!? (+ closing quotes) before whitespace, or CJK 。！？ (+ closers).
_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)|[。！？]+[”’」』）》\"']*|[!?]+[\"'”’)\]]*$")
_TERMINAL = re.compile(r"[.!?。！？][\"'”’)\]」』）》]*$")
_ABBREV = {
    "e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "no",
    "fig", "inc", "ltd", "co", "corp", "approx", "cf", "al", "u.s", "u.k", "jan", "feb",
    "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
}
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_STOP = set(
    "a an the and or but if of to in on at by for with from as is are was were be been being "
    "it its this that these those i you he she we they me him her us them my your his our their "
    "do does did done have has had not no so than then there here what which who whom when where "
    "why how all any some can could should would will shall may might must just also very into "
    "about over after before up down out off again more most such only own same too s t".split()
)


# --------------------------------------------------------------------------- splitting


def _split_line(line: str) -> list[str]:
    """Split one line of prose at sentence ends, leaving abbreviations and initials alone."""
    out: list[str] = []
    start = 0
    for m in _END.finditer(line):
        end = m.end()
        if line[m.start()] == ".":
            before = line[start:m.start()].rsplit(None, 1)
            word = before[-1].lower() if before else ""
            word = word.lstrip("(\"'“‘")
            if word in _ABBREV or (len(word) == 1 and word.isalpha()):
                continue
        piece = line[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    rest = line[start:].strip()
    if rest:
        out.append(rest)
    return out


def _ends_sentence(s: str) -> bool:
    return bool(_TERMINAL.search(s.rstrip()))


def split_sentences(text: str) -> list[str]:
    """Cut text into units, in order: sentences, headings, list items, code blocks.

    Sentences end at . ! ? (before whitespace), at 。！？ and at line ends; a line that
    ends mid-sentence and a next line starting in lower case are joined (hard-wrapped
    prose). A Markdown heading or a list item (with its indented continuation lines) is
    one unit; a fenced code block is one unit, never split. Units are stripped; their
    Markdown markers are kept.
    """
    if not text:
        return []
    units: list[str] = []
    kinds: list[str] = []  # "s" sentence, "h" heading, "l" list item, "c" code
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    fence: str | None = None
    code: list[str] = []
    prev_blank = True

    def add(unit: str, kind: str) -> None:
        unit = unit.strip()
        if unit:
            units.append(unit)
            kinds.append(kind)

    for i, line in enumerate(lines):
        if fence is not None:
            code.append(line)
            if line.strip().startswith(fence) and set(line.strip()) <= set(fence[0]):
                add("\n".join(code), "c")
                fence, code = None, []
            continue
        m = _FENCE.match(line)
        if m:
            fence, code = m.group(1), [line]
            prev_blank = False
            continue
        stripped = line.strip()
        if not stripped:
            prev_blank = True
            continue
        if _SETEXT.match(line) or _RULE.match(line):
            # Setext underline: the line above was a heading; else a thematic break.
            if _SETEXT.match(line) and not prev_blank and kinds and kinds[-1] == "s":
                units[-1] = "# " + units[-1]
                kinds[-1] = "h"
            prev_blank = True
            continue
        if _HEADING.match(line):
            add(stripped, "h")
        elif _LIST.match(line):
            add(stripped, "l")
        elif kinds and kinds[-1] == "l" and not prev_blank and (line[:1].isspace() or not _ends_sentence(units[-1])):
            units[-1] = units[-1] + " " + stripped  # continuation of a list item
        else:
            body = _QUOTE.sub("", line).strip() if _QUOTE.match(line) else stripped
            parts = _split_line(body)
            if (
                parts
                and kinds
                and kinds[-1] == "s"
                and not prev_blank
                and not _ends_sentence(units[-1])
                and re.match(r"[a-z(]", parts[0])
            ):
                units[-1] = units[-1] + " " + parts.pop(0)  # hard-wrapped sentence
            for p in parts:
                add(p, "s")
        prev_blank = False
    if fence is not None and code:  # unclosed fence: keep it whole
        add("\n".join(code), "c")
    return units


def _kinds(units: list[str]) -> list[str]:
    out = []
    for u in units:
        if _FENCE.match(u):
            out.append("c")
        elif _HEADING.match(u):
            out.append("h")
        elif _LIST.match(u):
            out.append("l")
        else:
            out.append("s")
    return out


def _clean(unit: str) -> str:
    """A unit without its Markdown markers (heading hashes, list bullets, quote marks)."""
    if _FENCE.match(unit):
        return unit
    u = unit.strip()
    if _HEADING.match(u):
        return u.lstrip("#").strip().rstrip("#").strip()
    u = _LIST.sub("", u, count=1)
    u = _CHECKBOX.sub("", u, count=1)
    u = _QUOTE.sub("", u, count=1)
    return u.strip()


# --------------------------------------------------------------------------- scoring


def _lex_tokens(s: str) -> list[str]:
    low = s.lower()
    toks = [w for w in _WORD.findall(low) if w not in _STOP and len(w) > 1]
    for run in re.findall(f"[{_CJK}]+", s):
        if len(run) == 1:
            toks.append(run)
        else:
            toks.extend(run[i:i + 2] for i in range(len(run) - 1))
    return toks


def _lexical_similarity(token_lists: list[list[str]]) -> np.ndarray:
    n = len(token_lists)
    df: Counter = Counter()
    for toks in token_lists:
        df.update(set(toks))
    vocab = {t: i for i, t in enumerate(df)}
    mat = np.zeros((n, max(1, len(vocab))), dtype=np.float32)
    for r, toks in enumerate(token_lists):
        for t, c in Counter(toks).items():
            mat[r, vocab[t]] = (1.0 + math.log(c)) * math.log(1.0 + n / df[t])
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    mat /= norms
    return mat @ mat.T


def _cjk_ratio(text: str) -> float:
    cjk = len(_CJK_RE.findall(text))
    latin = len(_LATIN_RE.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.0


def _content(text: str) -> tuple[list[str], list[str]]:
    """Units worth summarising (headings only if nothing else), and their kinds."""
    units = split_sentences(text)
    kinds = _kinds(units)
    keep = [i for i, k in enumerate(kinds) if k != "h"] or list(range(len(units)))
    return [units[i] for i in keep], [kinds[i] for i in keep]


def units(text: str) -> list[str]:
    """The units key_points chooses from, as it returns them (no model needed)."""
    return [_clean(u) for u in _content(text)[0]]


def _rank(units: list[str], kinds: list[str], embedder, k: int) -> list[int]:
    """Indices of k units chosen by centrality + MMR, in original order."""
    n = len(units)
    cleaned = [_clean(u) for u in units]
    emb = np.asarray(embedder.embed(cleaned), dtype=np.float32)
    sim_emb = emb @ emb.T
    toks = [_lex_tokens(c) for c in cleaned]
    sim_lex = _lexical_similarity(toks)
    alpha = 0.7 - 0.4 * _cjk_ratio(" ".join(cleaned))
    sim = alpha * sim_emb + (1.0 - alpha) * sim_lex
    np.fill_diagonal(sim, 0.0)
    central = sim.sum(axis=1) / max(1, n - 1)
    lo, hi = float(central.min()), float(central.max())
    rel = (central - lo) / (hi - lo) if hi > lo else np.ones(n, dtype=np.float32)
    rel = rel + _LEAD_BIAS * (1.0 - np.arange(n) / n)
    for i in range(n):
        size = len(toks[i]) if toks[i] else len(cleaned[i].split())
        rel[i] *= min(1.0, size / 4.0) ** 0.5  # fragments ("OK.", "见上。") rarely summarise
        if kinds[i] == "c":
            rel[i] *= _CODE_FACTOR
        elif cleaned[i].rstrip().endswith(("?", "？")):
            rel[i] *= _QUESTION_FACTOR
    np.fill_diagonal(sim, 1.0)
    chosen: list[int] = []
    remaining = set(range(n))
    while remaining and len(chosen) < k:
        best, best_score = None, -np.inf
        for i in sorted(remaining):
            redundancy = max((float(sim[i, j]) for j in chosen), default=0.0)
            if chosen and redundancy >= _DUPLICATE:
                continue
            score = _MMR_LAMBDA * float(rel[i]) - (1.0 - _MMR_LAMBDA) * redundancy
            if score > best_score:
                best, best_score = i, score
        if best is None:
            break
        chosen.append(best)
        remaining.discard(best)
    return sorted(chosen)


# --------------------------------------------------------------------------- public API


def key_points(text: str, embedder, max_points: int = 5) -> list[str]:
    """Up to max_points whole units of text (markers stripped), in their original order.

    A text with at most max_points content units comes back whole.
    """
    if max_points <= 0:
        return []
    units, kinds = _content(text)
    if len(units) <= max_points:
        return [_clean(u) for u in units]
    return [_clean(units[i]) for i in _rank(units, kinds, embedder, max_points)]


# A line that only labels what follows: bold or italic text, maybe with a colon after it
# ("**How to sync your vault using Working Copy**:"), or any short line ending in a colon.
_LABEL = re.compile(r"^(\*\*|__|\*|_)[^*_]+\1\s*[:：]?$|^.{0,80}[:：]$")
_TABLE_ROW = re.compile(r"^\|.*\|$")


def _defines(unit: str, kind: str) -> bool:
    """Whether a unit can be a note's one-line summary: a sentence of prose, not a heading, a
    label, a list item, a table row, code or a fragment."""
    if kind != "s" or _LABEL.match(unit.strip()) or _TABLE_ROW.match(unit.strip()):
        return False
    return len(_lex_tokens(_clean(unit))) >= 3 or len(_clean(unit).split()) >= 5


def one_sentence(text: str, embedder) -> str:
    """A note's defining sentence ('' for an empty text): of its prose sentences (never a
    heading, a bold label, a list item or code), the one most similar to the whole note (the
    mean of its units' vectors, blended with a lexical comparison that leans lexical for
    Chinese, as in key points); the most central unit when the note has no such sentence."""
    units = split_sentences(text)  # headings too: a note's title says what the whole is about
    kinds = _kinds(units)
    candidates = [i for i, (u, k) in enumerate(zip(units, kinds)) if _defines(u, k)]
    if len(candidates) <= 1:
        if candidates:
            return _clean(units[candidates[0]])
        pts = key_points(text, embedder, max_points=1)
        if pts and _LABEL.match(pts[0].strip()):  # "Rotating the webhook secret:" says nothing alone:
            at = next((i for i, u in enumerate(units) if _clean(u) == pts[0]), None)  # with what it labels
            if at is not None and at + 1 < len(units) and kinds[at + 1] != "c":
                return " ".join(f"{pts[0]} {_clean(units[at + 1])}".split())
        return pts[0] if pts else ""
    cleaned = [_clean(u) for u in units]
    emb = np.asarray(embedder.embed(cleaned), dtype=np.float32)
    centre = emb.mean(axis=0)
    dense = emb @ (centre / max(float(np.linalg.norm(centre)), 1e-9))
    toks = [_lex_tokens(c) for c in cleaned]
    lexical = _lexical_similarity(toks + [[t for ts in toks for t in ts]])[-1, :-1]
    alpha = 0.7 - 0.4 * _cjk_ratio(" ".join(cleaned))
    best, best_score = candidates[0], -np.inf
    for rank, i in enumerate(candidates):
        # a note is usually defined where it starts: its first sentences get a small lead
        score = alpha * float(dense[i]) + (1.0 - alpha) * float(lexical[i]) + _DEFINE_LEAD / (1 + rank)
        if cleaned[i].rstrip().endswith(("?", "？")):
            score -= 0.1  # a question rarely defines a note
        if score > best_score:
            best, best_score = i, score
    return cleaned[best]


def _join(parts: list[str]) -> str:
    out = ""
    for p in parts:
        p = p.strip()
        if not p:
            continue
        if not _ends_sentence(p) and not _FENCE.match(p):
            p += "。" if _cjk_ratio(p) > 0.5 else "."
        glue = bool(out) and _is_cjk_char(out[-1]) and _is_cjk_char(p[0])
        out += p if (glue or not out) else " " + p
    return out


def _is_cjk_char(ch: str) -> bool:
    return bool(_CJK_RE.match(ch)) or ch in "。！？，、；：”’」』）》“‘「『（《"


def paragraph(text: str, embedder, max_sentences: int = 3) -> str:
    """Up to max_sentences key units joined into one paragraph, in original order."""
    return _join(key_points(text, embedder, max_points=max_sentences))
