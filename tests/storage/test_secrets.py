"""The credential detector: formats refused, positions, no echo, warn mode, prose left alone.

Every fake credential here is assembled at run time from a prefix and seeded random
characters, so this file itself holds nothing that a secret scanner would flag.
"""
from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest

from memstrata.errors import InvalidInput, SecretDetected
from memstrata.storage.secrets import KINDS, Finding, check, scan, scan_fields

_rng = random.Random(20240611)
UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"


def rnd(alphabet: str, n: int) -> str:
    """n random characters, guaranteed to mix classes when the alphabet has them."""
    while True:
        s = "".join(_rng.choice(alphabet) for _ in range(n))
        need = [c for c in (UPPER, LOWER, DIGITS) if set(c) & set(alphabet)]
        if all(set(s) & set(c) for c in need):
            return s


def b64url_json(obj: dict) -> str:
    import base64

    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _pem(label: str) -> str:
    dashes = "-" * 5
    body = "\n".join(rnd(B64, 64) for _ in range(4))
    return f"{dashes}BEGIN {label}{dashes}\n{body}\n{dashes}END {label}{dashes}"


# (name, expected kind, text before, secret, text after). The finding must start at the
# first character of `secret` (the credential expression), on the line/column computed
# from `before`.
_sk = "sk" + "_"
_jwt = ".".join([b64url_json({"alg": "HS256", "typ": "JWT"}),
                 b64url_json({"sub": "1234567890", "name": "Jo", "iat": 1516239022}),
                 rnd(B64URL, 43)])
CASES = [
    ("aws access key id", "AWS access key", "export AWS_ACCESS_KEY_ID=",
     "AK" + "IA" + rnd(UPPER + DIGITS, 16), "\n"),
    ("aws secret access key", "AWS secret access key", "[default]\n",
     "aws_secret_access_key = " + rnd(B64, 40), "\n"),
    ("github classic pat", "GitHub token", "push with ", "gh" + "p_" + rnd(ALNUM, 36), " please"),
    ("github oauth", "GitHub token", "oauth: ", "gh" + "o_" + rnd(ALNUM, 36), ""),
    ("github app server", "GitHub token", "GITHUB_TOKEN is ", "gh" + "s_" + rnd(ALNUM, 36), "."),
    ("github fine-grained", "GitHub token", "token ",
     "github" + "_pat_" + rnd(ALNUM, 22) + "_" + rnd(ALNUM, 59), ""),
    ("gitlab pat", "GitLab token", "CI uses ", "gl" + "pat-" + rnd(ALNUM + "_-", 20), " now"),
    ("slack bot token", "Slack token", "bot: ",
     "xo" + "xb-" + rnd(DIGITS, 12) + "-" + rnd(DIGITS, 13) + "-" + rnd(ALNUM, 24), ""),
    ("slack user token", "Slack token", "",
     "xo" + "xp-" + rnd(DIGITS, 12) + "-" + rnd(DIGITS, 12) + "-" + rnd(HEX, 32), " (user)"),
    ("slack webhook", "Slack webhook URL", "post alerts to ",
     "https://hooks.slack.com/services/T" + rnd(UPPER + DIGITS, 8) + "/B" + rnd(UPPER + DIGITS, 8)
     + "/" + rnd(ALNUM, 24), " daily"),
    ("stripe live secret", "Stripe key", "charge with ", _sk + "live_" + rnd(ALNUM, 24), ""),
    ("stripe restricted", "Stripe key", "", "rk" + "_live_" + rnd(ALNUM, 24), " is the read key"),
    ("openai legacy", "OpenAI API key", "OPENAI=",
     "sk" + "-" + rnd(ALNUM, 20) + "T3Blbk" + "FJ" + rnd(ALNUM, 20), ""),
    ("openai project", "OpenAI API key", "new key ",
     "sk" + "-proj-" + rnd(B64URL, 48) + "T3Blbk" + "FJ" + rnd(B64URL, 48), ""),
    ("anthropic", "Anthropic API key", "claude: ",
     "sk" + "-ant-api03-" + rnd(B64URL, 93) + "AA", ""),
    ("google api key", "Google API key", "maps key=", "AI" + "za" + "Sy" + rnd(B64URL, 33), ""),
    ("google oauth client secret", "Google OAuth client secret", "client secret ",
     "GOC" + "SPX-" + rnd(B64URL, 28), ""),
    ("twilio api key", "Twilio API key", "twilio key ", "S" + "K" + rnd(HEX, 32), ""),
    ("twilio auth token", "Twilio auth token", "",
     "TWILIO_AUTH_TOKEN=" + rnd(HEX, 32), ""),
    ("sendgrid", "SendGrid API key", "mail via ",
     "S" + "G." + rnd(B64URL, 22) + "." + rnd(B64URL, 43), ""),
    ("npm", "npm token", "//registry.npmjs.org/:_authToken=", "np" + "m_" + rnd(ALNUM, 36), ""),
    ("pypi", "PyPI token", "twine password ",
     "py" + "pi-" + "AgEIcHlwaS5vcmc" + rnd(B64URL, 60), ""),
    ("hugging face", "Hugging Face token", "HF: ", "h" + "f_" + rnd(ALNUM, 34), ""),
    ("telegram bot", "Telegram bot token", "bot ",
     rnd(DIGITS, 10) + ":" + "AA" + rnd(B64URL, 33), ""),
    ("discord webhook", "Discord webhook URL", "",
     "https://discord.com/api/webhooks/" + rnd(DIGITS, 18) + "/" + rnd(B64URL, 68), ""),
    ("stripe webhook secret", "Stripe webhook secret", "", "wh" + "sec_" + rnd(ALNUM, 32), ""),
    ("azure storage", "Azure storage account key",
     "DefaultEndpointsProtocol=https;AccountName=acct;",
     "Account" + "Key=" + rnd(B64, 86) + "==", ";EndpointSuffix=core.windows.net"),
    ("rsa private key", "private key block", "key:\n", _pem("RSA PRIVATE KEY"), "\n"),
    ("openssh private key", "private key block", "", _pem("OPENSSH PRIVATE KEY"), ""),
    ("pkcs8 private key", "private key block", "the cert and\n", _pem("PRIVATE KEY"), ""),
    ("ec private key", "private key block", "", _pem("EC PRIVATE KEY"), ""),
    ("pgp private key", "private key block", "", _pem("PGP PRIVATE KEY BLOCK"), ""),
    ("bearer header", "bearer token", "curl -H 'Authorization: ",
     "Bearer " + rnd(B64URL, 40), "' https://api.example.com"),
    ("basic auth header", "basic auth credentials", "",
     "Authorization: Basic " + rnd(B64, 24) + "==", ""),
    ("jwt", "JWT", "session cookie ", _jwt, ""),
    ("postgres url", "connection string with password", "DATABASE_URL=",
     "postgres://app:" + rnd(ALNUM, 16) + "@db.internal:5432/app", ""),
    ("postgresql url", "connection string with password", "use ",
     "postgresql://admin:" + rnd(ALNUM, 12) + "@localhost/prod", " for prod"),
    ("mysql url", "connection string with password", "",
     "mysql://root:" + rnd(ALNUM, 12) + "@10.0.0.5:3306/shop", ""),
    ("mongodb srv", "connection string with password", "mongo: ",
     "mongodb+srv://svc:" + rnd(ALNUM, 20) + "@cluster0.abcde.mongodb.net/db", ""),
    ("redis url", "connection string with password", "",
     "redis://:" + rnd(ALNUM, 20) + "@cache:6379/0", ""),
    ("amqp url", "connection string with password", "broker ",
     "amqp://guest:" + rnd(ALNUM, 10) + "@rabbit:5672/", ""),
    ("https url with password", "connection string with password", "clone ",
     "https://deploy:" + rnd(ALNUM, 14) + "@git.example.com/repo.git", ""),
    ("password assignment", "password or secret assignment", "login with ",
     "password=" + rnd(ALNUM, 10), ""),
    ("passwd yaml", "password or secret assignment", "db:\n  ",
     "passwd: " + rnd(ALNUM + "!#%", 12), "\n"),
    ("secret colon", "password or secret assignment", "",
     "secret: " + rnd(ALNUM, 14), ""),
    ("api_key quoted", "password or secret assignment", "client = Client(",
     'api_key="' + rnd(HEX, 24) + '"', ")"),
    ("token env", "password or secret assignment", "",
     "token=" + rnd(ALNUM, 20), ""),
    ("env var password", "password or secret assignment", "# .env\n",
     "DB_PASSWORD=" + rnd(LOWER, 10), "\n"),
    ("json password", "password or secret assignment", '{"user": "bob", "',
     'password": "' + rnd(LOWER + DIGITS, 9) + '"', "}"),
    ("camelCase client secret", "password or secret assignment", "const ",
     "clientSecret = '" + rnd(ALNUM, 16) + "'", ";"),
    ("markdown bold password", "password or secret assignment", "- **",
     "Password:** " + rnd(ALNUM, 10), ""),
    ("chinese password", "password or secret assignment", "服务器",
     "密码：" + rnd(ALNUM, 10), "，别告诉别人"),
    ("odbc pwd", "password or secret assignment", "Server=db;Database=shop;User Id=sa;",
     "Pwd=" + rnd(ALNUM, 12), ";"),
    ("xkcd-style with symbols", "password or secret assignment", "wifi ",
     "passphrase: " + rnd(LOWER, 6) + "#" + rnd(DIGITS, 3) + "!" + rnd(UPPER, 4), ""),
    ("high entropy base64", "high-entropy token", "the value is ", rnd(B64, 44), " ok"),
    ("high entropy base64url", "high-entropy token", "", rnd(B64URL, 64), ""),
]


def _where(before: str) -> tuple[int, int]:
    line = before.count("\n") + 1
    column = len(before) - (before.rfind("\n") + 1) + 1
    return line, column


def _random_part(secret: str) -> list[str]:
    """8-character chunks of the secret that a message must never contain."""
    return [secret[i:i + 8] for i in range(0, max(1, len(secret) - 7), 4) if len(secret) >= 8]


def test_at_least_25_distinct_formats():
    assert len({name for name, *_ in CASES}) >= 25
    assert len({kind for _, kind, *_ in CASES}) >= 20


@pytest.mark.parametrize("name,kind,before,secret,after", CASES, ids=[c[0] for c in CASES])
def test_secret_found_with_position(name, kind, before, secret, after):
    text = before + secret + after
    findings = scan(text)
    line, column = _where(before)
    assert findings == [Finding(kind, line, column, "body")], findings
    assert kind in KINDS


@pytest.mark.parametrize("name,kind,before,secret,after", CASES, ids=[c[0] for c in CASES])
def test_refused_without_echo(name, kind, before, secret, after):
    text = before + secret + after
    with pytest.raises(SecretDetected) as info:
        check({"title": "notes", "body": text})
    err = info.value
    assert err.exit_code != 0
    message = err.message
    assert "\n" not in message
    assert kind in message
    line, column = _where(before)
    assert f"body line {line}, column {column}" in message
    dumped = json.dumps(err.to_dict(), ensure_ascii=False)
    for chunk in _random_part(secret):
        if chunk.lower() in kind.lower():  # e.g. the keyword "password" names the kind
            continue
        assert chunk not in message
        assert chunk not in dumped
    assert err.details["findings"] == [
        {"kind": kind, "line": line, "column": column, "field": "body"}]


def test_describe_never_has_secret():
    key = "gh" + "p_" + rnd(ALNUM, 36)
    (f,) = scan("line one\nline two has " + key)
    assert f.describe() == "GitHub token at body line 2, column 14"
    assert key not in f.describe() and key not in repr(f)


def test_positions_across_lines_and_fields():
    aws = "AK" + "IA" + rnd(UPPER + DIGITS, 16)
    pw = rnd(ALNUM, 12)
    body = "first line\n\n  third: " + aws + "\nfourth password=" + pw
    tag = "ok " + "np" + "m_" + rnd(ALNUM, 36)
    findings = scan_fields({"title": "plain title", "body": body, "project": tag})
    assert findings == [
        Finding("AWS access key", 3, 10, "body"),
        Finding("password or secret assignment", 4, 8, "body"),
        Finding("npm token", 1, 4, "project"),
    ]


def test_list_fields_are_scanned_item_by_item():
    hf = "h" + "f_" + rnd(ALNUM, 34)
    findings = scan_fields({"tags": ["work", hf]})
    assert findings == [Finding("Hugging Face token", 1, 1, "tags[1]")]


def test_field_name_holding_the_secret_is_redacted():
    # a caller that labels tag fields by their value must not leak the tag through the label
    key = "gh" + "p_" + rnd(ALNUM, 36)
    assert scan_fields({"tag " + key: key}) == [Finding("GitHub token", 1, 1, "tag [redacted]")]
    with pytest.raises(SecretDetected) as info:
        check({"title": "t", "tag " + key: key})
    assert key not in info.value.message
    assert key not in json.dumps(info.value.to_dict())


def test_several_findings_in_one_message():
    a = "gl" + "pat-" + rnd(ALNUM, 20)
    b = "postgres://u:" + rnd(ALNUM, 12) + "@h/db"
    with pytest.raises(SecretDetected) as info:
        check({"title": a, "body": "x\n" + b})
    msg = info.value.message
    assert "2 credentials" in msg
    assert "GitLab token at title line 1, column 1" in msg
    assert "connection string with password at body line 2, column 1" in msg
    assert a not in msg and b not in msg
    assert len(info.value.details["findings"]) == 2


def test_overlaps_reported_once_most_specific_wins():
    text = "Authorization: Bearer " + _jwt
    assert scan(text) == [Finding("JWT", 1, 23, "body")]
    key = "gh" + "p_" + rnd(ALNUM, 36)
    assert scan("token=" + key) == [Finding("GitHub token", 1, 7, "body")]
    assert scan("https://x:" + key + "@github.com/o/r") == [Finding("GitHub token", 1, 11, "body")]


def test_warn_mode_returns_findings_without_raising():
    text = "password=" + rnd(ALNUM, 12)
    findings = check({"body": text}, mode="warn")
    assert findings == [Finding("password or secret assignment", 1, 1, "body")]
    assert check({"body": "nothing here"}, mode="warn") == []
    assert check({"body": "nothing here"}) == []


def test_unknown_mode_rejected():
    with pytest.raises(InvalidInput):
        check({"body": "x"}, mode="loud")


NEGATIVES = [
    # prose
    "I need a password reset because I forgot it again.",
    "Forgot password: reset it via the link in the email.",
    "The token was revoked yesterday, so the deploy failed.",
    "the secret: always be kind to people.",
    "Secret: Sometimes I sing in the shower.",
    "password=",
    "Set password= reset later, says the runbook.",
    "password reset emails go out at 9am; token expiry is 24h.",
    "The API key was rotated on Monday and stored in the vault.",
    "She is the bearer of bad news, and the token of our friendship.",
    "My credentials: a degree in biology and ten years of teaching.",
    "Use `Authorization: Bearer <token>` when calling the API.",
    "Set api_key=YOUR_API_KEY in the config before running.",
    "password: ${DB_PASSWORD}",
    "password=<password>",
    'password: "***"',
    "password=changeme",
    "secret: [REDACTED]",
    "token: xxxxxxxxxxxx",
    "api_key = os.environ['OPENAI_API_KEY']",
    "password = getpass.getpass()",
    'headers = {"Authorization": f"Bearer {token}"}',
    "max_tokens=4096, tokenizer=bert-base-uncased, token_type=bearer",
    "def reset_password(user):\n    return send_token(user.email)\n",
    "We use sk-learn-compatible-estimators everywhere.",
    "the secret: well-being matters more than money.",
    "Password: 2-factor auth is on for every account.",
    "token: 2024-05-08 was when it expired",
    "password: correct-horse-battery-staple is the xkcd example",
    "pwd: /home/user/project and credentials: https://wiki.example.com/Creds2",
    "password: getpass.getpass() and secret = vault['db']",
    # URLs without credentials, emails, connection strings with placeholders
    "See https://www.youtube.com/watch?v=dQw4w9WgXcQ and https://example.com/a/b?c=d#e",
    "Doc: https://docs.google.com/document/d/1AbCdEfGhIjKlMnOpQrStUvWxYz0123456789/edit",
    "https://user@example.com/path and mailto:alice@example.org",
    "postgres://localhost:5432/app",
    "POSTGRES_URL=postgres://user:${PGPASSWORD}@db:5432/app",
    "mysql://user:password@localhost/db (replace the placeholder)",
    "redis://cache:6379/0",
    "http://[::1]:8080/health and http://127.0.0.1:8000/",
    # paths
    "/Users/alice/Library/Application Support/Code/User/settings.json",
    r"C:\Users\Bob\AppData\Local\Programs\Python\Python311\python.exe",
    "src/memstrata/storage/secrets.py:42 and ~/.config/memstrata/config.md",
    "com/example/project/MyApplication2Test.java",
    "IMG_20230514_BeachSunsetPhotoEdited_v2.jpg",
    # hashes and ids
    "Fixed in commit " + rnd(HEX, 40) + " on main.",
    "sha256: " + rnd(HEX, 64) + "  md5 " + rnd(HEX, 32),
    "request id 123e4567-e89b-12d3-a456-426614174000, trace " + rnd(HEX, 32).upper(),
    "timestamp 2023-05-08T13:56:00+00:00, version 1.2.3-rc.1+build.45",
    # identifiers
    "ThisIsAVeryLongCamelCaseIdentifierName2 extends AbstractSingletonProxyFactoryBean2",
    "XMLHttpRequestEventTarget2ForBrowsers and ISO8601DateTimeFormatterWithTimeZone",
    "a_very_long_snake_case_function_name_with_numbers_123",
    # Markdown
    "# Title\n\n| key | value |\n|-----|-------|\n| a | b |\n\n- [x] done\n> quote\n\n---\n",
    "[link](https://github.com/org/repo/blob/main/README.md) ![img](./pics/a.png)",
    "```python\nimport os\nprint('hello world')\n```",
    "-----BEGIN CERTIFICATE-----\nnot a key, just a header mention\n-----END CERTIFICATE-----",
    # Chinese
    "我忘记了密码，需要重置。令牌已经被撤销了。",
    "密码：忘记了",
    "他的秘密是每天早上六点起床跑步，坚持了三年。",
    "请把文件保存到 /home/user/文档/报告.md 里。",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_prose_and_ordinary_content_pass(text):
    assert scan(text) == []
    assert check({"body": text, "title": text}) == []


def _locomo_dir() -> Path:
    # `shared` lies beside the repository, or beside a folder above it (a clone or worktree kept deeper)
    repo = Path(__file__).resolve().parents[2]
    return next((d / "shared/bench/locomo" for d in repo.parents if (d / "shared/bench/locomo").is_dir()),
                (repo / ".." / "shared" / "bench" / "locomo").resolve())


def test_locomo_conversations_have_no_findings():
    folder = _locomo_dir()
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        pytest.skip(f"LoCoMo data not found at {folder}")
    scanned = 0
    hits = []
    for path in files:
        convo = json.loads(path.read_text(encoding="utf-8"))
        for key, turns in convo.items():
            if not (key.startswith("session_") and isinstance(turns, list)):
                continue
            for turn in turns:
                for field in ("text", "blip_caption"):
                    value = turn.get(field)
                    if value:
                        scanned += 1
                        for f in scan(value, field):
                            hits.append(f"{path.name} {turn.get('dia_id')}: {f.describe()}")
    assert scanned > 1000
    assert hits == []


# -- issue 27, item 4: the misses of the second attack, and what must stay quiet ---------------
AGE = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
MISSES = [
    ("slack app token", "Slack token", "xa" + "pp-1-A" + rnd(UPPER + DIGITS, 10) + "-" + rnd(DIGITS, 13) + "-" + rnd(HEX, 64)),
    ("shopify", "Shopify token", "shp" + "at_" + rnd(HEX, 32)),
    ("digitalocean", "DigitalOcean token", "do" + "p_v1_" + rnd(HEX, 64)),
    ("docker", "Docker Hub token", "dck" + "r_pat_" + rnd(ALNUM + "-_", 27)),
    ("mailgun", "Mailgun API key", "ke" + "y-" + rnd(HEX, 32)),
    ("age", "age secret key", "AGE-SEC" + "RET-KEY-1" + "".join(_rng.choice(AGE) for _ in range(58)).upper()),
    ("curl -u", "password on a command line", "curl -u admin:" + "S3cr3t" + "Passw0rd https://api.example.com"),
    ("mysql -p", "password on a command line", "mysql -u root -p" + "S3cr3t" + "Passw0rd shop"),
    ("prose", "password in prose", "the password is " + "Tr0ub4" + "dor&3"),
    ("netrc", "netrc password", "machine api.example.com login bob password " + rnd(ALNUM, 12)),
    ("pgpass", "pgpass line", "db.example.com:5432:app:app:" + rnd(ALNUM, 12)),
    ("api key hex", "key after a credential word", "api key " + rnd(HEX, 32)),
    ("token lowercase digits", "key after a credential word", "token: " + rnd(LOWER + DIGITS, 32)),
    ("short url password", "connection string with password", "postgresql://app:" + "pw@db"),
]


@pytest.mark.parametrize("name,kind,text", MISSES, ids=[m[0] for m in MISSES])
def test_second_attack_misses_are_found(name, kind, text):
    assert [f.kind for f in scan(f"note:\n{text}\n")] == [kind]


def test_keys_split_by_zero_width_or_full_width_characters_are_found():
    key = "AK" + "IA" + rnd(UPPER + DIGITS, 16)
    split = key[:4] + "\u200b" + key[4:10] + "\u2060" + key[10:]
    wide = "".join(chr(ord(c) + 0xFEE0) for c in key)  # ＡＫＩＡ...
    for text, column in ((split, 9), (wide, 9), ("\ufeff" + key, 10)):
        found = scan(f"héllo\nthe key {text} ok")
        assert [(f.kind, f.line, f.column) for f in found] == [("AWS access key", 2, column)]
    from memstrata.storage.secrets import redact

    assert redact(f"the key {split} ok") == "the key [redacted] ok"
    assert redact(f"the key {wide} ok") == "the key [redacted] ok"


# every kind of character that renders as nothing: format characters (Cf) of each block, variation
# selectors, the combining grapheme joiner, the Hangul fillers, the Khmer inherent vowels
INVISIBLES = ["\u2066", "\u2067", "\u2068", "\u2069", "\u202a", "\u202e", "\u200b", "\u200e", "\u200f",
              "\ufeff", "\u00ad", "\u2060", "\u206f", "\ufff9", "\ufffb", "\U000e0001", "\U000e0041",
              "\U000e007f", "\ufe00", "\ufe0f", "\u180b", "\u180e", "\u180f", "\U000e0100", "\u034f",
              "\u3164", "\u115f", "\u1160", "\uffa0", "\u17b4", "\u17b5", "\u061c"]


@pytest.mark.parametrize("mark", INVISIBLES, ids=lambda c: f"U+{ord(c):04X}")
def test_a_key_split_by_any_invisible_character_is_found_and_redacted(mark):
    from memstrata.storage.secrets import redact

    key = "AK" + "IA" + rnd(UPPER + DIGITS, 16)
    split = key[:4] + mark + key[4:11] + mark * 2 + key[11:]
    assert [(f.kind, f.column) for f in scan(f"the key {split} ok")] == [("AWS access key", 9)]
    assert redact(f"the key {split} ok") == "the key [redacted] ok"
    with pytest.raises(SecretDetected):
        check({"body": f"the key {split} ok"})


def test_every_format_character_of_this_python_is_invisible_to_the_rules():
    import unicodedata

    from memstrata.storage.secrets import _INVISIBLE

    cf = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]
    assert [f"U+{ord(c):04X}" for c in cf if not _INVISIBLE.match(c)] == []


def test_space_separators_are_spaces_where_a_rule_expects_one():
    for space in ("\u00a0", "\u2007", "\u202f", "\u3000", "\u1680"):
        assert [f.kind for f in scan(f"password:{space}Tr0ub4dor&3x")] == ["password or secret assignment"]
        assert scan(f"the{space}password{space}policy is fine") == []

ORDINARY = [
    "fixed in commit " + rnd(HEX, 40), "uuid 123e4567-e89b-12d3-a456-426614174000",
    "Reset your password via the portal.", "the password is stored in 1Password",
    "password policy: 12 characters minimum", "api key rotation is monthly", "token bucket rate limiter",
    "postgresql://db.internal:5432/app", 'curl -u "$USER:$TOKEN" https://api.example.com', "mysql -p shop",
    "the token is refreshed every hour", "sort -u file:line", "The password is correct-horse-battery",
    "git log -u HEAD:src/main.py", "meeting at 10:30:00:room:b", "login with your SSO password",
    "token refresh landed in commit " + rnd(HEX, 40), "sha256 " + rnd(HEX, 64),
    "access key rotation schedule is quarterly", "the api key is in the vault", "md5 " + rnd(HEX, 32),
    "ssh -p 2222 host", "the password was changed yesterday", "image sha256:" + rnd(HEX, 64),
    "build id " + rnd(LOWER + DIGITS, 24), "the secret is patience", "Ｔｈｅ full-width note is fine",
    "zero\u200bwidth joiners in prose", "machine learning login page password reset flow",
]

# Public keys and content hashes are public data, not credentials (generated with ssh-keygen and gpg).
SSH_ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINBJt/p/oPBKqA1rJY9p8zd5Y9VRqweE6tK7KwcS/LFo me@host"
SSH_RSA = ("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC3+ab10/zSP5oagWJ+UQIYog6sgrlzh6leuvU2Z6ZHpMOOFLa8+tFz/mKlmeyC60lgJD7cPaCO0rsV8zlFJmBLzNNMW/KEsDLVIjgSejpkE8eqAhnAugIVeWNx2ZSujUYyD6m1HI/uzUJn848kV6h+R2KZ5zmQju78"
           "AHCTe0GOz6DccT3gAAlW/MTvjn1+n9r8/ZjVA4amQAaL16kSDw+tpqev4RFjdIJ2drN6AbfuSsw/WWeS4PFM15h39YQNGfPHpa6w1X6VUKFxz8LpYJPEV0xUSv/jjNCAikFDzFkYRSNtxwht5LIOo/T+Ni9b6PSvODHJp2lqEWFmqYAOBnfh ops@laptop")
SSH_ECDSA = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBPKKjldSC/x/p4LneWkJ2rDO7yu3uXG2C6vYlcTJZMJVSHxKLt2Rw3s7mCi6h+Grc8bvAkqeaZoeEOmg18xf7PQ= ci"
PGP_PUBLIC = """-----BEGIN PGP PUBLIC KEY BLOCK-----

mDMEaw+hSxYJKwYBBAHaRw8BAQdAQJN6lN40Bdbw6ih/6cW5BSQbDl3KX9zMhvP2
wAl537u0E01lIDxtZUBleGFtcGxlLm9yZz6IkAQTFggAOBYhBMi+wZlAbUfcTWhM
9duUbnyPsyviBQJrD6FLAhsDBQsJCAcCBhUKCQgLAgQWAgMBAh4BAheAAAoJENuU
bnyPsyvizYcBAO3HxHN68FsAeukGN/JTE+5sI4fmp6f5Sb5X622qjZ08AQDeQbp9
Cw7wfc/6TW2NygHbWHDpTB1e/5P2nmSKRqYpAA==
=6tWc
-----END PGP PUBLIC KEY BLOCK-----"""


def _sri(bits: int, data: bytes) -> str:
    import base64
    import hashlib

    return f"sha{bits}-" + base64.b64encode(hashlib.new(f"sha{bits}", data).digest()).decode()


PUBLIC = [
    f"my laptop key: {SSH_ED25519}", f"authorized_keys:\n{SSH_RSA}\n{SSH_ED25519}", f"CI deploy key {SSH_ECDSA}",
    f"my PGP key:\n\n{PGP_PUBLIC}\n", f'"integrity": "{_sri(512, b"left-pad")}"',
    f'<script src="app.js" integrity="{_sri(384, b"app")}" crossorigin>', f"SRI {_sri(256, b'x')}",
    "donations: 1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa or 3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy",
]
ORDINARY += PUBLIC


def test_look_alikes_of_public_data_and_private_keys_are_still_caught():
    blob = "AAAA" + rnd(ALNUM, 60)  # not a key of its algorithm: a secret dressed as one
    assert [f.kind for f in scan(f"key: ssh-ed25519 {blob}")] == ["high-entropy token"]
    assert [f.kind for f in scan(f"sha512-{rnd(ALNUM, 60)}")] == ["high-entropy token"]  # not 88 long
    assert [f.kind for f in scan("tip 1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb" + rnd(ALNUM, 4))] != []
    private = ("-----BEGIN OPENSSH PRIVATE KEY-----\n" + rnd(ALNUM, 70) + "\n" + rnd(ALNUM, 70)
               + "\n-----END OPENSSH PRIVATE KEY-----")
    assert scan(f"{SSH_ED25519}\n{private}") != []
    assert scan(f"{PGP_PUBLIC}\n" + private.replace("OPENSSH", "PGP").replace("KEY-", "KEY BLOCK-")) != []


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_notes_stay_quiet(text):
    assert scan(text) == []


def test_a_megabyte_body_and_a_ten_megabyte_word_are_scanned():
    big = scan("widgets" * 1_500_000)  # one 10 MB word: every rule stays linear
    assert big == []
    assert [f.kind for f in scan("note " * 200_000 + "ke" + "y-" + rnd(HEX, 32))] == ["Mailgun API key"]


def test_a_letter_whose_lower_case_is_two_characters_is_read_not_a_crash():
    # 'İ'.lower() is 'i' and a combining dot: the counting-run check took its ord() and raised
    for text in ['password="İabc"', "login y password İa12", "mysql -u root -pXİa9q2"]:
        assert isinstance(scan(text), list)
