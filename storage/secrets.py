"""Credential detector: refuse entries that hold secrets before anything is written.

A small, dependency-free rule table (regular expressions plus a few validators), run on
every text field of an entry before it reaches the tree, the index or a log. A finding
names the kind of credential and where it starts (field, 1-based line and column); it
never carries the matched text, so nothing downstream can echo the secret.

Why a rule table and not a library (checked again for issue 27): the maintained detector on
PyPI, Yelp's ``detect-secrets`` (1.5.0, May 2024; needs ``requests``), has no rule for
Shopify, DigitalOcean, Docker Hub, Mailgun or age keys, nor for passwords on a command line,
netrc or pgpass lines; its hex-entropy plugin flags every git SHA and digest in a note; it
keeps global plugin settings and reports lines, not columns. The provider formats worth
catching are a few dozen documented prefixes, which a table covers with exact positions,
no dependency and no network.

What the rules read: the text in NFKC with zero-width characters removed, so a key split by
U+200B or written in full-width letters (``ＡＫＩＡ...``) is found; positions point into
the text as given. Each rule names lower-case strings one of which any match holds
(``hints``); a text holding none is not searched by that rule, which keeps a 1 MB body, or
one 10 MB word, to a few fast scans.

Added for issue 27: Slack ``xapp-``, Shopify ``shpat_``, DigitalOcean ``dop_v1_``, Docker
``dckr_pat_``, Mailgun ``key-<hex>``, ``AGE-SECRET-KEY-1``, ``curl -u user:pass``,
``mysql -pPASS``, "the password is Tr0ub4dor&3", netrc (``login u password p``) and pgpass
(``host:port:db:user:pw``) lines, a token of 20+ letters and digits, or 32+ hex, right
after a credential word (``api key <hex>``, ``token: <lower+digits>``), and any literal
password in a URL (``postgresql://app:pw@db``).

Where a finding points: at the start of the credential expression, i.e. the token itself
for provider keys and JWTs, the keyword for ``password=...`` style assignments and for
``Bearer``/``Basic`` headers, ``AccountKey`` for Azure strings, the scheme for URLs with a
password, and ``-----BEGIN`` for private key blocks.

Decisions (kept deliberately conservative about prose):

- Assignments (``password=``, ``secret:``, ``api_key=``, ``token=``, ``Pwd=``, ``密码：``
  ...) fire only on a literal value. Quoted values fire from 4 characters. Unquoted values
  fire from 6 characters when they look like a password rather than words (some piece
  mixes letters with digits, inner capitals or symbols: ``hunter2``, ``Tr0ub4dor&3``), or,
  after ``=`` with no space (``DB_PASSWORD=sunshine``), any value of 6+ characters. Words,
  numbers, dates, hyphenated phrases, paths and plain URLs after a colon
  (``Forgot password: reset it``, ``the secret: well-being``, ``Password: 2-factor``,
  ``pwd: /home/me``) never fire; neither does ``password=`` followed by nothing. The
  known miss: an all-lowercase passphrase after a colon (``password: correct-horse``).
- Placeholders never fire: ``<password>``, ``***``, ``xxxx``, ``...``, ``changeme``,
  ``password``, ``example``, ``your_api_key``, ``[REDACTED]``, ``${DB_PASSWORD}``,
  ``{password}``, ``%(pw)s``, ``os.environ[...]``, ``ALL_CAPS_ENV_NAMES`` and the like.
  ``changeme`` counts as a placeholder: it is the conventional "replace me" value.
- High-entropy tokens: runs of 32+ characters of ``[A-Za-z0-9+/_=-]`` that contain
  lower case, upper case and digits and whose Shannon entropy is at least 4.0 bits per
  character (random base64 of that length scores ~4.6-5.0; English CamelCase stays well
  below). Pure hex runs (after removing ``-``) are exempt: git SHAs, MD5/SHA digests and
  UUIDs are everyday content in agent notes, and a hex key labelled as such is still
  caught by the assignment rule. Runs inside an ``http(s)://`` URL, and ``base64,`` data
  payloads, are exempt too; provider keys inside URLs are still caught by their own rules.
- Overlaps: when several rules match the same characters, the more specific rule (earlier
  in ``RULES``) wins, so ``Bearer eyJ...`` is reported once, as a JWT.
"""
from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Callable, Mapping

from memstrata.storage.errors import InvalidInput, SecretDetected

__all__ = ["Finding", "Rule", "RULES", "KINDS", "scan", "scan_fields", "check", "MODES", "record_fields",
           "scan_entry", "redact"]

MODES = ("refuse", "warn")


@dataclass(frozen=True)
class Finding:
    """One credential found: its kind and where it starts. Never holds the secret."""

    kind: str
    line: int
    column: int
    field: str

    def describe(self) -> str:
        return f"{self.kind} at {self.field} line {self.line}, column {self.column}"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Rule:
    id: str
    kind: str
    pattern: re.Pattern
    validate: Callable[[re.Match], bool] | None = None
    # lower-case strings one of which every match holds: a text holding none is not searched
    # (a `in` test is a fast scan; forty regular expressions over 1 MB are not)
    hints: tuple[str, ...] = ()


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
_PLACEHOLDER_HINTS = ("your", "example", "placeholder", "redacted", "changeme", "dummy",
                      "xxxx", "****", "...", "${", "{{", "}}", "env.", "environ", "getenv",
                      "secret_here", "replace_me", "replace-me")
# `<password>`, `os.environ["X"]`, `getpass.getpass()`, `config.get(...)`, `vault[...]`
_PLACEHOLDER_RE = re.compile(r"<[^<>]*>|^[A-Za-z_][\w.]*\s*[(\[]")


def _is_placeholder(value: str) -> bool:
    v = value.strip()
    low = v.lower()
    if not v or low in _PLACEHOLDER_WORDS:
        return True
    if len(set(low)) <= 2:  # "*****", "xxxxxx", "......", "abab"
        return True
    if v[0] in "<{[($%*" or v.startswith("…"):
        return True
    if any(h in low for h in _PLACEHOLDER_HINTS) or _PLACEHOLDER_RE.search(v):
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
    quoted = m.group("qv") if m.group("qv") is not None else m.group("qv2")
    if quoted is not None:
        return len(quoted) >= 4 and not _is_placeholder(quoted)
    value = m.group("v").rstrip(".,;:)]}>!?*")
    if len(value) < 6 or _is_placeholder(value):
        return False
    if _PATH_OR_URL.match(value):  # `pwd: /home/me`, `credentials: https://wiki/...`
        return False
    if _looks_random(value):
        return True
    # A bare word or number: only in `key=value` form with nothing between `=` and value.
    return "=" in m.group("sep") and m.group("gap") == ""


def _userinfo_ok(m: re.Match) -> bool:
    """A URL's password: any literal counts, short ones too (`postgresql://app:pw@db`)."""
    pw = m.group("pw")
    low = pw.lower()
    if len(set(low)) == 1 or low in _PLACEHOLDER_WORDS or pw[0] in "<{[($%*":
        return False
    return not any(h in low for h in _PLACEHOLDER_HINTS)


def _password_ok(m: re.Match) -> bool:
    """A password given on a command line or in prose: a literal that is not only words."""
    v = m.group("v").rstrip(".,;:)]}>!?'\"")
    return len(v) >= 6 and not _is_placeholder(v) and _looks_random(v) and not _PATH_OR_URL.match(v)


def _pgpass_ok(m: re.Match) -> bool:
    v = m.group("v")
    return len(v) >= 6 and not v.isdigit() and not _is_placeholder(v)


def _context_token_ok(m: re.Match) -> bool:
    """A token right after a credential word: pure hex of 32+, or lower case and digits mixed."""
    v = m.group("v")
    if _is_placeholder(v):
        return False
    if _HEX.fullmatch(v):
        return len(v) >= 32
    return _has_letter_and_digit(v) and sum(c.isdigit() for c in v) >= 3 and _entropy(v) >= 3.5


def _bearer_ok(m: re.Match) -> bool:
    v = m.group("v")
    return _has_letter_and_digit(v) and not _is_placeholder(v)


_HEX = re.compile(r"[0-9a-fA-F]+")
# A capitalised or lower-case word of 3+ letters, or an acronym before a CamelCase word.
_WORDISH = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{2,}(?=[A-Z][a-z])")
ENTROPY_THRESHOLD = 3.5   # bits per character, on runs of 32+ characters


def _high_entropy_ok(m: re.Match) -> bool:
    run = m.group(0)
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
    r"|密码|口令|密钥|秘钥|令牌"
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
    return Rule(id_, kind, re.compile(pattern, flags), validate, _HINTS.get(id_, ()))


_CREDENTIAL_WORDS = ("pass", "pwd", "secret", "api", "key", "token", "credential", "auth", "access", "pin",
                     "密码", "口令", "密钥", "秘钥", "令牌")
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
    "assignment": _CREDENTIAL_WORDS,
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
       r"[^\s:/@?#\"'<>]{0,256}:(?P<pw>[^\s/@?#\"'<>]{1,256})@[A-Za-z0-9\[]",
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
       r"(?<![A-Za-z0-9_\-])(?i:api[ _\-]?key|secret(?:[ _\-]?key)?|token|access[ _\-]?key|auth(?:[ _\-]?key)?|"
       r"password|passwd|credentials?)"
       r"[ \t]*(?:(?i:is|was)[ \t]+|[:=：][ \t]*)?[\"'`]?(?P<v>[A-Za-z0-9]{20,128})(?![A-Za-z0-9_\-])",
       _context_token_ok),
    _r("assignment", "password or secret assignment", _ASSIGNMENT, _assignment_ok),
    _r("high_entropy", "high-entropy token",
       r"(?<![A-Za-z0-9+/_=\-])[A-Za-z0-9+/_=\-]{32,}(?![A-Za-z0-9+/_=\-])",
       _high_entropy_ok),
)

KINDS: tuple[str, ...] = tuple(dict.fromkeys(r.kind for r in RULES))

_URL = re.compile(r"https?://[^\s<>\"'`)\]]+", re.IGNORECASE)
_DATA_URI = re.compile(r"base64,[A-Za-z0-9+/=]+")


# --- scanning -----------------------------------------------------------------------------

def _exempt_spans(text: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in _URL.finditer(text)] + [m.span() for m in _DATA_URI.finditer(text)]
    return sorted(spans)


def _inside(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    """Is `span` within one of `spans` (sorted by start)? Checks the few that start before it."""
    i = bisect.bisect_right(spans, (span[0], float("inf")))
    return any(a <= span[0] and span[1] <= b for a, b in spans[max(0, i - 4):i])


def _spans(text: str) -> list[tuple[int, int, Rule]]:
    """Accepted (start, end, rule) matches, overlaps resolved by rule priority."""
    # accepted spans never overlap, so sorted by start they are sorted by end as well
    starts: list[int] = []
    accepted: list[tuple[int, int, Rule]] = []
    exempt: list[tuple[int, int]] | None = None
    low = text.lower()
    present: dict[str, bool] = {}
    for rule in RULES:
        if rule.hints and not any(present[h] if h in present else present.setdefault(h, h in low)
                                  for h in rule.hints):
            continue
        for m in rule.pattern.finditer(text):
            if rule.validate is not None and not rule.validate(m):
                continue
            s, e = m.span()
            if rule.id == "high_entropy":
                if exempt is None:
                    exempt = _exempt_spans(text)
                if _inside((s, e), exempt):
                    continue
            i = bisect.bisect_left(starts, s)
            if i > 0 and accepted[i - 1][1] > s:      # the previous span runs into this one
                continue
            if i < len(starts) and starts[i] < e:      # the next span starts inside this one
                continue
            starts.insert(i, s)
            accepted.insert(i, (s, e, rule))
    return accepted


REDACTED = "[redacted]"


# Characters that render as nothing: a key split by them must still be found.
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u180e\u034f")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


class _Normal:
    """`text` in NFKC with zero-width characters removed (full-width ``ＡＫＩＡ`` is ``AKIA``),
    and the way back from a position in it to a position in `text`."""

    def __init__(self, text: str):
        self.starts: list[int] = []   # positions in the normal text where the offset changes
        self.origin: list[int] = []   # the matching positions in `text`
        if text.isascii():
            self.text = text
            return
        parts, last, pos = [], 0, 0
        for m in _NON_ASCII.finditer(text):
            a, b = m.span()
            parts.append(text[last:a])
            pos += a - last
            run = m.group(0)
            if unicodedata.is_normalized("NFKC", run) and not _ZERO_WIDTH.intersection(run):
                parts.append(run)
                pos += b - a
            else:
                for i, ch in enumerate(run, a):
                    n = "" if ch in _ZERO_WIDTH else unicodedata.normalize("NFKC", ch)
                    self.starts.append(pos)
                    self.origin.append(i)
                    parts.append(n)
                    pos += len(n)
                self.starts.append(pos)
                self.origin.append(b)
            last = b
        parts.append(text[last:])
        self.text = "".join(parts)

    def back(self, pos: int) -> int:
        i = bisect.bisect_right(self.starts, pos) - 1
        if i < 0:
            return pos
        out = self.origin[i] + (pos - self.starts[i])
        return min(out, self.origin[i + 1]) if i + 1 < len(self.origin) else out


def normalise(text: str) -> str:
    """What the rules read: NFKC, zero-width characters removed."""
    return _Normal(text).text


def _original_spans(text: str) -> list[tuple[int, int, Rule]]:
    norm = _Normal(text)
    spans = _spans(norm.text)
    if norm.text is text:
        return spans
    return [(norm.back(s), max(norm.back(s) + 1, norm.back(e)), r) for s, e, r in spans]


def scan(text: str, field: str = "body") -> list[Finding]:
    """Every credential-looking span in `text`, in reading order (read in NFKC with zero-width
    characters removed; positions point into `text` as given).

    If the field's own name contains a matched credential (a caller labelling a tag by its
    value, say), that part of the name is replaced by "[redacted]" in the findings."""
    if not text:
        return []
    spans = _original_spans(text)
    for start, end, _rule in spans:
        if text[start:end] in field:
            field = field.replace(text[start:end], REDACTED)
    out = []
    if not spans:
        return out
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    for start, _end, rule in spans:
        li = bisect.bisect_right(line_starts, start) - 1
        out.append(Finding(rule.kind, li + 1, start - line_starts[li] + 1, field))
    return out


def scan_fields(fields: Mapping[str, object]) -> list[Finding]:
    """Scan several named fields; list values are scanned item by item as `name[i]`."""
    out: list[Finding] = []
    for name, value in fields.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                if item is not None:
                    out.extend(scan(str(item), f"{name}[{i}]"))
        else:
            out.extend(scan(value if isinstance(value, str) else str(value), str(name)))
    return out


# Markers that ride in Entry.extra but are never stored as such: an import's line number, the
# index's "already in indexed form" flag. An import's full text and kept versions also ride
# there (they are stored, as the sidecar and .versions/ files) and are scanned by their names.
_MARKERS = ("__where__", "__indexed__")


def _flat(value) -> str:
    """A frontmatter value as one text (nested lists and maps included)."""
    if isinstance(value, dict):
        return " ".join(f"{k}: {_flat(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set)):
        return " ".join(_flat(v) for v in value)
    return str(value)


def record_fields(entry) -> dict:
    """Every text an entry would store, by field name: the whole record, the one rule of what the
    guard reads (a write, an import, a file the engine did not write).

    Title, body, category, path (the file name and INDEX.md come from it and the title), id,
    tags, related, summary, agent, retention, full_content_file, each history line, every
    other frontmatter key and value (``__``-prefixed keys included), an import's full text
    (the sidecar to be) and its kept versions. A key/value field is scanned as ``key: value``
    so a key named like a credential (``password``) counts as the assignment it is."""
    fields: dict = {"id": entry.id or None, "title": entry.title, "body": entry.body,
                    "category": entry.category or None, "path": entry.path,
                    "tags": list(entry.tags), "related": list(entry.related),
                    "summary": entry.summary, "agent": entry.agent,
                    "full_content_file": entry.full_content_file,
                    "retention": None if entry.retention is None else f"retention: {entry.retention}",
                    "history": [_flat(h) for h in entry.history] or None}
    for key, value in entry.extra.items():
        key = str(key)
        if key in _MARKERS:
            continue
        if key == "__full_content__":
            fields["full_content"] = None if value is None else str(value)
        elif key == "__versions__" and isinstance(value, dict):
            for number, text in value.items():
                fields[f"kept version {number}"] = str(text)
        else:
            fields[key if key not in fields else f"frontmatter {key}"] = f"{key}: {_flat(value)}"
    return fields


def scan_entry(entry) -> list[Finding]:
    """Every credential-looking span anywhere in the record of `entry` (see record_fields)."""
    return scan_fields(record_fields(entry))


def redact(text: str) -> str:
    """`text` with every credential-looking span replaced by "[redacted]" (for what is shown:
    snippets of files the guard never saw, or saw in warn mode)."""
    if not text:
        return text
    out, last = [], 0
    for start, end, _rule in _original_spans(text):
        out.append(text[last:start])
        out.append(REDACTED)
        last = end
    return "".join(out) + text[last:] if out else text


def check(fields: Mapping[str, object], mode: str = "refuse") -> list[Finding]:
    """Scan `fields`; in "refuse" mode raise SecretDetected if anything is found,
    in "warn" mode return the findings (the caller decides how to warn)."""
    if mode not in MODES:
        raise InvalidInput(f"unknown secrets mode {mode!r}: use one of {', '.join(MODES)}")
    findings = scan_fields(fields)
    if findings and mode == "refuse":
        n = len(findings)
        listed = "; ".join(f.describe() for f in findings)
        noun = "a credential" if n == 1 else f"{n} credentials"
        raise SecretDetected(
            f"refused: the entry appears to hold {noun} ({listed}); nothing was written",
            findings=[f.to_dict() for f in findings],
        )
    return findings
