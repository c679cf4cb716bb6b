"""Odd input found by reviewers: YAML tags that are numbers or booleans, JSONL tags that are objects,
a CRLF note given a new body; and hostile files at `mem write`, `mem import` and `mem init --adopt`
(each a one-line error or notice, never a traceback, never a user's file lost or rewritten)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.features.transfer_formats import entry_from_record
from memstrata.storage import codec
from memstrata.errors import InvalidInput

MEM = str(Path(sys.executable).parent / "mem")


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:00:00Z")
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def mem(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, MEMSTRATA_SERVICE="off", MEMSTRATA_NOW="2026-11-30T10:00:00Z")
    return subprocess.run([MEM, *args, "--root", str(root)], env=env, input=stdin,
                          capture_output=True, text=True, timeout=300)


# -- 1. tags a note gives as YAML numbers, booleans and dates -----------------------------------
def test_yaml_scalars_in_tags_are_read_as_the_text_their_owner_typed():
    data, body = codec.split_frontmatter("---\ntags: [1, true, 2.5, 2024-05-01, ~, {a: 1}, [x, y]]\n---\nbody\n")
    entry = codec.entry_from_frontmatter(data, body)
    assert entry.tags == ["1", "true", "2.5", "2024-05-01", "x", "y"]  # no "True", no "{'a': 1}"
    assert codec.entry_from_frontmatter({"tags": False}, "b").tags == ["false"]
    assert codec.entry_from_frontmatter({"related": [7, "[[Other]]"]}, "b").related == ["7", "[[Other]]"]
    from memstrata.retrieval import names

    odd = codec.entry_from_frontmatter({"aliases": [1, {"b": 2}, True, "DHCP"], "alias": {"x": 1}}, "b")
    assert names.aliases(odd) == ["1", "true", "DHCP"]


def test_a_note_tagged_with_a_number_and_a_boolean_is_found_by_them_and_never_rewritten(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "Net").mkdir(parents=True)
    note = vault / "Net/ports.md"
    note.write_text("---\ntags: [1, true]\n---\nThe SSH daemon listens on port 22 of the bastion host.\n")
    other = vault / "Net/dns.md"
    other.write_text("---\ntags: [dns]\n---\nThe resolver forwards to 9.9.9.9 for every zone.\n")
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    adopted = note.read_text()
    for tag in ("true", "1"):
        hits = m.recall("which port does ssh listen on?", tags=[tag]).results
        assert [h.path for h in hits] == ["Net/ports.md"], tag
        assert [e.path for e in m.list(tags=[tag])] == ["Net/ports.md"], tag
    assert m.read("Net/ports.md").tags == ["1", "true"]
    assert note.read_text() == adopted  # read as strings, never written back as strings
    assert adopted.endswith("tags: [1, true]\n---\nThe SSH daemon listens on port 22 of the bastion host.\n")


def test_a_tag_added_keeps_the_other_tags_as_their_owner_wrote_them(tmp_path, clock, embedder):
    """`mem update --tag x` on `tags: [1, true]` wrote `['1', 'true', x]`: the user's numbers,
    booleans and dates stay as written, in a vault's note and in a hand-edited entry alike."""
    vault = tmp_path / "vault"
    vault.mkdir()
    note = vault / "ports.md"
    note.write_text("---\ntags: [1, true, 2.5, 2024-05-01, ssh]\nrelated: [202301011200]\n---\nSSH listens on 22.\n")
    assert mem(vault, "init", "--adopt").returncode == 0
    done = mem(vault, "update", "ports.md", "--tag", "x", "--untag", "2.5")
    assert done.returncode == 0, done.stderr
    assert "tags: [1, true, 2024-05-01, ssh, x]\nrelated: [202301011200]\n" in note.read_text()
    m = Memory(vault, embedder=embedder)
    assert m.read("ports.md", count_access=False).tags == ["1", "true", "2024-05-01", "ssh", "x"]

    root = tmp_path / "tree"
    tree = Memory(root, embedder=embedder)
    tree.init()
    entry_id = tree.write("The bastion host runs sshd.", title="Bastion").id
    path = next(root.glob("general/*.md"))
    path.write_text(path.read_text().replace("tags: []", "tags: [7, false]"))
    assert mem(root, "update", entry_id, "--tag", "ops").returncode == 0
    assert "tags: [7, false, ops]\n" in path.read_text()


# -- 2. JSONL tags that are no strings ---------------------------------------------------------
def test_jsonl_tags_and_links_that_are_objects_or_nested_lists_refuse_their_row_by_line(tmp_path, clock, embedder):
    rows = [
        {"title": "fine", "body": "A row with plain tags.", "tags": ["a", 2]},
        {"title": "object", "body": "Tags that are an object.", "tags": {"a": 1}},
        {"title": "nested", "body": "Tags that are a list of lists.", "tags": [["a", "b"]]},
        {"title": "boolean", "body": "A tag that is a boolean.", "tags": [True]},
        {"title": "links", "body": "Related ids that are an object.", "related": {"x": 1}},
        {"title": "words", "body": "Tags given as one line of words.", "tag": "alpha beta"},
    ]
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    m = Memory(tmp_path / "r", embedder=embedder)
    m.init()
    report = m.import_jsonl(source)
    errors = {e["line"]: e["error"] for e in report["errors"]}
    assert sorted(errors) == [2, 3, 4, 5], report
    assert '"tags" must be a list of strings, not a mapping' in errors[2]
    assert '"tags" must be strings, not a list' in errors[3]
    assert '"tags" must be strings, not the boolean true' in errors[4]
    assert '"related" must be a list of strings, not a mapping' in errors[5]
    tags = {e.title: e.tags for e in m.list()}
    assert tags["fine"] == ["a", "2"] and tags["words"] == ["alpha", "beta"]
    assert not any("{" in t for ts in tags.values() for t in ts)


def test_a_jsonl_row_is_refused_by_the_same_rule_in_process():
    with pytest.raises(InvalidInput, match="not a mapping"):
        entry_from_record({"body": "x", "tags": {"a": 1}}, None)
    assert entry_from_record({"body": "x", "tags": None, "created": "2026-01-01"}, None).tags == []


# -- 3. a CRLF note keeps its line ends -------------------------------------------------------
def test_an_update_of_a_crlf_note_writes_the_new_body_with_crlf(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    vault.mkdir()
    crlf = vault / "windows.md"
    crlf.write_bytes(b"---\r\ntitle: Windows note\r\n---\r\n\r\nFirst line.\r\nSecond line.\r\n")
    lf = vault / "unix.md"
    lf.write_bytes(b"---\ntitle: Unix note\n---\n\nFirst line.\n")
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    adopted = crlf.read_bytes()
    entry_id = m.read("windows.md").id
    assert m.update(entry_id, "New first line.\nNew second line.\n").action == "updated"
    raw = crlf.read_bytes()
    assert raw.count(b"\n") == raw.count(b"\r\n") and raw.endswith(b"New first line.\r\nNew second line.\r\n"), raw
    assert m.update(entry_id, "New first line.\nNew second line.\n").action == "unchanged"  # the same text
    m.update("unix.md", "Other text.\n")
    assert b"\r" not in lf.read_bytes()
    m.revert(entry_id, to=1)
    assert crlf.read_bytes() == adopted


def test_mem_update_from_the_shell_keeps_a_crlf_note_crlf(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    vault.mkdir()
    note = vault / "w.md"
    note.write_bytes(b"---\r\ntitle: W\r\n---\r\n\r\nOld.\r\n")
    Memory(vault, embedder=embedder).init(adopt=True)
    done = mem(vault, "update", "w.md", "Line one\nline two")
    assert done.returncode == 0, done.stderr
    raw = note.read_bytes()
    assert raw.count(b"\n") == raw.count(b"\r\n"), raw


# -- 4. tutorial notes are found; a real-looking key is named, not silently dropped ---------------
def test_tutorial_notes_are_indexed_and_a_note_with_a_real_looking_key_is_named(tmp_path, clock, embedder):
    import random
    import string

    vault = tmp_path / "vault"
    (vault / "Network").mkdir(parents=True)
    (vault / "Network/Guacamole.md").write_text(  # as in the zettel corpus: a config example
        "Guacamole user mapping for the remote desktop gateway.\n\n```\n<authorize\n"
        '        username="someguacuser"\n        password="THEENCRYPTEDPASSWORDFROMABOVE"\n'
        '        encoding="md5">\n```\n')
    (vault / "Network/OSINT.md").write_text(  # an image pasted from Word, as in the zettel corpus
        "Google dorking finds exposed spreadsheets with filetype operators.\n\n"
        "![](file:///C:/Users/Digit/AppData/Local/Temp/lu17828v2iv72.tmp/lu17828v2ivyj_tmp_42a7b30a34862fd4.png)\n")
    rng = random.Random(5)
    key = "AK" + "IA" + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))
    (vault / "Network/Keys.md").write_text(f"The deploy user of the backup bucket uses {key} for uploads.\n")
    done = mem(vault, "init", "--adopt")
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "credential" in line]
    assert warned == ["warning: Network/Keys.md: possible credential (AWS access key at body line 1, column 43): "
                      "not indexed or shown until it is taken out of the file (or, if it is no secret, "
                      "`mem secrets allow Network/Keys.md`)"], done.stderr
    m = Memory(vault, embedder=embedder)
    assert m.recall("guacamole user mapping").results[0].path == "Network/Guacamole.md"
    assert m.recall("google dorking filetype").results[0].path == "Network/OSINT.md"
    doctor = mem(vault, "doctor", "--json")
    found = [(f["kind"], f.get("path")) for f in json.loads(doctor.stdout)["findings"]]
    assert found == [("secret", "Network/Keys.md")], doctor.stdout
    assert key not in doctor.stdout + doctor.stderr + done.stderr


# -- 5. hostile input at write, import and adopt -------------------------------------------------
def test_text_given_by_file_or_stdin_drops_a_byte_order_mark_and_is_never_read_past_64_mb(tmp_path):
    from memstrata.cli.output import read_body

    (tmp_path / "bom.txt").write_bytes("\ufeffA note saved by Notepad.\n".encode("utf-8"))
    (tmp_path / "utf16.txt").write_bytes("A note saved as UTF-16.\n".encode("utf-16"))
    (tmp_path / "latin1.txt").write_bytes("Caf\xe9\n".encode("latin-1"))
    assert read_body(None, str(tmp_path / "bom.txt")) == "A note saved by Notepad.\n"
    with pytest.raises(InvalidInput, match="utf16.txt is not UTF-8 text: it starts as UTF-16 does"):
        read_body(None, str(tmp_path / "utf16.txt"))
    with pytest.raises(InvalidInput, match="latin1.txt is not UTF-8 text"):
        read_body(None, str(tmp_path / "latin1.txt"))
    with pytest.raises(InvalidInput, match="/dev/zero holds more than 64 MB"):
        read_body(None, "/dev/zero")  # an endless file: refused, not read into memory


def test_a_title_with_control_characters_is_refused_and_a_derived_one_drops_them(tmp_path, clock, embedder):
    m = Memory(tmp_path / "r", embedder=embedder)
    m.init()
    with pytest.raises(InvalidInput, match="control characters"):
        m.write("Deploys run at noon.", title="Deploy \x1b[31mtime", category="ops")
    written = m.write("\x1b]52;c;aGk=\x07Deploys run at noon.\n", category="ops")
    assert m.read(written.id).title == "]52;c;aGk=Deploys run at noon."  # no ESC or BEL left to obey


def test_hostile_jsonl_rows_are_refused_by_line_and_odd_values_read_back(tmp_path, clock, embedder):
    rows = ["\ufeff" + json.dumps({"title": "first", "body": "The first row, after a byte order mark."}),
            '{"title": "deep", "body": "x", "extra": ' + "[" * 5000 + "]" * 5000 + "}",
            json.dumps({"title": {"a": 1}, "body": "A title that is an object."}),
            json.dumps({"title": "folders", "body": "A category that is a list.", "category": ["a", "b"]}),
            '{"title": "counts", "body": "Counts of infinity.", "version": 1e400, "access_count": 1e400}',
            json.dumps({"title": "old", "body": "Written in the year one.", "created": "0001-01-01T00:00:00Z"})]
    source = tmp_path / "rows.jsonl"
    source.write_bytes("\n".join(rows).encode("utf-8") + b"\n")
    m = Memory(tmp_path / "r", embedder=embedder)
    m.init()
    report = m.import_jsonl(source)
    errors = {e["line"]: e["error"] for e in report["errors"]}
    assert errors == {2: "nested too deeply to read as JSON", 3: '"title" must be a string, not a mapping (an object)',
                      4: '"category" must be a string, not a list'}, report
    by_title = {e.title: e for e in m.list()}
    assert set(by_title) == {"first", "counts", "old"}
    assert by_title["counts"].version == 1 and by_title["counts"].access_count == 0
    old = m.read(by_title["old"].id)
    assert old.created.year == 1  # written zero-padded: it reads back
    utf16 = tmp_path / "utf16.jsonl"
    utf16.write_bytes((json.dumps({"body": "x"}) + "\n").encode("utf-16"))
    with pytest.raises(InvalidInput, match="UTF-16 text; a JSONL file is UTF-8"):
        m.import_jsonl(utf16)


def test_adopted_notes_with_odd_dates_are_read_and_kept_and_unreadable_ones_named(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    odd = {  # YAML cannot build these dates, or they are no dates: the note is read, the date is none
        "Notes/zero.md": "---\nupdated: 0000-00-00\nexpires: 2024-02-30\n---\nThe zero date note about rsync.\n",
        "Notes/one.md": "---\nexpires: 1\ncreated: 0001-01-01 00:00:00 +14:00\n---\nThe backup runs at night.\n",
        "Notes/late.md": "---\nlast_access: 9999-12-31T23:59:59-23:59\n---\nA note from the end of time.\n",
    }
    unreadable = {
        "Notes/list.md": "---\n- a\n- b\n---\nA list for frontmatter.\n",
        "Notes/laughs.md": "---\na: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)) + "---\nha\n",
    }
    for rel, text in {**odd, **unreadable}.items():
        (vault / rel).write_text(text)
        (vault / rel).chmod(0o644)
    (vault / "Notes/latin1.md").write_bytes("Caf\xe9 notes.\n".encode("latin-1"))
    done = mem(vault, "init", "--adopt")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    for rel in [*unreadable, "Notes/latin1.md"]:
        assert any(line.startswith(f"warning: not adopted: {rel} (unreadable: ") for line in done.stderr.splitlines()), rel
        if rel in unreadable:
            assert (vault / rel).read_text() == unreadable[rel]
    m = Memory(vault, embedder=embedder)
    for rel in odd:
        entry = m.read(rel)
        assert entry.id and (vault / rel).read_text().endswith(odd[rel].split("---\n", 1)[1]), rel
    assert m.read("Notes/one.md").expires is None
    m.maintain()
    assert (vault / "Notes/one.md").exists()  # `expires: 1` is no date in 1970: never sent to the trash
    m.update("Notes/zero.md", "The zero date note, rewritten.\n")
    assert (vault / "Notes/zero.md").stat().st_mode & 0o777 == 0o644  # the owner's permissions stay
    assert "updated: 0000-00-00\n" in (vault / "Notes/zero.md").read_text()


def test_infinite_numbers_and_dates_with_no_utc_moment_in_a_users_keys_leave_the_tree_working(tmp_path, clock, embedder):
    """One note's `rating: .inf` (or `.nan`, `1.0e+999`) made every sync, list and doctor of the tree
    fail ("malformed JSON": SQLite's JSON refuses Infinity), and a `due:` date with no UTC moment
    stopped the whole adopt. Both are read as written; the note is found and never rewritten."""
    vault = tmp_path / "vault"
    vault.mkdir()
    odd = ("---\nrating: .inf\nid: .nan\nscore: 1.0e+999\naliases: [.nan]\ndue: 9999-12-31T23:59:59-23:59\n---\n"
           "The kiln fires at 1,240 degrees for stoneware.\n")
    (vault / "kiln.md").write_text(odd, encoding="utf-8")
    (vault / "plain.md").write_text("Glazes need a second firing.\n", encoding="utf-8")
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    assert len(m.list()) == 2 and m.doctor().healthy
    assert m.recall("how hot does the kiln fire stoneware?").results[0].path == "kiln.md"
    assert (vault / "kiln.md").read_text(encoding="utf-8").endswith(odd.split("---\n", 1)[1].split("---\n", 1)[1])
    assert "rating: .inf" in (vault / "kiln.md").read_text(encoding="utf-8")


def test_a_jsonl_row_with_infinity_is_kept_and_one_with_a_5000_digit_number_is_refused_by_line(tmp_path, clock,
                                                                                                embedder):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"title": "r", "body": "the ratio is unbounded", "foo": Infinity}\n'
                    '{"title": "h", "body": "huge", "n": ' + "9" * 5000 + '}\n'
                    '{"title": "ok", "body": "a fine row"}\n', encoding="utf-8")
    m = Memory(tmp_path / "tree", embedder=embedder)
    m.init()
    report = m.import_path(str(rows))
    assert report["imported"] == 2 and [e["line"] for e in report["errors"]] == [2], report
    assert sorted(e.title for e in m.list()) == ["ok", "r"] and m.doctor().healthy
