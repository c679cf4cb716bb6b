"""Frontmatter <-> Entry: reads both source vocabularies, writes one canonical form."""
from __future__ import annotations

import math
import re
from datetime import date, datetime

from memstrata.storage.clock import format_datetime, parse_datetime
from memstrata.storage.errors import CorruptEntry, InvalidInput
from memstrata.storage.entry import INVALID_ID_KEY, LAYERS, REVIEW_STATUSES, STATUSES, TIERS, Entry, valid_id
# The YAML layer (codec.split_frontmatter and codec.FRONTMATTER_DELIMITER are used across the package).
from memstrata.storage.frontmatter_yaml import (BAD_CHARS, FRONTMATTER_DELIMITER, dump_yaml, split_frontmatter,
                                                value_problem)
from memstrata.storage.history import HISTORY_KEY, history_from_frontmatter, legacy_history

# Words of the second source document onto the 0-1 scale of the first.
IMPORTANCE_WORDS = {"low": 0.2, "medium": 0.5, "normal": 0.5, "high": 0.8, "important": 1.0, "critical": 1.0}

# Canonical key order when writing; anything else goes after, untouched, in `extra`.
CANONICAL_KEYS = (
    "id", "title", "status", "tier", "layer", "created", "updated", "version", "tags",
    "importance", "important", "related", "expires", "last_access", "access_count",
    "context_correlation", "weight", "retention", "review_status", "last_reviewed",
    "next_review", "review_count", "summary", "full_content_file", "agent", "history",
)
# Alternative spellings read from either source document (alias -> canonical key).
ALIASES = {
    "target_layer": "tier",
    "current_layer": "layer",
    "created_at": "created",
    "updated_at": "updated",
    "last_accessed": "last_access",
    "tag": "tags",
}
_DATE_KEYS = ("created", "updated", "expires", "last_access", "last_reviewed", "next_review")

def normalise_importance(value) -> tuple[float, bool]:
    """Importance from either vocabulary -> (0-1 float, important flag)."""
    if value is None or value == "":
        return 0.5, False
    if isinstance(value, bool):
        return (1.0, True) if value else (0.5, False)
    if isinstance(value, (int, float)):
        number = float(value)
        if math.isnan(number):
            return 0.5, False
        if number > 1.0 and number <= 10.0:  # a 1-10 scale seen in the wild
            number = number / 10.0
        return min(1.0, max(0.0, number)), False
    word = str(value).strip().lower()
    if word in IMPORTANCE_WORDS:
        return IMPORTANCE_WORDS[word], word in ("important", "critical")
    try:
        return normalise_importance(float(word))
    except ValueError:
        raise InvalidInput(f"importance must be 0-1 or one of low/medium/high/important, not {value!r}") from None


def _as_bool(value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    return str(value).strip().lower() in ("true", "yes", "1", "on", "y")


def _as_int(value, default: int) -> int:
    if value is None or value == "":
        return default
    try:
        return int(float(value))
    except (TypeError, ValueError, OverflowError):  # `version: .inf`, a JSON 1e400: no count
        return default


def _as_float(value, default: float | None) -> float | None:
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(number) else number


def scalar_text(value) -> str | None:
    """A YAML scalar as the text it was written as (`true`, `1`, `2024-05-01`), so a tag or link a
    note gives as a number, boolean or date is the word its owner typed; None for a mapping or list."""
    if isinstance(value, bool):
        return "true" if value else "false"  # YAML 1.1 also reads yes/on as true: they come back as "true"
    if isinstance(value, datetime):
        return format_datetime(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def _as_list(value) -> list[str]:
    """Tags or related links of a hand-made file: a comma- or space-separated line, or a list whose
    scalars are read as their text (scalar_text); nested lists are flattened, mappings and nulls
    (no tag a person could type in `-t`) are left out."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        parts = value.replace("，", ",").split(",") if ("," in value or "，" in value) else value.split()
        return [p.strip().lstrip("#") for p in parts if p.strip().lstrip("#")]
    if isinstance(value, (list, tuple, set)):
        out: list[str] = []
        for item in value:
            for text in (_as_list(item) if isinstance(item, (list, tuple, set)) else [scalar_text(item)]):
                if text is not None and text.strip() and text.strip() not in out:
                    out.append(text.strip())
        return out
    text = scalar_text(value)
    return [text] if text is not None and text.strip() else []


def frontmatter_dates(data: dict, names: tuple[str, ...]) -> list[datetime | None]:
    """The dates `names` (canonical keys) of a frontmatter mapping as entry_from_frontmatter reads
    them (an alias counts unless the canonical spelling is there), without building the entry."""
    picked: dict = {}
    for key, value in data.items():
        key_text = str(key)
        canonical = ALIASES.get(key_text, key_text)
        if canonical in names and (canonical not in picked or key_text == canonical):
            picked[canonical] = value
    return [_as_date(picked.get(name)) for name in names]


def _as_date(value) -> datetime | None:
    if value is None or value == "" or (isinstance(value, str) and value.strip().lower() in ("null", "none")):
        return None
    try:
        return parse_datetime(value)
    except InvalidInput:
        return None


def _choice(value, allowed: tuple[str, ...], default):
    if value is None:
        return default
    text = str(value).strip().lower()
    if text in allowed:
        return text
    if allowed is LAYERS and text.upper() in LAYERS:
        return text.upper()
    return default


# The rules an entry is read by, as far as they decide its title or indexed text: 2, a note without
# `title:` takes its first H1 (it took its file name). A table or catalog made under other rules
# reads every file again once (retrieval/sync.py, storage/catalog.py).
READ_RULES = 2
_H1 = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING_NOISE = re.compile(r"\{#[^}]*\}|<[^>]+>")


def first_heading(body: str, limit: int = 200) -> str:
    """The text of the body's first H1 (`# Title`; never a line inside a code fence), without
    `{#anchor}` and HTML tags, at most `limit` characters; "" when it has none."""
    fence = None
    for line in (body or "").splitlines():
        m = _FENCE.match(line)
        if m:
            fence = None if fence and m.group(1)[0] == fence else (fence or m.group(1)[0])
            continue
        if fence:
            continue
        h = _H1.match(line)
        if h:
            text = " ".join(_HEADING_NOISE.sub("", h.group(1)).split())
            if text:
                return text[:limit]
    return ""


def entry_from_frontmatter(data: dict, body: str, *, category: str = "", path: str | None = None,
                           fallback_title: str = "", id_key: str = "id") -> Entry:
    """Build an Entry from a frontmatter mapping of either vocabulary; unknown keys go to extra.

    `id_key`: the key that holds the engine's id (storage/layout.py); with `mem-id`, a note's
    own `id:` is one of its extra keys, never read as the engine's nor changed."""
    fields: dict = {}
    extra: dict = {}
    for key, value in data.items():
        key_text = str(key)
        canonical = "id" if key_text == id_key else ALIASES.get(key_text, key_text)
        if canonical == "id" and key_text != id_key:
            extra[key_text] = value
        elif canonical in CANONICAL_KEYS:
            if canonical in fields and key_text != canonical:
                continue  # canonical spelling wins over an alias
            fields[canonical] = value
        else:
            extra[key_text] = value

    entry_id = _checked_id(fields.get("id"), extra)
    history = history_from_frontmatter(fields.get(HISTORY_KEY))
    if history is None:
        extra["history_unparsed"] = fields.get(HISTORY_KEY)
    try:
        importance, important_from_word = normalise_importance(fields.get("importance"))
    except InvalidInput:  # a word we do not know: the default, and the original kept beside it
        importance, important_from_word = 0.5, False
        extra["importance_unparsed"] = fields.get("importance")
    important = _as_bool(fields.get("important", False)) or important_from_word
    dates = {k: _as_date(fields.get(k)) for k in _DATE_KEYS}
    title = fields.get("title")
    title = str(title).strip() if title is not None and str(title).strip() else first_heading(body) or fallback_title
    status = _choice(fields.get("status"), STATUSES, "active")
    correlation = _as_float(fields.get("context_correlation"), 1.0)
    return Entry(
        id=entry_id,
        title=title,
        body=body,
        category=category,
        path=path,
        status=status,
        created=dates["created"],
        updated=dates["updated"],
        version=max(1, _as_int(fields.get("version"), 1)),
        tags=_as_list(fields.get("tags")),
        importance=importance,
        important=important,
        related=_as_list(fields.get("related")),
        expires=dates["expires"],
        last_access=dates["last_access"],
        access_count=max(0, _as_int(fields.get("access_count"), 0)),
        context_correlation=min(1.5, max(0.5, correlation if correlation is not None else 1.0)),
        retention=fields.get("retention"),
        layer=_choice(fields.get("layer"), LAYERS, "L0"),
        tier=_choice(fields.get("tier"), TIERS, "hot"),
        weight=_as_float(fields.get("weight"), None),
        review_status=_choice(fields.get("review_status"), REVIEW_STATUSES, None),
        last_reviewed=dates["last_reviewed"],
        next_review=dates["next_review"],
        review_count=max(0, _as_int(fields.get("review_count"), 0)),
        summary=str(fields["summary"]) if fields.get("summary") not in (None, "") else None,
        full_content_file=str(fields["full_content_file"]) if fields.get("full_content_file") else None,
        agent=str(fields["agent"]) if fields.get("agent") not in (None, "") else None,
        extra=extra,
        history=history or [],
        id_key=id_key,
    )


def _checked_id(value, extra: dict) -> str:
    """The entry id of an `id:` value; one that breaks the id rule (entry.valid_id) is no id:
    the original value is kept in extra[INVALID_ID_KEY] (then _2, _3 ... if that key is taken)."""
    if value is None or value == "":
        return ""
    text = str(value).strip()
    if valid_id(text):
        return text
    key, n = INVALID_ID_KEY, 2
    while key in extra:
        key, n = f"{INVALID_ID_KEY}_{n}", n + 1
    extra[key] = value
    return ""


IMPORTANCE_DIGITS = 4  # decimals an entry file keeps of its importance


def stored_importance(value) -> float:
    """An importance as an entry file stores it (rounded to IMPORTANCE_DIGITS decimals)."""
    return round(float(value), IMPORTANCE_DIGITS)


def entry_to_frontmatter(entry: Entry) -> dict:
    """The canonical frontmatter mapping of an entry (empty optional fields left out)."""
    data: dict = {
        entry.id_key: entry.id,
        "title": entry.title,
        "status": entry.status,
        "tier": entry.tier,
        "layer": entry.layer,
        "created": format_datetime(entry.created),
        "updated": format_datetime(entry.updated),
        "version": entry.version,
        "tags": list(entry.tags),
        "importance": stored_importance(entry.importance),
        "important": bool(entry.important),
        "related": list(entry.related),
        "expires": format_datetime(entry.expires),
        "last_access": format_datetime(entry.last_access),
        "access_count": entry.access_count,
        "context_correlation": round(float(entry.context_correlation), 4),
        "weight": None if entry.weight is None else round(float(entry.weight), 4),
        "retention": entry.retention,
        "review_status": entry.review_status,
        "last_reviewed": format_datetime(entry.last_reviewed),
        "next_review": format_datetime(entry.next_review),
        "review_count": entry.review_count,
        "summary": entry.summary,
        "full_content_file": entry.full_content_file,
        "agent": entry.agent,
        HISTORY_KEY: [{"version": int(h.get("version", 1)), "date": str(h.get("date") or ""),
                       "summary": " ".join(str(h.get("summary") or "").split())} for h in entry.history],
    }
    keep_even_if_empty = {entry.id_key, "title", "status", "tier", "layer", "created", "updated", "version",
                          "tags", "importance", "important", "access_count"}
    data = {k: v for k, v in data.items() if k in keep_even_if_empty or v not in (None, [], "")}
    if entry.review_status is None:
        data.pop("review_count", None)
    for key, value in entry.extra.items():
        if key not in data:
            data[key] = _yaml_safe(value)
    return data


def _yaml_safe(value):
    if isinstance(value, datetime):
        try:
            return format_datetime(value)
        except InvalidInput:  # a user's `due: 9999-12-31T23:59:59-23:59` has no UTC moment: kept as written
            return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _yaml_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_yaml_safe(v) for v in value]
    return value


def check_renderable(entry: Entry) -> None:
    """InvalidInput naming the field when any string of the entry (extra values included, recursively)
    holds a NUL or a lone surrogate, or an extra value is something YAML cannot write."""
    named = {"id": entry.id, "title": entry.title, "body": entry.body, "category": entry.category,
             "tags": entry.tags, "related": entry.related, "summary": entry.summary, "agent": entry.agent,
             "full_content_file": entry.full_content_file, "retention": entry.retention,
             "history": [h.get("summary") for h in entry.history]}
    for key, value in entry.extra.items():
        key_problem = value_problem(str(key))
        if key_problem:
            raise InvalidInput(f"the name of extra field {BAD_CHARS.sub('?', str(key))!r} {key_problem}")
        named[f"extra field {key!r}"] = value
    for name, value in named.items():
        problem = value_problem(value)
        if problem:
            raise InvalidInput(f"{name} {problem}")


def render(entry: Entry) -> str:
    """The full text of an entry's Markdown file (body, then its version history if any).

    InvalidInput (check_renderable) when a value cannot be written.
    """
    check_renderable(entry)
    header = dump_yaml(entry_to_frontmatter(entry))
    # the body byte for byte (an adopted or imported file keeps its last line as it was; a body
    # given to `mem write` already ends its last line: engine/inputs.clean_body)
    return f"{FRONTMATTER_DELIMITER}\n{header}{FRONTMATTER_DELIMITER}\n\n{entry.body}"


def parse(text: str, *, category: str = "", path: str | None = None, fallback_title: str = "",
          id_key: str = "id") -> Entry:
    """Parse a Markdown file's text into an Entry (CorruptEntry if it cannot be read); `id_key` as
    for entry_from_frontmatter."""
    if "\x00" in text:
        raise CorruptEntry("file contains NUL bytes (binary?)")
    data, body = split_frontmatter(text)
    legacy: list[dict] = []
    if HISTORY_KEY not in data:
        body, legacy = legacy_history(body, data.get("version"))
    entry = entry_from_frontmatter(data, body, category=category, path=path, fallback_title=fallback_title,
                                   id_key=id_key)
    if legacy:
        entry.history = legacy
    return entry


def body_of(text: str) -> str:
    """The body of an entry file's text exactly as parse reads it (history never included)."""
    data, body = split_frontmatter(text)
    return legacy_history(body, data.get("version"))[0] if HISTORY_KEY not in data else body
