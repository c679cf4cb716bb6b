"""A text as the sequence of its tokens, each marked as carrying content or not, for phrases compared across texts."""
from __future__ import annotations

import functools
import re

from memstrata.retrieval.lexical import CJK_QUESTION_WORDS, QUERY_STOPWORDS, stem
from memstrata.retrieval.prompts import PHATIC

_TOKEN = re.compile(r"[A-Za-z0-9\u00c0-\u024f][A-Za-z0-9_'’\u00c0-\u024f]*|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LINK = re.compile(r"(?:https?://|www\.)\S+|\S+@\S+\.\w+")  # an address is no wording a reply repeats
CJK_FILLERS = frozenset("的了是在和与及也都就而我你他她它们这那有个一不吗呢吧啊")
# Chinese words of function, not of subject: a reply and a note that share only these share no topic
CJK_FUNCTION_WORDS = frozenset("""
如果 因为 所以 但是 可是 不过 而且 并且 或者 还是 然后 之后 之前 以后 以前 已经 正在 需要 可以 可能 应该 必须 能够
这个 那个 这些 那些 这样 那样 一下 一些 一个 没有 问题 时候 现在 我们 你们 他们 她们 自己 大家 就是 只是 还有 比如
例如 其实 当然 通过 进行 使用 关于 对于 根据 为了 一起 一直 非常 比较 特别 知道 觉得 看看 一样 什么 怎么 请在 一次
""".split()) | frozenset(w for w in CJK_QUESTION_WORDS if len(w) == 2)
_PHATIC_STEMS = frozenset(stem(w) for w in PHATIC)
# A text is English unless fewer than ENGLISH_SHARE of its long words are in the vocabulary and fewer than
# ENGLISH_GLUE of its words are English stop words (a reply full of names still says "the", "with").
ENGLISH_SHARE = 0.6
ENGLISH_GLUE = 0.12
NONE, COMMON, UNCOMMON = 0, 1, 2  # what a token carries: no content, a common word of content, a rarer one
UNIT_MIN_TOKENS = 40   # a paragraph shorter than this is read with the next one
UNIT_MAX_TOKENS = 160  # ... and a longer one in parts of this many tokens (30 shared with the next)


@functools.lru_cache(maxsize=1)
def common_words() -> frozenset:
    """The words of the bundled model's vocabulary: the common English words (a name, a command or a
    rare term is cut in pieces there: "patronictl", "pgbouncer", "kcat"). Empty when it cannot be read."""
    try:
        from memstrata.models.locate import bundled_dir

        lines = (bundled_dir() / "vocab.txt").read_text(encoding="utf-8").split("\n")
    except Exception:  # noqa: BLE001 - no vocabulary: every word counts as common (fewer uses found)
        return frozenset()
    return frozenset(w for w in lines if w.isalpha() and w.islower())


def token_sequence(text: str) -> list[tuple[str, int]]:
    """The text as (token, content) in order (scoring.reply_use): English words stemmed and lower-cased,
    CJK characters one by one. `content` is NONE for a stop word, a contraction, a number, a word of
    thanks, greeting or assent (retrieval.prompts PHATIC: "thanks, that means a lot" holds no subject),
    a word shorter than three letters without a digit, a CJK particle or pronoun or part of a function
    word (如果, 因为, 需要); UNCOMMON for a word of content outside the common words (a name, a command);
    COMMON for the others. Web and mail addresses are left out, and a text that is not English prose
    carries no content but in its CJK characters (_unjudged_unless_english)."""
    out: list[tuple[str, int]] = []
    cjk_run: list[int] = []
    common = common_words()
    text = _LINK.sub(" ", text or "")
    for token in _TOKEN.findall(text):
        if _CJK.match(token):
            cjk_run.append(len(out))
            out.append((token, NONE if token in CJK_FILLERS else COMMON))
            continue
        _function_words(out, cjk_run)
        cjk_run = []
        lower = token.lower().replace("’", "'")
        word = lower[:-2] if lower.endswith("'s") else lower
        token = stem(word)
        named = len(word) >= 3 or any(c.isdigit() for c in word)  # "v2", "s3" name things
        content = ("'" not in word and not word.isdigit() and named and word not in QUERY_STOPWORDS
                   and word not in PHATIC and token not in _PHATIC_STEMS)
        out.append((token, NONE if not content else UNCOMMON if common and not _known(word, common) else COMMON))
    _function_words(out, cjk_run)
    return _unjudged_unless_english(out, text, common)


def _known(word: str, common: frozenset) -> bool:
    """A common word, or a plural or third person of one ("backups", "replicas", "retries")."""
    if word in common:
        return True
    for suffix, back in (("ies", "y"), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) > len(suffix) + 2 and word[: -len(suffix)] + back in common:
            return True
    return False


def _unjudged_unless_english(seq: list[tuple[str, int]], text: str, common: frozenset) -> list[tuple[str, int]]:
    """`seq`, with no word of content when the text (addresses removed) is Latin-script prose but not
    English (ENGLISH_SHARE, ENGLISH_GLUE). Its function words ("il faut que le", "danach müssen wir")
    are no English stop words, so its stock phrases would pass for a memory's own: such a text is not
    judged (a use missed, never one made up). Its CJK characters stay as they are."""
    words = [w.lower() for w in re.findall(r"[^\W\d_]+", text) if not _CJK.search(w)]
    if not words or not common:
        return seq
    long_words = [w for w in words if len(w) >= 4]
    known = sum(1 for w in long_words if _known(w, common)) >= ENGLISH_SHARE * len(long_words)
    glue = sum(1 for w in words if w in QUERY_STOPWORDS) >= ENGLISH_GLUE * len(words)  # "the", "with", "and"
    if known or glue:
        return seq
    return [(t, c if _CJK.match(t) else NONE) for t, c in seq]


def _function_words(out: list, run: list[int]) -> None:
    """Mark the characters of the function words of a CJK run (positions `run` in `out`) as no content."""
    for i, j in zip(run, run[1:]):
        if out[i][0] + out[j][0] in CJK_FUNCTION_WORDS:
            out[i], out[j] = (out[i][0], NONE), (out[j][0], NONE)


def unit_sequences(title: str, text: str) -> list[list[tuple[str, int]]]:
    """A memory as the token sequences of its parts: paragraphs (blank-line separated) of at least
    UNIT_MIN_TOKENS tokens, the title read with the first, long ones cut in parts of UNIT_MAX_TOKENS.
    A reply that used a long note used a part of it: the part is what it is judged against."""
    units: list[list] = []
    held = token_sequence(title)
    for paragraph in re.split(r"\n\s*\n", text or ""):
        held += token_sequence(paragraph)
        if len(held) >= UNIT_MIN_TOKENS:
            units.append(held)
            held = []
    if held and units:
        units[-1].extend(held)  # a short last paragraph is read with the one before
    elif held:
        units.append(held)
    out = []
    for unit in units:
        step = UNIT_MAX_TOKENS - 30
        out += [unit[i:i + UNIT_MAX_TOKENS] for i in range(0, max(1, len(unit) - 30), step)]
    return out
