"""A note copied from a template carries the template's `mem-id:`. The original keeps the id: the
file git added first, else the one the catalog saw hold the id first, else the engine's rule
(highest version, latest update, first path). `mem read ID` and `mem doctor --fix` agree, and in a
vault the copy gets a fresh id (it is the user's new note: never quarantined)."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from memstrata import Memory

TEMPLATE = "---\ntags: [daily]\n---\n## Tasks\n\n## Notes\n"


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:00:00Z")
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def vault_with_template(tmp_path, embedder) -> tuple[Memory, str]:
    vault = tmp_path / "vault"
    (vault / "Templates").mkdir(parents=True)
    (vault / "Templates/Daily.md").write_text(TEMPLATE)
    (vault / "Projects").mkdir()
    (vault / "Projects/boat.md").write_text("Sand and varnish the tiller.\n")
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    return m, {e.path: e.id for e in m.list()}["Templates/Daily.md"]


def copy_template(m: Memory) -> Path:
    """Obsidian's daily note from the template: the same bytes, `mem-id:` included, at a path that
    sorts before the template's (the old rule gave the copy the id)."""
    (m.root / "Daily").mkdir(exist_ok=True)
    copy = m.root / "Daily/2026-11-30.md"
    shutil.copyfile(m.root / "Templates/Daily.md", copy)
    return copy


def check_the_original_keeps_it(m: Memory, template_id: str, copy: Path) -> None:
    original = (m.root / "Templates/Daily.md").read_bytes()
    copied = copy.read_bytes()
    assert m.read(template_id, count_access=False).path == "Templates/Daily.md"  # `mem read` before the fix
    (finding,) = [f for f in m.doctor().findings if f.kind == "duplicate_id"]
    assert finding.path == "Daily/2026-11-30.md" and finding.detail.endswith("Templates/Daily.md")
    assert "fresh id" in finding.action  # the same text as the template, yet the user's note: kept
    made = 1764460800  # 2025-11-30: the copy's own time, which aging reads, survives its fresh id
    os.utime(copy, (made, made))
    m.doctor(fix=True)
    assert os.stat(copy).st_mtime == made
    assert (m.root / "Templates/Daily.md").read_bytes() == original
    after = copy.read_bytes()
    fresh = re.search(rb"^mem-id: (\w+)$", after, re.M).group(1).decode()
    assert fresh != template_id and after == copied.replace(template_id.encode(), fresh.encode())
    assert m.read(template_id, count_access=False).path == "Templates/Daily.md"
    assert m.read(fresh, count_access=False).path == "Daily/2026-11-30.md"
    assert m.doctor().findings == []


def test_the_file_the_catalog_saw_first_keeps_the_id(tmp_path, clock, embedder):
    m, template_id = vault_with_template(tmp_path, embedder)
    m.list()  # the catalog sees the template alone
    copy = copy_template(m)
    check_the_original_keeps_it(m, template_id, copy)


def test_the_file_git_added_first_keeps_the_id_when_the_catalog_cannot_tell(tmp_path, clock, embedder):
    m, template_id = vault_with_template(tmp_path, embedder)
    git(m.root, "init", "-q")
    git(m.root, "add", "-A")
    git(m.root, "commit", "-q", "-m", "adopted vault")
    copy = copy_template(m)
    shutil.rmtree(m.root / ".memstrata/cache")  # derived: rebuilt, and what it had seen is gone
    m = Memory(m.root, embedder=embedder)
    check_the_original_keeps_it(m, template_id, copy)


def test_without_git_or_the_catalog_the_engine_rule_decides_and_read_and_doctor_agree(tmp_path, clock, embedder):
    m, template_id = vault_with_template(tmp_path, embedder)
    copy = copy_template(m)
    text = copy.read_text().replace("---\n## Tasks", "version: 2\n---\n## Tasks")  # a copy edited to v2
    copy.write_text(text)
    shutil.rmtree(m.root / ".memstrata/cache")
    m = Memory(m.root, embedder=embedder)
    assert m.read(template_id, count_access=False).path == "Daily/2026-11-30.md"  # the highest version
    (finding,) = [f for f in m.doctor().findings if f.kind == "duplicate_id"]
    assert finding.path == "Templates/Daily.md"  # the same one the doctor keeps
    m.doctor(fix=True)
    assert m.read(template_id, count_access=False).path == "Daily/2026-11-30.md"
    assert m.doctor().findings == []


def test_a_renamed_template_keeps_its_id_against_an_older_copy(tmp_path, clock, embedder):
    m, template_id = vault_with_template(tmp_path, embedder)
    m.list()
    copy_template(m)
    m.list()  # the catalog sees the copy: the template stays the first holder
    (m.root / "Templates/Daily.md").rename(m.root / "Templates/Day.md")
    m.sync()  # one sync sees the first holder go and its id appear elsewhere: a rename
    assert m.read(template_id, count_access=False).path == "Templates/Day.md"
    (finding,) = [f for f in m.doctor().findings if f.kind == "duplicate_id"]
    assert finding.path == "Daily/2026-11-30.md"
