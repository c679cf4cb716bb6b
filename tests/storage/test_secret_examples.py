"""Examples and placeholders in tutorial notes are no credentials; real-looking keys beside them still are.

The four zettel notes (digitalyoshixi, Network/) the guard used to refuse: three embed pasted images by
`file:///C:/Users/.../AppData/Local/Temp/...` paths (the entropy rule read the path as a key), one shows
`password="THEENCRYPTEDPASSWORDFROMABOVE"` in a config example. Real-looking keys are assembled at run
time from seeded random characters, so this file holds nothing a scanner would flag.
"""
from __future__ import annotations

import random
import string

import pytest

from memstrata.storage.secret_rules import is_example
from memstrata.storage.secrets import redact, scan

_rng = random.Random(4242)


def rnd(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


UPPER_DIGITS = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
_JWT_IO = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2"
           "MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")

EXAMPLES = [
    # the zettel notes, as they are written
    "The course outline looks like this:\n\n![](file:///C:/Users/Digit/AppData/Local/Temp/lu17828v2iv72.tmp/"
    "lu17828v2iw8r_tmp_de2639d15ddfa14a.png)\n",
    '    <authorize\n            username="someguacuser"\n            password="THEENCRYPTEDPASSWORDFROMABOVE"\n'
    '            encoding="md5">\n',
    # documentation examples and placeholders in a key's shape
    "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "GITHUB_TOKEN=ghp_" + "x" * 36,
    "token ghp_" + "0" * 36,
    "SLACK_BOT_TOKEN=xoxb-not-a-real-token-this-will-not-work",
    "Authorization: Bearer " + _JWT_IO,
    "stripe.api_key = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc'",
    "OPENAI_API_KEY=sk-your-key-here-0000000000000000",
    "api_key: <your-api-key>",
    'password: "YOURPASSWORD"',
    "hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
]


@pytest.mark.parametrize("text", EXAMPLES)
def test_documentation_examples_and_placeholders_are_no_finding(text):
    assert scan(text) == [], scan(text)
    assert redact(text) == text


REAL_LOOKING = [
    ("AWS access key", "export AWS_ACCESS_KEY_ID=" + "AK" + "IA" + rnd(UPPER_DIGITS, 16)),
    ("GitHub token", "GITHUB_TOKEN=" + "gh" + "p_" + rnd(ALNUM, 36)),
    ("password or secret assignment", 'password="' + rnd(string.ascii_uppercase, 5) + "2" + '"'),
    ("password or secret assignment", 'password="HUNTERXYZ"'),  # capitals that spell no slot
    ("high-entropy token", "the value is " + rnd(ALNUM + "+/", 44)),
    # a real key in a web or file URL is still caught by its own rule
    ("GitHub token", "![](file:///C:/Users/me/" + "gh" + "p_" + rnd(ALNUM, 36) + ".png)"),
]


@pytest.mark.parametrize("kind,text", REAL_LOOKING, ids=[f"{k}-{n}" for n, (k, _) in enumerate(REAL_LOOKING)])
def test_real_looking_secrets_are_still_found(kind, text):
    assert [f.kind for f in scan(text)] == [kind]


def test_an_example_beside_a_real_key_leaves_the_real_key_found():
    real = "AK" + "IA" + rnd(UPPER_DIGITS, 16)
    text = f"The docs use AKIAIOSFODNN7EXAMPLE; ours is {real}.\n"
    assert [(f.kind, f.column) for f in scan(text)] == [("AWS access key", text.index(real) + 1)]
    assert "AKIAIOSFODNN7EXAMPLE" in redact(text) and real not in redact(text)


def test_what_makes_a_token_an_example():
    assert is_example("AKIAIOSFODNN7EXAMPLE") and is_example("ghp_" + "x" * 36) and is_example(_JWT_IO)
    assert is_example("ghp_" + "7" * 8 + rnd(ALNUM, 28))
    for _ in range(200):  # generated keys are never examples
        assert not is_example("gh" + "p_" + rnd(ALNUM, 36))
        assert not is_example("AK" + "IA" + rnd(UPPER_DIGITS, 16))
        assert not is_example(rnd("0123456789abcdef", 64))
