"""Write-time decisions: duplicate, conflict, near-duplicate or new, from text and similarity."""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable

from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry

WRITE_KINDS = ("duplicate", "conflict", "near_duplicate", "new")

_EMPHASIS_RUNS = re.compile(r"(\*\*|__|~~|`+)")
# A single * or _ that opens or closes emphasis (not one inside a word such as snake_case).
_EMPHASIS_EDGE = re.compile(r"(?<!\w)[*_]+|[*_]+(?!\w)")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class WriteDecision:
    """What to do with a new write: kind is duplicate | conflict | near_duplicate | new.

    target_id and similarity name the existing entry concerned (None for "new");
    reason is one line for the user.
    """

    kind: str
    target_id: str | None
    similarity: float | None
    reason: str


def normalise_text(text: str | None) -> str:
    """Text for equality checks: NFKC, case-folded, Markdown emphasis stripped,
    whitespace collapsed, trailing punctuation removed."""
    if not text:
        return ""
    out = unicodedata.normalize("NFKC", text).casefold()
    out = _EMPHASIS_RUNS.sub("", out)
    out = _EMPHASIS_EDGE.sub("", out)
    out = _SPACE.sub(" ", out).strip()
    end = len(out)
    while end > 0 and (unicodedata.category(out[end - 1]).startswith("P") or out[end - 1].isspace()):
        end -= 1
    return out[:end]


def normalise_tags(tags: Iterable[str] | None) -> frozenset[str]:
    """A tag set for comparison: NFKC, case-folded, leading '#' dropped, empties removed."""
    result = set()
    for tag in tags or ():
        t = unicodedata.normalize("NFKC", str(tag)).casefold().strip().lstrip("#").strip()
        if t:
            result.add(t)
    return frozenset(result)


def classify_write(title: str, body: str, tags: Iterable[str] | None,
                   candidates: Iterable[tuple[Entry, float]], settings: Settings) -> WriteDecision:
    """Classify a write against same-category entries and their similarity to the new text.

    In order of precedence (the most similar candidate wins within a rule):
    - duplicate: same normalised body (an empty body also needs the same title);
    - conflict: different content about the same subject: the same normalised title with
      similarity >= settings.conflict_title_similarity (a title alone when the similarity is
      unknown: no model), or the same non-empty tag set with similarity >=
      settings.conflict_similarity. Two "Standup" notes about different things are two memories;
    - near_duplicate: similarity >= settings.near_duplicate_threshold and a different title;
    - new otherwise. Expired candidates are ignored.
    """
    n_title, n_body, n_tags = normalise_text(title), normalise_text(body), normalise_tags(tags)
    candidates = [(e, s) for e, s in candidates if e.status != "expired"]
    unknown = {e.id for e, s in candidates if s is None}
    pool = [(e, float(s) if s is not None else 0.0) for e, s in candidates]
    pool.sort(key=lambda pair: (-pair[1], pair[0].id))

    for entry, sim in pool:
        same_title = normalise_text(entry.title) == n_title
        if normalise_text(entry.body) == n_body and (n_body or same_title):
            return WriteDecision("duplicate", entry.id, sim, f"same content as {_name(entry)}")

    for entry, sim in pool:
        if n_title and normalise_text(entry.title) == n_title and (
                entry.id in unknown or sim >= settings.conflict_title_similarity):
            return WriteDecision("conflict", entry.id, sim,
                                 f"same title as {_name(entry)} with different content")
        if n_tags and normalise_tags(entry.tags) == n_tags and sim >= settings.conflict_similarity:
            return WriteDecision("conflict", entry.id, sim,
                                 f"same tags and similar subject ({sim:.2f}) as {_name(entry)} "
                                 "with different content")

    for entry, sim in pool:
        if sim >= settings.near_duplicate_threshold and normalise_text(entry.title) != n_title:
            return WriteDecision("near_duplicate", entry.id, sim,
                                 f"nearly the same as {_name(entry)} (similarity {sim:.2f})")

    return WriteDecision("new", None, None, "no matching entry")


def _name(entry: Entry) -> str:
    return f'"{entry.title}" ({entry.id})'
