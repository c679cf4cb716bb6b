"""Which memories an agent's reply used: those shown to its session whose own words and phrases it repeats."""
from __future__ import annotations

import math
from dataclasses import dataclass

# A memory was used when the reply repeats a phrase of one part of it and enough of that part's terms:
# at least MIN_SHARED, and a SHARE of them (never more than MAX_NEEDED). A phrase is PHRASE_TOKENS
# tokens in a row holding two content words the user did not write, or three content words in a row
# ("patronictl failover orders"; "mean a lot", "let me know" are not). Both, so that neither a long
# reply that holds a note's common words nor a stock phrase makes a use; by parts, so that a long note
# is not used by a long reply that shares a few words with each of its paragraphs (bench/reply_use.py
# measures the false alarms). Texts come as (token, carries content) sequences, a memory as the
# sequences of its parts: retrieval.phrases.token_sequence and unit_sequences.
PHRASE_TOKENS = 4
SHORT_PHRASE_TOKENS = 3
MIN_SHARED = 3
SHARE = 0.25
MAX_NEEDED = 8
LONG_REPLY_TERMS = 150  # a reply repeats one phrase more per this many terms it holds: a long one shares some by chance


@dataclass(frozen=True)
class Shown:
    """A memory as a reply is compared with it: each part's terms and every run of tokens a phrase can be."""

    parts: tuple  # ((terms, runs), ...)


def _is_cjk(token: str) -> bool:
    return len(token) == 1 and ord(token) >= 0x3400


def terms(seq: list[tuple[str, bool]]) -> set[str]:
    """The content terms of a sequence: its content words, and pairs of CJK characters (one of content)."""
    out = {t for t, content in seq if content and not _is_cjk(t)}
    out.update(a + b for (a, ca), (b, cb) in zip(seq, seq[1:]) if _is_cjk(a) and _is_cjk(b) and (ca or cb))
    return out


def _runs(seq: list[tuple[str, bool]]) -> set[tuple]:
    return {tuple(t for t, _ in seq[i:i + size]) for size in (SHORT_PHRASE_TOKENS, PHRASE_TOKENS)
            for i in range(len(seq) - size + 1)}


def shown(parts: list[list[tuple[str, bool]]]) -> Shown:
    """A memory's parts (token sequences) made ready to be compared with many replies."""
    return Shown(tuple((frozenset(terms(seq)), frozenset(_runs(seq))) for seq in parts if seq))


def _phrases(seq: list[tuple[str, bool]], asked: set[str]) -> set[tuple]:
    """The phrases of a reply: runs of PHRASE_TOKENS tokens with two content words the user did not
    write, and runs of SHORT_PHRASE_TOKENS content tokens with two such words."""
    out = set()
    for size in (SHORT_PHRASE_TOKENS, PHRASE_TOKENS):
        for i in range(len(seq) - size + 1):
            run = seq[i:i + size]
            fresh = sum(1 for t, content in run if content and t not in asked)
            if fresh >= 2 and (size == PHRASE_TOKENS or all(content for _, content in run)):
                out.add(tuple(t for t, _ in run))
    return out


def needed(own_terms: int) -> int:
    """How many of a part's terms a reply must repeat to have used it."""
    return max(MIN_SHARED, min(MAX_NEEDED, math.ceil(SHARE * own_terms)))


def used(reply: list, asked: list, memories: dict[str, Shown]) -> list[str]:
    """The ids of the `memories` (id -> `shown(...)` of its parts) that the `reply` sequence used;
    `asked` is the sequence of what the user wrote before it (words the reply takes from the user are
    no sign of a memory)."""
    if len(reply) < SHORT_PHRASE_TOKENS:
        return []
    asked_tokens = {t for t, _ in asked}
    asked_terms = terms(asked) | asked_tokens
    reply_terms = terms(reply) - asked_terms
    reply_phrases = _phrases(reply, asked_tokens)
    holders: dict[tuple, int] = {}
    for memory in memories.values():
        for phrase in {p for _, runs in memory.parts for p in reply_phrases & runs}:
            holders[phrase] = holders.get(phrase, 0) + 1
    # a phrase several of the memories hold ("pip install", "from the command line") is the
    # subject's common wording, not this memory's
    reply_phrases = {p for p, n in holders.items() if n == 1}
    if not reply_phrases:
        return []
    more = len(reply_terms) // LONG_REPLY_TERMS
    out = []
    for entry_id, memory in memories.items():
        for part_terms, runs in memory.parts:
            own = part_terms - asked_terms
            if len(own & reply_terms) >= needed(len(own)) and len(reply_phrases & runs) >= 1 + more:
                out.append(entry_id)
                break
    return out
