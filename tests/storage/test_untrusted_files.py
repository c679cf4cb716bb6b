"""Hand-made files are untrusted input: limits, non-regular files, ids, reserved names, bad strings.

Real files under tmp_path and real YAML; nothing is mocked.
"""
from __future__ import annotations

import os
import resource
import socket
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memstrata.errors import CorruptEntry, InvalidInput, NotFound
from memstrata.storage import codec, indexes, sidecars, trash, versions
from memstrata.storage.atomic import atomic_move, atomic_write_text
from memstrata.storage.catalog import Catalog, iter_entry_files, read_entry_file
from memstrata.storage.config import load_settings
from memstrata.storage.entry import INVALID_ID_KEY, Entry, new_id, require_id, valid_id
from memstrata.storage.paths import file_slug, slugify, validate_category
from memstrata.storage.tree import unique_entry_path
from memstrata.storage.safe_io import (FileTooLarge, NotRegularFile, check_write_target, read_regular_bytes)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _in_thread(fn, timeout: float = 5.0):
    """Run fn in a daemon thread; fail (instead of hanging the suite) if it blocks."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "blocked opening a non-regular file"
    if "error" in box:
        raise box["error"]
    return box.get("value")


# -- task 1: the codec's own split and dump (python-frontmatter would change the bytes) -----------
GOLDEN_ENTRY = Entry(id="abc123", title="Alpha: the plan", body="    indented code\n\nlast line\n", category="a",
                     created=NOW, updated=NOW, tags=["x", "决策"], extra={"owner": "猫经理"},
                     history=[{"version": 1, "date": "2026-03-01", "summary": "first"}])
GOLDEN_TEXT = (
    "---\nid: abc123\ntitle: 'Alpha: the plan'\nstatus: active\ntier: hot\nlayer: L0\n"
    "created: '2026-03-01T12:00:00Z'\nupdated: '2026-03-01T12:00:00Z'\nversion: 1\ntags: [x, 决策]\n"
    "importance: 0.5\nimportant: false\naccess_count: 0\ncontext_correlation: 1.0\n"
    "history:\n- {version: 1, date: '2026-03-01', summary: first}\nowner: 猫经理\n---\n\n"
    "    indented code\n\nlast line\n"
)


def test_render_bytes_are_unchanged_and_the_split_keeps_the_body_exactly():
    assert codec.render(GOLDEN_ENTRY) == GOLDEN_TEXT
    data, body = codec.split_frontmatter(GOLDEN_TEXT)
    assert data["id"] == "abc123" and body == GOLDEN_ENTRY.body
    assert codec.parse(GOLDEN_TEXT) == GOLDEN_ENTRY.copy(path=None, category="")


# -- task 2: limits on frontmatter ------------------------------------------------------------------
LAUGHS = "\n".join(["---", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'] + [
    f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")] + ["tags: *i", "---", "x", ""])


def test_billion_laughs_is_refused_without_expanding(tmp_path):
    assert len(LAUGHS.encode()) < 400
    _write(tmp_path / "notes" / "bomb.md", LAUGHS)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(CorruptEntry, match="expands to more than") as info:
        read_entry_file(tmp_path, "notes/bomb.md")
    assert "\n" not in info.value.message
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # KB: well under 50 MB


def test_catalog_reports_the_bomb_as_unreadable(tmp_path):
    _write(tmp_path / "notes" / "bomb.md", LAUGHS)
    catalog = Catalog(tmp_path)
    try:
        report = catalog.refresh()
        assert "notes/bomb.md" in report.errors and catalog.count() == 0
    finally:
        catalog.close()


@pytest.mark.parametrize("raw", [
    "a: &a [*a]",                                         # an alias inside its own anchor
    "deep: " + "[" * 40 + "]" * 40,                        # flow nesting
    "deep:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 40)) + "  " * 40 + "v: 1",  # block nesting
    "deep:\n" + "- " * 40 + "x",                           # compact block sequences
])
def test_cycles_and_deep_nesting_are_refused(raw):
    with pytest.raises(CorruptEntry, match="refers to itself|nests deeper"):
        codec.parse(f"---\n{raw}\n---\nbody\n")


def test_a_few_aliases_and_moderate_nesting_still_read():
    entry = codec.parse("---\ntitle: R&D\nbase: &b {x: 1}\nother: *b\nnest: [[[[1]]]]\n---\nbody\n")
    assert entry.title == "R&D" and entry.extra["other"] == {"x": 1}


def test_frontmatter_over_the_size_limit_is_refused():
    big = "---\n" + "".join(f"k{i}: {'v' * 60}\n" for i in range(5000)) + "---\nbody\n"
    with pytest.raises(CorruptEntry, match="larger than 256 KB"):
        codec.parse(big)


def test_escaped_nul_in_a_quoted_value_is_corrupt_like_a_raw_one():
    with pytest.raises(CorruptEntry, match="NUL"):
        codec.parse('---\ntitle: "a\\0b"\n---\nbody\n')


# -- task 3: only regular files are opened ---------------------------------------------------------
@needs_fifo
def test_fifo_named_like_an_entry_is_never_opened(tmp_path):
    _write(tmp_path / "notes" / "real.md", "---\nid: r1\ntitle: Real\n---\nbody\n")
    os.mkfifo(tmp_path / "notes" / "pipe.md")
    os.symlink(tmp_path / "notes" / "pipe.md", tmp_path / "notes" / "link.md")
    assert [rel for rel, _ in _in_thread(lambda: sorted(iter_entry_files(tmp_path)))] == ["notes/real.md"]
    for rel in ("notes/pipe.md", "notes/link.md"):
        with pytest.raises(NotRegularFile):
            _in_thread(lambda rel=rel: read_entry_file(tmp_path, rel))
    catalog = Catalog(tmp_path)
    try:
        _in_thread(catalog.refresh)
        assert catalog.ids() == ["r1"]
    finally:
        catalog.close()


@needs_fifo
def test_fifos_in_engine_files_are_never_opened(tmp_path):
    (tmp_path / "notes").mkdir()
    os.mkfifo(tmp_path / "config.md")
    os.mkfifo(tmp_path / "notes" / "INDEX.md")
    (tmp_path / trash.TRASH_DIR).mkdir()
    os.mkfifo(tmp_path / trash.TRASH_DIR / "x1--gone.md")
    os.mkfifo(tmp_path / trash.TRASH_DIR / trash.AUDIT_FILE)
    (tmp_path / versions.VERSIONS_DIR / "v1").mkdir(parents=True)
    os.mkfifo(tmp_path / versions.VERSIONS_DIR / "v1" / "v1.md")
    (tmp_path / sidecars.FULL_DIR).mkdir()
    os.mkfifo(tmp_path / sidecars.FULL_DIR / "s1.md")
    os.mkfifo(tmp_path / "notes" / versions.SPLIT_RECORD)

    with pytest.raises(InvalidInput, match="config.md cannot be read"):
        _in_thread(lambda: load_settings(tmp_path))
    assert _in_thread(lambda: indexes.read_description(tmp_path, "notes")) == ""
    assert _in_thread(lambda: trash.list_trash(tmp_path)) == []
    assert _in_thread(lambda: versions.list_snapshots(tmp_path, "v1")) == {}
    with pytest.raises(NotFound):
        _in_thread(lambda: versions.read_snapshot(tmp_path, "v1", 1))
    assert _in_thread(lambda: versions.read_split_record(tmp_path, "notes")) is None
    assert _in_thread(lambda: sidecars.exists(tmp_path, ".full/s1.md")) is False
    with pytest.raises(NotRegularFile):
        _in_thread(lambda: sidecars.read_bytes(tmp_path, ".full/s1.md"))


def test_socket_is_not_read_and_limits_apply(tmp_path):
    path = tmp_path / "s.md"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(path))
        with pytest.raises(NotRegularFile):
            _in_thread(lambda: read_regular_bytes(path))
    finally:
        sock.close()
    _write(tmp_path / "big.md", "x" * 100)
    assert read_regular_bytes(tmp_path / "big.md", 100) == b"x" * 100
    with pytest.raises(FileTooLarge):
        read_regular_bytes(tmp_path / "big.md", 99)


def test_device_is_not_read():
    with pytest.raises(NotRegularFile):
        _in_thread(lambda: read_regular_bytes("/dev/zero", follow_symlinks=True))


# -- task 4: one validated id; nothing written outside the root -------------------------------------
def test_id_rule():
    assert valid_id("mem_20260327_153000") and valid_id(new_id()) and valid_id("a" * 64)
    for bad in ("", "../x", "a/b", ".hidden", "a" * 65, "abc\n", "a b", None, 12):
        assert not valid_id(bad)
    with pytest.raises(InvalidInput, match="not a valid entry id"):
        require_id("../../outside2/forgotten")


def test_an_invalid_id_read_from_a_file_is_no_id_but_kept(tmp_path):
    _write(tmp_path / "notes" / "f.md", "---\nid: ../../outside2/forgotten\ntitle: Forgotten\n---\nbody\n")
    entry = read_entry_file(tmp_path, "notes/f.md")
    assert entry.id == "" and entry.extra[INVALID_ID_KEY] == "../../outside2/forgotten"
    again = codec.parse(codec.render(entry))
    assert again.id == "" and again.extra == entry.extra


def test_trashing_an_entry_with_a_hand_made_id_stays_in_the_root(tmp_path):
    root = tmp_path / "root"
    _write(root / "notes" / "f.md", "---\nid: ../../outside2/forgotten\ntitle: Forgotten\n---\nbody\n")
    entry = read_entry_file(root, "notes/f.md")
    rel = trash.move_to_trash(root, entry, "test", NOW)
    assert rel == ".trash/--forgotten.md" and (root / rel).is_file()
    assert not (tmp_path / "outside2").exists()
    assert [i.path for i in trash.list_trash(root)] == [rel]
    with pytest.raises(InvalidInput):  # an Entry built in code with a bad id is refused, nothing moves
        trash.move_to_trash(root, Entry(id="../evil", title="x", path="notes/g.md"), "test", NOW)


def test_paths_are_never_built_from_an_invalid_id(tmp_path):
    for bad in ("../x", "a/b", ".x", ""):
        with pytest.raises(InvalidInput):
            versions.snapshot_path(tmp_path, bad, 1)
        with pytest.raises(InvalidInput):
            sidecars.write(tmp_path, bad, b"x")


def test_writes_refuse_to_leave_the_root(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "notes").mkdir(parents=True)
    outside.mkdir()
    os.symlink(outside, root / ".versions")
    with pytest.raises(InvalidInput, match="is a symlink"):
        versions.save_snapshot(root, "e1", 1, "text")
    os.symlink(outside, root / "notes" / "away")
    with pytest.raises(InvalidInput, match="leads outside"):
        atomic_write_text(root / "notes" / "away" / "x.md", "x", root=root)
    with pytest.raises(InvalidInput, match="outside"):
        check_write_target(root, root / ".." / "outside" / "x.md")
    with pytest.raises(InvalidInput, match="memory root"):
        check_write_target(root, root)  # the root itself is not a file to write
    os.symlink(root / "notes", root / ".full")  # points inside the root, still an engine folder as a symlink
    with pytest.raises(InvalidInput, match="is a symlink"):
        sidecars.write(root, "e1", b"x")
    _write(root / "notes" / "a.md", "a")
    with pytest.raises(InvalidInput):
        atomic_move(root / "notes" / "a.md", outside / "a.md", root=root)
    os.symlink(outside, root / ".cache")
    with pytest.raises(InvalidInput, match="is a symlink"):
        Catalog(root)
    assert list(outside.iterdir()) == [] and (root / "notes" / "a.md").exists()


# -- task 5: reserved names are not entries; portable names ---------------------------------------
@pytest.mark.parametrize("rel", ["notes/INDEX.md", "notes/index.MD".replace(".MD", ".md"), "notes/Config.md",
                                 ".trash/x.md", "notes/.hidden/x.md", "top.md", "notes/README.md"])
def test_reserved_names_are_never_parsed_as_entries(tmp_path, rel):
    _write(tmp_path / rel, "---\nid: r1\ntitle: R\n---\nbody\n")
    with pytest.raises(NotFound):
        read_entry_file(tmp_path, rel)
    assert [r for r, _ in iter_entry_files(tmp_path)] == []


@pytest.mark.parametrize("bad", ["CON", "a/nul", "a/Com1.txt", "lpt9.md", "aux/b", "a/b.", "é" * 51])
def test_unportable_category_levels_are_refused(bad):
    with pytest.raises(InvalidInput):
        validate_category(bad)


def test_portable_categories_still_pass():
    assert validate_category("console/comet/con-notes") == "console/comet/con-notes"
    assert validate_category("é" * 50) == "é" * 50


@pytest.mark.parametrize("title,slug", [("Index", "index-entry"), ("INDEX", "index-entry"), ("CON", "con-entry"),
                                        ("com1", "com1-entry"), ("Nul", "nul-entry"), ("Index of things", "index-of-things"),
                                        ("Claude", "claude")])
def test_slugs_are_never_reserved_names(title, slug):
    assert slugify(title) == slug


@pytest.mark.parametrize("title,stem", [("config", "config-entry"), ("Readme", "readme-entry"), ("CLAUDE", "claude-entry"),
                                        ("index", "index-entry"), ("memory", "memory-entry"), ("agents", "agents-entry")])
def test_entry_file_names_are_never_reserved(tmp_path, title, stem):
    assert file_slug(title) == stem
    assert unique_entry_path(tmp_path, "notes", title) == f"notes/{stem}.md"


# -- task 6: strings that cannot be written ---------------------------------------------------------
@pytest.mark.parametrize("field,change", [
    ("title", {"title": "a\x00b"}),
    ("body", {"body": "bad \ud800 half"}),
    ("tags", {"tags": ["ok", "bad\udfff"]}),
    ("related", {"related": ["x\x00"]}),
    ("category", {"category": "a\ud834"}),
    ("extra field 'deep'", {"extra": {"deep": {"list": [1, {"k": "v\x00"}]}}}),
    ("extra field 'obj'", {"extra": {"obj": object()}}),
    ("extra field", {"extra": {"key\x00": 1}}),
    ("history", {"history": [{"version": 1, "date": "2026-01-01", "summary": "s\x00"}]}),
])
def test_unwritable_values_are_a_clear_invalid_input(field, change):
    entry = Entry(id="e1", title="ok", body="ok\n").copy(**change)
    with pytest.raises(InvalidInput) as info:
        codec.render(entry)
    assert field in info.value.message


def test_writable_extras_still_render():
    entry = Entry(id="e1", title="ok", extra={"n": 1, "f": 0.5, "d": NOW, "l": [1, "two", None], "m": {"a": True}})
    assert codec.parse(codec.render(entry)).extra["m"] == {"a": True}
    assert require_id("e1") == "e1"


def test_a_sidecar_larger_than_any_entry_is_not_read(tmp_path):
    """No original written here passes the entry size limit: a bigger .full/ file is planted and
    would cost every index of its entry seconds of embedding; the entry's own body stands in."""
    from memstrata.storage.catalog import ENTRY_FILE_MAX_BYTES

    (tmp_path / sidecars.FULL_DIR).mkdir()
    (tmp_path / sidecars.FULL_DIR / "abcdef123456.md").write_bytes(b"word " * (ENTRY_FILE_MAX_BYTES // 5 + 1))
    with pytest.raises(CorruptEntry, match="larger than any entry file"):
        sidecars.original_body(tmp_path, ".full/abcdef123456.md")
    entry = Entry(id="abcdef123456", title="stub", body="The stub kept in the tree.\n", layer="L2",
                  full_content_file=".full/abcdef123456.md")
    assert sidecars.full_body(tmp_path, entry) == "The stub kept in the tree.\n"
    (tmp_path / sidecars.FULL_DIR / "abcdef123456.md").write_text("---\nid: abcdef123456\n---\n\nThe original.\n")
    assert sidecars.full_body(tmp_path, entry) == "The original.\n"
