"""Which memories an agent's reply used: those shown to its session whose own words and phrases it repeats."""
from __future__ import annotations

import math

# A memory was used when the reply repeats a phrase of it and enough of its own terms: at least
# MIN_SHARED, and a SHARE of its terms (never more than MAX_NEEDED: a reply uses a part of a long note).
# A phrase is PHRASE_TOKENS tokens in a row holding two content words the user did not write (numbers
# apart: "on Monday at 10:00" is said of many things), or three content words in a row ("patronictl
# failover orders"; "mean a lot", "let me know" are not). Both, so that neither a long reply that holds
# a note's common words nor a stock phrase makes a use (bench/reply_use.py measures the false alarms).
# Texts come as (token, carries content) sequences: retrieval.phrases.token_sequence.
PHRASE_TOKENS = 4
SHORT_PHRASE_TOKENS = 3
MIN_SHARED = 3
SHARE = 0.25
MAX_NEEDED = 8


def _is_cjk(token: str) -> bool:
    return len(token) == 1 and ord(token) >= 0x3400


def terms(seq: list[tuple[str, bool]]) -> set[str]:
    """The content terms of a sequence: its content words, and pairs of CJK characters (one of content)."""
    out = {t for t, content in seq if content and not _is_cjk(t)}
    out.update(a + b for (a, ca), (b, cb) in zip(seq, seq[1:]) if _is_cjk(a) and _is_cjk(b) and (ca or cb))
    return out


def _phrases(seq: list[tuple[str, bool]], asked: set[str]) -> set[tuple]:
    """The phrases of a sequence (see PHRASE_TOKENS): runs of PHRASE_TOKENS tokens with two content words
    the user did not write, and runs of SHORT_PHRASE_TOKENS content tokens with two such words."""
    def fresh(run):
        return sum(1 for t, content in run if content and not t.isdigit() and t not in asked)

    out = set()
    for size in (SHORT_PHRASE_TOKENS, PHRASE_TOKENS):
        for i in range(len(seq) - size + 1):
            run = seq[i:i + size]
            if fresh(run) >= 2 and (size == PHRASE_TOKENS or all(content for _, content in run)):
                out.add(tuple(t for t, _ in run))
    return out


def needed(own_terms: int) -> int:
    """How many of a memory's terms a reply must repeat to have used it."""
    return max(MIN_SHARED, min(MAX_NEEDED, math.ceil(SHARE * own_terms)))


def used(reply: list, asked: list, shown: dict[str, list]) -> list[str]:
    """The ids of the `shown` memories (id -> the sequence of the text the session was shown, or of the
    memory's own text) that the `reply` sequence used; `asked` is the sequence of what the user wrote
    in that turn (words the reply takes from the question are no sign of a memory)."""
    if len(reply) < SHORT_PHRASE_TOKENS:
        return []
    asked_tokens = {t for t, _ in asked}
    asked_terms = terms(asked) | asked_tokens
    reply_terms = terms(reply) - asked_terms
    reply_phrases = _phrases(reply, asked_tokens)
    out = []
    for entry_id, seq in shown.items():
        own = terms(seq) - asked_terms
        if len(own & reply_terms) >= needed(len(own)) and reply_phrases & _phrases(seq, asked_tokens):
            out.append(entry_id)
    return out
