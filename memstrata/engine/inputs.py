"""Input cleaning shared by every way in (write, update, import, daily notes): titles, bodies, tags, ids."""
from __future__ import annotations

from memstrata.errors import InvalidInput
from memstrata.storage.entry import ID_PATTERN, require_id, valid_id  # noqa: F401 - the one id rule, shared

MAX_TITLE_CHARS = 300


def clean_title(title: str | None, body: str) -> str:
    """A one-line title: the given one, else the body's first line; refused when there is neither."""
    text = title if title is not None else ""
    text = " ".join(str(text).split())
    if not text:
        for line in body.splitlines():
            line = line.strip().lstrip("#").strip()
            if line:
                text = line
                break
    if not text:
        raise InvalidInput("an entry needs a title or a non-empty body")
    if "\x00" in text:
        raise InvalidInput("title contains a NUL byte")
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
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput("body is not UTF-8 text (binary data cannot be stored as a memory)") from None
    body = str(body)
    if "\x00" in body:
        raise InvalidInput("body contains NUL bytes (binary data cannot be stored as a memory)")
    require_encodable(body, "body")
    body = body.replace("\r\n", "\n")
    return body if not end_line or not body or body.endswith("\n") else body + "\n"


def require_encodable(text: str, what: str) -> None:
    """Refuse text that cannot be written as UTF-8 (lone surrogates from a broken decoder)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} is not valid Unicode text (it holds a lone surrogate)") from None


def check_size(body: str, limit: int) -> None:
    """Refuse bodies above max_entry_bytes with the sizes and the setting to change."""
    size = len(body.encode("utf-8"))
    if limit and size > limit:
        mb = 1024 * 1024
        raise InvalidInput(f"body is {size / mb:.1f} MB; the limit is {limit / mb:.1f} MB "
                           f"(max_entry_bytes in config.md)")


def clean_tags(tags) -> list[str]:
    """Tags (or related ids) as a list: comma strings split, blanks folded, '#' dropped, order kept."""
    if isinstance(tags, str):
        tags = [tags]
    elif tags is not None and not isinstance(tags, (list, tuple, set)):
        raise InvalidInput(f"tags must be a list of words or a comma-separated text, not {type(tags).__name__}")
    out: list[str] = []
    for tag in tags or []:
        if not isinstance(tag, (str, int, float)):
            raise InvalidInput(f"a tag must be a word, not {type(tag).__name__}")
        for part in str(tag).split(","):
            part = " ".join(part.split()).lstrip("#")
            if part and part not in out:
                out.append(part)
    return out
