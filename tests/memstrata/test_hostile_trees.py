"""Issue 14: hostile files in the tree and odd input, through the CLI (in-process `main` and real
processes) and the API. Real files, the real model, real LanceDB; nothing is mocked.

Each test names the numbered case of the issue it checks.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.cli import output
from memstrata.cli.app import main
from memstrata.errors import InvalidInput
from memstrata.storage import versions

ALIAS_BOMB = "\n".join(["---", 'a: &a ["x","x","x","x","x","x","x","x","x"]'] + [
    f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]" for p, c in zip("abcdef", "bcdefg")] + ["tags: *g", "---", "x", ""])


def files_under(folder: Path) -> dict:
    """Every path under `folder` (symlinks not followed) with its bytes or link target."""
    out = {}
    for dirpath, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(dirpath) / name
            out[str(path.relative_to(folder))] = (os.readlink(path) if path.is_symlink() else
                                                  path.read_bytes() if path.is_file() else "dir")
    return out


@pytest.fixture
def mem_cli(tmp_path, embedder, capsys):
    """run(*argv) -> (exit code, stdout, stderr) of `mem` in this process, with the session model."""
    output.set_memory_factory(lambda root: Memory(root, embedder=embedder))
    root = tmp_path / "r"
    outside = tmp_path / "outside"
    outside.mkdir()

    def run(*argv, root_dir=root):
        capsys.readouterr()
        try:
            code = main([*argv, "--root", str(root_dir)])
        except SystemExit as exc:  # `mem doctor` exits with its own code
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err

    run.root, run.outside = root, outside
    assert run("init")[0] == 0
    yield run
    output.set_memory_factory(None)


def one_line(err: str) -> str:
    assert err.startswith("mem: error:") and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def subprocess_cli(root, *args, timeout=120):
    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args, "--root", str(root)],
                          capture_output=True, env=env, timeout=timeout, text=True)


# -- case 1: an `id:` read from a file never builds a path; the entry stays deletable and restorable ---
def test_case1_bad_id_in_a_file_maintain_delete_restore_stay_inside(mem_cli):
    root, outside = mem_cli.root, mem_cli.outside
    (root / "notes").mkdir()
    (root / "notes" / "old.md").write_text("---\nid: ../../outside/forgotten\ntitle: stale note\n"
                                           "expires: 2001-01-01\n---\n\nbody\n")
    assert mem_cli("maintain")[0] == 0  # the hand-made entry gets an id first, then expires to the trash
    assert files_under(outside) == {}
    code, out, _ = mem_cli("trash", "list", "--json")
    items = json.loads(out)["entries"]
    assert len(items) == 1 and items[0]["id"] and items[0]["path"].startswith(".trash/")
    code, out, err = mem_cli("restore", items[0]["id"], "--json")
    assert code == 0, err
    restored = json.loads(out)
    assert restored["path"] == "notes/old.md" and restored["id"] == items[0]["id"]
    text = (root / "notes" / "old.md").read_text()
    assert "invalid_id: ../../outside/forgotten" in text and "body" in text
    code, _, err = mem_cli("delete", "notes/old.md")
    assert code == 0 and files_under(outside) == {}
    assert mem_cli("restore", items[0]["id"])[0] == 0 and files_under(outside) == {}
    one_line(mem_cli("restore", "no-such-thing")[2])


# -- case 2: compress/restore cycles never add a history section; a body may end in one ------------
def test_case2_restore_keeps_one_history_and_a_body_that_looks_like_one(mem_cli, monkeypatch):
    root = mem_cli.root
    code, out, _ = mem_cli("write", "The first body about the lighthouse keeper.", "--title", "lighthouse",
                           "-c", "notes", "--json")
    entry_id = json.loads(out)["id"]
    assert mem_cli("update", entry_id, "The second body: he adopted a dog.")[0] == 0
    later = datetime.now(timezone.utc)
    for cycle in range(2):
        later += timedelta(days=100)
        monkeypatch.setenv("MEMSTRATA_NOW", later.strftime("%Y-%m-%dT%H:%M:%SZ"))
        assert mem_cli("maintain")[0] == 0
        assert mem_cli("decompress", entry_id, "--restore")[0] == 0
        text = (root / "notes" / "lighthouse.md").read_text()
        assert text.count("Version history") == 0 and text.count("history:") == 1
        entry = Memory(root).read(entry_id, count_access=False)
        assert entry.body == "The second body: he adopted a dog.\n"
        assert [h["version"] for h in entry.history] == [1, 2]
    body = "My notes.\n\n## Version history\n\n- v1 (2020-01-01): a line I typed myself\n"
    code, out, _ = mem_cli("write", body, "--title", "looks like history", "-c", "notes", "--json")
    written = json.loads(out)["id"]
    assert Memory(root).read(written, count_access=False).body == body
    assert [h["version"] for h in Memory(root).history(written)] == [1]
    assert mem_cli("update", written, body + "more\n")[0] == 0
    again = Memory(root).read(written, count_access=False)
    assert again.body == body + "more\n" and [h["version"] for h in again.history] == [1, 2]


def test_case2_trees_written_before_keep_reading(tmp_path):
    from memstrata.storage import codec

    legacy = ("---\nid: e1\ntitle: t\nversion: 2\n---\n\nnow\n\n## Version history\n\n"
              "- v1 (2026-01-01): before\n- v2 (2026-02-01): now\n")
    entry = codec.parse(legacy)
    assert entry.body == "now\n" and [h["version"] for h in entry.history] == [1, 2]
    rewritten = codec.parse(codec.render(entry))
    assert rewritten.body == "now\n" and rewritten.history == entry.history
    not_ours = legacy.replace("version: 2", "version: 1")  # the last line is not the entry's version
    assert codec.parse(not_ours).body.endswith("- v2 (2026-02-01): now\n")


# -- case 5: a purge removes everything of the entry -----------------------------------------------
def test_case5_purge_removes_versions_and_sidecars(mem_cli):
    root = mem_cli.root
    m = Memory(root)
    first = m.write("Quarterly numbers were strong this time around.", title="numbers", category="notes")
    m.update(first.id, "Quarterly numbers were weak after all, revised.")
    assert versions.list_snapshots(root, first.id)
    (root / ".full" / "superseded").mkdir(parents=True, mode=0o700)
    os.chmod(root / ".full", 0o700)
    (root / ".full" / "superseded" / f"{first.id}--x.md").write_text("old original")
    os.chmod(root / ".full" / "superseded" / f"{first.id}--x.md", 0o600)
    assert mem_cli("delete", first.id)[0] == 0
    code, out, _ = mem_cli("trash", "purge", "--all", "--json")
    assert code == 0
    assert not (root / ".versions" / first.id).exists()
    assert not list((root / ".full" / "superseded").iterdir())
    code, out, _ = mem_cli("doctor", "--json")
    assert code == 0, out


# -- case 7: symlinked engine folders: one line, exit 2; the doctor sets them aside ----------------
@pytest.mark.parametrize("folder", [".trash", ".versions"])
def test_case7_symlinked_engine_folder(mem_cli, folder):
    root, outside = mem_cli.root, mem_cli.outside
    m = Memory(root)
    first = m.write("The boiler needs a service in March.", title="boiler", category="notes")
    if (root / folder).exists():
        os.rmdir(root / folder)
    os.symlink(outside, root / folder)
    action = ("delete", first.id) if folder == ".trash" else ("update", first.id, "The boiler service is in May.")
    code, _, err = mem_cli(*action)
    assert code == 2 and "is a symlink" in one_line(err)
    assert files_under(outside) == {}
    code, out, _ = mem_cli("doctor")
    assert code == 9 and "never follows" not in out and "refused" in out
    code, out, _ = mem_cli("doctor", "--fix")
    assert code == 0, out
    assert (root / folder).is_dir() and not (root / folder).is_symlink()
    assert any(p.is_symlink() for p in (root / ".quarantine").iterdir())
    assert mem_cli(*action)[0] == 0
    assert files_under(outside) == {}


# -- case 8: FIFOs never block; alias bombs are one file's problem -------------------------------
def test_case8_fifo_and_alias_bomb_through_real_processes(tmp_path, embedder):
    root = tmp_path / "r"
    made = Memory(root, embedder=embedder)
    made.init()
    made.write("Cats sleep most of the day.", title="cats", category="notes")
    os.mkfifo(root / "notes" / "pipe.md")
    for args in (["list"], ["stats"], ["recall", "cats"], ["recall", "cats", "--strategy", "grep"],
                 ["write", "fifo test", "-c", "notes"], ["doctor"], ["read", "notes/pipe.md"]):
        proc = subprocess_cli(root, *args, timeout=120)  # a blocked open would hit the timeout
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
        assert proc.returncode in (0, 3, 9), (args, proc.returncode, proc.stderr)
    os.unlink(root / "notes" / "pipe.md")
    (root / "notes" / "bomb.md").write_text(ALIAS_BOMB)
    os.chmod(root / "notes" / "bomb.md", 0o600)
    assert len(ALIAS_BOMB.encode()) < 400
    proc = subprocess_cli(root, "read", "notes/bomb.md", timeout=60)
    assert proc.returncode == 8 and "expands to more than" in one_line(proc.stderr)
    proc = subprocess_cli(root, "doctor", "--json", timeout=60)
    found = json.loads(proc.stdout)["findings"]
    assert proc.returncode == 9 and [f["kind"] for f in found] == ["unparseable"]


# -- case 10: files that are not entries are never treated as entries ----------------------------
def test_case10_non_entry_files_are_not_found(mem_cli):
    root = mem_cli.root
    before = files_under(root)
    for argv in (["read", "config.md"], ["update", "config.md", "--tag", "x"], ["delete", "config.md"],
                 ["delete", "daily/INDEX.md"], ["read", "INDEX.md"], ["delete", ".trash/INDEX.md"]):
        code, _, err = mem_cli(*argv)
        assert code == 3, (argv, err)
        one_line(err)
    assert {k: v for k, v in files_under(root).items() if not k.startswith((".cache", ".vectors"))} == {
        k: v for k, v in before.items() if not k.startswith((".cache", ".vectors"))}


# -- case 11: odd input gets one line and its exit code -------------------------------------------
@pytest.mark.parametrize("kwargs, message", [
    (dict(tags=["a\udc80"]), "lone surrogate"),
    (dict(category="x\udc80"), "surrogate"),
    (dict(extra={"k": "v\udc80"}), "lone surrogate"),
    (dict(extra={"k\udc80": "v"}), "lone surrogate"),
    (dict(category="é" * 70), "bytes"),
    (dict(category="c" * 320), "longer than"),
    (dict(tags=5), "list of strings"),
    (dict(extra={"o": object()}), "YAML cannot store"),
    (dict(importance=7), "from 0 to 1"),
    (dict(importance=float("nan")), "from 0 to 1"),
    (dict(importance=-0.1), "from 0 to 1"),
    (dict(tags=["a\x00b"]), "control characters"),
    (dict(category="CON"), "Windows reserves"),
    (dict(category="trail."), "ending in"),
    (dict(category="Proj"), "differs only in case"),
    (dict(category="notes/file"), "is a file"),
])
def test_case11_odd_input_is_refused(mem_cli, kwargs, message):
    root = mem_cli.root
    m = Memory(root)
    m.write("a project note", title="p", category="proj")
    (root / "notes").mkdir(exist_ok=True)
    (root / "notes" / "file").write_text("not a folder")
    before = files_under(root)
    with pytest.raises(InvalidInput, match=message) as info:
        m.write("some body text", title="t", **kwargs)
    assert "\n" not in info.value.message
    after = files_under(root)
    assert {k for k in after if not k.startswith((".cache", ".vectors"))} == {
        k for k in before if not k.startswith((".cache", ".vectors"))}


def test_case11_importance_words_and_range_accepted(mem_cli):
    m = Memory(mem_cli.root)
    assert m.read(m.write("x1", importance="high").id, count_access=False).importance == 0.8
    assert m.read(m.write("x2", importance=1).id, count_access=False).importance == 1.0
    assert m.read(m.write("x3", importance="0.3").id, count_access=False).importance == 0.3
    entry = m.read(m.write("x4", importance="critical").id, count_access=False)
    assert entry.important is True


def test_case11_cli_exit_codes(mem_cli, tmp_path):
    root = mem_cli.root
    assert mem_cli("write", "p", "-c", "proj")[0] == 0
    (root / "notes").mkdir(exist_ok=True)
    (root / "notes" / "file").write_text("x")
    for argv in (["write", "x", "--importance", "7"], ["write", "x", "--importance", "nan"],
                 ["write", "x", "-c", "Proj"], ["write", "x", "-c", "notes/file"],
                 ["write", "x", "-c", "é" * 60], ["write", "x", "-c", "CON"]):
        code, _, err = mem_cli(*argv)
        assert code == 2, (argv, err)
        one_line(err)
    code, out, _ = mem_cli("write", "x", "--title", "INDEX", "-c", "notes", "--json")
    assert code == 0 and json.loads(out)["path"] == "notes/index-entry.md"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"bad": 1}\n{"title": ""}\n')
    code, _, err = mem_cli("import", str(bad))
    assert code == 2 and "nothing imported" in one_line(err)


def test_case11_mcp_lone_surrogate_gets_an_answer(tmp_path, embedder):
    """A raw JSON-RPC client (the SDK client cannot even send the line) and a real `mem mcp` process."""
    import select

    root = tmp_path / "r"
    made = Memory(root, embedder=embedder)
    made.init()
    made.write("Seed entry.", title="seed", category="notes")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEMSTRATA_SERVICE": "off"}
    proc = subprocess.Popen([sys.executable, "-m", "memstrata.cli.app", "mcp", "--root", str(root)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)

    def send(text):
        proc.stdin.write(text.encode() + b"\n")
        proc.stdin.flush()

    def answer(timeout=120):
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        assert ready, "no answer"
        return json.loads(proc.stdout.readline())

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        assert answer()["id"] == 1
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        send('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "write", '
             '"arguments": {"body": "bad \\udc80 text", "title": "t"}}}')
        reply = answer()
        assert reply["id"] == 2 and reply["result"]["isError"] is True
        assert "lone surrogate" in reply["result"]["content"][0]["text"]
        send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list", "arguments": {}}}))
        reply = answer()
        assert reply["id"] == 3 and not reply["result"].get("isError")
    finally:
        proc.kill()
        proc.wait()
    assert [e.title for e in Memory(root).list()] == ["seed"]


# -- case 12: the doctor's chmod never follows a hard link; mode problems are not damage -----------
def test_case12_doctor_never_chmods_a_hard_link(mem_cli):
    root, outside = mem_cli.root, mem_cli.outside
    target = outside / "precious.txt"
    target.write_text("not yours")
    os.chmod(target, 0o644)
    (root / "notes").mkdir(exist_ok=True)
    os.link(target, root / "notes" / "linked.txt")
    code, out, _ = mem_cli("doctor", "--fix", "--json")
    report = json.loads(out)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644
    assert code == 9 and any("hard links" in f["detail"] for f in report["findings"])


def test_case12_mode_000_file_is_a_permission_problem(mem_cli):
    root = mem_cli.root
    m = Memory(root)
    first = m.write("The garden needs water on Sundays.", title="garden", category="notes")
    path = root / first.path
    os.chmod(path, 0)
    code, out, _ = mem_cli("doctor", "--json")
    found = json.loads(out)["findings"]
    assert code == 9 and [f["kind"] for f in found] == ["permissions"] and found[0]["path"] == first.path
    code, out, _ = mem_cli("doctor", "--fix", "--json")
    assert code == 0, out
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and path.exists()
    assert not (root / ".quarantine").exists() or not any((root / ".quarantine").glob("*garden*"))


# -- case 9: broken derived files and a broken environment ---------------------------------------
def _garble_lance(root: Path) -> int:
    count = 0
    for path in (root / ".vectors").rglob("*"):
        if path.is_file() and path.suffix in (".lance", ".manifest", ".txn", ".idx"):
            path.write_bytes(os.urandom(max(64, min(path.stat().st_size, 4096))))
            count += 1
    return count


def test_case9_garbage_lance_files_write_and_recall_still_work(mem_cli):
    root = mem_cli.root
    m = Memory(root)
    for n in range(3):
        m.write(f"Note {n} about the harbour and the ships in it.", title=f"harbour {n}", category="notes")
    assert _garble_lance(root) > 0
    code, out, err = mem_cli("write", "Written after the index broke: the lighthouse.", "--title", "after",
                             "-c", "notes", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert (root / result["path"]).is_file()
    code, out, err = mem_cli("recall", "harbour ships", "--json")
    assert code == 0, err
    answer = json.loads(out)
    assert answer["strategy"] == "grep" and answer["results"]
    assert any("vector index cannot be read" in n for n in answer["notes"])
    code, _, err = mem_cli("recall", "harbour ships", "--strategy", "vector")
    assert code == 7 and "vector index cannot be read" in one_line(err)
    code, out, _ = mem_cli("doctor", "--fix", "--json")
    assert code == 0, out
    code, out, _ = mem_cli("recall", "lighthouse", "--json")
    assert code == 0 and json.loads(out)["strategy"] != "grep"


@pytest.mark.parametrize("damage", ["garbage", "folder"])
def test_case9_broken_catalog_is_rebuilt_on_its_own(mem_cli, damage):
    root = mem_cli.root
    Memory(root).write("The catalog is derived from the files.", title="derived", category="notes")
    db = root / ".cache" / "catalog.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    if damage == "garbage":
        db.write_bytes(os.urandom(5000))
    else:
        db.mkdir()
        (db / "something").write_text("not ours to delete")
    code, out, err = mem_cli("list", "--json")
    assert code == 0, err
    assert [e["title"] for e in json.loads(out)["entries"]] == ["derived"]
    code, _, err = mem_cli("write", "And writes go on.", "--title", "more", "-c", "notes")
    assert code == 0, err
    if damage == "folder":
        kept = [p for p in (root / ".cache").iterdir() if p.name.startswith("catalog.db.not-a-catalog")]
        assert kept and (kept[0] / "something").read_text() == "not ours to delete"


def test_case9_full_disk_reads_still_work(tmp_path, embedder):
    """RLIMIT_FSIZE 0 makes every write that grows a file fail (EFBIG), as a full disk does."""
    import resource
    import signal

    root = tmp_path / "r"
    m = Memory(root, embedder=embedder)
    m.init()
    entry = m.write("The spare key is under the blue pot.", title="spare key", category="notes")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root / '.cache' / 'catalog.db'}{suffix}").unlink(missing_ok=True)
    before = (root / entry.path).read_bytes()

    def no_room():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "HF_HUB_OFFLINE": "1"}
    for args in (["list"], ["read", entry.id], ["stats"], ["recall", "spare key", "--strategy", "grep"]):
        proc = subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args, "--root", str(root)],
                              capture_output=True, text=True, env=env, preexec_fn=no_room, timeout=300)
        assert proc.returncode == 0, (args, proc.stderr)
        assert any(w in proc.stdout for w in ("spare key", "blue pot", "1 entry ")), (args, proc.stdout)
    proc = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "write", "no room", "--root", str(root)],
                          capture_output=True, text=True, env=env, preexec_fn=no_room, timeout=300)
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert (root / entry.path).read_bytes() == before


def _without_dac_override(argv: list[str]) -> list[str]:
    """Run as root without the capabilities that let root open any folder (CI runs as root)."""
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
            "--inh-caps=-dac_override,-dac_read_search", *argv]


def test_case9_a_folder_nobody_can_open_is_skipped_with_a_note(tmp_path, embedder):
    import shutil

    root = tmp_path / "r"
    m = Memory(root, embedder=embedder)
    m.init()
    m.write("Locked away.", title="vaulted", category="vault")
    m.write("Plain note.", title="plain", category="notes")
    os.chmod(root / "vault", 0)
    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "HF_HUB_OFFLINE": "1"}

    def run(*args):
        argv = [sys.executable, "-m", "memstrata.cli.app", *args, "--root", str(root)]
        if os.getuid() == 0:
            if not shutil.which("setpriv"):
                pytest.skip("root without setpriv cannot be kept out of a folder")
            argv = _without_dac_override(argv)
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)

    try:
        probe = run("list")
        if probe.returncode != 0 and "setpriv" in probe.stderr:
            pytest.skip(f"setpriv cannot drop capabilities here: {probe.stderr.strip()}")
        assert probe.returncode == 0 and "plain" in probe.stdout, probe.stderr
        stats = run("stats", "--json")
        assert stats.returncode == 0 and any("vault/ cannot be opened" in w
                                             for w in json.loads(stats.stdout)["warnings"])
        assert run("recall", "plain note").returncode == 0
        assert run("write", "Another note.", "-c", "notes").returncode == 0
        refused = run("write", "Into the vault.", "-c", "vault")
        assert refused.returncode == 2 and "permissions" in one_line(refused.stderr)
        doctor = run("doctor", "--json")
        found = json.loads(doctor.stdout)["findings"]
        assert any(f["kind"] == "permissions" and f["path"] == "vault" for f in found)
        fixed = run("doctor", "--fix", "--json")
        assert stat.S_IMODE(os.stat(root / "vault").st_mode) == 0o700, fixed.stdout
        assert fixed.returncode == 0, fixed.stdout
        assert "vaulted" in run("list").stdout
    finally:
        os.chmod(root / "vault", 0o700)


# -- case 3: old versions stay findable and travel with export/import ----------------------------
def test_case3_two_standups_are_one_subject_unless_their_titles_say_which(mem_cli):
    """In a category a title names one subject (docs/versions.md): a second "Standup" is the next version
    of the first, which stays in its history and finds the entry; dated titles make two memories."""
    m = Memory(mem_cli.root)
    first = m.write("Standup: Bob is blocked on the payments API; Ann demoed the new search page.",
                    title="Standup", category="meetings")
    second = m.write("Standup: the release moves to Friday and we are hiring two engineers.",
                     title="Standup", category="meetings")
    assert second.action == "conflict" and second.id == first.id and second.version == 2
    assert "Bob is blocked" in m.history_show(first.id, 1)
    found = m.recall("who is blocked on the payments API", k=3)
    assert found.results[0].id == first.id and "Bob" not in found.results[0].snippet  # shown: what is current
    monday = m.write("Standup: Bob is blocked on the payments API.", title="Standup 2026-06-01", category="meetings")
    tuesday = m.write("Standup: the release moves to Friday.", title="Standup 2026-06-02", category="meetings")
    assert (monday.action, tuesday.action) == ("created", "created")
    hits = m.recall("who is blocked on the payments API", k=3).results
    assert hits[0].id == monday.id  # the entry saying it now ranks above the one whose v1 said it


def test_case3_an_old_version_is_found_and_exported(mem_cli, tmp_path):
    root = mem_cli.root
    m = Memory(root)
    first = m.write("The team prefers tabs for indentation in the Go services.", title="Indentation",
                    category="decisions")
    second = m.write("The team prefers spaces for indentation in the Go services.", title="Indentation",
                     category="decisions")
    assert second.action == "conflict" and second.id == first.id and second.version == 2
    m.write("Lunch is at noon on Fridays.", title="Lunch", category="notes")
    hit = m.recall("tabs for indentation", k=3)
    assert hit.results and hit.results[0].id == first.id
    code, out, _ = mem_cli("recall", "tabs for indentation", "--strategy", "grep", "--json")
    assert code == 0 and json.loads(out)["results"][0]["id"] == first.id
    # export carries every kept version; import puts them back under .versions/
    backup = tmp_path / "backup.jsonl"
    code, _, err = mem_cli("export", str(backup))
    assert code == 0, err
    record = next(json.loads(line) for line in backup.read_text().splitlines() if json.loads(line)["id"] == first.id)
    assert "tabs" in record["versions"]["1"]
    other = tmp_path / "other"
    assert mem_cli("init", root_dir=other)[0] == 0
    code, out, err = mem_cli("import", str(backup), "--json", root_dir=other)
    assert code == 0, err
    assert versions.read_snapshot(other, first.id, 1) == versions.read_snapshot(root, first.id, 1)
    again = Memory(other)
    assert again.history_show(first.id, 1) == "The team prefers tabs for indentation in the Go services.\n"
    assert again.recall("tabs for indentation", k=3).results[0].id == first.id


# -- case 4: the secret guard covers every way in ------------------------------------------------
SECRET = "sk-" + "ant-" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz"  # built at run time: no secret in this file


def _no_secret_anywhere(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file() and not any(p in (".vectors", ".cache") for p in path.relative_to(root).parts):
            assert SECRET.encode() not in path.read_bytes(), path
        assert SECRET not in path.name


def test_case4_secret_guard_on_every_way_in(mem_cli, tmp_path, monkeypatch):
    from memstrata.errors import SecretDetected

    root = mem_cli.root
    m = Memory(root)
    # a category name holding a token (it would become a folder and an INDEX.md line)
    with pytest.raises(SecretDetected):
        m.write("harmless body", title="t", category=f"keys/{SECRET}")
    code, _, err = mem_cli("write", "harmless body", "-c", f"keys/{SECRET}")
    assert code == 5 and SECRET not in one_line(err)
    # a Viking tree whose frontmatter holds a token in a field the engine does not know
    tree = tmp_path / "viking" / "agent" / "memories"
    (tree / "hot").mkdir(parents=True)
    (tree / "hot" / "leak.md").write_text(f"---\ntitle: config\napi_token: {SECRET}\n---\n\nSee the token.\n")
    (tree / "hot" / "fine.md").write_text("---\ntitle: fine\n---\n\nA harmless note.\n")
    report = m.import_path(tree, layout="viking")
    assert report["imported"] == 1 and len(report["errors"]) == 1
    # a PME tree, same
    pme = tmp_path / "pme"
    (pme / "projects").mkdir(parents=True)
    (pme / "projects" / "leak.md").write_text(f"---\ntitle: creds\nnote: '{SECRET}'\n---\n\nbody\n")
    report = m.import_path(pme, layout="pme")
    assert report["imported"] == 0 and report["errors"]
    # an agent's own MEMORY.md
    builtin = tmp_path / "MEMORY.md"
    builtin.write_text(f"# Notes\n\n## Keys\n\nThe key is {SECRET}\n\n## Lunch\n\nNoon.\n")
    with pytest.raises(SecretDetected):
        m.import_builtin(builtin)
    # daily notes
    with pytest.raises(SecretDetected):
        m.daily(f"today I used {SECRET}")
    # share into the shared root: this root warns only, the shared root refuses
    shared = tmp_path / "shared"
    Memory(shared).init()
    monkeypatch.setenv("MEMSTRATA_SHARED", str(shared))
    m.config_set("secrets", "warn")
    leaky = m.write(f"token {SECRET}", title="leaky", category="notes")
    assert leaky.warnings
    with pytest.raises(SecretDetected):
        Memory(root).share(leaky.id)
    _no_secret_anywhere(shared)
    m.delete(leaky.id)
    m.trash_purge(everything=True)
    _no_secret_anywhere(root)


def test_case12_stats_names_a_file_its_reader_cannot_open(tmp_path, embedder):
    import shutil

    root = tmp_path / "r"
    made = Memory(root, embedder=embedder)
    made.init()
    entry = made.write("Mode zero.", title="zero", category="notes")
    os.chmod(root / entry.path, 0)
    argv = [sys.executable, "-m", "memstrata.cli.app", "stats", "--json", "--root", str(root)]
    if os.getuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("root without setpriv reads any file")
        argv = _without_dac_override(argv)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root / '.cache' / 'catalog.db'}{suffix}").unlink(missing_ok=True)
    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != 0 and "setpriv" in proc.stderr:
        pytest.skip(f"setpriv cannot drop capabilities here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["unreadable"] == [entry.path]


def test_purging_an_entry_never_removes_another_entrys_original(tmp_path, embedder):
    """An imported (or copied) entry that names another entry's `.full/` sidecar: purging it
    leaves that sidecar, which the live entry still needs."""
    import json

    from memstrata import Memory

    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    (m.root / ".full").mkdir(exist_ok=True)
    original = "Lunch at the canteen is served from noon to two, with a vegetarian dish every day.\n"
    (m.root / ".full" / "aaaaaaaaaaaa.md").write_text(original, encoding="utf-8")
    (m.root / "notes").mkdir(exist_ok=True)
    (m.root / "notes" / "lunch.md").write_text(
        "---\nid: aaaaaaaaaaaa\ntitle: Lunch\nlayer: L2\nfull_content_file: .full/aaaaaaaaaaaa.md\n---\n"
        "Lunch noon to two.\n", encoding="utf-8")
    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps({"id": "ffffffffffff", "title": "Imported", "body": "imported thing",
                                "category": "projects", "full_content_file": ".full/aaaaaaaaaaaa.md",
                                "layer": "L2"}) + "\n")
    m.import_jsonl(rows)
    m.delete("ffffffffffff")
    assert [i.id for i in m.trash_purge(everything=True)] == ["ffffffffffff"]
    assert (m.root / ".full" / "aaaaaaaaaaaa.md").read_text(encoding="utf-8") == original


def test_an_entry_file_past_16_mb_is_reported_never_read(tmp_path, embedder):
    """A hand-made or pulled dump: listed as unreadable by sync, not parsed, not indexed."""
    from memstrata import Memory

    m = Memory(tmp_path / "m", embedder=embedder)
    m.init()
    m.write("The backup runs at midnight.", title="Backups", category="ops")
    (m.root / "ops" / "dump.md").write_text("---\nid: dddddddddddd\ntitle: Dump\n---\n" + ("A" * 999 + "\n") * 17000)
    result = m.sync()
    assert list(result["errors"]) == ["ops/dump.md"] and "16 MB" in result["errors"]["ops/dump.md"]
    assert [e.title for e in m.list()] == ["Backups"]
    assert m.recall("when does the backup run?").results[0].title == "Backups"
