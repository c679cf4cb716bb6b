"""English stemming for the in-memory BM25 and coverage: Snowball when installed, a light stemmer else."""
from __future__ import annotations

import functools
import re
import threading

_VOWEL = re.compile(r"[aeiouy]")


try:  # the Snowball English stemmer, as the native index uses, when installed
    import snowballstemmer as _snowball
except ImportError:  # pragma: no cover - depends on the environment
    _snowball = None

# A Snowball stemmer keeps the word it works on in the object itself, so one shared by the warm
# service's threads gave wrong stems or raised IndexError under concurrent recalls: one per thread.
_PER_THREAD = threading.local()


def _snowball_stemmer():
    stemmer = getattr(_PER_THREAD, "stemmer", None)
    if stemmer is None:
        stemmer = _PER_THREAD.stemmer = _snowball.stemmer("english")
    return stemmer


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The English stem the in-memory BM25 matches on: Snowball when installed, else `light_stem`."""
    w = word.lower()
    if _snowball is not None:
        return _snowball_stemmer().stemWord(w)
    return light_stem(w)


def light_stem(word: str) -> str:
    """A light English stemmer (plural, -ing, -ed, final e/y folded), close enough to Snowball
    that the native search's candidates find their query terms again: studies/studied/study ->
    studi, hoping/hoped/hope -> hop."""
    w = word.lower()
    if len(w) <= 3 or not w.isalpha():
        return w
    if w.endswith(("ies", "ied")) and len(w) > 4:
        w = w[:-3] + "i"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith(("ss", "us", "is")):
        pass
    elif w.endswith("s"):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and _VOWEL.search(w[: -len(suffix)]):
            w = w[: -len(suffix)]
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeioulsz":
                w = w[:-1]
            break
    if len(w) > 3 and w[-1] == "e":
        w = w[:-1]
    elif len(w) > 3 and w[-1] == "y":
        w = w[:-1] + "i"
    return w


_LATIN_DE = re.compile(r"[aiu][ds]$")


@functools.lru_cache(maxsize=65536)
def derived_forms(s: str) -> tuple[str, ...]:
    """A stem and the stem of its Latin -de / -sion partner, which Snowball leaves apart:
    decid / decis (decide, decision), conclud / conclus, divid / divis, persuad / persuas.
    Only for saying whether an entry holds a query term (coverage), never for BM25."""
    if len(s) < 5 or not _LATIN_DE.search(s):
        return (s,)
    return (s, s[:-1] + ("s" if s[-1] == "d" else "d"))
