"""Links that share a page, a post or a track: their own query parameters are no credentials (storage/secret_rules.py asks)."""
from __future__ import annotations

import re

# Parameters of a link that shares a page, a post or a track (`?token=916043564`, WeChat's `&sn=<hex>`,
# SoundCloud's `?secret_token=s-...`): who holds the link may read what it shows, which the note's
# reader holds already; no account is opened with them. A credential a link carries in another
# parameter (`?access_token=`, `?api_key=`, `?password=`) is still one, as is a key of a known format.
SHARE_LINK_PARAMS = frozenset(("token", "secret_token", "sn"))
_URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_QUERY_VALUE_END = re.compile(r"[&#\s\"'<>()\[\]]")


def link_parameter(m: re.Match, key: str) -> str | None:
    """The value of `key` when the match is a parameter of a link's query (`...?key=value&...`,
    read to the next `&` or `#`), else None."""
    start = m.start("key") if "key" in m.re.groupindex else m.start()
    text = m.string
    if start == 0 or text[start - 1] not in "?&":
        return None
    word = max(text.rfind(c, 0, start) for c in " \t\n\"'<>()[]")  # the link is one word
    if not _URL_START.search(text, word + 1, start):
        return None
    at = text.find("=", start, m.end())
    if at < 0:
        return None
    end = _QUERY_VALUE_END.search(text, at + 1)
    return text[at + 1:end.start() if end else len(text)]


def share_parameter(m: re.Match, key: str) -> bool:
    """A share link's own parameter (SHARE_LINK_PARAMS), or any link parameter whose value is a
    number (`&token=916043564`): no credential."""
    value = link_parameter(m, key)
    if value is None:
        return False
    return key.lower() in SHARE_LINK_PARAMS or value.isdigit()
