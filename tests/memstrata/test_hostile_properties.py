"""Property: whatever hostile files a tree holds, the main commands (Python API and the CLI run
in-process) never write outside the root, never hang, never raise a raw exception and never lose
an acknowledged entry. Random trees of bad ids, symlinks in and out of the root, FIFOs, odd
names, odd and huge YAML, non-UTF-8 bytes and files where folders are expected; real files, the
real model and real LanceDB. The example count is kept small so it runs in well under a minute.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory
from memstrata.cli import output
from memstrata.cli.app import main
from memstrata.errors import MemstrataError

COMMAND_SECONDS = 60  # a FIFO opened for reading would block forever; anything else is far quicker

HOSTILE_IDS = ["../../outside/forgotten", "/etc/passwd", "a/b", "..", ".hidden", "x" * 100, "", "ok\n",
               "[1, 2]", "{a: 1}", "'../x'", "null", "ü-nicode", "CON"]
ODD_NAMES = ["CON.md", "INDEX.md", "config.md", "trail..md", " lead.md", "ünï cödé.md", "a%2Fb.md",
             "x" * 200 + ".md", "-dash.md", "MEMORY.md", "x.md.tmp", ".x.md.123.abc.tmp"]
ALIAS_BOMB = "\n".join(["---", 'a: &a ["x","x","x","x","x","x","x","x","x"]'] + [
    f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]" for p, c in zip("abcdef", "bcdefg")] + ["tags: *g", "---", "x", ""])
ODD_YAML = [ALIAS_BOMB, "---\n- a list\n---\nbody\n", "---\nid: [unclosed\n---\n", "---\ntitle: x\n",
            "---\n" + "a:\n " * 60 + "b\n---\n", "---\nid: !!python/object:os.system ls\n---\n",
            "---\ncreated: -62135596801\nversion: 1e400\nimportance: .nan\n---\nbody\n",
            "---\ntitle: " + "y" * 300_000 + "\n---\nhuge\n", "---\nexpires: 2001-01-01\nid: ../../outside/gone\n---\nold\n"]

hazard = st.one_of(
    st.tuples(st.just("bad_id"), st.sampled_from(HOSTILE_IDS)),
    st.tuples(st.just("odd_name"), st.sampled_from(ODD_NAMES)),
    st.tuples(st.just("odd_yaml"), st.sampled_from(range(len(ODD_YAML)))),
    st.tuples(st.just("bytes"), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("fifo"), st.sampled_from(["notes/pipe.md", "notes/INDEX.md", "meetings/p.md"])),
    st.tuples(st.just("symlink_out"), st.sampled_from(["notes/away.md", "away", ".trash", ".versions", ".full",
                                                        "notes/archived"])),
    st.tuples(st.just("symlink_in"), st.sampled_from(["notes/loop.md", "loopdir", "notes/self"])),
    st.tuples(st.just("file_for_folder"), st.sampled_from(["projects", "notes/archived", ".trash", ".versions",
                                                          ".cache/catalog.db"])),
)


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: int, what: str):
    def alarm(signum, frame):
        raise Hang(f"{what} did not finish in {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def apply(root: Path, outside: Path, n: int, kind: str, value) -> None:
    notes = root / "notes"
    notes.mkdir(exist_ok=True)
    try:
        if kind == "bad_id":
            (notes / f"bad{n}.md").write_text(f"---\nid: {value!r}\ntitle: bad {n}\n---\n\nbody {n}\n")
        elif kind == "odd_name":
            (notes / value).write_text(f"---\ntitle: odd {n}\n---\n\nodd body\n")
        elif kind == "odd_yaml":
            (notes / f"yaml{n}.md").write_text(ODD_YAML[value])
        elif kind == "bytes":
            (notes / f"bytes{n}.md").write_bytes(b"---\ntitle: \xff\xfe\n---\n" + value)
        elif kind == "fifo":
            (root / value).parent.mkdir(parents=True, exist_ok=True)
            if not os.path.lexists(root / value):
                os.mkfifo(root / value)
        elif kind == "symlink_out":
            target = root / value
            if os.path.lexists(target):
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                else:
                    target.unlink()
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(outside if not value.endswith(".md") else outside / "secret.md", target)
        elif kind == "symlink_in":
            if not os.path.lexists(root / value):
                os.symlink(root if value == "loopdir" else notes if value == "notes/self" else notes / "a.md",
                           root / value)
        elif kind == "file_for_folder":
            target = root / value
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif os.path.lexists(target):
                target.unlink()
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("a file where a folder was expected")
    except OSError:
        pass  # the hazard could not be made here (a name too long, say): the tree is hostile enough


def files_under(folder: Path) -> dict:
    out = {}
    for dirpath, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(dirpath) / name
            out[str(path.relative_to(folder))] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return out


def run_cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return int(code or 0), err.getvalue()


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(hazards=st.lists(hazard, min_size=1, max_size=6))
def test_hostile_trees_stay_contained(embedder, hazards):
    base = Path(tempfile.mkdtemp(prefix="hostile-"))
    root, outside = base / "r", base / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\ntitle: outside\n---\n\nnot in the tree\n")
    output.set_memory_factory(lambda r: Memory(r, embedder=embedder))
    try:
        m = Memory(root, embedder=embedder)
        m.init()
        acknowledged = [m.write("The boiler is serviced every March.", title="boiler", category="notes").id,
                        m.write("Standup moved to 9:30 on Mondays.", title="standup", category="meetings").id]
        (root / "notes" / "a.md").write_text("---\ntitle: plain\n---\n\nA plain hand-written note.\n")
        for n, (kind, value) in enumerate(hazards):
            apply(root, outside, n, kind, value)
        before = files_under(outside)

        api_calls = [lambda: m.list(), lambda: m.stats(), lambda: m.recall("boiler service"),
                     lambda: m.recall("boiler", strategy="grep"),
                     lambda: m.write("A new note about the garden.", title="garden", category="notes"),
                     lambda: m.maintain(), lambda: m.doctor()]
        for n, call in enumerate(api_calls):
            with time_limit(COMMAND_SECONDS, f"API call {n}"):
                try:
                    result = call()
                    if n == 4 and getattr(result, "id", None):
                        acknowledged.append(result.id)
                except MemstrataError as exc:
                    assert "\n" not in exc.message
        for argv in (["list"], ["stats"], ["recall", "boiler"], ["recall", "standup", "--strategy", "grep"],
                     ["write", "Written through the CLI.", "-c", "notes"], ["read", acknowledged[0]],
                     ["delete", acknowledged[1]], ["restore", acknowledged[1]], ["maintain"], ["doctor"],
                     ["doctor", "--fix"], ["trash", "list"], ["index", "--rebuild"]):
            with time_limit(COMMAND_SECONDS, f"mem {' '.join(argv)}"):
                code, err = run_cli([*argv, "--root", str(root)])
            assert "Traceback" not in err and "internal error" not in err, (argv, hazards, err)
            if code not in (0, 9):
                assert err.strip().splitlines()[-1].startswith("mem: error:"), (argv, err)
        assert files_under(outside) == before, hazards
        after = Memory(root, embedder=embedder)
        for entry_id in acknowledged:
            with time_limit(COMMAND_SECONDS, "final read"):
                try:
                    assert after.read(entry_id, count_access=False).id == entry_id
                except MemstrataError:
                    assert any(item.id == entry_id for item in after.trash_list()), (entry_id, hazards)
    finally:
        output.set_memory_factory(None)
        for dirpath, dirs, _ in os.walk(base):
            for d in dirs:
                with contextlib.suppress(OSError):
                    os.chmod(Path(dirpath) / d, 0o700)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
