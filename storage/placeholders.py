"""Whether a key-shaped value is a documentation example: what random text is left once its markers are out."""
from __future__ import annotations

import re

# Tokens published as examples in providers' own documentation: AWS's access key and secret key
# samples, the jwt.io token, Stripe's documented test key. A list, not a pattern: these exact strings.
PUBLISHED_SAMPLES = frozenset((
    "AKIAIOSFODNN7EXAMPLE", "AKIAI44QH8DHBEXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
))

# A provider's fixed prefix is no randomness (`ghp_`, `sk-proj-`, `xoxb-`, `AKIA`, a webhook's URL).
_KEY_PREFIX = re.compile(
    r"^(?:sk-(?:proj-|svcacct-|admin-|ant-|None-)?|(?:sk|rk)_(?:live|test)_|gh[pousr]_|github_pat_|"
    r"gl(?:pat|dt|ptt|rt)-|xox[abposre]-|xapp-|shp(?:at|ca|pa|ss)_|do[por]_v1_|dckr_(?:pat|oat)_|key-|"
    r"AGE-SECRET-KEY-1|whsec_|AIza|GOCSPX-|SG\.|npm_|pypi-Ag|hf_|AKIA|ASIA|ABIA|ACCA|A3T|\d{8,10}:AA|SK|"
    r"(?:https?:)?//hooks\.slack\.com/(?:services|workflows|triggers)/|"
    r"(?:https?:)?//(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/)")
# A label before the value in a whole match (`aws_secret_access_key = `, `Bearer `, `AccountKey=`, a bot id).
# Letters only (`aws_secret_access_key`, `AccountKey`, `https`): a random run's own `=` is no label.
_LABEL = re.compile(r"^(?:[A-Za-z]+(?:[_.\-][A-Za-z]+)*[\"']?[ \t]*(?:=>|=|:)[ \t]*[\"']?|(?i:bearer)[ \t]+)")

# Placeholder markers, as tutorials write them: whole words or runs in one case, never a mixed-case
# substring (random base62 holds `xXxX` or `fAkE` about once in 20,000 keys). `your` only before a
# separator (`your-key`, `YOUR_API_KEY`): glued (`Your8fj3...`) it is just four letters of a key.
_WORDS = ("example", "placeholder", "redacted", "dummy", "fake", "sample", "replace", "changeme", "insecure",
          "notreal", "not-a-real", "not_a_real")
_MARKER = re.compile(
    "|".join([w for word in _WORDS for w in (word, word.upper(), word.capitalize())]
             + [r"(?:your|YOUR|Your)[-_. ]", r"<[^<>]*(?:>|$)", r"\.{3,}|…", r"\*{3,}", r"x{4,}|X{4,}"]))
# Runs a generated key gives no information by: one character 4+ times, counting up (`1234`, `AbCd`).
_REPEAT = re.compile(r"([A-Za-z0-9])\1{3,}")
# Words a placeholder spells out between separators (`your_api_key_here`, `this-will-not-work`). A list,
# not "any lower-case piece": a short key cut by its own `-`/`_` has lower-case pieces of random letters.
_PIECE = re.compile(r"[A-Za-z0-9]+")
_FILLER_WORDS = frozenset((
    "a", "an", "the", "my", "our", "this", "that", "is", "it", "in", "here", "goes", "put", "paste", "insert",
    "fill", "enter", "will", "not", "work", "real", "key", "keys", "api", "token", "secret", "password", "pass",
    "access", "auth", "client", "id", "user", "name", "app", "bot", "test", "demo", "dev", "prod", "value",
    "string", "account", "project", "personal", "org", "live", "private", "public", "webhook", "url", "and",
))

# Fewer random characters than this, once markers are out, is no key: the shortest key any rule
# takes holds 16 random characters (an AWS access key), passwords in prose 6+.
MIN_RANDOM_CHARS = 10


def _without_counting(text: str, least: int = 4) -> tuple[str, int]:
    """`text` with every run of `least`+ letters or digits counting up by one (`123456789`, `abcdefgh`,
    `AbCdEf`: any case) replaced by a space, and how many runs there were."""
    out, runs, i = [], 0, 0
    while i < len(text):
        j = i + 1
        while (j < len(text) and text[j].isascii() and text[j - 1].isascii()  # 'İ'.lower() is two characters
               and text[j].isalnum() and text[j - 1].isalnum()
               and text[j].isdigit() == text[j - 1].isdigit() and ord(text[j].lower()) == ord(text[j - 1].lower()) + 1):
            j += 1
        if j - i >= least:
            out.append(" ")
            runs += 1
        else:
            out.append(text[i:j])
        i = j
    return "".join(out), runs


def value_of(token: str) -> str:
    """The value of a whole match: `aws_secret_access_key = K7...` -> `K7...`, `Bearer eyJ...` -> `eyJ...`."""
    return _LABEL.sub("", token.strip(), count=1).strip("\"'")


def random_left(value: str) -> tuple[str, bool]:
    """What random-looking text is left of `value` once its key prefix, its placeholder markers,
    its runs of one character or counting and its word pieces are out; and whether a marker or run
    was taken out at all."""
    rest = _KEY_PREFIX.sub(" ", value, count=1)
    rest, markers = _MARKER.subn(" ", rest)
    rest, runs = _REPEAT.subn(" ", rest)
    rest, counts = _without_counting(rest)
    pieces = _PIECE.findall(rest)
    if len(pieces) > 1:
        pieces = [p for p in pieces if p.lower() not in _FILLER_WORDS]
    return "".join(pieces), bool(markers or runs or counts)


def only_words(value: str, words: frozenset | set = frozenset()) -> bool:
    """A value of two or more pieces, each a filler word or one of `words` (`key-password`,
    `docker-password` for user docker): it names its slot, it holds no randomness."""
    pieces = [p.lower() for p in _PIECE.findall(value)]
    return len(pieces) >= 2 and all(p in _FILLER_WORDS or p in words for p in pieces)


def is_marked_placeholder(value: str) -> bool:
    """A value holding a placeholder marker or run, with too little random text besides to be a key
    (`sk-your-key-here-0000`, `ghp_xxxx...`, `example123`); `example<32 random>` is a key."""
    left, marked = random_left(value)
    return marked and (len(left) < MIN_RANDOM_CHARS or len(set(left)) <= 3)


def is_example(token: str) -> bool:
    """Whether a key-shaped token (a whole match) is a documentation example or a placeholder, not a
    credential someone was given: a published sample, or a marked placeholder."""
    value = value_of(token)
    return token in PUBLISHED_SAMPLES or value in PUBLISHED_SAMPLES or is_marked_placeholder(value)
