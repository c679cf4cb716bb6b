"""Fallbacks that need neither the model nor the index: grep over entry files and INDEX.md navigation."""
from __future__ import annotations

import math
import re
from pathlib import Path

from memstrata.retrieval import lexical
from memstrata.retrieval.hits import best_sentence
from memstrata.retrieval.table import indexed_form
from memstrata.storage.catalog import read_entry_file
from memstrata.storage.entry import Entry
from memstrata.storage.safe_io import read_regular_text

from memstrata.storage.errors import CorruptEntry

INDEX_FILE = "INDEX.md"


def grep_terms(query: str) -> list[str]:
    """What grep looks for: topic words (lower case) and, for CJK, each run and its bigrams."""
    terms = lexical.query_terms(query)
    for run in lexical.cjk_query(query).split():
        grams = [run] + ([run[i:i + 2] for i in range(len(run) - 1)] if len(run) > 2 else [])
        terms += [g for g in grams if g not in terms]
    return terms


def _score_text(text: str, terms: list[str], idf: dict[str, float], phrase: str) -> tuple[float, list[str]]:
    low = text.lower()
    score = 0.0
    matched = []
    for t in terms:
        tf = low.count(t)
        if tf:
            matched.append(t)
            score += math.log1p(tf) * idf.get(t, 1.0)
    if phrase and phrase in " ".join(low.split()):
        score *= 2.0
    return score, matched


def grep(root: Path, query: str, entries: list[Entry], k: int) -> list[tuple[Entry, float, str, list[str], bool]]:
    """Read every entry file in scope and rank those containing the query's words.

    Returns (entry with body, score, snippet, matched terms, exact) tuples; `exact` is true
    when the whole query, or every one of its words, occurs in the entry.
    """
    terms = grep_terms(query)
    if not terms:
        return []
    phrase = " ".join(query.lower().split()).strip(" ?.!")
    loaded = []
    for meta in entries:
        try:
            e = indexed_form(root, read_entry_file(root, meta.path))
        except (CorruptEntry, OSError):
            continue
        loaded.append((e, f"{e.title}\n{e.body}\n{' '.join(e.tags)}"))
    n = len(loaded) or 1
    df = {t: sum(1 for _, text in loaded if t in text.lower()) for t in terms}
    idf = {t: math.log((n + 1) / (df[t] + 0.5)) + 0.1 for t in terms}
    out = []
    for e, text in loaded:
        score, matched = _score_text(text, terms, idf, phrase)
        if score <= 0:
            continue
        low = " ".join(text.lower().split())
        exact = bool(phrase) and phrase in low or set(lexical.query_terms(query)) <= set(matched) and bool(matched)
        out.append((e, score, best_sentence(f"{e.title}\n{e.body}", matched, e.title) or e.title, matched, exact))
    out.sort(key=lambda r: (-r[1], r[0].path))
    return out[:k]


def _index_rows(root: Path, category: str) -> tuple[str, dict[str, str]]:
    """A category's description and its entry titles by id, read from its INDEX.md."""
    path = Path(root) / category / INDEX_FILE
    try:
        text = read_regular_text(path)
    except OSError:
        return "", {}
    desc = ""
    m = re.search(r"^description:\s*(.*)$", text, re.M)
    if m:
        desc = m.group(1).strip().strip("'\"")
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\| \[(.*?)\]\(<.*?>\) \| ([^|]+?) \|", line)
        if m:
            rows[m.group(2).strip()] = m.group(1)
    return desc, rows


def navigate(root: Path, query: str, entries: list[Entry], k: int, grep_within: int):
    """INDEX.md navigation: rank categories by how well their name, description and entry titles
    match the query, then grep inside the best categories (at most `grep_within` entries).

    Entries whose title or tags match score from the index alone, without opening the file.
    """
    terms = grep_terms(query)
    if not terms:
        return []
    by_cat: dict[str, list[Entry]] = {}
    for e in entries:
        by_cat.setdefault(e.category, []).append(e)
    cat_scores = []
    titles: dict[str, str] = {}
    for cat, members in by_cat.items():
        desc, rows = _index_rows(root, cat)
        titles.update(rows)
        text = f"{cat.replace('/', ' ')} {desc} " + " ".join(rows.values() or [m.title for m in members])
        low = text.lower()
        cat_scores.append((sum(1 for t in terms if t in low), cat))
    cat_scores.sort(key=lambda x: (-x[0], x[1]))
    scored: dict[str, tuple[Entry, float, str, list[str], bool]] = {}
    for e in entries:
        label = f"{titles.get(e.id, e.title)} {' '.join(e.tags)}".lower()
        matched = [t for t in terms if t in label]
        if matched:
            scored[e.id] = (e, float(len(matched)), e.title, matched, False)
    chosen: list[Entry] = []
    for hits, cat in cat_scores:
        if len(chosen) >= grep_within:
            break
        chosen.extend(by_cat[cat][: grep_within - len(chosen)])
    for e, score, snippet, matched, exact in grep(root, query, chosen, k):
        prior = scored.get(e.id)
        scored[e.id] = (e, score + (prior[1] if prior else 0.0), snippet, matched, exact)
    ranked = sorted(scored.values(), key=lambda r: (-r[1], r[0].path or ""))
    return ranked[:k]
