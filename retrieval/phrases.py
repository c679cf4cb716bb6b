"""A text as the sequence of its tokens, each marked as carrying content or not, for phrases compared across texts."""
from __future__ import annotations

import re

from memstrata.retrieval.lexical import QUERY_STOPWORDS, stem
from memstrata.retrieval.prompts import PHATIC

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_]*|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
CJK_FILLERS = frozenset("的了是在和与及也都就而我你他她它们这那有个一不吗呢吧啊")
_PHATIC_STEMS = frozenset(stem(w) for w in PHATIC)


def token_sequence(text: str) -> list[tuple[str, bool]]:
    """The text as (token, carries content) in order (scoring.reply_use): English words stemmed and
    lower-cased, content when no stop word nor a word of thanks, greeting or assent (retrieval.prompts
    PHATIC: "thanks, that means a lot" holds no subject) and three letters long or holding a digit; CJK
    characters one by one, content when not a particle or pronoun."""
    out = []
    for token in _TOKEN.findall(text or ""):
        if _CJK.match(token):
            out.append((token, token not in CJK_FILLERS))
            continue
        lower = token.lower()
        token = stem(lower)
        content = lower not in QUERY_STOPWORDS and lower not in PHATIC and token not in _PHATIC_STEMS
        out.append((token, content and (len(token) >= 3 or any(c.isdigit() for c in token))))
    return out
