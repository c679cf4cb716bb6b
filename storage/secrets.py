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

What the rules read: the text in NFKC with invisible characters removed (every format character,
category Cf, variation selectors, Hangul fillers; see ``_INVISIBLE``) and every space separator a
plain space, so a key split by U+200B or U+2066 or written in full-width letters (``ＡＫＩＡ...``) is found; positions point into
the text as given. Each rule names lower-case strings one of which any match holds
(``hints``); a text holding none is not searched by that rule, which keeps a 1 MB body, or
one 10 MB word, to a few fast scans.

Added for issue 27: Slack ``xapp-``, Shopify ``shpat_``, DigitalOcean ``dop_v1_``, Docker
``dckr_pat_``, Mailgun ``key-<hex>``, ``AGE-SECRET-KEY-1``, ``curl -u user:pass``,
``mysql -pPASS``, "the password is Tr0ub4dor&3", netrc (``login u password p``) and pgpass
(``host:port:db:user:pw``) lines, a token of 20+ letters and digits, or 32+ hex, right
after a credential word (``api key <hex>``, ``token: <lower+digits>``), and any literal
password in a URL (``postgresql://app:pw@db``).

The table itself (rules, validators, hints) is in ``storage/secret_rules.py``.

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
- Placeholders never fire: ``<password>``, ``***``, ``xxxx``, ``...``, ``changeme`` (a marker with
  no key's worth of random text beside it: storage/placeholders.py),
  ``password``, ``example``, ``your_api_key``, ``[REDACTED]``, ``${DB_PASSWORD}``,
  ``{password}``, ``%(pw)s``, ``os.environ[...]``, ``ALL_CAPS_ENV_NAMES`` and the like.
  ``changeme`` counts as a placeholder: it is the conventional "replace me" value; so does a
  value in capitals spelling its slot (``THEENCRYPTEDPASSWORDFROMABOVE``).
- Documentation examples in a key's shape never fire either (``AKIAIOSFODNN7EXAMPLE``,
  ``ghp_xxxx...``, the jwt.io token: ``placeholders.is_example``, which takes the markers out and
  asks whether a key's worth of random text is left), and hold their place so
  no later rule reads their pieces as keys. Paths in ``file://`` URLs are exempt from the
  entropy rule as web URLs are.
- High-entropy tokens: runs of 32+ characters of ``[A-Za-z0-9+/_=-]`` that contain
  lower case, upper case and digits and whose Shannon entropy is at least 4.0 bits per
  character (random base64 of that length scores ~4.6-5.0; English CamelCase stays well
  below). Pure hex runs (after removing ``-``) are exempt: git SHAs, MD5/SHA digests and
  UUIDs are everyday content in agent notes, and a hex key labelled as such is still
  caught by the assignment rule. Runs inside an ``http(s)://`` URL, and ``base64,`` data
  payloads, are exempt too; provider keys inside URLs are still caught by their own rules.
  So are public keys and content hashes, each checked by its structure (storage/public_data.py):
  the blob after ``ssh-ed25519``/``ssh-rsa``/``ecdsa-sha2-nistp256``..., a PGP PUBLIC KEY BLOCK,
  an SRI/npm ``sha256-``/``sha384-``/``sha512-`` digest of its exact length, a bitcoin address
  with a valid checksum. Private key blocks stay caught by their own rule.
- Ids, digests, paths and defaults (simonw/til's 33 false alarms; rules in secret_rules.py): hex runs
  and UUIDs inside a run are hashes; a run's `NAME=` is cut off; a run labelled as an id or digest,
  a file name, a path (segment by segment), a Fernet token, a JSON-escaped URL is no token; a default
  password (or the user's name) on a local host is none. `mem secrets allow` (storage/secret_allow.py)
  passes what the user says is no secret, note by note.
- Overlaps: when several rules match the same characters, the more specific rule (earlier
  in ``RULES``) wins, so ``Bearer eyJ...`` is reported once, as a JWT.
"""
from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import asdict, dataclass
from typing import Mapping

from memstrata.storage.errors import InvalidInput, SecretDetected
from memstrata.storage.public_data import public_spans
from memstrata.storage import secret_starts
from memstrata.storage.secret_rules import KINDS, RULES, Rule, is_example

__all__ = ["Finding", "Rule", "RULES", "KINDS", "scan", "scan_fields", "check", "MODES", "record_fields",
           "scan_entry", "located_in_entry", "redact", "redact_value"]

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

# a web or file URL: its paths are no token (`file:///C:/Users/Digit/AppData/Local/Temp/lu17828v2iv72.tmp`)
# (slashes escaped as in JSON, `https:\/\/a.nel.cloudflare.com\/report`, too)
_URL = re.compile(r"(?:https?|file):(?:\\?/){2}[^\s<>\"'`)\]]+", re.IGNORECASE)
_DATA_URI = re.compile(r"base64,[A-Za-z0-9+/=]+")


# --- scanning -----------------------------------------------------------------------------

def _exempt_spans(text: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in _URL.finditer(text)] + [m.span() for m in _DATA_URI.finditer(text)]
    return sorted(spans + public_spans(text))


def _inside(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    """Is `span` within one of `spans` (sorted by start)? Checks the few that start before it."""
    i = bisect.bisect_right(spans, (span[0], float("inf")))
    return any(a <= span[0] and span[1] <= b for a, b in spans[max(0, i - 4):i])


_GLUE = re.compile(r"[^\sA-Za-z0-9]*")  # what joins a token glued to a finding (`_`, `-`, `/`)
_WORD_END = re.compile(r"\s|$")


def _glued(text: str, accepted: list, exempt: list[tuple[int, int]] | None) -> list[tuple[int, int, Rule]]:
    """Tokens glued after a finding, up to the end of its word (`AKIA..._ghp_...`, `AKIA.../wJalr...`):
    read on their own, as matches may not overlap and the finding's span hid them (an allowed key
    then let a new credential glued to it through)."""
    out: list[tuple[int, int, Rule]] = []
    for i, (_s, e, _rule) in enumerate(accepted):
        end = _WORD_END.search(text, e).start()
        if i + 1 < len(accepted):
            end = min(end, accepted[i + 1][0])
        start = _GLUE.match(text, e, end).end()
        if end - start < 8:
            continue
        if exempt is None:
            exempt = _exempt_spans(text)
        shifted = [(a - start, b - start) for a, b in exempt if b > start and a < end]
        out.extend((a + start, b + start, r) for a, b, r in _spans(text[start:end], shifted, glued=False))
    return out


def _spans(text: str, exempt: list[tuple[int, int]] | None = None, glued: bool = True) -> list[tuple[int, int, Rule]]:
    """Accepted (start, end, rule) matches, overlaps resolved by rule priority, and with `glued` the
    tokens glued after each (`_glued`). `exempt`: the spans the entropy rule passes, when `text` is a
    piece of a larger text (computed from `text` when None)."""
    # accepted spans never overlap, so sorted by start they are sorted by end as well
    starts: list[int] = []
    accepted: list[tuple[int, int, Rule]] = []
    low = text.lower()
    words = secret_starts.Words(text, low)
    for rule in RULES:
        if not words.has_hint(rule):
            continue
        for m in secret_starts.matches(rule, text, words):
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
            # a documented example holds its place (None) so no later rule reads its pieces as a key
            accepted.insert(i, (s, e, None if rule.examples and is_example(m.group(0)) else rule))
    if glued and accepted:
        accepted = sorted(accepted + _glued(text, accepted, exempt))
    return [span for span in accepted if span[2] is not None]


REDACTED = "[redacted]"


# Characters that render as nothing, so a key split by them must still be found: every format
# character (Unicode category Cf: zero-width, bidi controls and isolates U+202A-202E/U+2066-2069,
# U+FEFF, U+FFF9-FFFB, the tag block U+E0000-E007F, ...; generated from unicodedata 14 and checked
# against the running Python's table by a test), variation selectors (U+FE00-FE0F, U+180B-180F,
# U+E0100-E01EF), the combining grapheme joiner, the Hangul fillers and the Khmer inherent vowels.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u115f-\u1160\u17b4-\u17b5"
    "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff"
    "\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e007f\U000e0100-\U000e01ef]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_SPACE = re.compile(r"\s")


def _invisible(ch: str) -> bool:
    return _INVISIBLE.match(ch) is not None or unicodedata.category(ch) == "Cf"


def _normal_char(ch: str) -> str:
    """One character as the rules read it: nothing if invisible, else NFKC, with every space
    separator (NBSP, U+2000-200A, U+3000, U+1680 ...) a plain space: a separator where a rule
    expects one (``password:\u00a0hunter2``), never glued into a token."""
    if _invisible(ch):
        return ""
    n = unicodedata.normalize("NFKC", ch)
    return " " if n != " " and len(n) == 1 and unicodedata.category(n) == "Zs" else n


class _Normal:
    """`text` in NFKC with invisible characters removed (full-width ``ＡＫＩＡ`` is ``AKIA``,
    ``AKIA\u2066IOSF...`` is ``AKIAIOSF...``), and the way back from a position in it to a
    position in `text`."""

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
            if unicodedata.is_normalized("NFKC", run) and not _INVISIBLE.search(run) and not _SPACE.search(run):
                parts.append(run)
                pos += b - a
            else:
                for i, ch in enumerate(run, a):
                    n = _normal_char(ch)
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
    """What the rules read: NFKC, invisible characters removed, space separators plain spaces."""
    return _Normal(text).text


def _original_spans(text: str) -> list[tuple[int, int, Rule]]:
    norm = _Normal(text)
    spans = _spans(norm.text)
    if norm.text is text:
        return spans
    return [(norm.back(s), max(norm.back(s) + 1, norm.back(e)), r) for s, e, r in spans]


def scan(text: str, field: str = "body") -> list[Finding]:
    """Every credential-looking span in `text`, in reading order (read in NFKC with invisible
    characters removed; positions point into `text` as given).

    If the field's own name contains a matched credential (a caller labelling a tag by its
    value, say), that part of the name is replaced by "[redacted]" in the findings."""
    return [f for f, _value in _located(text, field)]


def _located(text: str, field: str) -> list[tuple[Finding, str]]:
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
    for start, end, rule in spans:
        li = bisect.bisect_right(line_starts, start) - 1
        out.append((Finding(rule.kind, li + 1, start - line_starts[li] + 1, field), text[start:end]))
    return out


def scan_fields(fields: Mapping[str, object]) -> list[Finding]:
    """Scan several named fields; list values are scanned item by item as `name[i]`."""
    return [f for f, _value in _located_fields(fields)]


def _located_fields(fields: Mapping[str, object]) -> list[tuple[Finding, str]]:
    out: list[tuple[Finding, str]] = []
    for name, value in fields.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                if item is not None:
                    out.extend(_located(str(item), f"{name}[{i}]"))
        else:
            out.extend(_located(value if isinstance(value, str) else str(value), str(name)))
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


def located_in_entry(entry) -> list[tuple[Finding, str]]:
    """scan_entry's findings each with the text it matched: only for fingerprints
    (storage/secret_allow.py), never to be shown, logged or stored."""
    return _located_fields(record_fields(entry))


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


def redact_value(key: str, value):
    """A frontmatter value as shown: each string in it redacted as `redact` does, and read as
    ``key: value`` too, as the guard reads it (record_fields), so ``password: hunter2`` shows
    ``[redacted]`` though ``hunter2`` alone is no finding."""
    if isinstance(value, dict):
        return {k: redact_value(str(k), v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(key, v) for v in value]
    if not isinstance(value, str):
        return value
    text, prefix = redact(value), f"{key}: "
    keyed = redact(prefix + text)
    if keyed == prefix + text:
        return text
    return keyed[len(prefix):] if keyed.startswith(prefix) else REDACTED


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
