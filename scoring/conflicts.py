"""Write-time decisions: duplicate, a new version of the same subject, near-duplicate or new."""
# The source documents' rule: before a write, the entries of the same category whose title (or
# tags) match are the same subject; a write about that subject does not make a second entry, it
# becomes the next version of the existing one (the old text kept, the user told). Under another title,
# a write that says it left a value the nearest entry states ("moved from Dracula to ...") is about
# that entry's subject too (scoring.departed). Everything here
# is a function of the texts, the tags and the similarities the caller measured: no IO, no clock.
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable

from memstrata.scoring.departed import departed, keeps_subject, same_slot
from memstrata.storage.config import Settings
from memstrata.storage.entry import Entry

WRITE_KINDS = ("duplicate", "conflict", "near_duplicate", "new")
# Why a write is the same subject as an entry (WriteDecision.rule)
RULES = ("title", "alias", "tags", "departed")

_EMPHASIS_RUNS = re.compile(r"(\*\*|__|~~|`+)")
# A single * or _ that opens or closes emphasis (not one inside a word such as snake_case).
_EMPHASIS_EDGE = re.compile(r"(?<!\w)[*_]+|[*_]+(?!\w)")
_SPACE = re.compile(r"\s+")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_WORDS = re.compile(r"[^\W_]+")
# A mostly-CJK text's similarity from the bundled (English) model says little: two Chinese notes on
# different things score 0.8-0.99. Such texts are compared by their character pairs as well.
CJK_TEXT_SHARE = 0.5
CJK_NEAR_DUPLICATE_DICE = 0.5   # character-pair overlap (Dice) a mostly-CJK near-duplicate also needs
REFINES_KEEPS = 0.9             # a new text that keeps this share of the old one's words only adds to it


@dataclass(frozen=True)
class Candidate:
    """An entry of the category a write may repeat or be about, with what the caller measured.

    similarity: cosine of the embeddings of title + body (None: unknown, no model);
    record: an entry a write never becomes a version of: a daily note (appended to by date), a
            section of the agent memory file being imported (each section is its own entry);
    aliases: the entry's other names (a note's frontmatter `aliases:`, retrieval.names.aliases).
    """

    entry: Entry
    similarity: float | None = None
    record: bool = False
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class WriteDecision:
    """What to do with a new write: kind is duplicate | conflict | near_duplicate | new.

    target_id and similarity name the existing entry concerned (None for "new"); reason is one
    line for the user; rule says why a conflict is the same subject (title, alias, tags or
    departed); refines is true when the new text keeps the old one's words and adds to them;
    left is the value the new text says was left and the entry states (rule departed, or tags
    with a low similarity), as the new text writes it.
    """

    kind: str
    target_id: str | None
    similarity: float | None
    reason: str
    rule: str | None = None
    refines: bool = False
    left: str | None = None


def normalise_text(text: str | None) -> str:
    """Text for equality checks: NFKC, case-folded, Markdown emphasis stripped,
    whitespace collapsed, trailing punctuation removed."""
    out = _folded(text)
    end = len(out)
    while end > 0 and (unicodedata.category(out[end - 1]).startswith("P") or out[end - 1].isspace()):
        end -= 1
    return out[:end]


def _folded(text: str | None) -> str:
    """NFKC, case-folded, Markdown emphasis stripped, whitespace collapsed."""
    if not text:
        return ""
    out = unicodedata.normalize("NFKC", text).casefold()
    out = _EMPHASIS_RUNS.sub("", out)
    out = _EMPHASIS_EDGE.sub("", out)
    return _SPACE.sub(" ", out).strip()


def title_key(title: str | None) -> str:
    """A title as a subject: "Editor theme", "editor  theme:", "Editor-Theme" and "**Editor theme**"
    are one subject. NFKC, case-folded, emphasis dropped, then only letters, digits, marks and symbols
    kept (no spaces, no punctuation, no variation selector or skin-tone modifier: "Deploy ⚠️" is
    "Deploy ⚠"; an emoji is a symbol: "Holidays 🇫🇷" is not "Holidays 🇩🇪"); '#' stays, and whatever
    parts two digits stays as one mark, so "C#" is not "C", "Node 1.2" not "Node 12", "Meeting 1/12"
    not "Meeting 11/2", while "Budget 2024/25" is "Budget 2024-25". A title of punctuation alone has
    no key ("")."""
    text = _folded(title)
    out, i = [], 0
    while i < len(text):
        ch, kind = text[i], unicodedata.category(text[i])
        if ch == "#" or (kind[0] in "LNMS" and not _PRESENTATION.match(ch)):
            out.append(ch)
        elif kind[0] in "PZ" and i and text[i - 1].isdigit():
            end = i
            while end < len(text) and unicodedata.category(text[end])[0] in "PZ" and text[end] != "#":
                end += 1
            if end < len(text) and text[end].isdigit():
                out.append("\u00b7")  # what parts two digits, as one mark
            i = end
            continue
        i += 1
    return "".join(out)


# How a symbol is drawn, not what it is: variation selectors (emoji or text presentation, ideographic
# variants) and the skin-tone modifiers of emoji.
_PRESENTATION = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef\U0001f3fb-\U0001f3ff]")


def normalise_tags(tags: Iterable[str] | None) -> frozenset[str]:
    """A tag set for comparison: NFKC, case-folded, leading '#' dropped, empties removed."""
    result = set()
    for tag in tags or ():
        t = unicodedata.normalize("NFKC", str(tag)).casefold().strip().lstrip("#").strip()
        if t:
            result.add(t)
    return frozenset(result)


def numbers(title: str, body: str) -> tuple[list[str], list[str]]:
    """The numbers a text states, in order (title, body): near-duplicates must agree on them."""
    return _NUMBER.findall(title or ""), _NUMBER.findall(body or "")


def cjk_heavy(text: str) -> bool:
    """Whether at least half of a text's letters are CJK (the bundled model reads it poorly)."""
    letters = [ch for ch in text or "" if ch.isalnum()]
    return bool(letters) and sum(1 for ch in letters if _CJK.match(ch)) >= CJK_TEXT_SHARE * len(letters)


def pair_dice(a: str, b: str) -> float:
    """Overlap (Dice) of the character pairs of two texts' letters and digits (spaces ignored)."""
    def pairs(text: str) -> set[str]:
        s = "".join(ch for ch in normalise_text(text) if ch.isalnum())
        return {s[i:i + 2] for i in range(len(s) - 1)}

    x, y = pairs(a), pairs(b)
    return 2 * len(x & y) / (len(x) + len(y)) if x and y else 0.0


def refines(old_body: str, new_body: str) -> bool:
    """Whether the new text keeps (nearly) every word of the old one and says more: a refinement,
    not a change of mind. CJK text counts its characters. Not one that drops a number the old text
    states ("2 GB" -> "2.5 GB"), adds a negation ("no longer prefers", "不再") or a word of change
    ("raised to 4 GB", "moved to 10:30", "now", "以前 ... 现在"), or says a value the old text states
    was left ("..., Frankfurt is gone"): those change what the old text said."""
    def words(text: str) -> set[str]:
        found = set()
        for w in _WORDS.findall(normalise_text(text)):
            found.update(w) if _CJK.search(w) else found.add(w)
        return found

    old, new = words(old_body), words(new_body)
    if not (old and len(new) > len(old) and len(old & new) >= REFINES_KEEPS * len(old)):
        return False
    if set(_NUMBER.findall(old_body or "")) - set(_NUMBER.findall(new_body or "")):
        return False
    old_text, new_text = normalise_text(old_body), normalise_text(new_body)
    if any(turned.search(new_text) and not turned.search(old_text) for turned in (_NEGATION, _CHANGED)):
        return False
    old_words = set(_WORDS.findall(old_text))
    return not any(all(w in old_words for w in value) or any(_CJK.search(w) and w in old_text for w in value)
                   for value in departed(new_body))


# Words that turn a statement around ("no longer prefers", "not on Fridays", "不再用")
_NEGATION = re.compile(r"\b(?:not|no|never|none|nothing|nobody|neither|nor|anymore|longer|without)\b|n't\b"
                       r"|不再|不用|没有|不是|别再|取消")
# ... or say it changed ("raised to 4 GB", "moved to 10:30", "used to prefer", "postponed", "以前 ... 现在")
_CHANGED = re.compile(r"\b(?:raised|lowered|increased|decreased|reduced|bumped|moved|changed|switched|swapped"
                      r"|postponed|rescheduled|delayed|cancell?ed|replaced|used to|nope|instead|now)\b"
                      r"|以前|现在|改为|改成|换成|换到|推迟|延期|提高到|降低到|调整为")


def two_of_a_kind(title_a: str, body_a: str, title_b: str, body_b: str) -> bool:
    """Whether two titles name two things of one kind: they differ in one word each ("Staging
    database" / "Production database", "Alice's role" / "Jonas's role"), and each text names its own
    word and not the other's; or they are the same words numbered otherwise ("Sprint 3-4 goals" /
    "Sprint 5-6 goals", "Meeting 1/12" / "Meeting 2/12", "Q1 OKRs" / "Q2 OKRs"). Such entries share
    tags and words and are still two subjects."""
    def words(text: str) -> list[str]:
        return _WORDS.findall(normalise_text(text))

    def numbered(title: str) -> tuple[list[str], list[str]]:
        text = normalise_text(title)
        return _WORDS.findall(_NUMBER.sub(" ", text)), _NUMBER.findall(text)

    (na, nums_a), (nb, nums_b) = numbered(title_a), numbered(title_b)
    if nums_a and nums_b and nums_a != nums_b and na == nb:
        return True
    ta, tb = set(words(title_a)), set(words(title_b))
    only_a, only_b = ta - tb, tb - ta
    if len(only_a) != 1 or len(only_b) != 1 or not ta & tb:
        return False
    (a,), (b,) = only_a, only_b
    text_a, text_b = set(words(f"{title_a} {body_a}")), set(words(f"{title_b} {body_b}"))
    own_a, own_b = set(words(body_a)), set(words(body_b))
    return a in own_a and b in own_b and a not in text_b and b not in text_a




def classify_write(title: str, body: str, tags: Iterable[str] | None,
                   candidates: Iterable[Candidate | tuple[Entry, float | None]], settings: Settings) -> WriteDecision:
    """Classify a write against the entries of its category (expired ones are ignored).

    In order (the most similar candidate wins within a rule):
    1. duplicate: the same normalised body (an empty body also needs the same title): nothing written.
    2. conflict, rule "title" / "alias": the same subject by its name. An entry whose title (or one
       of whose aliases) has the write's title key is the subject, however the new text is worded;
       when several entries of the category share that title (a title used as a kind of note:
       imported turns, a vault's notes), the one at least `conflict_title_similarity` similar is,
       else none. A record (a daily note, an imported file's section) is never the subject of a write.
    3. conflict, rule "tags": another title, the same subject by matching tags and content: the same
       non-empty tag set, carried by no other entry of the category (a tag set several entries share
       is a kind of note, not a subject), titles that do not name two things of one kind
       (two_of_a_kind: "Staging database" / "Production database", "Sprint 3-4" / "Sprint 5-6"), and
       for the content either a value the write says was left that the entry states
       (scoring.departed.same_slot, any language) or a similarity of at least `conflict_similarity`
       (not for mostly-CJK text, whose similarity the bundled model cannot tell; not when the write
       says the entry's subject stays: scoring.departed.keeps_subject).
    4. conflict, rule "departed": another title, no tag set saying otherwise: the write says a value
       was left ("moved from Dracula to ...") that the nearest entry of the category states, neither
       text names a thing the other never does, the titles are not two of a kind, and the entry is
       at least `conflict_departed_similarity` similar (mostly-CJK text: nearest by character pairs,
       its title sharing one with the write's); _departed_target.
    5. near_duplicate: similarity >= `near_duplicate_threshold`, another title, the same numbers
       (a text that differs in its numbers says something else), and for mostly-CJK text the same
       character pairs as well (Dice >= CJK_NEAR_DUPLICATE_DICE): nothing written.
    6. new.
    A similarity only ever adds a conflict to the rule by name; it never removes one.
    """
    pool = [c if isinstance(c, Candidate) else Candidate(c[0], c[1]) for c in candidates]
    pool = [c for c in pool if c.entry.status != "expired"]
    pool.sort(key=lambda c: (-(c.similarity or 0.0), c.entry.id))
    n_body, n_tags, key = normalise_text(body), normalise_tags(tags), title_key(title)

    for c in pool:  # 1. the same text
        if normalise_text(c.entry.body) == n_body and (n_body or title_key(c.entry.title) == key):
            return WriteDecision("duplicate", c.entry.id, c.similarity, f"same content as {_name(c.entry)}")

    named = []  # 2. the same name
    for c in pool:
        own, other = title_key(c.entry.title), {title_key(a) for a in c.aliases} - {""}
        if key and not c.record and (own == key or key in other):
            named.append((c, "title" if own == key else "alias"))
    if len(named) == 1:
        return _conflict(named[0][0], named[0][1], body, "the same title" if named[0][1] == "title"
                         else "its alias as title")
    for c, rule in named:  # several: the title names a kind of note, the most similar is the subject
        if c.similarity is not None and c.similarity >= settings.conflict_title_similarity:
            return _conflict(c, rule, body, f"the same title, and the most similar of {len(named)} "
                                            f"({c.similarity:.2f})")

    cjk = cjk_heavy(f"{title}\n{body}")
    if n_tags:  # 3. matching tags and content
        tagged = [c for c in pool if not c.record and normalise_tags(c.entry.tags) == n_tags]
        if len(tagged) == 1 and not two_of_a_kind((c := tagged[0]).entry.title, c.entry.body, title, body):
            # a value the entry states and the write leaves says more than a word said to stay
            if value := same_slot(title, body, c.entry.title, c.entry.body):
                return _conflict(c, "tags", body, f"the same tags, and it leaves {value!r}, which it says", value)
            if (c.similarity is not None and c.similarity >= settings.conflict_similarity and not cjk
                    and not cjk_heavy(f"{c.entry.title}\n{c.entry.body}")
                    and not keeps_subject(c.entry.title, title, body)):
                return _conflict(c, "tags", body, f"the same tags and a similar subject ({c.similarity:.2f})")

    if (near := _departed_target(title, body, n_tags, pool, cjk, settings)) is not None:  # 4. the value it leaves
        c, value = near
        return _conflict(c, "departed", body, f"it leaves {value!r}, which the nearest entry says", value)

    new_numbers = numbers(title, body)
    for c in pool:  # 5. the same thing said again in other words
        e = c.entry
        if c.similarity is None or c.similarity < settings.near_duplicate_threshold or title_key(e.title) == key:
            continue
        if numbers(e.title, e.body) != new_numbers:
            continue
        if (cjk or cjk_heavy(f"{e.title}\n{e.body}")) and pair_dice(body, e.body) < CJK_NEAR_DUPLICATE_DICE:
            continue
        return WriteDecision("near_duplicate", e.id, c.similarity,
                             f"nearly the same as {_name(e)} (similarity {c.similarity:.2f})")

    return WriteDecision("new", None, None, "no matching entry")


def _departed_target(title: str, body: str, n_tags: frozenset, pool: list[Candidate], cjk: bool,
                     settings: Settings) -> tuple[Candidate, str] | None:
    """The entry a write under another title replaces a value of (rule "departed"), with the value.

    The write says a value was left ("moved from Dracula to Solarized Light", "MySQL is retired",
    "从 PostgreSQL 迁到了 TiDB") and the entry states it, neither text names a thing the other does not
    (scoring.departed.same_slot), the two titles do not name two of a kind, and the tags do not say
    otherwise (the same set, or none on one side). The entry must be the nearest of the category: by
    similarity (at least `conflict_departed_similarity`), or for mostly-CJK text, which the bundled
    model cannot read, by character pairs, with a character pair of the titles in common."""
    live = [c for c in pool if not c.record]
    if not live:
        return None
    if cjk:
        text = f"{title}\n{body}"
        c = max(live, key=lambda c: (pair_dice(text, f"{c.entry.title}\n{c.entry.body}"), c.entry.id))
        if pair_dice(title, c.entry.title) == 0.0:
            return None
    else:
        c = live[0]  # the pool is sorted by similarity
        if c.similarity is None or c.similarity < settings.conflict_departed_similarity \
                or cjk_heavy(f"{c.entry.title}\n{c.entry.body}"):
            return None
    tags = normalise_tags(c.entry.tags)
    if n_tags and tags and tags != n_tags:
        return None
    if two_of_a_kind(c.entry.title, c.entry.body, title, body):
        return None
    value = same_slot(title, body, c.entry.title, c.entry.body)
    return (c, value) if value else None


def _conflict(c: Candidate, rule: str, body: str, why: str, left: str | None = None) -> WriteDecision:
    return WriteDecision("conflict", c.entry.id, c.similarity, f"{why} as {_name(c.entry)}", rule=rule,
                         refines=refines(c.entry.body, body), left=left)


def _name(entry: Entry) -> str:
    return f'"{entry.title}" ({entry.id})'
