"""Import and adopt killed and run again: exactly one entry per source row or note, all indexed.

The kill tests run the real CLI (`mem import`, `mem init --adopt`, service off) and SIGKILL it
at seeded random points: when its progress lines (stderr a pipe, one line per step) reach a
chosen count, or after a chosen delay, so kills land in the model load, between files and their
index rows and between batches. The last run is left to finish; then no duplicate, no missing
entry, every entry indexed, `doctor` clean, and recall finds a sample.
"""
from __future__ import annotations

import json
import os
import queue
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

from memstrata import Memory
from memstrata.retrieval import sync

ROWS = 270          # two import batches (IMPORT_BATCH 256)
NOTES = 40
LINE = re.compile(r"^(\w+): (\d+)/(\d+) ")


def _env():
    return {**os.environ, "HF_HUB_OFFLINE": "1", "MEMSTRATA_SERVICE": "off", "MEMSTRATA_PROGRESS_SECONDS": "0"}


def _mem(*args, kill_at: int | None = None, of_at_least: int = 0, step: str | None = None,
         kill_after: float | None = None) -> tuple[int, list[str]]:
    """Run `mem ARGS`; SIGKILL it when a progress line of a step (named `step`, or any) of at least
    `of_at_least` items reaches `kill_at` done, or after `kill_after` seconds. Returns (exit code, stderr lines)."""
    proc = subprocess.Popen([sys.executable, "-m", "memstrata.cli.app", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=_env())
    started, lines = time.monotonic(), queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(l) for l in proc.stderr], daemon=True)
    reader.start()
    seen = []
    while True:
        try:
            line = lines.get(timeout=0.05)
        except queue.Empty:
            line = None
        if line is not None:
            seen.append(line.rstrip("\n"))
        elif proc.poll() is not None:
            break
        m = LINE.match(line or "")
        if (kill_at is not None and m and step in (None, m.group(1)) and int(m.group(2)) >= kill_at
                and int(m.group(3)) >= of_at_least) or \
                (kill_after is not None and time.monotonic() - started >= kill_after):
            proc.send_signal(signal.SIGKILL)
            break
    code = proc.wait(timeout=300)
    reader.join(timeout=10)
    return code, seen


def _kill_rounds(args: list[str], totals: list, seed: int) -> list[str]:
    """One run of `mem ARGS` per item of `totals` (a count, or (step, count)), killed at a seeded
    random point: mostly when a progress line of a step of at least that many items reaches a
    random count, else after a delay."""
    rng = random.Random(seed)
    how = []
    for total in totals:
        step, total = total if isinstance(total, tuple) else (None, total)
        if rng.random() < 0.75:
            target = rng.randrange(1, total)
            code, _ = _mem(*args, kill_at=target, of_at_least=total, step=step)
            how.append(f"at {step or ''} {target}/{total}+: exit {code}")
        else:
            delay = rng.uniform(1.0, 6.0)
            code, _ = _mem(*args, kill_after=delay)
            how.append(f"after {delay:.1f}s: exit {code}")
    return how


def _rows(path, count: int = ROWS):
    """Turns without ids, a few with their own id, one compressed with its full text and kept versions."""
    with open(path, "w", encoding="utf-8") as f:
        for i in range(count):
            row = {"title": f"turn {i}", "category": "conversation",
                   "body": f"Speaker {i % 7} said build {i} listens on port {20000 + i} and ships on day {i % 30}."}
            if i % 10 == 0:
                row["id"] = f"row-{i:04d}"
            if i == 7:
                row.update(id="row-compressed", layer="L1", full_content_file=".full/row-compressed.md",
                           full_content="The full text of turn seven: port 20007, a long story.\n",
                           versions={"1": "turn seven, first draft\n"}, version=2)
            f.write(json.dumps(row) + "\n")


def _all_indexed(m: Memory) -> bool:
    index = m.state.vector_index()
    index.refresh()
    todo = sync.plan(index, m.embedder.name, m.embedder.dim)
    return not (todo.embed or todo.missing or todo.remove or todo.errors)


def test_import_killed_at_random_points_then_rerun_ends_with_one_entry_per_row(tmp_path, embedder):
    root, src = tmp_path / "mem", tmp_path / "turns.jsonl"
    _rows(src)
    Memory(root, embedder=embedder).init()
    how = _kill_rounds(["import", str(src), "--root", str(root)], [ROWS, ROWS], seed=28)
    code, lines = _mem("import", str(src), "--root", str(root), "--json")
    assert code == 0, (how, lines[-5:])
    m = Memory(root, embedder=embedder)
    titles = Counter(e.title for e in m.list())
    assert len(titles) == ROWS and set(titles.values()) == {1}, (how, titles.most_common(3))
    assert {f"row-{i:04d}" for i in range(10, ROWS, 10)} <= {e.id for e in m.list()}
    assert m.history_show("row-compressed", 1) == "turn seven, first draft\n"  # its kept version came along
    assert "a long story" in m.decompress("row-compressed", show=True)["body"]  # and its full text
    assert _all_indexed(m), how
    assert m.doctor().healthy, (how, m.doctor().to_dict())
    hits = m.recall("which build listens on port 20123", k=3)
    assert hits.results and hits.results[0].title == "turn 123", how
    # once more: a no-op (the CLI says "nothing to import")
    again = m.import_jsonl(src)
    assert (again["imported"], again["unchanged"], again["updated"], again["reindexed"]) == (0, ROWS, 0, 0)


def test_rerun_of_an_import_removes_the_temp_files_of_a_killed_run(tmp_path, embedder):
    """A kill -9 inside a batch leaves `.{name}.{pid}.{random}.tmp` copies; the rerun has nothing to
    import but sweeps them, as `mem sync` does, so `mem doctor` is clean right after it."""
    root, src = tmp_path / "mem", tmp_path / "turns.jsonl"
    _rows(src, 20)
    Memory(root, embedder=embedder).init()
    assert _mem("import", str(src), "--root", str(root))[0] == 0
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a writer that is gone, as after a kill -9
    folder = next(p.parent for p in root.rglob("*.md") if p.parent.name == "conversation")
    left = [folder / f".row-{n}.md.{dead.pid}.0badcafe.tmp" for n in range(3)]
    for path in left:
        path.write_text("half a write\n")
    code, lines = _mem("import", str(src), "--root", str(root))
    assert code == 0, lines[-5:]
    assert not any(path.exists() for path in left)
    assert Memory(root, embedder=embedder).doctor().healthy


def _vault(folder):
    for n in range(NOTES):
        note = folder / f"area{n % 4}" / f"note {n}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        sections = "\n\n".join(f"## Part {k}\n\nNote {n} part {k}: the kettle of room {100 + n} holds {k} litres."
                               for k in range(4))
        head = "---\ntags: [vault]\n---\n" if n % 3 == 0 else ""
        note.write_text(f"{head}# Note {n}\n\n{sections}\n", encoding="utf-8")


def test_adopt_killed_at_random_points_then_rerun_ends_with_every_note_once(tmp_path, embedder):
    vault = tmp_path / "vault"
    _vault(vault)
    # the first kill while notes are given their ids, the second while they are embedded
    # (both steps count notes; the second is `indexing`)
    how = _kill_rounds(["init", "--adopt", "--root", str(vault)], [("adopting", NOTES), ("indexing", NOTES)],
                       seed=2028)
    code, lines = _mem("init", "--adopt", "--root", str(vault), "--json")
    assert code == 0, (how, lines[-5:])
    notes = sorted(vault.glob("area*/*.md"))
    assert len(notes) == NOTES  # no copy of a note, no note lost
    ids = [re.findall(r"^mem-id: (\S+)$", p.read_text(encoding="utf-8"), re.M) for p in notes]
    assert all(len(i) == 1 for i in ids), how
    m = Memory(vault, embedder=embedder)
    assert sorted(e.id for e in m.list()) == sorted(i[0] for i in ids)
    assert _all_indexed(m), how
    assert m.doctor().healthy, (how, m.doctor().to_dict())
    hits = m.recall("kettle of room 117", k=3)
    assert hits.results and hits.results[0].path == "area1/note 17.md", how


def test_progress_lines_on_a_pipe_and_a_json_summary(tmp_path, embedder):
    root, src = tmp_path / "mem", tmp_path / "turns.jsonl"
    _rows(src, 60)
    Memory(root, embedder=embedder).init()
    proc = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "import", str(src), "--root", str(root), "--json"],
                          capture_output=True, text=True, env={**_env(), "MEMSTRATA_PROGRESS_SECONDS": "0.5"},
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-500:]
    lines = [l for l in proc.stderr.splitlines() if l.startswith("importing: ")]
    assert lines and lines[-1].startswith("importing: 60/60 (100%)") and lines[-1].endswith("done")
    assert all(re.match(r"importing: \d+/60 \(\d+%\), [\d.]+/s, \d+ s, (about \d+ s left|done|starting)$", l)
               for l in lines), lines
    summary = json.loads(proc.stdout)
    assert (summary["imported"], summary["duplicates_avoided"], summary["skipped"]) == (60, 0, 0)
    assert summary["seconds"] > 0


def test_adopt_progress_counts_notes_with_one_end(tmp_path):
    """`mem init --adopt` on a pipe: the ids step and the indexing step each count the vault's notes
    (not texts or batches of texts) and end once; --json still prints the summary alone on stdout."""
    vault = tmp_path / "vault"
    for n in range(12):
        note = vault / f"area{n % 3}" / f"note {n}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"# Note {n}\n\n" + "\n\n".join(f"## Part {k}\n\nNote {n}, part {k}: a line about "
                                                          f"kettle {n * 10 + k}." for k in range(3)) + "\n")
    proc = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "init", "--adopt", "--root", str(vault), "--json"],
                          capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-500:]
    for step in ("adopting", "indexing"):
        lines = [l for l in proc.stderr.splitlines() if l.startswith(f"{step}: ")]
        assert lines and all(re.match(rf"{step}: \d+/12 \(\d+%\), [\d.]+/s, \d+ s, (about \d+ s left|done|starting)$", l)
                             for l in lines), proc.stderr
        counts = [int(LINE.match(l).group(2)) for l in lines]
        assert counts == sorted(counts) and [l.endswith("done") for l in lines].count(True) == 1, lines
        assert lines[-1].startswith(f"{step}: 12/12 (100%)"), lines
    summary = json.loads(proc.stdout)
    assert summary["entries"] == 12 and summary["index"]["embedded"] == 12


def test_reimport_leaves_unchanged_rows_updates_edited_ones_and_keeps_newer_entries(tmp_path, embedder, monkeypatch):
    from datetime import datetime, timezone

    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:00:00Z")
    now = datetime(2026, 11, 30, 10, tzinfo=timezone.utc).timestamp()
    src = tmp_path / "rows.jsonl"

    def write_rows(a: str, b: str, c: str, mtime: float):
        rows = [{"id": "a-1", "title": "alpha", "body": a, "category": "notes"},
                {"id": "b-1", "title": "beta", "body": b, "category": "notes"},
                {"id": "c-1", "title": "gamma", "body": c, "category": "notes", "updated": "2026-11-01T00:00:00Z"}]
        src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        os.utime(src, (mtime, mtime))

    write_rows("Alpha runs on port 1.", "Beta runs on port 2.", "Gamma runs on port 3.", now - 3600)
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    assert m.import_jsonl(src)["imported"] == 3
    again = m.import_jsonl(src)
    assert (again["imported"], again["unchanged"], again["duplicates_avoided"]) == (0, 3, 3)
    ids = {e.title: e.id for e in m.list()}
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:30:00Z")
    m.update(ids["beta"], "Beta moved to port 22 (edited here).")  # newer than the file's rows
    write_rows("Alpha moved to port 11.", "Beta moved to port 2222.", "Gamma moved to port 33.", now + 60)
    third = m.import_jsonl(src)
    assert (third["imported"], third["updated"], third["unchanged"], third["skipped"]) == (0, 2, 0, 1)
    assert "port 11" in m.read(ids["alpha"], count_access=False).body
    assert "port 33" in m.read("c-1", count_access=False).body
    assert "edited here" in m.read(ids["beta"], count_access=False).body  # the newer entry kept its change
    assert m.history_show(ids["alpha"], 1).strip() == "Alpha runs on port 1."  # the imported text is a version
    assert len(m.list()) == 3


def test_a_run_killed_after_its_versions_and_sidecar_is_taken_up_again(tmp_path, embedder):
    from memstrata.storage import sidecars, versions

    src = tmp_path / "one.jsonl"
    _rows(src, 8)
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    # what a run killed just before the entry file leaves: the kept version and the full text (written first)
    versions.save_snapshot(m.root, "row-compressed", 1, "turn seven, first draft\n")
    sidecars.write(m.root, "row-compressed", b"The full text of turn seven: port 20007, a long story.\n")
    report = m.import_jsonl(src)
    assert (report["imported"], report["errors"], report["skipped"]) == (8, [], 0)
    assert "a long story" in m.decompress("row-compressed", show=True)["body"]
    assert m.doctor().healthy


def test_builtin_import_run_again_indexes_sections_a_killed_run_left_without_rows(tmp_path, embedder):
    source = tmp_path / "agent" / "MEMORY.md"
    source.parent.mkdir()
    source.write_text("# Memory\n\n## Build\n\nThe build uses port 7001.\n\n## Deploy\n\nDeploys go out on Tuesdays.\n")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    first = m.import_builtin(source)
    assert len(first["created"]) == 2
    m.state.vector_index().delete([first["created"][0]])  # what a run killed after the file leaves
    assert not _all_indexed(m)
    again = m.import_builtin(source)
    assert (len(again["unchanged"]), again["reindexed"]) == (2, 1)
    assert _all_indexed(m) and m.doctor().healthy


def _killed_mid_index(tmp_path, embedder):
    """A root where `mem import` was SIGKILLed while embedding its first batch: 256 files on disk, no rows."""
    root, src = tmp_path / "mem", tmp_path / "turns.jsonl"
    _rows(src)
    Memory(root, embedder=embedder).init()
    _mem("import", str(src), "--root", str(root), kill_at=40, of_at_least=ROWS)
    m = Memory(root, embedder=embedder)
    unindexed = len(sync.plan(m.state.vector_index(), m.embedder.name, m.embedder.dim).embed)
    return root, m, unindexed


def test_recall_after_a_killed_import_finds_an_entry_written_but_not_embedded(tmp_path, embedder):
    root, m, unindexed = _killed_mid_index(tmp_path, embedder)
    assert unindexed > m.state.settings.recall_sync_max  # too many to embed before answering
    env = _env()
    proc = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "recall", "which build listens on port 20123",
                           "--root", str(root), "--json", "-k", "3"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-500:]
    out = json.loads(proc.stdout)
    assert out["results"] and out["results"][0]["title"] == "turn 123", out
    assert out["strategy"] != "index"
    assert any(f"{unindexed} entries are not indexed yet" in n for n in out["notes"]), out["notes"]
    assert _all_indexed(m) is False  # recall never wrote the index beyond its bound: the note says so


def test_recall_after_a_killed_import_indexes_a_few_missing_entries_first(tmp_path, embedder):
    root, m, unindexed = _killed_mid_index(tmp_path, embedder)
    m.config_set("recall_sync_max", unindexed + 10)
    result = m.recall("which build listens on port 20123", k=3)
    assert result.results[0].title == "turn 123" and result.strategy == "hybrid", result.to_dict()
    assert _all_indexed(m)


def test_a_copy_of_the_file_in_another_folder_imports_nothing_again(tmp_path, embedder):
    import shutil

    src = tmp_path / "a" / "turns.jsonl"
    src.parent.mkdir()
    _rows(src, 30)
    with open(src, "a", encoding="utf-8") as f:  # the same row twice: two occurrences, two entries
        f.write(json.dumps({"title": "hello", "body": "Hello again."}) + "\n" * 1)
        f.write(json.dumps({"title": "hello", "body": "Hello again."}) + "\n")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    assert m.import_jsonl(src)["imported"] == 32
    copy = tmp_path / "elsewhere" / "renamed.jsonl"
    copy.parent.mkdir()
    shutil.copy(src, copy)
    again = m.import_jsonl(copy)
    assert (again["imported"], again["unchanged"]) == (0, 32)
    assert len(m.list()) == 32


def test_a_row_repeating_an_earlier_rows_id_is_skipped_and_said_so(tmp_path, embedder):
    src = tmp_path / "rows.jsonl"
    rows = [{"id": "x-1", "title": "first", "body": "The first text."}, {"title": "other", "body": "Other text."},
            {"id": "x-1", "title": "second", "body": "A second text with the same id."}]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    report = m.import_jsonl(src)
    assert (report["imported"], report["repeated"], report["skipped"]) == (2, 1, 0)
    assert "line 3 repeats the id x-1 of line 1: skipped" in report["warnings"]
    assert not any("already in this root" in w for w in report["warnings"])
    assert m.read("x-1", count_access=False).title == "first"


def test_reimporting_a_file_with_a_repeated_id_never_flips_the_entry(tmp_path, embedder):
    src = tmp_path / "rows.jsonl"
    rows = [{"id": "d-1", "title": "D", "body": "delta one"}, {"id": "d-1", "title": "D2", "body": "delta two"}]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    m.import_jsonl(src)
    for _ in range(2):  # each run used to apply line 2 over line 1, then line 1 back
        again = m.import_jsonl(src)
        assert (again["updated"], again["repeated"]) == (0, 1), again
    assert m.read("d-1", count_access=False).body.strip() == "delta one"
    assert len(m.history("d-1")) == 1


def test_a_row_differing_only_in_its_updated_date_is_the_same_row(tmp_path, embedder):
    src = tmp_path / "rows.jsonl"
    row = {"title": "Budget", "body": "Q3 budget is 40k", "category": "fin", "updated": "2026-11-01T10:00:00Z"}
    src.write_text(json.dumps(row) + "\n", encoding="utf-8")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    m.import_jsonl(src)
    src.write_text(json.dumps({**row, "updated": "2026-11-02T10:00:00Z"}) + "\n", encoding="utf-8")
    assert m.import_jsonl(src)["imported"] == 0
    assert len(m.list()) == 1


def test_an_earlier_releases_id_is_taken_only_by_the_same_text(tmp_path, embedder):
    """Ids of earlier releases came from the file's path, the title and its occurrence: after a line
    is deleted, the next row of that title must not take (and overwrite) the deleted row's entry."""
    import hashlib

    src = tmp_path / "old.jsonl"
    rows = [{"title": "Standup", "body": "standup monday: deploy blocked"},
            {"title": "Standup", "body": "standup tuesday: deploy done"}]

    def legacy(n):
        return "im" + hashlib.sha256(f"{src.resolve()}\0standup\0{n}".encode("utf-8")).hexdigest()[:14]

    old = tmp_path / "as-imported.jsonl"  # what an earlier release wrote: its ids in the rows
    old.write_text("".join(json.dumps({**r, "id": legacy(n)}) + "\n" for n, r in enumerate(rows, 1)), encoding="utf-8")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    m.import_jsonl(old)
    src.write_text(json.dumps(rows[1]) + "\n", encoding="utf-8")  # the monday line deleted
    m.import_jsonl(src)
    bodies = sorted(m.read(e.id, count_access=False).body.strip() for e in m.list())
    assert "standup monday: deploy blocked" in bodies and bodies.count("standup tuesday: deploy done") <= 2


def test_an_import_whose_progress_pipe_closes_still_indexes_every_row(tmp_path, embedder):
    root, src = tmp_path / "mem", tmp_path / "turns.jsonl"
    _rows(src, 300)
    Memory(root, embedder=embedder).init()
    env = {**_env(), "MEMSTRATA_PROGRESS_SECONDS": "0.05", "MEMSTRATA_SERVICE": "off"}
    proc = subprocess.run(f"{sys.executable} -m memstrata.cli.app import {src} --root {root} 2>&1 | head -c 1",
                          shell=True, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0
    m = Memory(root, embedder=embedder)
    deadline = time.monotonic() + 300
    while len(m.list()) < 300 and time.monotonic() < deadline:  # the import goes on after `head` left
        time.sleep(0.5)
    time.sleep(2)
    assert len(m.list()) == 300 and _all_indexed(m), "rows written but not indexed"
