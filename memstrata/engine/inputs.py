"""Input cleaning shared by every way in (write, update, import, daily notes): titles, bodies, tags, ids."""
from __future__ import annotations

import re

from memstrata import clock
from memstrata.errors import InvalidInput
from memstrata.storage.entry import ID_PATTERN, require_id, valid_id  # noqa: F401 - the one id rule, shared

MAX_TITLE_CHARS = 300


# Control characters (C0, DEL, C1) other than the spaces a title's words are split on: listed in a
# terminal, `\x1b[...` in a title would repaint it (and ESC ] 52 could set the clipboard).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def clean_title(title: str | None, body: str) -> str:
    """A one-line title: the given one, else the body's first line (its control characters dropped);
    refused when there is neither, or when the given one holds a control character."""
    text = title if title is not None else ""
    text = " ".join(str(text).split())
    if "\x00" in text:
        raise InvalidInput("title contains a NUL byte")
    if _CONTROL.search(text):
        raise InvalidInput("title may not hold control characters (such as ESC: a terminal listing it would obey them)")
    if not text:
        for line in body.splitlines():
            line = " ".join(_CONTROL.sub("", line).split()).lstrip("#").strip()
            if line:
                text = line
                break
    if not text:
        raise InvalidInput("an entry needs a title or a non-empty body")
    require_encodable(text, "title")
    if len(text) > MAX_TITLE_CHARS:
        text = text[: MAX_TITLE_CHARS - 1].rstrip() + "…"
    return text


def clean_body(body, end_line: bool = True) -> str:
    """A body as text: bytes decoded as UTF-8, no NUL, no lone surrogate, LF line ends, and (unless
    `end_line` is false: an import keeps a body byte for byte) a newline after the last line."""
    if body is None:
        return ""
    if isinstance(body, bytes):
        body = decoded(body, "body")
    body = str(body)
    if "\x00" in body:
        raise InvalidInput("body contains NUL bytes (binary data cannot be stored as a memory)")
    require_encodable(body, "body")
    body = body.replace("\r\n", "\n")
    return body if not end_line or not body or body.endswith("\n") else body + "\n"


_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def decoded(data: bytes, what: str) -> str:
    """Bytes given as a text (a file, stdin) as text: UTF-8, its byte order mark dropped (Notepad
    writes one); anything else is refused by name, UTF-16 with the way to convert it (two bytes
    that look like its mark also open binary data, so it is never guessed)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        if data.startswith(_UTF16_MARKS):
            raise InvalidInput(f"{what} is not UTF-8 text: it starts as UTF-16 does "
                               f"(iconv -f UTF-16 -t UTF-8 converts it)") from None
        raise InvalidInput(f"{what} is not UTF-8 text (binary data cannot be stored as a memory)") from None


def require_encodable(text: str, what: str) -> None:
    """Refuse text that cannot be written as UTF-8 (lone surrogates from a broken decoder)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} is not valid Unicode text (it holds a lone surrogate)") from None


MAX_BODY_BYTES = 8 * 1024 * 1024  # the largest max_entry_bytes (storage/config.py)


def check_size(body: str, limit: int, what: str = "body") -> None:
    """Refuse bodies above max_entry_bytes with the sizes and the setting to change."""
    size = len(body.encode("utf-8"))
    limit = limit or MAX_BODY_BYTES  # 0: no setting limit, but an entry file is never read past 16 MB
    if size > limit:
        raise InvalidInput(f"{what} is {_bytes(size)}; the limit is {_bytes(limit)} (max_entry_bytes in config.md)")


def _bytes(n: int) -> str:
    """A size as people read it: MB from 0.1 MB on (a limit of 1000 bytes read '0.0 MB')."""
    mb = 1024 * 1024
    return f"{n / mb:.1f} MB" if n >= mb // 10 else f"{n:,} bytes"


def clean_expires(value, now):
    """The expiry a write or update is given, as a UTC datetime. One typed as text (the CLI, MCP, a
    JSON call) that is not after now is refused: the entry would go to the trash at the next maintain
    (`--expires 0001-01-01` was taken; a date alone is its midnight UTC, so today is past too). A datetime is an entry's own, carried over (a share's
    copy of a note already past it): kept as it is."""
    when = clock.parse_datetime(value)
    if isinstance(value, str) and when <= now:
        raise InvalidInput(f"expires {value.strip()} is not after now ({clock.format_datetime(now)}): "
                           f"the entry would be trashed at the next maintain; give a later date")
    return when


def clean_tags(tags, what: str = "tags") -> list[str]:
    """Tags (or related ids) as a list: comma strings split, blanks folded, '#' dropped, order kept.

    A single string counts as one (comma-separated) value; anything but strings and numbers in a
    list, and control characters or lone surrogates in a tag, are refused (InvalidInput).
    """
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, (list, tuple, set, frozenset)):
        raise InvalidInput(f"{what} must be a list of strings, not {kind_of(tags)}")
    out: list[str] = []
    for tag in tags:
        if isinstance(tag, bool) or not isinstance(tag, (str, int, float)):
            raise InvalidInput(f"{what} must be strings, not {kind_of(tag)}")
        text = str(tag)
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in text.replace("\t", "").replace("\n", "")):
            raise InvalidInput(f"{what} may not hold control characters (NUL included)")
        require_encodable(text, what)
        for part in text.split(","):
            part = " ".join(part.split()).lstrip("#")
            if part and part not in out:
                out.append(part)
    return out


def kind_of(value) -> str:
    """What a value is, in the words of JSON and YAML (a JSONL row or a frontmatter list names it so)."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping (an object)"
    if isinstance(value, (list, tuple, set, frozenset)):
        return "a list"
    if value is None:
        return "null"
    return type(value).__name__


def clean_importance(value) -> tuple[float, bool]:
    """Importance as given to write/update: 0-1, a word (low/medium/high/important/critical) or a
    bool -> (0-1 float, important flag). Out of range, NaN and anything else: InvalidInput.
    (Hand-written files are read more leniently: codec.normalise_importance.)"""
    import math

    from memstrata.storage.codec import IMPORTANCE_WORDS, normalise_importance, stored_importance

    words = "/".join(IMPORTANCE_WORDS)
    if value is None or isinstance(value, bool):
        return normalise_importance(value)
    number = value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in IMPORTANCE_WORDS:
            return normalise_importance(word)
        try:
            number = float(word)
        except ValueError:
            raise InvalidInput(f"importance must be a number from 0 to 1 or one of {words}, not {value!r}") from None
    if not isinstance(number, (int, float)):
        raise InvalidInput(f"importance must be a number from 0 to 1 or one of {words}, not {type(value).__name__}")
    if math.isnan(number) or not 0.0 <= float(number) <= 1.0:
        raise InvalidInput(f"importance must be from 0 to 1 (or one of {words}), not {value!r}")
    return stored_importance(number), False  # at the file's precision: 0.80000001 is 0.8, unchanged


def check_tier_status(tier, status) -> None:
    """A tier or status filter names one that exists (InvalidInput if not)."""
    from memstrata.storage.entry import STATUSES, TIERS

    if tier and tier not in TIERS:
        raise InvalidInput(f"tier must be one of {', '.join(TIERS)}, not {tier!r}")
    if status and status not in STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
