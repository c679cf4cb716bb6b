"""The secret guard at every way in (issue 27, items 2 and 3): the whole record of an import is read,
and files the engine did not write are flagged, never embedded and never shown in a snippet.

Every fake credential is assembled at run time, so this file holds nothing a scanner would flag.
"""
from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys

import pytest

from memstrata import Memory

_rng = random.Random(27)
KEY = "AK" + "IA" + "".join(_rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))


@pytest.fixture
def mem(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    m = Memory(tmp_path / "r", embedder=embedder)
    m.init()
    m.write("Standup at 9:30 in room B.", title="Standup", category="meetings")
    return m


def _leaks(root) -> list[str]:
    """Every file under the root (sidecars, versions, INDEX.md, file names) that holds the key."""
    out = []
    for path in root.rglob("*"):
        if KEY in path.as_posix():
            out.append(path.as_posix())
        elif path.is_file() and not path.relative_to(root).as_posix().startswith((".vectors", ".cache")):
            if KEY.encode() in path.read_bytes():
                out.append(path.relative_to(root).as_posix())
    return out


BASE = {"title": "imported note", "body": "An ordinary imported note.", "category": "general"}
LINES = [
    ("full_content", {"layer": "L2", "full_content_file": ".full/x.md", "full_content": f"the key is {KEY}"}),
    ("summary", {"summary": f"uses {KEY}"}),
    ("agent", {"agent": f"bot {KEY}"}),
    ("history[0]", {"history": [{"version": 1, "date": "2026-01-01", "summary": f"added {KEY}"}]}),
    ("retention", {"retention": KEY}),
    ("__note__", {"__note__": f"remember {KEY}"}),
    ("path", {"path": f"general/{KEY}.md"}),
    ("kept version 1", {"id": "withversions", "version": 2, "versions": {"1": f"old text with {KEY}"}}),
    ("tags[0]", {"tags": [KEY]}),
    ("owner", {"owner": {"name": "ops", "key": KEY}}),
]


@pytest.mark.parametrize("field,extra", LINES, ids=[f for f, _ in LINES])
def test_every_field_of_an_import_line_is_read(mem, tmp_path, field, extra):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({**BASE, **extra}) + "\n")
    report = mem.import_jsonl(source)
    assert report["imported"] == 0 and len(report["errors"]) == 1, report
    message = report["errors"][0]["error"]
    assert f"at {field} line" in message and "nothing was written" in message
    assert KEY not in message and "\n" not in message
    assert _leaks(mem.root) == []


def test_a_viking_archive_full_text_is_read(mem, tmp_path):
    folder = tmp_path / "viking" / "archive" / "projects"
    folder.mkdir(parents=True)
    (folder / "old.md").write_text("---\ntitle: Old deploy\nlayer: L2\nfull_content_file: old.md.archive.full\n---\n\n"
                                   "Deploy notes, summarised.\n")
    (folder / "old.md.archive.full").write_text(f"Deploy with the key {KEY} from the vault.\n")
    report = mem.import_path(tmp_path / "viking", layout="viking")
    assert report["imported"] == 0 and "AWS access key at body" in report["errors"][0]["error"]
    assert _leaks(mem.root) == []


def test_a_pme_sidecar_is_read(mem, tmp_path):
    folder = tmp_path / "pme" / "notes"
    folder.mkdir(parents=True)
    (folder / "n.md").write_text("---\ntitle: Note\nlayer: L2\nfull_content_file: .full/n.md\n---\n\nshort\n")
    (tmp_path / "pme" / ".full").mkdir()
    (tmp_path / "pme" / ".full" / "n.md").write_text(f"long text with {KEY}\n")
    report = mem.import_path(tmp_path / "pme", layout="pme")
    assert report["imported"] == 0 and "at full_content line" in report["errors"][0]["error"]
    assert _leaks(mem.root) == []


def test_a_write_with_a_secret_in_an_extra_key_is_refused(mem):
    from memstrata.errors import SecretDetected

    with pytest.raises(SecretDetected, match="at __hidden__ line"):
        mem.write("fine body", title="fine", extra={"__hidden__": KEY})
    assert _leaks(mem.root) == []


# -- files the engine did not write ------------------------------------------------------------
def _hand_made(mem):
    (mem.root / "ops").mkdir(exist_ok=True)
    (mem.root / "ops" / "prod-key.md").write_text(
        f"---\ntitle: Prod key\n---\n\nThe prod key for the deploy bucket is {KEY} (rotate yearly).\n")


def _cli(root, *args):
    env = {**os.environ, "MEMSTRATA_SERVICE": "off", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args, "--root", str(root)],
                          capture_output=True, text=True, env=env, timeout=300)


def test_a_hand_made_file_with_a_key_is_flagged_not_embedded_not_shown(mem):
    _hand_made(mem)
    result = mem.sync()
    assert "ops/prod-key.md" in result["flagged"] and KEY not in json.dumps(result)
    index = mem._recall.state.vector_index()
    assert "ops/prod-key.md" not in set(index.frame().cols["path"])
    for strategy in ("auto", "text"):
        found = mem.recall("prod key deploy bucket", strategy=strategy)
        assert KEY not in json.dumps(found.to_dict())
    done = _cli(mem.root, "recall", "prod key")
    assert done.returncode == 0 and KEY not in done.stdout + done.stderr
    synced = _cli(mem.root, "sync")
    assert "ops/prod-key.md" in synced.stderr and KEY not in synced.stdout + synced.stderr
    doctor = _cli(mem.root, "doctor", "--json")
    assert "ops/prod-key.md" in doctor.stdout and KEY not in doctor.stdout + doctor.stderr
    # resolved: the key taken out of the file, the entry is indexed and found again
    (mem.root / "ops" / "prod-key.md").write_text("---\ntitle: Prod key\n---\n\nThe prod key is in the vault.\n")
    assert "flagged" not in mem.sync()
    assert "ops/prod-key.md" in set(mem._recall.state.vector_index().frame().cols["path"])


def test_a_key_added_by_hand_to_an_indexed_entry_drops_its_row(mem):
    w = mem.write("The deploy bucket is s3://acme-deploy.", title="Deploy bucket", category="ops")
    mem.sync()
    path = mem.root / w.path
    path.write_text(path.read_text().replace("s3://acme-deploy.", f"s3://acme-deploy, key {KEY}."))
    assert w.path in mem.sync()["flagged"]
    assert w.id not in set(mem._recall.state.vector_index().frame().ids)
    assert KEY not in json.dumps(mem.recall("deploy bucket key").to_dict())


def test_an_adopted_note_with_a_key_is_named_at_adopt(tmp_path):
    vault = tmp_path / "vault"
    (vault / "ops").mkdir(parents=True)
    (vault / "ops" / "keys.md").write_text(f"# Keys\n\nThe prod key is {KEY}.\n")
    (vault / "ops" / "fine.md").write_text("# Fine\n\nNothing secret here.\n")
    done = _cli(vault, "init", "--adopt")
    assert done.returncode == 0, done.stderr
    assert "ops/keys.md" in done.stderr and "possible credential" in done.stderr
    assert KEY not in done.stdout + done.stderr
    recalled = _cli(vault, "recall", "prod key")
    assert KEY not in recalled.stdout + recalled.stderr


def test_a_key_pulled_from_a_teammate_is_flagged_by_the_sync_that_brings_it(tmp_path, embedder):
    a, b = Memory(tmp_path / "a", embedder=embedder), Memory(tmp_path / "b", embedder=embedder)
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True)
    a.clone(str(tmp_path / "r.git"), machine="laptop")
    b.clone(str(tmp_path / "r.git"), machine="desktop")
    _hand_made(b)  # the teammate's hand edit, committed and pushed by the teammate's sync
    b.sync_remote()
    result = a.sync_remote()
    assert "ops/prod-key.md" in result["index"]["flagged"] and KEY not in json.dumps(result)
    assert KEY not in json.dumps(a.recall("prod key deploy bucket").to_dict())
    assert [f.path for f in a.doctor().findings if f.kind == "secret"] == ["ops/prod-key.md"]


def test_a_flagged_file_reaches_autoload_and_the_hook_redacted(mem):
    """The hot list brings a flagged file to autoload (not recall): its title and body are
    shown text and are redacted as recall's snippets are, in the API, the CLI and the hook."""
    (mem.root / "Notes").mkdir()
    (mem.root / "Notes" / "zebra.md").write_text(
        f"---\ntitle: Zebra {KEY}\n---\n\nZebra project export\n\nAWS_KEY={KEY}\n")
    assert "Notes/zebra.md" in mem.sync()["flagged"]
    for context in ("Zebra creds", "Zebra creds zebra project export", None):
        result = mem.autoload(context, hot=True)  # with a context the hot list comes only when asked for
        assert "Zebra project export" in result.markdown()
        assert KEY not in json.dumps(result.to_dict()) and "[redacted]" in result.markdown()
    promoted = mem.promote("Zebra project export", layers="hot", threshold=0.0, dry_run=True)
    assert KEY not in json.dumps(promoted)
    shown = _cli(mem.root, "autoload", "--json")  # a session start: the hot list
    assert shown.returncode == 0 and "Zebra project export" in shown.stdout
    assert KEY not in shown.stdout + shown.stderr
    hook = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "autoload", "--hook", "--root", str(mem.root)],
                          input=json.dumps({"hook_event_name": "SessionStart"}), capture_output=True, text=True,
                          env={**os.environ, "MEMSTRATA_SERVICE": "off", "HF_HUB_OFFLINE": "1"}, timeout=300)
    assert "Zebra project export" in hook.stdout and KEY not in hook.stdout + hook.stderr
