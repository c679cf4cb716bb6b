"""The doctor's credential scan on worker processes (doctor/secret_pool.py): the same records found as in one
process, a worker that dies leaves nothing unscanned, and leaving early stops the workers.

Keys are assembled at run time from seeded random characters, so this file holds nothing a scanner would flag.
"""
from __future__ import annotations

import random
import string

import pytest

from memstrata import Memory
from memstrata.doctor import secret_pool
from memstrata.doctor.flagged import indexed_pass
from memstrata.doctor.secret_pool import SecretScan, dirty_keys
from memstrata.storage import clean_records, layout

_rng = random.Random(4444)


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    monkeypatch.setattr(secret_pool, "BATCH_CHARS", 20_000)  # many batches from a few hundred records


def _key() -> str:
    return "AK" + "IA" + "".join(_rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))


def _records(n: int = 400, every: int = 37) -> list[tuple[int, dict]]:
    out = []
    for i in range(n):
        body = " ".join(_rng.choice(["the deploy", "runs on", "Fridays", "token", "pass", "ok."]) for _ in range(200))
        if i % every == 5 % every:
            body += f"\naws key {_key()}"
        out.append((i, {"title": f"Note {i}", "body": body, "tags": ["ops", f"t{i}"], "path": f"ops/n{i}.md"}))
    return out


def test_the_workers_find_what_one_process_finds():
    records = _records()
    want = sorted(dirty_keys(records))
    assert want and len(want) < len(records)
    with SecretScan(workers=2, min_chars=20_000) as scan:  # the first records here, the rest on the workers
        for key, fields in records:
            scan.add(key, fields)
        got = sorted(scan.finish())
        started = list(scan._pool)
    assert started and scan.answered >= 2 and got == want
    assert all(w.proc.poll() is not None for w in started)  # stopped on leaving


@pytest.mark.parametrize("busy", [True, False])
def test_a_worker_that_dies_leaves_its_records_to_this_process(busy):
    records = _records(every=3)
    killed = None
    with SecretScan(workers=2, min_chars=0) as scan:
        for key, fields in records:
            scan.add(key, fields)
            victims = [w for w in scan._pool if (w.batch is not None) == busy]
            if killed is None and victims:
                killed = victims[0]  # its batch in hand (busy), or the next one it is sent, is scanned here
                killed.proc.kill()
                killed.proc.wait()
        got = sorted(scan.finish())
        assert killed is not None and killed not in scan._pool and len(scan._pool) == 1
    assert got == sorted(dirty_keys(records))


def test_leaving_early_stops_the_workers():
    records = _records(200)
    with pytest.raises(KeyboardInterrupt):
        with SecretScan(workers=2, min_chars=0) as scan:
            for key, fields in records:
                scan.add(key, fields)
            started = list(scan._pool)
            raise KeyboardInterrupt
    assert started and all(w.proc.poll() is not None for w in started)


def test_the_doctor_flags_the_same_notes_with_workers(tmp_path, monkeypatch, embedder):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    notes = [m.write(f"Note {n}: the deploy runs on Fridays, ask Priya.", title=f"Deploy {n}", category="ops")
             for n in range(40)]
    for note in notes[3::9]:  # written by hand after the engine's check
        path = m.root / note.path
        path.write_text(path.read_text(encoding="utf-8") + f"\naws key {_key()}\n", encoding="utf-8")
    entries = sorted(m.catalog.entries(), key=lambda e: e.path)
    entries = [m.resolve(e.path) for e in entries]
    alone = indexed_pass(m.root, entries, workers=1)
    layout.path(m.root, clean_records.CLEAN_FILE).unlink()
    pooled = indexed_pass(m.root, entries, workers=2, min_chars=0)
    assert sorted(pooled[0]) == sorted(alone[0]) == sorted(n.path for n in notes[3::9])
    assert pooled[1] == alone[1]


def test_the_workers_run_the_doctors_own_code_whatever_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / "json.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\nraise ImportError\n")
    monkeypatch.chdir(tmp_path)  # `python -m` would put it first on the path
    records = _records(100, every=3)
    with SecretScan(workers=2, min_chars=0) as scan:
        for key, fields in records:
            scan.add(key, fields)
        got = sorted(scan.finish())
    assert scan.answered >= 2 and got == sorted(dirty_keys(records)) and not (tmp_path / "ran").exists()


def test_a_worker_of_other_code_answers_nothing():
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-P", "-m", "memstrata.doctor.secret_worker", "/elsewhere/secret_pool.py",
                          "/elsewhere/secrets.py"], input=b'[[1, {"body": "x"}]]\n', capture_output=True, timeout=60)
    assert run.returncode == 3 and run.stdout == b""
