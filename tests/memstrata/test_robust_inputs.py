"""Defects an attacker found: a note the system will not let the engine write, oversized and
undecodable queries, output encodings, --queries as one document, hostile category names."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Memory

MEM = str(Path(sys.executable).with_name("mem"))


def _chattr(flag: str, *paths) -> bool:
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True).returncode == 0


def test_an_immutable_note_or_folder_is_skipped_with_its_reason_and_the_rest_adopted(tmp_path, embedder):
    vault = tmp_path / "vault"
    (vault / "ok").mkdir(parents=True)
    (vault / "frozen").mkdir()
    (vault / "imm.md").write_text("# imm\nimmutable note\n")
    (vault / "ok" / "y.md").write_text("# y\nyes\n")
    (vault / "frozen" / "z.md").write_text("# z\nin a frozen folder\n")
    if not _chattr("+i", vault / "imm.md", vault / "frozen"):
        pytest.skip("chattr +i needs root on a file system that has it")
    try:
        out = Memory(vault, embedder=embedder).init(adopt=True)
        assert out["adopted"] == 1
        assert "not adopted: imm.md (cannot write: Operation not permitted)" in out["skipped"]
        assert "not adopted: frozen/z.md (cannot write: Operation not permitted)" in out["skipped"]
        assert len(out["skipped"]) == 2
        assert "mem-id:" in (vault / "ok" / "y.md").read_text()
        assert not [p for p in os.listdir(vault) if p.endswith(".tmp")]
    finally:
        _chattr("-i", vault / "imm.md", vault / "frozen")


def _mem(*args, stdin: bytes | None = None, env: dict | None = None, timeout: float = 60):
    full = {**os.environ, "MEMSTRATA_SERVICE": "off", **(env or {})}
    return subprocess.run([MEM, *args], input=stdin, capture_output=True, env=full, timeout=timeout)


@pytest.fixture(scope="module")
def tree(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("robust") / "mem"
    m = Memory(root, embedder=embedder)
    m.init()
    m.write("To rename a git remote: git remote rename origin upstream.", title="rename a git remote", category="git")
    m.write("Café au lait costs 3 euros at the corner.", title="café prices", category="food")
    return root


def test_a_huge_prompt_is_cut_and_answered_within_the_hook_timeout(tree, embedder):
    prompt = "how do I rename a git remote? " + "postgres " * 2_000_000  # 18 MB
    payload = json.dumps({"prompt": prompt}).encode()
    import time

    started = time.monotonic()
    out = _mem("autoload", "--hook", "--root", str(tree), stdin=payload)
    assert time.monotonic() - started < 10  # the hook's timeout (it took 43 s)
    assert out.returncode == 0 and "rename a git remote" in out.stdout.decode()
    result = Memory(tree, embedder=embedder).autoload(prompt)
    assert any("first and last 4,096" in n for n in result.notes)
    assert len(result.context) < 9_000


def test_a_query_of_megabytes_is_refused_in_one_line(tree):
    out = _mem("recall", "rename " * 3_000, "--root", str(tree))
    assert out.returncode == 2
    assert out.stderr.decode().strip().splitlines() == [
        "mem: error: the query is 21,000 characters long; at most 16,384 "
        "(ask a question or give a few lines, not a whole document)"]


@pytest.mark.parametrize("args, what", [(["recall"], "query"), (["autoload", "--context"], "context"),
                                        (["promote", "--context"], "context")])
def test_text_that_is_not_utf8_is_refused_as_a_write_refuses_it(tree, args, what):
    out = _mem(*args, b"caf\xe9", "--root", str(tree))
    assert out.returncode == 2
    assert out.stderr.decode() == f"mem: error: {what} is not valid Unicode text (it holds a lone surrogate)\n"


def test_output_in_an_encoding_other_than_utf8_never_fails(tree):
    (tree / "food").mkdir(exist_ok=True)
    env = {"PYTHONIOENCODING": "latin-1"}
    out = _mem("recall", "café prices", "--json", "--root", str(tree), env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.decode("ascii"))["results"][0]["title"] == "café prices"
    (tree / "food" / "dash.md").write_text("# café dash\n\nCafé au lait — 3 € at 東京's corner.\n")
    for encoding in ("latin-1", "ascii"):  # a dash, a euro and kanji in neither
        out = _mem("recall", "café au lait", "--root", str(tree), env={"PYTHONIOENCODING": encoding})
        assert out.returncode == 0 and b"dash" in out.stdout, out.stderr
        out = _mem("recall", "café au lait", "--json", "--root", str(tree), env={"PYTHONIOENCODING": encoding})
        found = json.loads(out.stdout.decode("ascii"))["results"]  # escaped: ASCII whatever the notes hold
        assert any("東京" in (hit.get("snippet") or "") for hit in found), found


def test_an_export_that_runs_out_of_space_says_so_in_one_line_and_leaves_nothing(tree, tmp_path):
    out = _mem("export", "--jsonl", "/dev/full", "--root", str(tree))
    assert (out.returncode, out.stderr.decode()) == (1, "mem: error: No space left on device\n")
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(small)], capture_output=True).returncode:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        (tree / "bulk").mkdir(exist_ok=True)
        (tree / "bulk" / "big.md").write_text("# big\n\n" + "filler text " * 2000)  # more than 4 KB to export
        (small / "old.jsonl").write_text("the export before\n")
        for name in ("new.jsonl", "old.jsonl"):
            out = _mem("export", "--jsonl", str(small / name), "--root", str(tree))
            assert out.stderr.decode().splitlines()[-1] == "mem: error: No space left on device"
        assert sorted(os.listdir(small)) == ["old.jsonl"]  # a new export leaves nothing; an old file is written through
    finally:
        subprocess.run(["umount", str(small)], capture_output=True)
        (tree / "bulk" / "big.md").unlink()


def test_queries_answer_in_json_lines_whatever_the_flag_and_an_empty_file_is_refused(tree, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"qid": "a", "query": "rename a git remote"}\nnot json\n')
    for flags in ([], ["--json"], ["--jsonl"]):  # the format harnesses and scripts read: kept
        out = _mem("recall", "--queries", str(queries), "--root", str(tree), *flags)
        rows = [json.loads(line) for line in out.stdout.splitlines()]
        assert out.returncode == 2 and [("error" in row) for row in rows] == [False, True], flags
        assert rows[0]["qid"] == "a" and rows[0]["results"][0]["title"] == "rename a git remote"
    queries.write_text("\n")
    out = _mem("recall", "--queries", str(queries), "--root", str(tree), "--json")
    assert (out.returncode, out.stderr.decode()) == (2, f"mem: error: no queries in {queries}\n")


def test_an_export_writes_through_a_link_and_never_replaces_it(tree, tmp_path):
    """An export to /dev/stdout redirected to a file renamed a temp file over /dev/stdout itself (as root):
    whatever is already at the path (a symlink, a link to this process's stdout) is written through."""
    real = tmp_path / "real.jsonl"
    real.write_text("")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    out = _mem("export", "--jsonl", str(link), "--root", str(tree))
    assert out.returncode == 0, out.stderr
    assert link.is_symlink() and real.read_text().count("\n") >= 1
    to_stdout = tmp_path / "stdout-link"
    to_stdout.symlink_to("/proc/self/fd/1")  # what /dev/stdout is, in a folder of the test's own
    captured = tmp_path / "captured.jsonl"
    with open(captured, "wb") as handle:
        done = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "export", "--jsonl", str(to_stdout),
                               "--root", str(tree)], stdout=handle, stderr=subprocess.PIPE, timeout=180,
                              env={**os.environ, "MEMSTRATA_SERVICE": "off"})
    assert done.returncode == 0, done.stderr
    assert to_stdout.is_symlink() and os.readlink(to_stdout) == "/proc/self/fd/1"
    lines = captured.read_text().splitlines()  # reopened, it started at offset 0: the message overwrote line 1
    assert lines and all(json.loads(line)["path"] for line in lines)
