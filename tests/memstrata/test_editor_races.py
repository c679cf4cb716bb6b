"""No engine write replaces a file that changed since it was read. Editor processes save entries the
whole time (one by write-temp + fsync + rename, one by truncate-then-write) while `mem maintain`
compresses them and `mem update` rewrites them: every save ends in some file of the tree (the entry,
its `.full/` original, its kept versions), and a half-written file is never compressed or kept as a
version: a file still changing is skipped and said so (issue 39, item 2)."""
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.errors import ChangedOnDisk, Locked, NotFound

SENTENCES = ["The {0} pump in the basement was replaced in March.", "Its warranty runs for five years.",
             "The installer left the manual in the blue folder.", "A yearly check keeps the guarantee.",
             "Noise above 60 dB means the bearing is worn.", "The spare fuse is taped inside the lid.",
             "Descaling is needed every second winter.", "The old pump went to the recycling yard."]
SAVED = re.compile(r"^Saved (\d+) by (\w+)\.$", re.M)
EDITOR = r"""
import os, sys, time
paths, mode, seconds, log = sys.argv[1].split(","), sys.argv[2], float(sys.argv[3]), sys.argv[4]
n, end, stop = 0, time.monotonic() + seconds, log + ".stop"
with open(log, "a") as out:
    while time.monotonic() < end and not os.path.exists(stop):
        path = paths[n % len(paths)]
        n += 1
        with open(path, encoding="utf-8") as f:
            text = f.read()
        text += ("" if text.endswith("\n") else "\n") + f"Saved {n} by {mode}.\n"
        if mode == "rename":  # write a temp file, fsync it, rename it over the note
            temp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.swp")
            with open(temp, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, path)
        else:  # truncate, write a first part, then the rest a moment later
            with open(path, "r+", encoding="utf-8") as f:
                f.truncate(0)
                f.write(text[:-8])
                f.flush()
                time.sleep(0.003)
                f.write(text[-8:])
        out.write(f"{n}\n")
        out.flush()
        time.sleep(0.03)
"""


def _tree(tmp_path, embedder, monkeypatch, days_old: int) -> tuple[Memory, list]:
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-01-01T09:00:00Z")
    m = Memory(tmp_path / "t", embedder=embedder)
    m.init()
    words = ["water", "heat", "sump", "pool", "well", "fuel", "oil", "air"]
    entries = [m.write(" ".join(s.format(w) for s in SENTENCES) + "\n", title=f"{w} pump", category="house")
               for w in words]
    later = f"2026-01-{1 + days_old:02d}T09:00:00Z"
    monkeypatch.setenv("MEMSTRATA_NOW", later)
    return m, entries


def _editors(root: Path, entries: list, seconds: float, logs: Path) -> list:
    files = [str(root / e.path) for e in entries]
    return [subprocess.Popen([sys.executable, "-c", EDITOR, ",".join(files[k::2]), mode, str(seconds),
                              str(logs / f"{mode}.log")])
            for k, mode in enumerate(("rename", "truncate"))]


def _all_text(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in root.rglob("*.md")
                     if ".cache" not in p.parts)


def _check(root: Path, logs: Path) -> int:
    """Every logged save is in some file; no original or version holds a half-written save; the count."""
    text = _all_text(root)
    found = {(int(n), who) for n, who in SAVED.findall(text)}
    saves = {(int(n), mode) for mode in ("rename", "truncate")
             for n in (logs / f"{mode}.log").read_text().split()}
    lost = sorted(saves - found)
    assert not lost, f"{len(lost)} of {len(saves)} saves are in no file: {lost[:10]}"
    for folder in (root / ".full", root / ".versions"):
        for path in folder.rglob("*.md") if folder.is_dir() else ():
            body = path.read_text(encoding="utf-8")
            assert body.endswith("\n"), (path, body[-40:])
            for line in body.splitlines():
                assert not line.startswith("Saved") or SAVED.fullmatch(line), (path, line)  # no half save
    return len(saves)


def test_maintain_never_drops_or_compresses_an_editors_save(tmp_path, embedder, monkeypatch):
    m, entries = _tree(tmp_path, embedder, monkeypatch, days_old=20)  # warm: maintain compresses them (L1)
    logs = tmp_path / "logs"
    logs.mkdir()
    editors = _editors(m.root, entries, 6.0, logs)
    skipped, runs = [], 0
    try:
        while any(p.poll() is None for p in editors):
            report = m.maintain().to_dict()
            runs += 1
            skipped += report.get("skipped", [])
    finally:
        for p in editors:
            p.wait(timeout=60)
    assert _check(m.root, logs) > 100
    assert runs >= 2 and skipped, (runs, skipped)  # files still changing were skipped and said so
    assert all("changed" in s["reason"] and s["id"] and s["path"] for s in skipped), skipped
    final = m.maintain().to_dict()  # the editors stopped: the rest is compressed now
    assert final["skipped"] == [] and all(m.resolve(e.id).layer == "L1" for e in entries)
    assert _check(m.root, logs) > 100
    assert m.doctor().healthy


def test_update_never_drops_an_editors_save(tmp_path, embedder, monkeypatch):
    m, entries = _tree(tmp_path, embedder, monkeypatch, days_old=0)
    logs = tmp_path / "logs"
    logs.mkdir()
    editors = _editors(m.root, entries, 6.0, logs)
    done, refused, n = 0, 0, 0
    try:
        while any(p.poll() is None for p in editors):
            n += 1
            try:
                m.update(entries[n % len(entries)].id, f"Rewritten {n}: the pump was checked.\n")
                done += 1
            except Locked as exc:  # it kept changing (or held no entry, half-saved) while read: nothing written
                assert "changed" in exc.message, exc.message
                refused += 1
    finally:
        for p in editors:
            p.wait(timeout=60)
    assert done + refused == n and done >= 1, (done, refused)
    assert _check(m.root, logs) > 100
    for e in entries:  # each update left a version holding what the file held just before it
        assert m.history(e.id)


@pytest.mark.parametrize("mode", ["rename", "truncate"])
def test_a_file_changed_between_read_and_replace_is_never_replaced(tmp_path, embedder, monkeypatch, mode):
    """The window itself, without timing luck: an editor saves after the engine read the entry and
    before it replaces the file (the save path's last check runs the editor's save)."""
    m, entries = _tree(tmp_path, embedder, monkeypatch, days_old=0)
    target = m.root / entries[0].path
    current = m.resolve(entries[0].id)
    time.sleep(0.05)
    if mode == "rename":
        target.with_name(".swp").write_text(target.read_text() + "Saved 1 by rename.\n")
        target.with_name(".swp").replace(target)
    else:
        with open(target, "r+") as f:
            text = f.read()
            f.seek(0)
            f.write(text + "Saved 1 by truncate.\n")
    with pytest.raises(Locked, match="changed"):
        m.save_path.update(current, current.copy(body="Something else.\n"))
    assert target.read_text().endswith(f"Saved 1 by {mode}.\n")
    assert m.history(entries[0].id)[-1]["version"] == 1  # no version kept for the change not made


def test_mem_maintain_and_mem_update_processes_against_editor_processes(tmp_path, embedder, monkeypatch):
    """The same with `mem maintain` and `mem update` as processes of their own (what cron and an
    agent run), two of each while the editors save: every save is in a file, a skipped entry is said."""
    import json

    sys.path.insert(0, str(Path(__file__).parent))
    from team_scenario import env

    m, entries = _tree(tmp_path, embedder, monkeypatch, days_old=20)
    logs = tmp_path / "logs"
    logs.mkdir()
    editors = _editors(m.root, entries, 300.0, logs)  # until told to stop
    codes, said = [], []
    try:
        for n, args in enumerate((["maintain"], ["update", entries[1].id, "Rewritten once.\n"], ["maintain"],
                                  ["update", entries[2].id, "Rewritten twice.\n"])):
            done = subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args, "--root", str(m.root), "--json"],
                                  capture_output=True, text=True, env=env(MEMSTRATA_NOW="2026-01-21T09:00:00Z"),
                                  timeout=300)
            codes.append(done.returncode)
            assert done.returncode in (0, 3, 6), done.stderr  # 6: it kept changing; 3: read while empty
            if done.returncode == 0 and args[0] == "maintain":
                said += json.loads(done.stdout).get("skipped", [])
    finally:
        for mode in ("rename", "truncate"):
            (logs / f"{mode}.log.stop").touch()
        for p in editors:
            p.wait(timeout=60)
    assert codes[0] == codes[2] == 0, codes
    assert _check(m.root, logs) > 20
    assert all("changed on disk" in s["reason"] for s in said), said


def test_an_update_waits_for_a_file_an_editor_left_empty_for_a_moment(tmp_path, embedder, monkeypatch):
    """An editor that truncates, then writes, leaves the entry's file without its id for a moment: an
    update then waits for the save and makes its change on it; a file that stays empty is said to be
    changing, never "no entry with id" as if it had been deleted."""
    m, entries = _tree(tmp_path, embedder, monkeypatch, days_old=0)
    path = m.root / entries[0].path
    saved = path.read_text(encoding="utf-8") + "Saved 1 by truncate.\n"
    path.write_text("", encoding="utf-8")
    editor = subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(0.2); "
                               "open(sys.argv[1], 'w', encoding='utf-8').write(sys.argv[2])", str(path), saved])
    done = m.update(entries[0].id, "Rewritten: the pump was checked.\n")
    assert editor.wait(timeout=60) == 0 and done.id == entries[0].id
    assert "Saved 1 by truncate." in _all_text(m.root)  # in the version the update kept
    assert m.resolve(entries[0].id).body == "Rewritten: the pump was checked.\n"
    other = m.root / entries[1].path
    other.write_text("", encoding="utf-8")
    with pytest.raises(ChangedOnDisk) as left_empty:
        m.update(entries[1].id, "Rewritten too.\n")
    assert entries[1].path in left_empty.value.message and "try again" in left_empty.value.message
    time.sleep(2.1)  # long after: a file emptied by hand, not a save under way
    with pytest.raises(NotFound) as emptied:
        m.update(entries[1].id, "Rewritten too.\n")
    assert "holds no entry id now" in emptied.value.message


def test_a_note_rewritten_whole_without_its_id_is_no_save_under_way(tmp_path, embedder, monkeypatch):
    """A whole note without the id (an agent rewrote the file with its own tool) is not waited for as a
    half-saved one: the id is simply not there."""
    m, entries = _tree(tmp_path, embedder, monkeypatch, days_old=0)
    (m.root / entries[0].path).write_text("just text\n", encoding="utf-8")
    with pytest.raises(NotFound) as gone:
        m.read(entries[0].id, count_access=False)
    assert "holds no entry id now" in gone.value.message
