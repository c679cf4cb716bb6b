"""Property-based tests (hypothesis): frontmatter round trips, slugs and category paths."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata.errors import CorruptEntry, InvalidInput
from memstrata.storage import codec
from memstrata.storage.catalog import read_entry_file
from memstrata.storage.entry import Entry
from memstrata.storage.paths import MAX_SLUG_BYTES, inside_root, slugify, validate_category

# Text a person or an agent might type: any script, combining marks, RTL, emoji, quotes,
# YAML-looking punctuation; no NUL, no lone surrogates (the engine refuses those on input).
_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
text = st.text(_chars, max_size=200)
one_line = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=120) \
    .map(lambda s: " ".join(s.split())).filter(bool)
tag = one_line.map(lambda s: s.replace(",", " ").strip().lstrip("#").strip()).filter(bool)
stamp = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)).map(
    lambda d: d.replace(microsecond=0, tzinfo=timezone.utc))
ident = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,30}", fullmatch=True)

_SCRATCH = Path(tempfile.mkdtemp(prefix="memstrata-props-"))
atexit.register(shutil.rmtree, _SCRATCH, True)  # the xdist controller imports this module too and runs no teardown
(_SCRATCH / "c").mkdir()

PROFILE = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def entries(draw):
    body = draw(text).replace("\r", "")
    return Entry(
        id=draw(ident), title=draw(one_line), body=body, category="c", path="c/x.md",
        status=draw(st.sampled_from(["active", "archived", "expired"])), created=draw(stamp), updated=draw(stamp),
        version=draw(st.integers(1, 10_000)), tags=draw(st.lists(tag, max_size=5, unique=True)),
        importance=draw(st.floats(0, 1).map(lambda x: round(x, 4))), important=draw(st.booleans()),
        related=draw(st.lists(ident, max_size=3, unique=True)), expires=draw(st.none() | stamp),
        access_count=draw(st.integers(0, 10**6)), tier=draw(st.sampled_from(["hot", "warm", "cold", "archive"])),
        extra=draw(st.dictionaries(st.from_regex(r"x_[a-z]{1,8}", fullmatch=True),
                                   st.none() | st.integers() | one_line | st.lists(one_line, max_size=3),
                                   max_size=3)),
    )


@PROFILE
@given(entries())
def test_frontmatter_round_trip(entry):
    rendered = codec.render(entry)
    back = codec.parse(rendered, category="c", path="c/x.md")
    for name in ("id", "title", "status", "created", "updated", "version", "tags", "importance", "important",
                 "related", "expires", "access_count", "tier"):
        assert getattr(back, name) == getattr(entry, name), name
    assert back.body == entry.body  # byte for byte, last line as it was
    assert back.extra == entry.extra
    assert codec.render(back) == rendered  # a second round trip changes nothing


@PROFILE
@given(st.text(_chars, max_size=400))
def test_parse_never_crashes_on_any_text(raw):
    """Any file text parses to an entry or raises CorruptEntry, nothing else."""
    try:
        entry = codec.parse(raw, category="c", path="c/x.md", fallback_title="x")
    except CorruptEntry:
        return
    assert isinstance(entry.tags, list) and isinstance(entry.version, int) and entry.version >= 1
    assert 0.0 <= entry.importance <= 1.0


@PROFILE
@given(st.dictionaries(st.sampled_from(["version", "tags", "created", "updated", "importance", "important",
                                        "access_count", "expires", "status", "tier", "related", "title", "id"]),
                       st.none() | st.integers() | st.floats(allow_nan=True) | st.booleans() | one_line
                       | st.lists(one_line, max_size=3) | st.dates() | st.dictionaries(one_line, one_line, max_size=2),
                       max_size=8))
def test_frontmatter_of_wrong_types_still_reads(data):
    """A string for version, a date in a strange form, tags as a string, maps where lists belong..."""
    import yaml

    raw = "---\n" + yaml.safe_dump(data, allow_unicode=True) + "---\nbody\n"
    (_SCRATCH / "c" / "x.md").write_text(raw, encoding="utf-8")
    try:
        entry = read_entry_file(_SCRATCH, "c/x.md")  # how the catalog, sync and doctor read files
    except CorruptEntry:
        return  # this one file is reported (and quarantined by doctor --fix); the rest of the tree reads
    assert isinstance(entry.version, int) and entry.version >= 1
    assert all(isinstance(t, str) for t in entry.tags)
    assert entry.title
    codec.parse(codec.render(entry), category="c", path="c/x.md")  # and it writes back readable


@PROFILE
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_slug_is_safe(title):
    slug = slugify(title)
    assert slug and slug not in (".", "..")
    assert "/" not in slug and "\\" not in slug and "\x00" not in slug
    assert not slug.startswith((".", "-")) and len(slug.encode("utf-8")) <= MAX_SLUG_BYTES
    assert all(not ch.isspace() for ch in slug)


@PROFILE
@given(st.lists(st.sampled_from(["..", ".", "", "~", "/", "\\", "a", "b", "é", "archived", ".hidden", "x" * 90,
                                 "C:", "\x00", "\n", " ", "ｂ", "%2e%2e", "‮"]), max_size=6))
def test_validate_category_never_escapes(parts):
    raw = "/".join(parts)
    try:
        category = validate_category(raw)
    except InvalidInput:
        return
    segments = category.split("/")
    assert all(s and s not in (".", "..") and not s.startswith(".") for s in segments)
    assert not category.startswith(("/", "~")) and "\\" not in category and "\x00" not in category
    root = Path("/tmp/memstrata-root-that-does-not-exist")
    resolved = Path(os.path.normpath(root / category))
    assert root in resolved.parents


@PROFILE
@given(st.text(_chars, max_size=60))
def test_validate_category_any_text(raw):
    try:
        category = validate_category(raw)
    except InvalidInput:
        return
    assert ".." not in category.split("/") and not category.startswith("/")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["..", ".", "a", "b", "link", "~", "/etc", "x.md"]), min_size=1, max_size=5))
def test_inside_root_refuses_every_escape(tmp_path, parts):
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True, exist_ok=True)
    if not os.path.lexists(root / "link"):
        os.symlink(tmp_path, root / "link")  # a symlink out of the root
    rel = "/".join(parts)
    try:
        target = inside_root(root, rel)
    except InvalidInput:
        return
    real_root = Path(os.path.realpath(root))
    assert target == real_root or real_root in target.parents


def test_unknown_importance_word_in_a_file_reads_as_default():
    entry = codec.parse("---\ntitle: a\nimportance: urgent\n---\nbody\n", category="c", path="c/a.md")
    assert entry.importance == 0.5 and entry.extra["importance_unparsed"] == "urgent"


def test_unknown_importance_word_does_not_break_the_tree(tmp_path):
    from memstrata.storage.catalog import Catalog, read_entry_file

    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.md").write_text("---\ntitle: a\nimportance: urgent\n---\nbody\n")
    (tmp_path / "c" / "b.md").write_text("---\nid: b1\ntitle: b\n---\nbody\n")
    assert read_entry_file(tmp_path, "c/a.md").importance == 0.5
    catalog = Catalog(tmp_path)
    report = catalog.refresh()
    assert report.errors == {} and sorted(e.title for e in catalog.entries()) == ["a", "b"]


def test_out_of_range_timestamp_reads_as_missing_date():
    entry = codec.parse("---\ntitle: a\ncreated: -62135596801\n---\nbody\n", category="c", path="c/a.md")
    assert entry.created is None
