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
    "api_key = <your-key>",
    "OPENAI_API_KEY=your_api_key_here",
    "export OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxx",
    'password="PASSWORD"',
    "aws_access_key_id = AKIAI44QH8DHBEXAMPLE",
    "SLACK_WEBHOOK=https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "postgres://user:your_password@localhost/db",
    "GITHUB_TOKEN=ghp_YOUR_TOKEN_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "GITHUB_TOKEN=ghp_1234567890abcdefghijklmnopqrstuvwxyz",
    "SLACK_BOT_TOKEN=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "Authorization: Bearer YOUR_TOKEN",
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
    assert not is_example("gh" + "p_" + "7" * 8 + rnd(ALNUM, 28))  # 28 random characters left: a key
    # a short key cut by its own `-`/`_`: its lower-case pieces are random letters, not filler words
    assert not is_example("gl" + "pat-" + "yfiwdjEXAMPLEp2io6_pRg-R_pa")
    assert is_example("xo" + "xb-not-a-real-token-this-will-not-work") and is_example("YOUR_API_KEY_HERE")
    for _ in range(200):  # generated keys are never examples
        assert not is_example("gh" + "p_" + rnd(ALNUM, 36))
        assert not is_example("AK" + "IA" + rnd(UPPER_DIGITS, 16))
        assert not is_example(rnd("0123456789abcdef", 64))


def _glued(marker: str, n: int = 32) -> str:
    """`n` random characters with `marker` put in at a random place (start, middle or end)."""
    key = rnd(ALNUM, n)
    at = _rng.randint(0, n)
    return key[:at] + marker + key[at:]


# Placeholder markers as a tutorial writes them, and as random base62 holds them by chance.
MARKERS = ["EXAMPLE", "example", "Example", "xxxx", "XXXX", "xXxX", "your_", "YOUR-", "Your", "fake", "fAkE",
           "sample", "replace", "placeholder", "<x>", "...", "12345678", "abcdefgh", "00000000", "REDACTED"]

REFUSED = [  # found by an attacker: each passed as an example before
    "aws_secret_access_key=" + rnd(ALNUM, 18) + "XxXx" + rnd(ALNUM, 18),
    "postgres://admin:example" + rnd(ALNUM, 32) + "@db.prod.internal/x",
    "the password is Your" + rnd(ALNUM, 32),
    "export OPENAI_API_KEY=sk-proj-" + rnd(ALNUM, 20) + "xxxx" + rnd(ALNUM, 28),
    "xo" + "xb-" + rnd(ALNUM, 11) + "-" + rnd(ALNUM, 12) + "-" + rnd(ALNUM, 10) + "fake" + rnd(ALNUM, 10),
    "api_key=" + rnd(ALNUM, 32) + "EXAMPLE",
    "api_key=example" + rnd(ALNUM, 32),
    "Authorization: Bearer AKIAIOSFODNN7EXAMPLE" + rnd(ALNUM, 32),
    "Authorization: Bearer sample." + rnd(ALNUM, 32),
]


@pytest.mark.parametrize("text", REFUSED, ids=range(len(REFUSED)))
def test_a_marker_beside_a_real_key_makes_no_example(text):
    assert scan(text), text


def test_random_keys_with_a_marker_glued_in_are_never_examples():
    """2,000 generated keys of several formats, each with a marker put in at a random place: every one is
    found (the marker is taken out, and what is left is still a key)."""
    shapes = [
        lambda m: "token: " + "gh" + "p_" + _glued(m, 36),
        lambda m: "token: " + "github" + "_pat_" + rnd(ALNUM, 22) + "_" + _glued(m, 59),
        lambda m: "export OPENAI_API_KEY=" + "sk-" + "proj-" + _glued(m, 48),
        lambda m: "xo" + "xb-" + rnd(string.digits, 12) + "-" + rnd(string.digits, 12) + "-" + _glued(m, 24),
        lambda m: "api_key=" + _glued(m, 32),
        lambda m: "the password is " + _glued(m, 24),
        # `<` is no character of a URL (it would be %3C), so `<x>` there is no URL password at all
        lambda m: "postgres://admin:" + _glued(m.replace("<x>", "EXAMPLE"), 24) + "@db.internal/x",
        lambda m: "aws_secret_access_key=" + _glued(m, 40)[:40],
    ]
    passed = []
    for i in range(2000):
        text = shapes[i % len(shapes)](MARKERS[i // len(shapes) % len(MARKERS)])
        if not scan(text):
            passed.append(text)
    assert passed == []


def test_an_aws_key_with_a_run_written_over_it_is_a_key():
    for _ in range(300):
        key = rnd(UPPER_DIGITS, 16)
        at = _rng.randint(0, 12)
        assert scan("AK" + "IA" + key[:at] + "XXXX" + key[at + 4:])


def test_a_token_glued_after_a_finding_is_a_finding_of_its_own():
    """Matches may not overlap, so `AKIA..._ghp_...` was one AWS key: allowing that key let the GitHub
    token glued to it through `mem sync` with no warning."""
    aws = "AKIA" + rnd(UPPER_DIGITS, 16)
    for glue, token, kind in (("_", "ghp_" + rnd(ALNUM, 36), "GitHub token"),
                              ("-", "sk-proj-" + rnd(ALNUM, 40), "OpenAI API key"),
                              ("/", "wJalr" + rnd(ALNUM, 12) + "/" + rnd(ALNUM, 12) + "/" + rnd(ALNUM, 12), None)):
        text = f"Deploy token: {aws}{glue}{token} and more"
        found = scan(text)
        assert len(found) == 2 and found[0].kind == "AWS access key", (glue, found)
        assert found[1].column == len("Deploy token: ") + len(aws) + 2 and (kind is None or found[1].kind == kind)
        assert token not in redact(text) and redact(text).endswith(" and more")
    assert [f.kind for f in scan(f"{aws}_ok {aws}-prod")] == ["AWS access key"] * 2  # a plain suffix is no key
