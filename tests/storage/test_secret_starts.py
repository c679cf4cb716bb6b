"""The rules that begin with a credential word are tried only where a word begins (storage/secret_starts.py):
the same matches as a search of every position, and the same findings, on texts made to catch a difference.

Keys are assembled at run time from seeded random characters, so this file holds nothing a scanner would flag.
"""
from __future__ import annotations

import random
import re
import string

import pytest

from memstrata.storage import secret_starts, secrets
from memstrata.storage.secret_rules import RULES

_rng = random.Random(4343)
WORD_RULES = [r for r in RULES if r.id in secret_starts._WORDS]


def rnd(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


KEYISH = rnd(string.ascii_letters + string.digits, 24)
FRAGMENTS = [
    "pass", "PASS", "Password", "passwd", "pwd", "secret", "SECRET_KEY", "client_secret", "api", "API-KEY", "apikey",
    "access_key", "private-key", "auth", "authToken", "refresh", "bearer", "session_token", "bot", "token", "TOKEN",
    "credentials", "pin", "PIN", "密码", "口令", "密钥", "令牌", "權杖", "是", "为", "為", " ", "\t", "\n", "=", ":", "：",
    ":=", "=>", "'", '"', "`", "*", "**", "_", "-", ".", "x", "X9", "db", "MY", "é", "\u00a0", "/", "@", "://", "is",
    "was", "remains", KEYISH, rnd(string.ascii_lowercase + string.digits, 12), "Tr0ub4dor&3", "12345678",
    "\u0131", "\u017f", "\u212a", "\u0130", "口令牌", "apiapi",
]


def test_the_characters_re_folds_onto_ascii_letters_are_the_listed_ones():
    letter = re.compile(r"(?i)[a-z]")
    found = {chr(c) for c in range(128, 0x110000) if not 0xD800 <= c < 0xE000 and letter.fullmatch(chr(c))}
    assert found == set(secret_starts.FOLDS_TO_ASCII)


def _same_matches(text: str) -> None:
    words = secret_starts.Words(text, text.lower())
    for rule in WORD_RULES:
        want = [(m.span(), m.groups()) for m in rule.pattern.finditer(text)]
        assert [(m.span(), m.groups()) for m in secret_starts.matches(rule, text, words)] == want, (rule.id, text)


@pytest.mark.parametrize("text", [
    "口令牌: " + KEYISH,                      # a word inside another (口令 / 令牌): both are places to try
    "DB_PASSWORD=" + KEYISH,                  # the key's name begins before its word
    "my.api_key: " + KEYISH + " and token is " + KEYISH,
    "x" * 50 + "apiapiapi" * 200 + "=" + KEYISH,
    "ſecret: " + KEYISH,                      # re folds ſ onto s: searched as before
    "İ " * 10 + "secret: " + KEYISH,         # lower() makes İ two characters: searched as before
    "pin is " + KEYISH + "\nPIN was " + KEYISH,
    "密码是" + KEYISH + "，token 为 " + KEYISH,
])
def test_the_matches_are_those_of_a_search_of_every_position(text):
    _same_matches(text)


def test_random_texts_match_the_same():
    for _ in range(4000):
        _same_matches("".join(_rng.choice(FRAGMENTS) for _ in range(_rng.randint(1, 40))))


def test_the_findings_are_those_of_every_rule_searched_everywhere(monkeypatch):
    texts = ["".join(_rng.choice(FRAGMENTS) for _ in range(_rng.randint(1, 60))) for _ in range(1500)]
    texts += ["the password is " + KEYISH, "Redis 的密码是 " + KEYISH, "api key " + rnd("0123456789abcdef", 32),
              "postgresql://app:" + KEYISH + "@db/x", "a" * 300 + " secret=" + KEYISH]
    fast = [secrets.scan(t) for t in texts]
    monkeypatch.setattr(secret_starts, "matches", lambda rule, text, words: rule.pattern.finditer(text))
    monkeypatch.setattr(secret_starts.Words, "has_hint",
                        lambda self, rule: not rule.hints or any(h in self.low for h in rule.hints))
    assert [secrets.scan(t) for t in texts] == fast
    assert sum(map(bool, fast)) >= 5  # the texts do hold findings


def test_a_text_with_more_words_than_are_kept_is_searched_as_before(monkeypatch):
    monkeypatch.setattr(secret_starts, "MAX_WORDS", 5)  # the places of 100,000 words at most are kept
    text = "pin " * 10 + "password=" + KEYISH
    assert secret_starts.Words(text, text.lower()).starts(False) is None
    _same_matches(text)
    assert [f.kind for f in secrets.scan(text)] == ["password or secret assignment"]
