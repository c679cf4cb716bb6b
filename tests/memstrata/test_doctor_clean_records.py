"""`mem doctor` scans a record for credentials again only when it changed or the guard's rules did
(storage/clean_records.py): a key written by hand into a checked note is still found."""
from __future__ import annotations

import random
import string

from memstrata import Memory
from memstrata.storage import clean_records, secrets

_rng = random.Random(41)
KEY = "AK" + "IA" + "".join(_rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))


def _secret_paths(m: Memory) -> list[str]:
    return sorted(f.path for f in m.doctor().findings if f.kind == "secret")


def test_a_clean_record_is_not_scanned_twice_and_a_change_is(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    m = Memory(tmp_path / "mem")
    m.init()
    notes = [m.write(f"Note {n}: the deploy runs on Fridays.", title=f"Deploy {n}", category="ops") for n in range(5)]
    scanned = []
    real = secrets.scan_fields  # what the doctor's scan runs on each record (doctor/secret_pool.py)
    monkeypatch.setattr(secrets, "scan_fields", lambda fields: scanned.append(fields["path"]) or real(fields))
    assert _secret_paths(m) == []
    assert len(scanned) == 5
    scanned.clear()
    assert _secret_paths(m) == [] and scanned == []  # found clean before, unchanged: not read for keys again
    path = m.root / notes[2].path
    path.write_text(path.read_text(encoding="utf-8").replace("Fridays.", f"Fridays. Key: {KEY}"), encoding="utf-8")
    assert _secret_paths(m) == [notes[2].path] and scanned == [notes[2].path]
    scanned.clear()
    assert _secret_paths(m) == [notes[2].path]  # a flagged record is never taken as clean
    stamp = m.root / clean_records.CLEAN_FILE
    stamp.write_text("0" * 40 + "\n" + stamp.read_text(encoding="utf-8").split("\n", 1)[1], encoding="utf-8")
    scanned.clear()
    _secret_paths(m)
    assert len(scanned) == 5  # other rules (another stamp): every record checked again
