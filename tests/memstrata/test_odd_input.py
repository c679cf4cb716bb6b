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
                      "not indexed or shown until it is taken out of the file"], done.stderr
    m = Memory(vault, embedder=embedder)
    assert m.recall("guacamole user mapping").results[0].path == "Network/Guacamole.md"
    assert m.recall("google dorking filetype").results[0].path == "Network/OSINT.md"
    doctor = mem(vault, "doctor", "--json")
    found = [(f["kind"], f.get("path")) for f in json.loads(doctor.stdout)["findings"]]
    assert found == [("secret", "Network/Keys.md")], doctor.stdout
    assert key not in doctor.stdout + doctor.stderr + done.stderr
