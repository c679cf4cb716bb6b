"""What a text says it left behind ("moved from Dracula to ...", "MySQL is retired"): pure text rules."""
# English and Chinese: "moved from Dracula to Solarized Light", "MySQL is retired", "left AWS for
# Hetzner", "从 PostgreSQL 迁到了 TiDB". A write under another title that names a value an entry of its
# category states, and says that value was left, is about that entry's subject (scoring.conflicts, rule
# "departed"): the "slot" both texts fill is the same, whatever the titles. Only what the text marks as
# left counts: a value merely named again ("CI stays on GitHub Actions") is no evidence of a change.
from __future__ import annotations

import re
import unicodedata

# A value as written: a word with the joiners names use (iTerm2, start/stop/continue, Node.js, C#, 9:30).
_TOKEN = re.compile(r"[^\W_][\w+#]*(?:[./:'’-][\w+#]+)*")
# Words that end a value after "from" / "left" ... or start the clause after it.
_END = frozenset("""to for in on at by with because since after before and or but so as into onto over via
now then last this next when while due was is are were has have had be been being it they we which that
than of from until till instead""".split())
# Words before a value that are not part of it.
_LEAD = frozenset("the a an our its their his her my your all old previous former legacy existing current "
                  "some any whole entire".split())
_MAX_TOKENS = 4
SCAN_CHARS = 4000   # a change is said near the top of a note: only this much of a body is read for one

_VERB = (r"(?:switch(?:ed|es|ing)?|mov(?:ed|es|ing)|migrat(?:ed|es|ing)|chang(?:ed|es|ing)"
         r"|convert(?:ed|s|ing)?|port(?:ed|s|ing)?|rewr(?:ote|itten|ites)|transferr?(?:ed|s|ing)?"
         r"|replac(?:ed|es|ing)|upgrad(?:ed|es|ing)|downgrad(?:ed|es|ing)|swapp?(?:ed|s|ing)?)")
# The text after "from" / "left" ... up to the end of its clause; a dot inside a word ("Node.js",
# "Python 3.10": a lower-case letter or a digit after it) is no end of it ("AWS." "Jenkins.GitHub" are)
_VALUE_TEXT = r"(?:[^.;!?\n]|\.(?=(?-i:[a-z0-9]))){1,120}"
# "… moved from X (to|for …)", "away from X" (a bare "from 9 to 17" is a range, "from Kafka to S3" a flow)
_FROM = re.compile(rf"\b(?:{_VERB}\b[^.;!?\n]{{0,80}}?\bfrom|away from)\s+(?P<x>{_VALUE_TEXT})", re.I)
# "left X", "dropped X", "replaced X with", "instead of X", "no longer uses X", "moved off X"
_AFTER = re.compile(r"(?<!\bthe )\b(?:left|leaving|dropp(?:ed|ing)|replac(?:ed|ing)|retir(?:ed|ing)|ditch(?:ed|ing)"
                    r"|abandon(?:ed|ing)|deprecat(?:ed|ing)|decommission(?:ed|ing)|uninstall(?:ed|ing)|quit"
                    r"|gave up(?: on)?|giv(?:e|es|ing) up(?: on)?|stopp(?:ed|ing) using|stop using|no longer us(?:e|es|ed|ing)"
                    r"|(?:moved|migrated|switched) off|instead of|in place of)\s+(?P<x>" + _VALUE_TEXT + ")", re.I)
# "X is retired", "X was replaced by Y", "X is being shut down" (X: the clause before; found by what follows it)
_BEFORE = re.compile(r"\s(?:is|was|were|are|has been|have been|got|gets|is being|was being)\s+"
                     r"(?:now\s+|also\s+)?(?:retired|gone|dropped|replaced|deprecated|decommissioned|switched off"
                     r"|shut down|turned off|read-only|no longer used|removed|abandoned|phased out|sunset)\b", re.I)
_ARROW = re.compile(r"(?:→|->|=>)\s*\S")
_CLAUSE_END = re.compile(r"[.;!?,\n，。；！？]")
# A change denied before it is said: "we never moved from MySQL", "没有从 MySQL 迁走"
_NEGATED = re.compile(r"\b(?:not|never|cannot)\b|n't\b", re.I)
# ... or one only thought of, the hedge governing the change ("we might switch from Slack", "considered
# moving from AWS", "decided against replacing RabbitMQ", "refuses to give up Dracula", "if we move
# away from X"): at most two words between them, and none that starts what was done ("we considered
# alternatives and moved", "could finally move"). A decision ("we will use Vite instead of webpack",
# "should use 1Password instead of LastPass") and a hedge further back ("since it would crash daily we
# moved from ...") are changes.
_UNDONE = re.compile(r"\b(?:might|could|would|maybe|perhaps|consider(?:s|ed|ing)?|(?:plan|plans|planned|planning|"
                     r"hope|hopes|hoping|intend|intends|refuse|refuses|refused|refusing|propose|proposes|proposed)"
                     r" to|(?:decided|voted|argued|decide|vote) against|(?:think|thinks|thinking|thought) (?:about|of)"
                     r"|if|whether|unless|in case)(?:\s+(?!(?:and|then|so|finally|now|already|eventually|at)\b)[\w'’-]+){0,2}"
                     r"\s*$", re.I)
# ... or after it, in the change's own clause ("Leaving AWS for Hetzner would save 40%", "moving from AWS
# is being considered"; not "..., which could save us 40%", "so I could write"); a question asks, it does
# not say ("Maybe switch from AWS to Hetzner?", not "Left Slack for Discord; thoughts?")
_UNDONE_AFTER = re.compile(r"\b(?:would|could|might|is being considered|are being considered|is planned|is proposed)\b",
                           re.I)
# A value the write also says is kept by something ("billing stays on PostgreSQL", "PostgreSQL remains
# for billing", "计费仍然用 PostgreSQL"): the value then, not its subject, was left by one thing only
_STAY_BEFORE = r"(?:stay(?:s|ed|ing)?|remain(?:s|ed|ing)?|continu(?:e|es|ed|ing)|still (?:runs?|is|are|lives?|sits?))" \
               r"\s+(?:on|in|with|at)\s+(?:the\s+)?|still (?:on|in|uses?|using)\s+(?:the\s+)?|keeps? using\s+(?:the\s+)?"
_STAYS_ON = re.compile(rf"\b(?:{_STAY_BEFORE})|(?:仍然?|还是|继续|保持)(?:用|使用|在|跑在|留在)?\s*")
_STAYS_AFTER = re.compile(r"(?<!\s)\s+(?:stays|remains|is kept|stays in place|continues|is unchanged|is untouched"
                          r"|(?:does not|doesn't|won't|will not) change)\b")
_LEFTOVER = re.compile(r"\b(?:archived?|read-only|readonly|backups?|until|for now|legacy|old|former)\b|只读|归档|备份|保留")
_CAME_FROM = frozenset("from for of in to with on at by about".split())
_ABBREVIATION = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]?")
_OWN_CLAUSE = re.compile(r"[,(]|\s[-–—]\s|\b(?:which|so|because|since|but|as|and|while|though|although|until)\b", re.I)
_ZH_NEGATED = re.compile(r"[没未不]有?$|并未$|从未$")
_ZH_UNDONE = re.compile(r"(?:考虑(?!后|过)|打算|(?<!按照)(?<!按)(?<!原)计划|可能|也许|如果|是否|要不要|想要)\S{0,2}$")

# Chinese: 从 X 迁到/换成/改用 …, 把 X 换成 …, 不再用 X, 弃用 X, X 已下线
_ZH_VERB = "迁换改搬转切移升降替"
_ZH_FROM = re.compile(rf"(?:从(?!来)|由(?!于))(?P<x>[^，。；！？,.;!?\n]{{1,24}}?)(?:全部|都|已经|已|也|又|整体|统一)?[{_ZH_VERB}]")
_ZH_AFTER = re.compile(r"(?:不再(?!直连|直接|仅|只)(?:用|使用|采用)?|弃用|放弃|停用|淘汰|替换掉|取代|告别|离开|改掉)(?P<x>[^，。；！？,.;!?\n]{1,24})")
_ZH_BEFORE = re.compile(r"(?:已经|已|被)?(?:下线|停用|弃用|淘汰|退役|只读|废弃|被替换|被取代)")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_ZH_TRIM = "的了把将用在里上中 \t"


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text or "").casefold()


def _lead_tokens(text: str, from_end: bool = False) -> tuple[str, ...]:
    """The value at the start (or the end) of a clause: up to _MAX_TOKENS words, without the words
    that only introduce it ("the old MySQL" -> mysql) and up to the first word that ends it."""
    toks = _TOKEN.findall(_fold(text))
    if from_end:
        out: list[str] = []
        for t in reversed(toks):
            if t in _END or len(out) == _MAX_TOKENS:
                break
            out.insert(0, t)
        while out and out[0] in _LEAD:
            out.pop(0)
        return tuple(out)
    while toks and toks[0] in _LEAD:
        toks.pop(0)
    out = []
    for t in toks:
        if t in _END or len(out) == _MAX_TOKENS:
            break
        out.append(t)
    return tuple(out)


def departed(text: str) -> list[tuple[str, ...]]:
    """The values a text says were left: each a tuple of words (English, case-folded) or one CJK
    string (Chinese), in order of appearance, without repeats. Only the first SCAN_CHARS are read."""
    text = unicodedata.normalize("NFKC", (text or "")[:SCAN_CHARS])
    found: list[tuple[str, ...]] = []
    for pattern in (_FROM, _AFTER):
        for m in pattern.finditer(text):
            before = _clause_before(text, m.start(), 40)
            own = _OWN_CLAUSE.split(m.group("x"), 1)[0]
            if _NEGATED.search(before) or _UNDONE.search(before) or _UNDONE_AFTER.search(own) \
                    or _asked(text, m.start("x")) or (pattern is _AFTER and _renewed(m.group(0), own)):
                continue
            found.append(_lead_tokens(m.group("x")))
    for pattern in (_BEFORE, _ARROW):
        for m in pattern.finditer(text):
            before = _clause_before(text, m.start(), 120)
            if pattern is _BEFORE and _renewed(m.group(0), before + " " + _OWN_CLAUSE.split(
                    _CLAUSE_END.split(text[m.end():m.end() + 60], 1)[0], 1)[0]):
                continue
            found.append(_lead_tokens(before, from_end=True))
    for pattern in (_ZH_FROM, _ZH_AFTER, _ZH_BEFORE):
        for m in pattern.finditer(text):
            if pattern is _ZH_FROM and _ZH_NEGATED.search(_clause_before(text, m.start(), 4)):
                continue
            if _ZH_UNDONE.search(_clause_before(text, m.start(), 8)):
                continue
            x = _clause_before(text, m.start(), 24) if pattern is _ZH_BEFORE else m.group("x")
            x = x.strip(_ZH_TRIM)
            latin = [t for t in _TOKEN.findall(_fold(x)) if not _CJK.search(t)]
            if latin:  # a name in Latin letters among Chinese words: "旧的 MySQL 已下线" -> mysql
                found.append(tuple(latin[-_MAX_TOKENS:] if pattern is _ZH_BEFORE else latin[:_MAX_TOKENS]))
            elif len(x := _fold(x).replace(" ", "")) >= 2:
                found.append((x,))
    out: list[tuple[str, ...]] = []
    for value in found:
        value = tuple(w for w in value if not _ABBREVIATION.fullmatch(w))  # "e.g", "i.e", "u.s": no value
        if value and value not in out:
            out.append(value)
    return out


def _renewed(said: str, text: str) -> bool:
    """Whether a "replaced" (the words that found the value, `said`) renews a thing rather than leaves
    a value: a common noun with an article ("Replaced the toner.", "The battery was replaced.") and no
    other thing in its place, or replaced "with a new one". A name ("We replaced MySQL last month",
    "The MySQL database was replaced") or a replacement ("the queue with Kafka", "by Tailscale",
    "webpack for Vite", "in favour of", "my MacBook with a new ThinkPad") is a value left. `text`: the
    value's own clause (for "was replaced": the clause before it, then its own)."""
    if not re.match(r"\s*(?:replac|(?:is|was|were|are|has been|have been|got|gets|is being|was being)\s+"
                    r"(?:now\s+|also\s+)?replaced)", said, re.I):
        return False
    if re.search(r"\bwith (?:a |an )?(?:new|fresh|spare|another|second)(?: ones?)?\s*$", text, re.I):
        return True
    if re.search(r"\b(?:with|by|for|in favou?r of)\s+(?!the end\b|now\b)\S", text, re.I):
        return False
    # "the toner", "my battery": a thing; "the MySQL database", "my MacBook Pro": a name, a value
    return bool(re.match(r"\s*(?:the|a|an|my|our|their|its|his|her|your|this|that)\s+(?-i:[a-z])", text, re.I))


def _asked(text: str, start: int) -> bool:
    """Whether the clause a change is said in (from its value at `start`) ends with a question mark
    ("Maybe switch from AWS to Hetzner?"; not "Left Slack for Discord; thoughts?")."""
    stop = re.search(r"[.!?;(\n。！？；]|\s[-–—]\s", text[start:])
    return bool(stop) and stop.group() in "?？"


def _clause_before(text: str, end: int, most: int) -> str:
    """The text before `end` back to the start of its clause, at most `most` characters."""
    piece = text[max(0, end - most):end]
    cut = None
    for cut in _CLAUSE_END.finditer(piece):
        pass
    return piece[cut.end():] if cut else piece


def _words(text: str) -> set[str]:
    return set(_TOKEN.findall(_fold(text)))


def _in_titles(word: str, title_words: set[str]) -> bool:
    """A word of a title, or the same stem (Postgres / PostgreSQL, dotfile / dotfiles)."""
    return any(_stem_match(word, t) for t in title_words)


def left_value(new_title: str, new_body: str, old_title: str, old_body: str) -> str | None:
    """The value the new text says was left that the old text states (not a word of either title:
    a title names the subject, not its value), as written in the new text; None if there is none.

    English: every word of the value is a word of the old body ("the old MySQL" matches "MySQL 8").
    Chinese: the value is part of the old body and of neither title."""
    titles = _words(f"{new_title} {old_title}")
    old_words = _words(old_body)
    old_cjk = _fold(old_body).replace(" ", "")
    titles_cjk = _fold(f"{new_title}\n{old_title}").replace(" ", "")
    values = departed(new_body)
    kept = _kept_values(new_body, values)
    for value in values:
        if value in kept:
            continue
        if len(value) == 1 and _CJK.search(value[0]):
            if value[0] in old_cjk and value[0] not in titles_cjk:
                return value[0]  # Chinese is not case-folded: as written
            continue
        if all(w in old_words for w in value) and any(not _in_titles(w, titles) for w in value):
            return _as_written(new_body, value)
    return None


def _kept_values(text: str, values: list[tuple[str, ...]]) -> set[tuple[str, ...]]:
    """Those of `values` the text says something stays on ("billing stays on PostgreSQL", "still uses
    bash for scripts", "PostgreSQL remains", "计费仍然用 PostgreSQL"): the whole value is what stays, not a
    word of a longer name ("still using Vim keybindings"), not what something came from ("exported from
    Slack stays in Drive"), and not a leftover ("old tickets stay in Jira as a read-only archive").
    One pass over the text: the values after each staying and before each "remains", as sets."""
    folded = _fold((text or "")[:SCAN_CHARS])
    stayed: set = set()
    for m in _STAYS_ON.finditer(folded):
        clause = _OWN_CLAUSE.split(_CLAUSE_END.split(folded[m.end():m.end() + 120], 1)[0], 1)[0]
        if _LEFTOVER.search(_clause_before(folded, m.start(), 80) + " " + clause):
            continue
        words = _TOKEN.findall(clause)[:_MAX_TOKENS + 1]
        stayed.update(tuple(words[:n]) for n in range(1, len(words) + 1) if n == len(words) or words[n] in _END)
        after = folded[m.end():m.end() + 24].lstrip()
        if _CJK.match(after):  # a Chinese value, as written
            stayed.update((after[:n],) for n in range(2, len(after) + 1))
    for m in _STAYS_AFTER.finditer(folded):
        clause = _clause_before(folded, m.start(), 120)
        if _LEFTOVER.search(clause + " " + _CLAUSE_END.split(folded[m.end():m.end() + 80], 1)[0]):
            continue
        words = _TOKEN.findall(clause)[-(_MAX_TOKENS + 1):]
        stayed.update(tuple(words[-n:]) for n in range(1, len(words) + 1)
                      if n == len(words) or words[-n - 1] not in _CAME_FROM)
    return {value for value in values if value in stayed}


def keeps_subject(old_title: str, new_title: str, new_body: str) -> bool:
    """Whether a write says the entry's subject stays as it was: every word of the entry's title that
    the write names (its own title aside) is said to stay ("Terminal colors: moved from Dracula to
    Gruvbox in the terminal only, the editor stays as it is" is not about "Editor theme"; "the editor
    stays VS Code, the theme is now Solarized" still is: it names "theme" and says nothing stays of it);
    or the whole title is said to stay ("the editor theme stays Solarized Light")."""
    own = _words(new_title)
    whole = tuple(w for w in _TOKEN.findall(_fold(old_title)) if w not in _LEAD)
    if len(whole) > 1 and _kept_values(new_body, [whole]):
        return True  # "the editor theme stays Solarized Light"
    subject = [w for w in whole if w not in _END and not _in_titles(w, own)]
    named = [w for w in dict.fromkeys(subject) if w in _words((new_body or "")[:SCAN_CHARS])]
    return bool(named) and len(_kept_values(new_body, [(w,) for w in named])) == len(named)


def _as_written(text: str, value: tuple[str, ...]) -> str:
    """The words of a value as the text spells them ("Dracula", not "dracula")."""
    tokens = _TOKEN.findall(unicodedata.normalize("NFKC", (text or "")[:SCAN_CHARS]))
    folded = [_fold(t) for t in tokens]
    for i in range(len(tokens) - len(value) + 1):
        if tuple(folded[i:i + len(value)]) == value:
            return " ".join(tokens[i:i + len(value)])
    return " ".join(value)


def _stem_match(a: str, b: str) -> bool:
    """The same word or stem: equal, one a beginning of the other of at least 5 letters ("retro" /
    "retrospectives", "postgres" / "postgresql"), or a shared beginning of at least 4 letters with
    endings of up to 3 ("alerts" / "alerting", "app" / "apps", not "data" / "database"). An ending
    with a digit makes a name, not a form of the word: "auth0" is not "auth", "k8s" not "k"."""
    if a == b:
        return True
    if any(ch.isdigit() for ch in a + b):
        return False
    if min(len(a), len(b)) >= 5 and (a.startswith(b) or b.startswith(a)):
        return True
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n >= 3 and len(a) - n <= 3 and len(b) - n <= 3 and max(len(a), len(b)) - n < n


def _topics(title: str, body: str) -> tuple[list[str], list[str]]:
    """What a text says it is about: the words of its title that its body uses as common nouns
    (lower case, or an acronym such as CDN; not inside a name such as "Hetzner Cloud"), and for
    Chinese the character pairs of its title that its body has (the first SCAN_CHARS of the body)."""
    body = unicodedata.normalize("NFKC", (body or "")[:SCAN_CHARS])
    title_words = _words(title)
    words: list[str] = []
    starts = {m.end() for m in re.finditer(r"(?:^|[.!?;:])\s*", body)}  # where a sentence opens
    for m in _TOKEN.finditer(body):
        word, folded = m.group(), _fold(m.group())
        if _CJK.search(folded) or len(folded) < 3 or not any(_stem_match(folded, t) for t in title_words):
            continue
        if word[0].isupper() and not word.isupper() and m.start() not in starts:
            continue  # a name ("Hetzner Cloud", "Apple Music"), not what the text is about
        if folded not in words:
            words.append(folded)
    body_cjk = _fold(body).replace(" ", "")
    title_cjk = "".join(ch for ch in _fold(title) if not ch.isspace())
    pairs = [title_cjk[i:i + 2] for i in range(len(title_cjk) - 1)
             if _CJK.match(title_cjk[i]) and _CJK.match(title_cjk[i + 1]) and title_cjk[i:i + 2] in body_cjk]
    return words, pairs


def unshared_topic(title_a: str, body_a: str, title_b: str, body_b: str) -> str | None:
    """A thing text A says it is about that text B never names, or None. "CDN: we moved the CDN from
    AWS to Cloudflare" is about the CDN, which "Primary cloud: workloads run on AWS" never names;
    "Standup: standup is at 9:30 on Zoom" is about the standup, which "Video tool: calls moved from
    Zoom to Google Meet" never names. Either way the two are not one subject, whatever value they share."""
    words, pairs = _topics(title_a, body_a)
    other_text = _fold(f"{title_b}\n{body_b}")
    other = _words(other_text)
    for word in words:
        if not any(_stem_match(word, w) for w in other):
            return word
    other_cjk = other_text.replace(" ", "")
    return next((pair for pair in pairs if pair not in other_cjk), None)


def same_slot(new_title: str, new_body: str, old_title: str, old_body: str) -> str | None:
    """The value the new write says was left, when it is what the old entry states and neither text
    is about a thing the other never names (left_value, unshared_topic both ways); else None."""
    value = left_value(new_title, new_body, old_title, old_body)
    if value is None or unshared_topic(new_title, new_body, old_title, old_body) \
            or unshared_topic(old_title, old_body, new_title, new_body):
        return None
    return value

