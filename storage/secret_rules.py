"""The detector's rule table: provider formats, assignments, command lines, entropy (decisions: storage/secrets.py)."""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from memstrata.storage.placeholders import is_example, is_marked_placeholder, only_words  # noqa: F401 (is_example: the rules' own)
from memstrata.storage.share_links import share_parameter


@dataclass(frozen=True)
class Rule:
    id: str
    kind: str
    pattern: re.Pattern
    validate: Callable[[re.Match], bool] | None = None
    # lower-case strings one of which every match holds: a text holding none is not searched
    # (a `in` test is a fast scan; forty regular expressions over 1 MB are not)
    hints: tuple[str, ...] = ()
    # a token of this format that is a documentation example or a placeholder (is_example) is no finding
    examples: bool = False


# --- validators -------------------------------------------------------------------------

_PLACEHOLDER_WORDS = {
    "password", "passwd", "pass", "passphrase", "pwd", "secret", "secrets", "token", "apikey",
    "api_key", "api-key", "key", "changeme", "change_me", "change-me", "changeit", "example",
    "sample", "dummy", "test", "testing", "placeholder", "redacted", "removed", "hidden",
    "masked", "none", "null", "nil", "undefined", "empty", "true", "false", "yes", "no",
    "todo", "tbd", "foo", "bar", "baz", "foobar", "mypassword", "yourpassword", "mysecret",
    "yoursecret", "mytoken", "yourtoken", "value", "string", "required", "optional",
    "default", "secret123", "password123", "qwerty",
}
# Code that fetches the value (`${DB_PASSWORD}`, `{{ secret }}`, `os.environ[...]`, `getenv`): no
# literal at all. Words and runs that mark a placeholder (`your_`, `example`, `xxxx`, `<...>`) are judged
# by what random text is left besides them (storage/placeholders.py), not by their presence alone.
_CODE_HINTS = ("${", "{{", "}}", "env.", "environ", "getenv")
# `os.environ["X"]`, `getpass.getpass()`, `config.get(...)`, `vault[...]`
_PLACEHOLDER_RE = re.compile(r"^[A-Za-z_][\w.]*\s*[(\[]")


# A value in capitals that spells what it stands for (`password="THEENCRYPTEDPASSWORDFROMABOVE"`,
# `YOURSECRETTOKEN`, `RANDOM_PASSWORD`): how tutorials mark the slot to fill. Letters only, so `HUNTER2`
# still counts.
_SHOUTED_SLOT = re.compile(r"[A-Z_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|APIKEY)[A-Z_]*")
# A name in code whose last word names a credential (`clientSecret`, `dbPassword`): a variable, no literal.
_CODE_NAME = re.compile(r"[a-z]+(?:[A-Z][a-z]+)*(?:Secret|Password|Passwd|Token|Key|Credentials?)")


def _is_placeholder(value: str) -> bool:
    v = value.strip()
    low = v.lower()
    if not v or low in _PLACEHOLDER_WORDS or _SHOUTED_SLOT.fullmatch(v):
        return True
    if len(set(low)) <= 2:  # "*****", "xxxxxx", "......", "abab"
        return True
    if v[0] in "{[($%":
        return True
    if any(h in low for h in _CODE_HINTS) or _PLACEHOLDER_RE.search(v) or is_marked_placeholder(v):
        return True
    if only_words(v) or _CODE_NAME.fullmatch(v):  # `key-password`, `clientSecret`
        return True
    if re.fullmatch(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+", v):  # ENV_VAR_NAME reference
        return True
    return False


def _classes(s: str) -> set[str]:
    out = set()
    for i, ch in enumerate(s):
        if "a" <= ch <= "z":
            out.add("lower")
        elif "A" <= ch <= "Z":
            if i > 0:  # a lone leading capital is just a capitalised word
                out.add("upper")
        elif "0" <= ch <= "9":
            out.add("digit")
        elif not ch.isspace():
            out.add("symbol")
    return out


def _has_letter_and_digit(s: str) -> bool:
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _group_ok(name: str, test: Callable[[str], bool]) -> Callable[[re.Match], bool]:
    return lambda m: test(m.group(name))


_PATH_OR_URL = re.compile(r"(?:~|\.{1,2})?/[\w./\-]*$|[A-Za-z][A-Za-z0-9+.\-]*://(?![^/@]*@)")


_PLAIN_PIECE = re.compile(r"[a-z]+|[A-Z][a-z]*|[A-Z]+|[0-9]+")


def _looks_random(value: str) -> bool:
    """Not just words, numbers, dates or hyphenated phrases (`well-being`, `2-factor`)."""
    pieces = [p for p in re.split(r"[\-_.'/]+", value) if p]
    return any(not _PLAIN_PIECE.fullmatch(p) for p in pieces)


def _assignment_ok(m: re.Match) -> bool:
    if share_parameter(m, m.group("key")):
        return False
    quoted = m.group("qv") if m.group("qv") is not None else m.group("qv2")
    if quoted is not None:
        return len(quoted) >= 4 and not _is_placeholder(quoted)
    value = m.group("v").rstrip(".,;:)]}>!?*")
    if len(value) < 6 or _is_placeholder(value):
        return False
    if re.sub(r"[_\-]", "", value).lower() == re.sub(r"[_\-]", "", m.group("key")).lower():
        return False  # `credentials=credentials`: a variable of the same name
    if _PATH_OR_URL.match(value):  # `pwd: /home/me`, `credentials: https://wiki/...`
        return False
    if _looks_random(value):
        return True
    # A bare word or number: only in `key=value` form with nothing between `=` and value.
    return "=" in m.group("sep") and m.group("gap") == ""


# Passwords a database or broker image starts with (the user's own name besides), as its docs show them.
_DEFAULT_PASSWORDS = frozenset(("postgres", "mysql", "root", "admin", "guest", "docker", "redis", "mongo",
                                "rabbitmq", "dev", "local", "localhost", "secret", "changeme", "example"))
# A host on this machine itself: loopback, any address, Docker's bridge (172.16.0.0/12) and host name.
# Not 10/8 or 192.168/16 or `.local`: a LAN or a cloud VPC holds real servers.
_LOCAL_HOST = re.compile(
    r"(?i:localhost|127(?:\.\d{1,3}){3}|0\.0\.0\.0|\[::1\]|172\.(?:1[6-9]|2\d|3[01])(?:\.\d{1,3}){2}|"
    r"host\.docker\.internal)(?![A-Za-z0-9.\-])")
# ... or a Compose service that says what it is (`db`, `postgres-db`, `redis_1`): one label made of these
# words; any other one-label name (`production`, `prod`, `billing`) may be a real server's.
_SERVICE_WORDS = frozenset((
    "db", "database", "postgres", "postgresql", "pg", "pgsql", "mysql", "mariadb", "redis", "mongo", "mongodb",
    "rabbitmq", "rabbit", "amqp", "memcached", "elasticsearch", "opensearch", "minio", "mssql", "sqlserver",
    "clickhouse", "cassandra", "couchdb", "neo4j", "kafka", "zookeeper", "influxdb", "timescaledb", "valkey",
    "keydb", "cache", "broker", "queue", "mailhog", "mailpit", "smtp", "ldap", "keycloak", "vault", "consul",
    "test", "dev", "local", "docker"))
_ONE_LABEL = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*(?![A-Za-z0-9.\-])")


def _local_host_at(text: str, at: int) -> bool:
    """Whether the host that starts at `at` is one of _LOCAL_HOST or a self-describing Compose service."""
    if _LOCAL_HOST.match(text, at):
        return True
    label = _ONE_LABEL.match(text, at)
    if label is None:
        return False
    words = [w.rstrip("0123456789") for w in re.split(r"[_\-]", label.group().lower())]
    return any(w in _SERVICE_WORDS - {"test", "dev", "local", "docker"} for w in words) and all(
        w in _SERVICE_WORDS or not w for w in words)


def _local_default(m: re.Match) -> bool:
    """`postgres://postgres:postgres@127.0.0.1`, `docker:docker-password@host.docker.internal`: a
    well-known default password (or the user's own name) on a local host is no one's secret."""
    user, pw = m.group("user").lower(), m.group("pw").lower()
    words = _DEFAULT_PASSWORDS | {user}
    default = pw in words or only_words(pw, words)
    return default and _local_host_at(m.string, m.end() - 1)


def _userinfo_ok(m: re.Match) -> bool:
    """A URL's password: any literal counts, short ones too (`postgresql://app:pw@db`), except a
    default password on a local host."""
    pw = m.group("pw")
    low = pw.lower()
    if len(set(low)) == 1 or low in _PLACEHOLDER_WORDS or pw[0] in "{[($%" or _SHOUTED_SLOT.fullmatch(pw):
        return False
    if _local_default(m):
        return False
    return not (any(h in low for h in _CODE_HINTS) or is_marked_placeholder(pw))


def _password_ok(m: re.Match, v: str | None = None) -> bool:
    """A password given on a command line or in prose: a literal that is not only words."""
    v = (m.group("v") if v is None else v).rstrip(".,;:)]}>!?'\"`")  # a backtick ends inline code (`-user:simonw`)
    return len(v) >= 6 and not _is_placeholder(v) and _looks_random(v) and not _PATH_OR_URL.match(v)


def _cjk_password_ok(m: re.Match) -> bool:
    """密码是/为/： X as `password is X`; after a bare space (口令 X: also a coupon's code word, 优惠口令
    **RUANYF100**) only a value with lower case beside digits or symbols."""
    v = m.group("v").rstrip(".,;:)]}>!?'\"`*_~")  # Markdown emphasis around it is no part of it
    if _CIPHER_NAME.fullmatch(v):  # 密钥是 RSA2048, 私钥是 ED25519: what kind of key, not the key
        return False
    if m.group("c") is None and not (any(c.islower() for c in v) and any(not c.isalpha() for c in v)):
        return False
    return _password_ok(m, v)


def _pgpass_ok(m: re.Match) -> bool:
    v = m.group("v")
    return len(v) >= 6 and not v.isdigit() and not _is_placeholder(v)


def _context_token_ok(m: re.Match) -> bool:
    """A token right after a credential word: pure hex of 32+, or lower case and digits mixed."""
    v = m.group("v")
    if _is_placeholder(v) or share_parameter(m, m.group("word")):
        return False
    if _HEX.fullmatch(v):
        return len(v) >= 32
    return _has_letter_and_digit(v) and sum(c.isdigit() for c in v) >= 3 and _entropy(v) >= 3.5


def _bearer_ok(m: re.Match) -> bool:
    v = m.group("v")
    return _has_letter_and_digit(v) and not _is_placeholder(v)


_HEX = re.compile(r"[0-9a-fA-F]+")
# A capitalised or lower-case word of 3+ letters, an acronym before a CamelCase word, or one between
# separators (`RedPajama-INCITE-Chat`; not beside a digit: `1YRQWAVT4` is random base64).
_WORDISH = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{2,}(?=[A-Z][a-z])|(?<=[_\-])[A-Z]{3,}(?=[_\-])")
ENTROPY_THRESHOLD = 3.5   # bits per character, on runs of 32+ characters


# A name before `=` in the run (`DATASETTE_REF=<sha>`, `LD_PRELOAD=/tmp/...`): the value is judged alone.
_NAME_EQ = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=(?=[^=])")
# Hash shapes inside a path or glued to a word (`<sha>Simon`, `Data-<UUID>`): ids, not keys; a random
# base62 key holds a 32-hex run with odds of about 1e-14.
_HEX_SHAPE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{32,}")
# A label that says what follows is an identifier or a digest (`"id": "chatcmpl-..."`, `client_id "..."`,
# `Request ID: `, `x-amz-id-2: `, `CodeSha256": "`), not a credential; a session, secret, key or token id
# is one (`session_id`: a cookie's value), so those labels are no id (_SECRET_ID).
_ID_LABEL = re.compile(
    r"(?i:(?<![a-z])(?:[a-z]+[_\- ])?id(?:-\d)?|[a-z]*sha(?:1|256|384|512)|hash|digest|checksum|etag|"
    r"state|nonce)[\"'`]?[ \t]*(?:=|:|=>)?[ \t]*[\"'`]?$")
# A file name: the run ends at a dot before a known extension (`..._x86_64.whl`, `...AB6A.sqlite`).
_FILE_EXT = re.compile(r"\.(?:whl|tar|gz|tgz|zip|so|dylib|dll|exe|py|js|ts|json|md|txt|html|css|sqlite|db|"
                       r"png|jpe?g|gif|svg|pdf|csv|log|yml|yaml|toml|sh|deb|rpm|dmg|img|iso|bin)(?![A-Za-z0-9])")
# A path: it starts at a slash and its first segments are words (`/Users/simon/Library/...`), two of
# them at least, or short pieces (`/var/folders/x6/`).
_PATH_LEAD = re.compile(r"(?:/(?:[A-Za-z][a-z]{2,}|[a-z]{3,}|[A-Za-z0-9]{1,3})(?=/)){2,}/")
# A word between slashes (`/wheels/`, `/pip-ephem-wheel-cache-jh0fk5iu/`): two of them make the rest a path too.
_PATH_WORD = re.compile(r"(?<=/)(?:[A-Za-z][a-z]{2,}|[a-z]{3,}|[a-z]{2,}(?:-[a-z0-9]+)+)(?=/)")
# An id label that names a credential all the same (`session_id`, `secret-id`, `token id`).
_SECRET_ID = re.compile(r"(?:session|secret|token|key|pass\w*|auth|cookie)[_\- ]?id", re.IGNORECASE)


def _id_label(window: str) -> bool:
    label = _ID_LABEL.search(window)
    return label is not None and not _SECRET_ID.search(window, max(0, label.start() - 12))


def _labelled_id(text: str, start: int) -> bool:
    line = text.rfind("\n", 0, start) + 1
    return _id_label(text[max(line, start - 40):start])


def _high_entropy_ok(m: re.Match) -> bool:
    run = m.group(0)[:8192]  # a run of megabytes (one long "word") is judged by its start, in time
    if _labelled_id(m.string, m.start()) or _FILE_EXT.match(m.string, m.end()):
        return False
    if (name := _NAME_EQ.match(run)) is not None:
        if _id_label(name.group(0)):
            return False
        run = run[name.end():]
    lead = _PATH_LEAD.match(run)
    if lead is not None:  # a path: its segments one by one, and whatever follows its leading words as one
        tail = run[lead.end():]
        return any(_random_run(seg) for seg in run.split("/")) or (
            len(_PATH_WORD.findall("/" + tail)) < 2 and _random_run(tail))
    return _random_run(run)


def _random_run(run: str) -> bool:
    """A run of 32+ characters that is no hex shape, identifier, name or path: mixed case and digits,
    its letters mostly not words, and high entropy."""
    pieces = [p for p in _HEX_SHAPE.split(run) if p]
    if len(pieces) != 1 or pieces[0] != run:
        return any(_random_run(p) for p in pieces)
    core = run.rstrip("=")
    if len(core) < 32:
        return False
    if _HEX.fullmatch(core.replace("-", "")):  # git SHAs, digests, UUIDs
        return False
    core = core[:4096]  # a run of megabytes (one long "word") is judged by its start: the same answer, in time
    c = _classes(core)
    if not {"lower", "upper", "digit"} <= c:
        return False
    # Identifiers, CamelCase names, file names and paths: their letters mostly form words.
    letters = sum(ch.isalpha() for ch in core)
    worded = sum(len(w) for w in _WORDISH.findall(core))
    if letters and worded / letters >= 0.75:
        return False
    return _entropy(core) >= ENTROPY_THRESHOLD


# --- the rule table (order = priority on overlaps) ---------------------------------------

_B = r"(?<![A-Za-z0-9_\-])"      # token must not continue a word on the left
_E = r"(?![A-Za-z0-9_\-])"       # nor on the right

_KEYWORD = (
    r"[A-Za-z0-9_.\-]*?"
    r"(?i:pass(?:word|wd|phrase)|pwd|secret(?:[_\-]?key)?|client[_\-]?secret|"
    r"api[_\-]?key|apikey|api[_\-]?secret|access[_\-]?key|secret[_\-]?access[_\-]?key|"
    r"private[_\-]?key|(?:auth|access|refresh|bearer|session|api|bot)[_\-]?token|token|"
    r"credentials?)"
    r"|密码|口令|密钥|秘钥|私钥|令牌|密碼|密鑰|金鑰|權杖"
)

_ASSIGNMENT = (
    r"(?<![A-Za-z0-9_.\-])(?P<key>" + _KEYWORD + r")(?![A-Za-z0-9])"
    r"[\"'`*]{0,2}"
    r"(?P<sep>[ \t]*(?::=|=>|=|:|：)(?!=))"
    r"(?P<gap>[ \t]*\**[ \t]*)"
    r"(?:\"(?P<qv>[^\"\n]{1,300})\"|'(?P<qv2>[^'\n]{1,300})'|"
    r"(?P<v>[!#-%(-+\--:<-_a-~]{1,300}))"
)


def _r(id_: str, kind: str, pattern: str, validate=None, flags: int = 0) -> Rule:
    return Rule(id_, kind, re.compile(pattern, flags), validate, _HINTS.get(id_, ()), id_ in _TOKEN_RULES)


# Rules whose whole match is one key-shaped token (not `key = value`, a URL, a command line or a key
# block, which judge their value by _is_placeholder or not at all): their examples are no finding.
_TOKEN_RULES = frozenset((
    "aws_access_key", "aws_secret_key", "github_token", "gitlab_token", "slack_webhook", "slack_token",
    "shopify_token", "digitalocean_token", "docker_token", "mailgun_key", "age_secret_key", "discord_webhook",
    "stripe_key", "stripe_webhook_secret", "anthropic_key", "openai_key", "google_api_key",
    "google_oauth_secret", "twilio_api_key", "twilio_auth_token", "sendgrid_key", "npm_token", "pypi_token",
    "huggingface_token", "telegram_bot_token", "azure_storage_key", "jwt", "bearer_token", "high_entropy",
))


_CIPHER_NAME = re.compile(r"(?i:rsa|aes|3?des|e?c?dsa|ed25519|ecc|sha|hmac|md5|sm[234]|[pg]pg|pem|pkcs)[-_]?(?:\d{1,4}|gcm|cbc|ctr)*")  # a key's kind, not a key
CJK_WORDS = ("密码", "口令", "密钥", "秘钥", "私钥", "令牌", "密碼", "密鑰", "金鑰", "權杖")
_CREDENTIAL_WORDS = ("pass", "pwd", "secret", "api", "key", "token", "credential", "auth", "access", "pin", *CJK_WORDS)
_HINTS: dict[str, tuple[str, ...]] = {
    "private_key": ("-----begin",), "aws_access_key": ("akia", "asia", "abia", "acca", "a3t"),
    "aws_secret_key": ("aws",), "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": ("glpat-", "gldt-", "glptt-", "glrt-"), "slack_webhook": ("hooks.slack.com",),
    "slack_token": ("xox", "xapp-"), "shopify_token": ("shpat_", "shpca_", "shppa_", "shpss_"),
    "digitalocean_token": ("_v1_",), "docker_token": ("dckr_",), "mailgun_key": ("key-",),
    "age_secret_key": ("age-secret-key-1",), "discord_webhook": ("/api/webhooks/",),
    "stripe_key": ("_live_", "_test_"), "stripe_webhook_secret": ("whsec_",), "anthropic_key": ("sk-ant-",),
    "openai_key": ("sk-",), "google_api_key": ("aiza",), "google_oauth_secret": ("gocspx-",),
    "twilio_api_key": ("sk",), "twilio_auth_token": ("twilio",), "sendgrid_key": ("sg.",),
    "npm_token": ("npm_",), "pypi_token": ("pypi-ag",), "huggingface_token": ("hf_",),
    "telegram_bot_token": (":aa",), "azure_storage_key": ("accountkey=", "sharedaccesskey="), "jwt": ("eyj",),
    "url_password": ("://",), "bearer_token": ("bearer",), "basic_auth": ("authorization",),
    "cli_user_password": ("-u", "--basic-auth"), "cli_mysql_password": ("mysql", "mariadb"),
    "netrc": ("login",), "prose_password": _CREDENTIAL_WORDS, "context_token": _CREDENTIAL_WORDS,
    "assignment": _CREDENTIAL_WORDS, "cjk_password": (*CJK_WORDS, "是", "为", "為"),  # an English word needs 是/为
}


RULES: tuple[Rule, ...] = (
    _r("private_key", "private key block",
       # the whole block (to its END line, or as far as key material goes when truncated)
       r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
       r"(?:[\s\S]{0,16384}?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s:,\-]*)"),
    _r("aws_access_key", "AWS access key",
       r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"),
    _r("aws_secret_key", "AWS secret access key",
       r"(?<![A-Za-z0-9])(?i:aws[_\-.]?secret(?:[_\-]?access)?(?:[_\-]?key)?)[\"']?"
       r"[ \t]*(?:=|:|=>)[ \t]*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"),
    _r("github_token", "GitHub token",
       _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
    _r("gitlab_token", "GitLab token", _B + r"gl(?:pat|dt|ptt|rt)-[A-Za-z0-9_\-]{20,}"),
    _r("slack_webhook", "Slack webhook URL",
       r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+\-]{20,}"),
    _r("slack_token", "Slack token", _B + r"(?:xox[abposre]|xapp)-[A-Za-z0-9\-]{10,}"),
    _r("shopify_token", "Shopify token", _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E),
    _r("digitalocean_token", "DigitalOcean token", _B + r"do[por]_v1_[a-f0-9]{64}" + _E),
    _r("docker_token", "Docker Hub token", _B + r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}"),
    _r("mailgun_key", "Mailgun API key", _B + r"key-[0-9a-f]{32}" + _E),
    _r("age_secret_key", "age secret key", _B + r"AGE-SECRET-KEY-1[02-9ac-hj-np-z]{58}" + _E, flags=re.IGNORECASE),
    _r("discord_webhook", "Discord webhook URL",
       r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{40,}"),
    _r("stripe_key", "Stripe key", _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    _r("stripe_webhook_secret", "Stripe webhook secret", _B + r"whsec_[A-Za-z0-9]{24,}"),
    _r("anthropic_key", "Anthropic API key", _B + r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    _r("openai_key", "OpenAI API key",
       _B + r"sk-(?:proj-|svcacct-|admin-|None-)?(?P<t>[A-Za-z0-9_\-]{20,})",
       _group_ok("t", lambda t: _has_letter_and_digit(t) and len(_classes(t)) >= 3)),
    _r("google_api_key", "Google API key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E),
    _r("google_oauth_secret", "Google OAuth client secret", _B + r"GOCSPX-[A-Za-z0-9_\-]{24,}"),
    _r("twilio_api_key", "Twilio API key", r"(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![A-Za-z0-9])"),
    _r("twilio_auth_token", "Twilio auth token",
       r"(?<![A-Za-z0-9])(?i:twilio[A-Za-z0-9_.\-]*?(?:auth[_\-]?)?token)[\"']?[ \t]*(?:=|:)"
       r"[ \t]*[\"']?[0-9a-f]{32}(?![A-Za-z0-9])"),
    _r("sendgrid_key", "SendGrid API key", _B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E),
    _r("npm_token", "npm token", _B + r"npm_[A-Za-z0-9]{36}" + _E),
    _r("pypi_token", "PyPI token", _B + r"pypi-Ag[A-Za-z0-9_\-]{50,}"),
    _r("huggingface_token", "Hugging Face token",
       _B + r"hf_(?P<t>[A-Za-z0-9]{30,})" + _E,
       _group_ok("t", lambda t: _has_letter_and_digit(t))),
    _r("telegram_bot_token", "Telegram bot token",
       r"(?<![A-Za-z0-9:])\d{8,10}:AA[A-Za-z0-9_\-]{33}" + _E),
    _r("azure_storage_key", "Azure storage account key",
       r"(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{30,}={0,2}"),
    _r("jwt", "JWT",
       _B + r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    _r("url_password", "connection string with password",
       r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,30}://"
       r"(?P<user>[^\s:/@?#\"'<>]{0,256}):(?P<pw>[^\s/@?#\"'<>]{1,256})@[A-Za-z0-9\[]",
       _userinfo_ok),
    _r("bearer_token", "bearer token",
       r"(?<![A-Za-z0-9])(?i:bearer)[ \t]+(?P<v>[A-Za-z0-9._~+/\-]{16,}=*)",
       _bearer_ok),
    _r("basic_auth", "basic auth credentials",
       r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic)[ \t]+"
       r"(?P<v>[A-Za-z0-9+/]{8,}={0,2})",
       _group_ok("v", lambda v: not _is_placeholder(v))),
    _r("cli_user_password", "password on a command line",
       r"(?<![A-Za-z0-9_\-])(?:-u|--user|--basic-auth)[ =]?[\"']?[^\s:\"'@/]{1,64}:(?P<v>[^\s\"'@]{4,128})"
       r"(?=[\"'\s]|$)", _password_ok),
    _r("cli_mysql_password", "password on a command line",
       r"(?<![A-Za-z0-9_\-])(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n]{0,200}?"
       r"[ \t]-p(?P<v>[^\s\"']{4,128})", _password_ok),
    _r("netrc", "netrc password",
       r"(?<![A-Za-z0-9_\-])(?:machine[ \t]+\S+[ \t]+)?login[ \t]+\S+[ \t]+password[ \t]+(?P<v>\S{4,128})",
       # a lower-case word after it is prose ("login page password reset"), as for assignments
       _group_ok("v", lambda v: not _is_placeholder(v) and not re.fullmatch(r"[a-z]+[.,;:]?", v))),
    _r("pgpass", "pgpass line",
       r"(?m)^[ \t]*[A-Za-z0-9_.\-\[\]*]+:(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:(?P<v>[^\s]{1,128})[ \t]*$", _pgpass_ok),
    _r("prose_password", "password in prose",
       r"(?<![A-Za-z0-9_\-])(?i:pass(?:word|wd|phrase)|pwd|secret|token|api[ _\-]?key|credentials?|pin)"
       r"[ \t]+(?i:is|was|=|remains|becomes)[ \t]+[\"'`]?(?P<v>[^\s\"'`]{6,128})", _password_ok),
    _r("context_token", "key after a credential word",
       r"(?<![A-Za-z0-9_\-])(?P<word>(?i:api[ _\-]?key|secret(?:[ _\-]?key)?|token|access[ _\-]?key|auth(?:[ _\-]?key)?|"
       r"password|passwd|credentials?))"
       r"[ \t]*(?:(?i:is|was)[ \t]+|[:=：][ \t]*)?[\"'`]?(?P<v>[A-Za-z0-9]{20,128})(?![A-Za-z0-9_\-])",
       _context_token_ok),
    _r("assignment", "password or secret assignment", _ASSIGNMENT, _assignment_ok),
    # Chinese prose: 密码是/为 X, 口令 X, 秘钥/密钥/令牌 X, 账号密码 user/X, with or without a space; the value a
    # literal as the English prose rule wants it (not words, a number or a placeholder: 密码是什么, 设置密码为强密码)
    _r("cjk_password", "password in prose",
       r"(?:密码|口令|密钥|秘钥|私钥|令牌|密碼|密鑰|金鑰|權杖|(?i:password|passwd|token|secret|api[ _\-]?key)(?=[ \t]*[是为為]))"
       r"(?P<c>[ \t]*(?:是|为|為)[ \t]*[:：]?|[ \t]*[:=：])?[ \t]*[\"'`“「*_]*"
       r"(?P<v>[A-Za-z0-9!#$%&+@^~\-][!#-&(-~]{5,127})", _cjk_password_ok),
    _r("high_entropy", "high-entropy token",
       r"(?<![A-Za-z0-9+/_=\-])[A-Za-z0-9+/_=\-]{32,}(?![A-Za-z0-9+/_=\-])",
       _high_entropy_ok),
)

KINDS: tuple[str, ...] = tuple(dict.fromkeys(r.kind for r in RULES))
