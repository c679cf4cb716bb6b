"""Bad input, through the API, the CLI, import and MCP: one clear line, and nothing already stored is harmed.

Also the security rules: nothing is read or written outside the root (symlinks included),
the root and its files are private (0700/0600), and the secret guard covers every way in.
"""
from __future__ import annotations

from datetime import timedelta

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.errors import CorruptEntry, InvalidInput, MemstrataError, NotFound, SecretDetected

SECRET = "sk-" + "ant-" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz"  # built at run time: no secret in this file


def snapshot(root: Path) -> dict:
    """Every file under the root except derived stores and the lock, with its bytes."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith((".vectors", ".cache", ".lock", ".mem.sock")):
            out[rel] = path.read_bytes()
    return out


@pytest.fixture
def stored(tmp_path, embedder):
    root = tmp_path / "mem"
    m = Memory(root, embedder=embedder)
    m.init()
    ids = [m.write("Postgres for alpha, because of JSONB.", title="DB choice", category="projects/alpha").id,
           m.write("Standup at 9:30.", title="Standup", category="meetings").id]
    return root, ids, snapshot(root)


def cli(root, *args, stdin=None):
    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args, "--root", str(root)], input=stdin,
                          capture_output=True, env=env, timeout=300)


def one_line_error(proc, code):
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == code, (proc.returncode, err, proc.stdout)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and err.startswith("mem: error:")
    return err


BAD_WRITES = [
    (dict(body=b"\x89PNG\r\n\x1a\n\xff\xfe"), "not UTF-8"),
    (dict(body="text with a NUL \x00 byte"), "NUL"),
    (dict(body="ok", title="title with NUL \x00"), "NUL"),
    (dict(body="", title=None), "title or a non-empty body"),
    (dict(body="   \n\n", title="   "), "title or a non-empty body"),
    (dict(body="lone surrogate \udc80"), "not valid Unicode"),
    (dict(body="x", category=".."), "cannot leave the root"),
    (dict(body="x", category="a/../../b"), "cannot leave the root"),
    (dict(body="x", category="/etc"), "absolute path"),
    (dict(body="x", category="~/secrets"), "'~'"),
    (dict(body="x", category="C:\\Windows"), "absolute path"),
    (dict(body="x", category=".trash"), "hidden level"),
    (dict(body="x", category="a//b"), "empty level"),
    (dict(body="x", id="../../etc/passwd"), "may only hold"),
    (dict(body="x", id="/abs"), "may only hold"),
    (dict(body="x", id="~root"), "may only hold"),
    (dict(body="x", id=".."), "may only hold"),
    (dict(body="x", importance="whenever"), "importance must be"),
    (dict(body="x", expires="0001-01-01"), "is not after now"),
    (dict(body="x", expires="not a date"), "not a date"),
    (dict(body=f"the key is {SECRET}"), "credential"),
    (dict(body="ok", title=f"key {SECRET}"), "credential"),
    (dict(body="ok", tags=[SECRET]), "credential"),
]


@pytest.mark.parametrize("kwargs,message", BAD_WRITES, ids=[m for _, m in BAD_WRITES])
def test_bad_writes_refused_with_one_line_nothing_harmed(stored, embedder, kwargs, message):
    root, ids, before = stored
    m = Memory(root, embedder=embedder)
    with pytest.raises(MemstrataError) as info:
        m.write(**kwargs)
    assert message.lower() in info.value.message.lower() and "\n" not in info.value.message
    assert snapshot(root) == before
    assert {e.id for e in m.list()} == set(ids)


def test_twenty_megabyte_body(stored, embedder, tmp_path):
    root, ids, before = stored
    m = Memory(root, embedder=embedder)
    big = "word " * (4 * 1024 * 1024)  # 20 MB
    with pytest.raises(InvalidInput) as info:
        m.write(big, title="huge")
    assert info.value.message == "body is 20.0 MB; the limit is 1.0 MB (max_entry_bytes in config.md)"
    with pytest.raises(InvalidInput):
        m.update(ids[0], big)
    f = tmp_path / "big.txt"
    f.write_text(big)
    err = one_line_error(cli(root, "write", "--file", str(f), "--title", "huge"), 2)
    assert "20.0 MB" in err and "max_entry_bytes" in err
    assert snapshot(root) == before
    m.config_set("max_entry_bytes", 8 * 1024 * 1024)  # the limit is a setting ...
    assert Memory(root, embedder=embedder).settings.max_entry_bytes == 8 * 1024 * 1024
    with pytest.raises(InvalidInput, match="a whole number from 0 to 8,388,608"):  # ... below the 16 MB no file is read past
        m.config_set("max_entry_bytes", 32 * 1024 * 1024)


def test_an_expiry_not_after_now_is_refused_by_write_and_update(stored, embedder):
    """`mem write --expires 0001-01-01` was taken (the entry went to the trash at the next maintain),
    and so was today's date (its midnight had passed: trashed by the next maintain too); a later
    date is taken, and `--expires ''` still clears an expiry."""
    root, ids, before = stored
    err = one_line_error(cli(root, "write", "x", "--expires", "0001-01-01"), 2)
    assert "expires 0001-01-01 is not after now" in err
    one_line_error(cli(root, "update", ids[0], "--expires", "2020-01-01"), 2)
    m = Memory(root, embedder=embedder)
    now = m.state.now()
    one_line_error(cli(root, "update", ids[0], "--expires", now.date().isoformat()), 2)
    assert snapshot(root) == before
    tomorrow = (now + timedelta(days=1)).date().isoformat()
    assert m.update(ids[0], expires=tomorrow).action == "updated"
    assert m.read(ids[0], count_access=False).expires.date().isoformat() == tomorrow
    assert cli(root, "update", ids[0], "--expires", "").returncode == 0
    assert m.read(ids[0], count_access=False).expires is None


def test_an_imported_row_past_max_entry_bytes_is_refused_by_its_line(stored, embedder, tmp_path):
    """`mem import` applies the limit `mem write` does: the row past it is refused by its line
    number, the others go in (it was written whatever its size)."""
    root, ids, _ = stored
    m = Memory(root, embedder=embedder)
    m.config_set("max_entry_bytes", 1000)
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in [
        {"title": "small", "body": "A small note about kites."},
        {"title": "big", "body": "word " * 400},
        {"id": ids[0], "title": "DB choice", "body": "Postgres. " * 200}]))  # an update past the limit too
    err = one_line_error(cli(root, "import", str(rows)), 2)
    assert "line 2: body is 2,000 bytes; the limit is 1,000 bytes (max_entry_bytes in config.md)" in err
    report = json.loads(cli(root, "import", str(rows), "--json").stdout)
    assert {e["line"] for e in report["errors"]} == {2, 3}
    assert sorted(e.title for e in m.list()) == ["DB choice", "Standup", "small"]
    assert "JSONB" in m.read(ids[0], count_access=False).body


def test_cli_bad_input_one_line_errors(stored, tmp_path):
    root, ids, before = stored
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\x01\x02\xff" * 100)
    one_line_error(cli(root, "write", "--file", str(binary)), 2)
    one_line_error(cli(root, "write", "-", "--title", "t", stdin=b"\xff\xfe\x00bad"), 2)
    one_line_error(cli(root, "write", "x", "--category", "../../etc"), 2)
    one_line_error(cli(root, "write", "x", "--category", "/etc"), 2)
    one_line_error(cli(root, "write", "x", "--category", "~"), 2)
    one_line_error(cli(root, "write", ""), 2)
    one_line_error(cli(root, "read", "../../../etc/passwd"), 2)
    one_line_error(cli(root, "read", "/etc/passwd"), 2)
    one_line_error(cli(root, "read", "~/x.md"), 2)
    one_line_error(cli(root, "delete", "../meetings"), 2)
    one_line_error(cli(root, "write", f"token {SECRET}"), 5)
    assert snapshot(root) == before


def test_odd_but_valid_text_is_kept_exactly(stored, embedder):
    root, ids, before = stored
    m = Memory(root, embedder=embedder)
    rtl = "שלום עולם — مرحبا بالعالم \u202eevil.exe\u202c"
    combining = "e\u0301te\u0301 cafe\u0301 Z\u0351\u0320a\u0352lgo"
    cases = [(rtl, rtl), (combining, combining), ("?!...///***", "punctuation only"), ("x" * 5000, "long title")]
    for title, body in cases:
        r = m.write(body + " body", title=title, category="odd", force=True)
        entry = m.read(r.id, count_access=False)
        assert entry.body == body + " body\n"
        assert r.path.startswith("odd/") and "/" not in r.path[len("odd/"):]
        assert len(Path(r.path).name.encode("utf-8")) <= 130
        assert entry.title == " ".join(title.split())[:300] or entry.title.endswith("…")
    assert m.write("", title="Only a title", category="odd").id  # an empty body with a title is fine
    assert Path(m.resolve(m.list(category="odd")[0].id).path).parent.name == "odd"
    assert m.doctor().healthy
    after = snapshot(root)
    assert {k: v for k, v in after.items() if k in before and not k.endswith("INDEX.md")} == \
        {k: v for k, v in before.items() if not k.endswith("INDEX.md")}


def test_hand_written_frontmatter_of_wrong_types(stored, embedder):
    root, ids, before = stored
    folder = root / "notes"
    folder.mkdir(mode=0o700)
    (folder / "types.md").write_text("---\nid: types0000001\ntitle: 42\nversion: three\ncreated: next tuesday\n"
                                     "updated: 31/12/2024\ntags: alpha, beta\nimportance: 7\nimportant: 'yes'\n"
                                     "related: single\naccess_count: many\n---\nbody\n")
    (folder / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (folder / "nofm.md").write_text("Just text, no frontmatter at all.\n")
    (folder / "nul.md").write_bytes(b"---\ntitle: x\n---\nbinary\x00inside\n")
    m = Memory(root, embedder=embedder)
    entry = m.read("types0000001", count_access=False)
    assert (entry.title, entry.version, entry.tags, entry.related, entry.access_count) == \
        ("42", 1, ["alpha", "beta"], ["single"], 0)
    assert entry.created is None and entry.importance == 0.7 and entry.important is True
    listed = {e.path for e in m.list()}
    assert "notes/types.md" in listed and "notes/nofm.md" in listed
    assert "notes/broken.md" not in listed and "notes/nul.md" not in listed
    with pytest.raises(CorruptEntry):
        m.read("notes/broken.md")
    one_line_error(cli(root, "read", "notes/broken.md"), 8)
    assert set(m.stats()["unreadable"]) == {"notes/broken.md", "notes/nul.md"}
    for rel, data in before.items():  # the files already stored are untouched
        if not rel.endswith("INDEX.md"):
            assert (root / rel).read_bytes() == data


# ----------------------------------------------------------------------------- security


def test_symlinked_category_out_of_the_root_is_refused(stored, embedder, tmp_path):
    root, ids, before = stored
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "escape")
    m = Memory(root, embedder=embedder)
    with pytest.raises(InvalidInput) as info:
        m.write("should never land outside", title="x", category="escape")
    assert "outside the memory root" in info.value.message
    with pytest.raises(InvalidInput):
        m.write("nested", title="y", category="escape/deeper")
    with pytest.raises(InvalidInput):
        m.update(ids[0], category="escape")
    assert list(outside.iterdir()) == []
    one_line_error(cli(root, "write", "x", "--category", "escape"), 2)
    assert list(outside.iterdir()) == []


def test_symlinked_entry_file_out_of_the_root_is_not_read(stored, embedder, tmp_path):
    root, ids, before = stored
    secret = tmp_path / "private.md"
    secret.write_text("---\nid: private00001\ntitle: not yours\n---\nsecret body\n")
    os.symlink(secret, root / "meetings" / "leak.md")
    m = Memory(root, embedder=embedder)
    assert "private00001" not in {e.id for e in m.list()}
    with pytest.raises(NotFound):
        m.read("private00001")
    with pytest.raises(InvalidInput):
        m.read("meetings/leak.md")
    assert "secret body" not in cli(root, "read", "meetings/leak.md").stdout.decode()
    recall = getattr(m, "recall", None)
    if recall is not None:
        hits = recall("secret body", k=5).results
        assert all(h.id != "private00001" and "secret body" not in (h.snippet or "") for h in hits)


def test_root_and_files_are_private(stored, embedder):
    root, ids, _ = stored
    m = Memory(root, embedder=embedder)
    m.write("deep", title="Deep", category="a/b/c/d")
    m.delete(ids[1])
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    loose = []
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink() or rel.startswith((".vectors", ".cache")) or path.is_socket():
            continue
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            loose.append((rel, oct(stat.S_IMODE(path.stat().st_mode))))
    assert loose == []


def test_secret_guard_on_update_and_import(stored, embedder, tmp_path):
    root, ids, before = stored
    m = Memory(root, embedder=embedder)
    with pytest.raises(SecretDetected):
        m.update(ids[0], f"now with {SECRET}")
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(json.dumps({"title": "leaky", "body": f"key {SECRET}", "category": "imported"}) + "\n"
                     + json.dumps({"title": "fine", "body": "A harmless note.", "category": "imported"}) + "\n")
    if hasattr(m, "import_jsonl"):
        report = m.import_jsonl(jsonl)
        assert report.get("imported") == 1
        assert all(SECRET not in p.read_text() for p in root.rglob("*.md"))
    assert (root / "projects").exists() and snapshot(root).get(next(iter(before))) == before[next(iter(before))]


def test_import_cannot_place_files_outside_the_root(stored, embedder, tmp_path):
    root, ids, before = stored
    m = Memory(root, embedder=embedder)
    if not hasattr(m, "import_jsonl"):
        pytest.skip("no import in this build")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "escape")
    lines = [{"title": "a", "body": "one", "category": "../../outside"},
             {"title": "b", "body": "two", "path": "../outside/b.md"},
             {"title": "c", "body": "three", "category": "escape"},
             {"title": "d", "body": "four", "full_content_file": "../../outside/d.md", "layer": "L2",
              "__full_content__": "x"}]
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text("".join(json.dumps(line) + "\n" for line in lines))
    try:
        m.import_jsonl(jsonl)
    except MemstrataError:
        pass
    assert list(outside.iterdir()) == []


def test_mcp_refuses_secrets_and_paths_outside(stored, tmp_path):
    pytest.importorskip("mcp")
    import anyio

    from .test_mcp import _session

    root, ids, before = stored
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "escape")

    async def body(session):
        results = [await session.call_tool("write", {"body": f"key {SECRET}"}),
                   await session.call_tool("write", {"body": "x", "category": "../../etc"}),
                   await session.call_tool("write", {"body": "x", "category": "escape"}),
                   await session.call_tool("read", {"ref": "../../../etc/passwd"}),
                   await session.call_tool("read", {"ref": "/etc/passwd"})]
        return results

    results = anyio.run(_session, root, body)
    for result in results:
        assert getattr(result, "is_error", None) or getattr(result, "isError", None)
        text = result.content[0].text
        assert "Traceback" not in text and len(text.splitlines()) == 1
    assert list(outside.iterdir()) == []
    assert all(SECRET not in p.read_text() for p in root.rglob("*.md"))


def test_deep_and_long_categories_are_refused_at_every_entrance(stored, tmp_path):
    """Issue 27 item 14: 2,000 levels by MCP refused at once; 55 levels of 80 characters by the CLI
    and by a tree import give one line, not "File name too long" from deep inside a write."""
    import time

    root, ids, before = stored
    deep = "/".join(["x" * 80] * 55)
    err = one_line_error(cli(root, "write", "a note", "--category", deep), 2)
    assert "levels; at most" in err and "too long" not in err.replace("bytes long", "")
    source = tmp_path / "pme" / "/".join(["y" * 80] * 40)  # deep, yet it fits PATH_MAX under a short base
    source.mkdir(parents=True)
    (tmp_path / "pme" / "ok").mkdir()
    (tmp_path / "pme" / "ok" / "fine.md").write_text("A fine note.\n")
    (source / "deep.md").write_text("A deep note.\n")
    done = cli(root, "import", str(tmp_path / "pme"), "--layout", "pme", "--json")
    report = json.loads(done.stdout)
    assert report["imported"] == 1 and "levels; at most" in report["errors"][0]["error"]
    pytest.importorskip("mcp")
    import anyio

    from .test_mcp import _session

    async def body(session):
        started = time.monotonic()
        result = await session.call_tool("write", {"body": "x", "category": "/".join(["a"] * 2000)})
        return result, time.monotonic() - started

    result, took = anyio.run(_session, root, body)
    assert (getattr(result, "isError", None) or getattr(result, "is_error", None)) and took < 10
    assert "2000 levels" in result.content[0].text and len(result.content[0].text.splitlines()) == 1
    assert snapshot(root).keys() >= before.keys() and not (root / "a").exists()


def test_an_import_row_without_text_is_refused_and_the_rest_imports(stored, tmp_path):
    """A JSONL row with only a title, an empty text or a whitespace-only body became an empty entry:
    each is refused with its line and why, the good rows import, and the exit is 2 (one line)."""
    root, ids, _ = stored
    source = tmp_path / "rows.jsonl"
    source.write_text("\n".join(json.dumps(row) for row in (
        {"title": "Only a title"}, {"title": "Empty", "text": ""}, {"title": "Blank", "body": "  \n\t "},
        {"title": "Nothing", "content": None}, {"title": "Release", "body": "The release is on Friday."})) + "\n")
    done = cli(root, "import", str(source), "--json")
    err = done.stderr.decode()
    assert done.returncode == 2 and "Traceback" not in err, err
    (err,) = [line for line in err.splitlines() if not line.startswith("importing: ")]  # the progress line aside
    assert err.startswith("mem: error: 4 rows not imported") and "line 1: the row has no text" in err
    report = json.loads(done.stdout)
    assert report["imported"] == 1 and [e["line"] for e in report["errors"]] == [1, 2, 3, 4]
    assert all('no text: give it a non-empty "body"' in e["error"] for e in report["errors"])
    titles = sorted(e.title for e in Memory(root).list())
    assert titles == ["DB choice", "Release", "Standup"]
    source.write_text(json.dumps({"title": "Only a title"}) + "\n")
    assert "nothing imported: 1 row failed, first: line 1: the row has no text" in one_line_error(
        cli(root, "import", str(source)), 2)


def test_a_numeric_setting_out_of_range_says_what_it_takes(tmp_path):
    from memstrata.errors import InvalidInput
    from memstrata.storage import config

    (tmp_path / "t").mkdir()
    for raw in ("-5", "0", "1000000000000", "abc", 1.5):
        with pytest.raises(InvalidInput, match=r"index_cache_mb must be a whole number from 8 to 1,000,000, not"):
            config._convert("index_cache_mb", raw, 128)
    assert config._convert("index_cache_mb", "64", 128) == 64 and config._convert("index_cache_mb", 64.0, 128) == 64
    with pytest.raises(InvalidInput, match=r"recall_bm25_b must be a number from 0 to 1, not '2'"):
        config._convert("recall_bm25_b", "2", 0.5)
