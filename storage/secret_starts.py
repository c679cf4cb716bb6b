"""Where a credential rule's match can begin, found by its keywords: its expression is tried there only.

Python's `re` tries a case-insensitive alternation at every position of a text; for the rules that
begin with a credential word (`assignment`, `context_token`, `prose_password`, `cjk_password`) that was most
of a whole-tree credential check (`mem doctor` beside 300,000 captured turns). Their matches begin where one
of the words begins (or, for `assignment`, at the start of the run of name characters the word ends:
`DB_PASSWORD=`), so the words are found in the lower-cased text by a case-sensitive search, and the
rule's own expression is matched at those places in order, as `finditer` would: the same matches, a
superset of places tried. A text holding a character that `re` folds onto an ASCII letter (U+0130,
U+0131, U+017F, U+212A: the test checks the list against the running Python), or more than MAX_WORDS
of the words, is searched as before.
"""
from __future__ import annotations

import re
from typing import Iterator

from memstrata.storage.secret_rules import CJK_WORDS, RULES

# Each rule's words, lower case: every alternative of its keyword begins with one of them.
_WORDS = {
    "assignment": ("pass", "pwd", "secret", "client", "api", "access", "private", "auth", "refresh",
                   "bearer", "session", "bot", "token", "credential", *CJK_WORDS),
    "context_token": ("api", "secret", "token", "access", "auth", "pass", "credential"),
    "prose_password": ("pass", "pwd", "secret", "token", "api", "credential", "pin"),
    "cjk_password": (*CJK_WORDS, "pass", "token", "secret", "api"),
}
# `assignment`'s key may begin with name characters before its word (`db_password`, `MY.API_KEY`)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_PREFIXED = {"assignment"}
_FINDER = re.compile("|".join(map(re.escape, sorted({w for words in _WORDS.values() for w in words}))))
# The characters `re` matches to an ASCII letter under IGNORECASE besides the letters themselves
FOLDS_TO_ASCII = "\u0130\u0131\u017f\u212a"
_FOLDING = re.compile("[" + FOLDS_TO_ASCII + "]")
_ANY_HINT = re.compile("|".join(map(re.escape, sorted({h for rule in RULES for h in rule.hints}))))


MAX_WORDS = 100_000  # word places kept for one text (a few MB); a text holding more is searched as before
_SHORT = 256  # a text this long or shorter is first looked at for any rule's hint (one search)


class Words:
    """Which rules' hints one text holds, and where the rules' words begin (each found once for every rule that asks)."""

    def __init__(self, text: str, low: str):
        self.text, self.low = text, low
        self.usable = len(low) == len(text) and not _FOLDING.search(text)
        self._at: list[int] | None = None
        self._with_names: list[int] | None = None
        self._hinted: dict[tuple[str, ...], bool] = {}
        self._any_hint: bool | None = None

    def has_hint(self, rule) -> bool:
        """Whether the text holds one of `rule.hints` (a rule without hints is searched always)."""
        if not rule.hints:
            return True
        if self._any_hint is None:  # most short fields (an id, a path, a date) hold none of any rule
            self._any_hint = len(self.low) > _SHORT or _ANY_HINT.search(self.low) is not None
        if not self._any_hint:
            return False
        held = self._hinted.get(rule.hints)
        if held is None:  # rules share their hints: each set is looked for once
            low = self.low
            held = self._hinted[rule.hints] = any(hint in low for hint in rule.hints)
        return held

    def starts(self, prefixed: bool) -> list[int] | None:
        """Each place a word begins (overlapping ones too: `口令牌`), and with `prefixed` the start of
        the run of name characters each ends, sorted; None past MAX_WORDS (the text is searched as before)."""
        if self._at is None:
            self._at, at = [], _FINDER.search(self.low)
            while at is not None:
                if len(self._at) == MAX_WORDS:  # "pin" * 3,000,000: the list would outweigh the text 30 times
                    self.usable = False
                    return None
                self._at.append(at.start())
                at = _FINDER.search(self.low, at.start() + 1)
        if not self.usable:
            return None
        if not prefixed:
            return self._at
        if self._with_names is None:
            self._with_names = _with_name_runs(self.text, self._at)
        return self._with_names


def matches(rule, text: str, words: Words) -> Iterator[re.Match]:
    """`rule.pattern.finditer(text)`, trying only the places where a match can begin."""
    starts = words.starts(rule.id in _PREFIXED) if rule.id in _WORDS and words.usable else None
    if starts is None:
        yield from rule.pattern.finditer(text)
        return
    end = 0
    for start in starts:
        if start < end:
            continue  # inside the last match: finditer goes on from its end
        m = rule.pattern.match(text, start)
        if m is not None:
            yield m
            end = max(m.end(), start + 1)


def _with_name_runs(text: str, at: list[int]) -> list[int]:
    """`at` and the start of the run of name characters each word ends (once per run: a later word of
    the same run stops at the one before it, whose run start is already there)."""
    out = set(at)
    known_end = 0
    for k in at:
        j = k
        while j > known_end and text[j - 1] in _NAME_CHARS:
            j -= 1  # each character is stepped over once
        out.add(j)
        known_end = k
    return sorted(out)
