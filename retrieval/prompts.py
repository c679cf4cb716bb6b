"""What a prompt gives the hook to work with: whether it names a topic at all, and the part of a note it asks about."""
from __future__ import annotations

import re

from memstrata.retrieval import lexical

# Words that greet, thank, acknowledge or move a conversation on: a prompt made of these (and
# of question and stop words) asks about nothing, whatever a tree holds ("hello" matches a
# syntax note's "Hello world", "thanks!" a credits page). Topic words are never here: small talk
# that names a subject ("how was the offsite?") is left to the relevance cut-off.
PHATIC = frozenset("""
hello hallo hi hiya hey heya howdy yo greetings morning afternoon evening night gm
good great nice cool awesome perfect excellent fine lovely wonderful brilliant super fantastic amazing glad
thanks thank thx ty tnx cheers appreciate appreciated appreciation welcome please pls plz
ok okay k kk sure yep yeah yup ya yes nope nah alright right correct agreed agree true indeed exactly
continue continuing go going ahead proceed next carry keep on onwards done finished ready
lol haha hah hehe wow oh ah hmm hm um uh er oops sorry bye goodbye later see soon np worries problem
sounds makes sense got understood understand noted clear fair enough well doing today day lgtm tysm brb ttyl
mate buddy dude pal folks guys help helps helped helpful okie dokie neat
""".split())

# Small talk asks about the hour, the day or the weather, and nothing a memory holds: these count
# as no topic only when nothing else in the prompt does ("how was your weekend?"; "what did we
# plan for the weekend?" keeps "plan"), as do a few phatic phrases whose words alone could be topics.
SMALL_TALK = frozenset("weekend weekends tonight tomorrow weather".split())
PHATIC_PHRASES = re.compile(r"\b(?:my bad|let me think|let me see|never mind|nevermind|(?:great|good|nice) job|i'?m back|no worries"
                            r"|take care|(?:talk to|catch) you (?:later|soon)|see ya|thanks? (?:you )?a lot|nice one"
                            r"|what a (?:day|week)|hope you'?re (?:doing )?well)\b", re.I)

# The same in Chinese (matched as phrases, longest first, like the question words).
CJK_PHATIC = ("你好", "您好", "大家好", "早上好", "下午好", "晚上好", "早安", "晚安", "再见", "拜拜", "谢谢", "多谢",
              "感谢", "辛苦了", "辛苦", "不客气", "没问题", "好的", "好吧", "好", "嗯", "哦", "哈哈", "继续", "可以",
              "行", "收到", "明白了", "明白", "知道了", "对", "是的", "没事", "加油",
              # small talk (the day, the weekend, the weather) and the particles left around it
              "今天", "明天", "今晚", "周末", "天气", "怎么样", "过得", "你", "非常", "不用", "了", "啊", "呀", "吧", "呢", "嘛", "哈", "啦", "嘞", "早", "谢")
_CJK_PHATIC = re.compile("|".join(sorted(map(re.escape, CJK_PHATIC), key=len, reverse=True)))


def has_topic(prompt: str) -> bool:
    """Whether a prompt names anything a memory could be about: a word that is neither a stop,
    question nor phatic word, or CJK text left once question words and phatic phrases are cut."""
    for w in lexical.words(PHATIC_PHRASES.sub(" ", prompt)):
        lw = w.lower().replace("’", "'")
        lw = lw[:-2] if lw.endswith("'s") else lw
        if lw and lw not in SMALL_TALK and lw not in lexical.QUERY_STOPWORDS and lw not in PHATIC:
            return True
    return lexical.has_cjk(lexical.cjk_without_questions(_CJK_PHATIC.sub(" ", lexical.cjk_text(prompt))))


# Everyday prompts the hook answers with nothing (bench/everyday.py's FIT list: greetings, thanks,
# "ok", "continue", small talk, in English and Chinese). A prompt that names a topic by its words
# but reads like one of these to the model ("take care", "talk to you later") is small talk too.
EVERYDAY = tuple("""hello|hi there|hey!|good morning|good evening :)|thanks!|thank you so much|thanks, that helps|cheers mate
ok|okay|ok sounds good|got it|sure, go ahead|yes please|no thanks|continue|please continue|keep going|go on|next|lol
haha nice|awesome, great job|perfect|how are you?|how's it going?|what's up?|how was your weekend?|nice weather today
have a good day|see you tomorrow|bye|I'm back|sorry, my bad|never mind|hmm, let me think|that makes sense|你好|您好！
谢谢|非常感谢！|好的|好的，继续|继续|嗯嗯|收到|没问题|早上好|哈哈哈|辛苦了|再见|你今天怎么样？|周末过得好吗？|明白了，谢谢|不用了""".replace(
    "\n", "|").split("|"))
# The cosine (bundled model) to the nearest of EVERYDAY from which an English prompt is small talk:
# bench/fit_relevance.py; no answerable question of the benchmarks comes above 0.39, and half of
# EVERYDAY is above it to another of the list. Mostly Chinese prompts are left to the words (the
# bundled model is English: any two Chinese texts look alike to it).
EVERYDAY_COSINE = 0.5


def is_everyday(prompt: str, embedder=None) -> bool:
    """Whether a prompt is everyday talk the hook answers with nothing: it names no topic
    (`has_topic`), or, with an `embedder`, an English prompt is as close to one of EVERYDAY."""
    if not has_topic(prompt):
        return True
    if embedder is None or lexical.cjk_share(prompt) >= 0.5:
        return False
    return everyday_cosine(prompt, embedder) >= EVERYDAY_COSINE


def everyday_cosine(prompt: str, embedder) -> float:
    """The prompt's cosine to the nearest of EVERYDAY (their vectors are kept on the embedder)."""
    import numpy as np

    vectors = embedder.__dict__.get("_everyday_vectors")
    if vectors is None:
        vectors = embedder.__dict__.setdefault("_everyday_vectors", np.asarray(embedder.embed(list(EVERYDAY))))
    return float(np.max(vectors @ np.asarray(embedder.embed_query(prompt))))


_HEADING = re.compile(r"^ {0,3}#{1,6}\s+\S")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def parts(body: str) -> list[str]:
    """A note's parts: its sections (a Markdown heading and what follows it up to the next one;
    a '#' line inside a code fence is no heading), or its paragraphs when it has no heading. A
    heading with no text of its own ("## Setup" right above "### Linux") heads the next section:
    a part always carries text, never a bare heading."""
    sections, current, fenced = [], [], False
    for line in (body or "").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and _HEADING.match(line) and any(x.strip() and not _HEADING.match(x) for x in current):
            sections.append("\n".join(current).strip())
            current = []
        current.append(line)
    if any(x.strip() and not _HEADING.match(x) for x in current) or not sections:
        sections.append("\n".join(current).strip())
    elif any(x.strip() for x in current):  # headings closing the note, with no text under them
        sections[-1] += "\n\n" + "\n".join(current).strip()
    if len(sections) > 1:
        return sections
    return [p.strip() for p in re.split(r"\n\s*\n", body or "") if p.strip()] or [body or ""]


def relevant_part(body: str, prompt: str, snippet: str | None = None) -> str:
    """The part of a note (`parts`) a prompt asks about: the one holding the most of the prompt's
    topic words and CJK bigrams (the one holding recall's snippet, the hit's best sentence, on a
    tie); the first part (a note's opening usually defines it) when none holds any. A pasted
    image's base64 payload is left out (chunking.without_inline_data): it would fill the budget."""
    from memstrata.retrieval.chunking import without_inline_data

    units = parts(without_inline_data(body))
    if len(units) == 1:
        return units[0]
    terms = {lexical.stem(t) for t in lexical.query_terms(prompt)}
    grams = lexical.cjk_bigrams(lexical.cjk_topic(prompt))
    best, best_score = 0, 0.0
    for n, unit in enumerate(units):
        held = {lexical.stem(w) for w in lexical.words(unit)}
        score = len(terms & held) + sum(1 for g in grams if g in unit)
        if snippet and snippet.strip() and snippet.strip() in unit:
            score += 0.5
        if score > best_score:
            best, best_score = n, score
    return units[best]
