"""Which memories an agent's reply used: those shown to its session whose own words and phrases it repeats."""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

# A memory was used when the reply repeats a phrase of one part of it and enough of that part's terms:
# at least MIN_SHARED, and a SHARE of them (never more than MAX_NEEDED). A phrase is PHRASE_TOKENS
# tokens in a row holding two content words the user did not write, or three content words in a row,
# one of them an uncommon word (a name, a command: "patronictl failover orders"; "from the command
# line", "mean a lot" are anyone's wording); or LONG_PHRASE_TOKENS in a row with three content words
# (a quote); in Chinese, CJK_PHRASE_TOKENS characters of content in a row (three or four characters
# are one word: 配置文件; 测试环境验证 is a stock phrase). A phrase another memory shown holds too is
# the subject's wording (MAX_HOLDERS), and a long reply must repeat one more phrase per
# LONG_REPLY_TERMS terms it holds. By parts, so that a long note is not used by a long reply that
# shares a few words with each of its paragraphs. bench/reply_use.py measures what is found and the
# false alarms.
# Texts come as (token, content: 0 none, 1 common, 2 uncommon) sequences, a memory as the sequences of
# its parts: retrieval.phrases.token_sequence and unit_sequences.
PHRASE_TOKENS = 4
SHORT_PHRASE_TOKENS = 3
LONG_PHRASE_TOKENS = 6
CJK_PHRASE_TOKENS = 8
UNCOMMON = 2  # retrieval.phrases.UNCOMMON (scoring imports no retrieval)
MIN_SHARED = 3
SHARE = 0.25
MAX_NEEDED = 8
LONG_REPLY_TERMS = 300
MAX_HOLDERS = 1  # a phrase another memory shown holds too counts for neither (the subject's wording)


@dataclass(frozen=True)
class Shown:
    """A memory as a reply is compared with it: each part's terms and every run of tokens a phrase can be."""

    parts: tuple  # ((terms, runs), ...)


def _is_cjk(token: str) -> bool:
    return len(token) == 1 and ord(token) >= 0x3400


def terms(seq: list[tuple[str, int]]) -> set[str]:
    """The content terms of a sequence: its content words, and pairs of CJK characters (one of content)."""
    out = {t for t, content in seq if content and not _is_cjk(t)}
    out.update(a + b for (a, ca), (b, cb) in zip(seq, seq[1:]) if _is_cjk(a) and _is_cjk(b) and (ca or cb))
    return out


def _runs(seq: list[tuple[str, int]]) -> set[tuple]:
    return {tuple(t for t, _ in seq[i:i + size]) for size in {SHORT_PHRASE_TOKENS, PHRASE_TOKENS, LONG_PHRASE_TOKENS,
                                                                CJK_PHRASE_TOKENS} for i in range(len(seq) - size + 1)}


def shown(parts: list[list[tuple[str, int]]]) -> Shown:
    """A memory's parts (token sequences) made ready to be compared with many replies."""
    return Shown(tuple((frozenset(terms(seq)), frozenset(_runs(seq))) for seq in parts if seq))


def _phrases(seq: list[tuple[str, int]], asked: set[str]) -> set[tuple]:
    """The phrases of a reply (see PHRASE_TOKENS)."""
    out = set()
    for size in (SHORT_PHRASE_TOKENS, PHRASE_TOKENS):
        for i in range(len(seq) - size + 1):
            run = seq[i:i + size]
            fresh = [c for t, c in run if c and t not in asked]
            if len(fresh) >= 2 and UNCOMMON in fresh and (size == PHRASE_TOKENS or all(c for _, c in run)):
                out.add(tuple(t for t, _ in run))
    for i in range(len(seq) - LONG_PHRASE_TOKENS + 1):
        run = seq[i:i + LONG_PHRASE_TOKENS]
        if sum(1 for t, c in run if c and t not in asked and not _is_cjk(t)) >= 3:
            out.add(tuple(t for t, _ in run))
    for i in range(len(seq) - CJK_PHRASE_TOKENS + 1):
        run = seq[i:i + CJK_PHRASE_TOKENS]
        if all(c and _is_cjk(t) for t, c in run) and sum(1 for t, _ in run if t not in asked) >= 2:
            out.add(tuple(t for t, _ in run))
    return out


def needed(own_terms: int) -> int:
    """How many of a part's terms a reply must repeat to have used it."""
    return max(MIN_SHARED, min(MAX_NEEDED, math.ceil(SHARE * own_terms)))


class Asked:
    """What the user wrote in the session so far: its tokens and terms, added to turn by turn."""

    def __init__(self):
        self.tokens: set[str] = set()
        self.terms: set[str] = set()

    def add(self, seq: list[tuple[str, int]]) -> None:
        self.tokens.update(t for t, _ in seq)
        self.terms |= terms(seq) | self.tokens


def used(reply: list, asked: "Asked", memories: dict[str, Shown]) -> list[str]:
    """The ids of the `memories` (id -> `shown(...)` of its parts) that the `reply` sequence used;
    `asked` is what the user wrote before it (words the reply takes from the user are no sign of a
    memory)."""
    if len(reply) < SHORT_PHRASE_TOKENS:
        return []
    reply_terms = terms(reply) - asked.terms
    reply_phrases = _phrases(reply, asked.tokens)
    holders: dict[tuple, int] = {}
    for memory in memories.values():
        for phrase in {p for _, runs in memory.parts for p in reply_phrases & runs}:
            holders[phrase] = holders.get(phrase, 0) + 1
    # a phrase several memories shown hold ("pip install -r requirements") is the subject's wording;
    # two runbooks written from one template tell theirs apart by the phrases only one of them holds
    reply_phrases = {p for p, n in holders.items() if n <= MAX_HOLDERS}
    if not reply_phrases:
        return []
    phrases_needed = 1 + len(reply_terms) // LONG_REPLY_TERMS
    out = []
    for entry_id, memory in memories.items():
        for part_terms, runs in memory.parts:
            own = part_terms - asked.terms
            if len(own & reply_terms) >= needed(len(own)) and len(reply_phrases & runs) >= phrases_needed:
                out.append(entry_id)
                break
    return out


# A reply this long before the moment a hook recorded a memory as shown still counts it: the hook records
# the show as the prompt goes out, and the transcript's clock may run a little apart.
SHOWN_SLACK = timedelta(seconds=60)


def shown_by(memories: dict, since: dict, at) -> dict:
    """Those of `memories` ({id: ...}) the session had been shown by the reply's moment `at`: a reply
    written before a memory was shown did not use it (an attacker's review: a reply read again after the
    memory was shown counted it). Without a moment on either side, the memory counts as shown."""
    try:
        latest = at + SHOWN_SLACK if at is not None else None
    except OverflowError:  # a reply dated at the end of time: judged as if it had no moment
        latest = None
    if latest is None:
        return memories
    return {i: m for i, m in memories.items() if i not in since or since[i] <= latest}
