"""Adopted vaults keep the user's files whole: a frontmatter style the engine cannot add a line to
is left as it was, a folder is a tree only by a real engine config, a note edited while the engine
gives it its id loses nothing, long names, killed writes and modes (defects found by an attacker)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memstrata import Memory
from memstrata.storage import codec

PY = sys.executable


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-11-30T10:00:00Z")
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def mem(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, MEMSTRATA_SERVICE="off")
    return subprocess.run([str(Path(PY).parent / "mem"), *args, "--root", str(root)], env=env,
                          capture_output=True, text=True, timeout=300)


def test_adopt_keeps_flow_and_indented_frontmatter_valid(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    notes = {
        "Notes/flow.md": "---\n{title: Flow style, tags: [a, b]}\n---\nbody\n",
        "Notes/indented.md": "---\n  title: Indented\n  tags: [a]\n---\nbody\n",
        "Notes/plain.md": "---\ntitle: Plain\n---\nbody\n",
    }
    for rel, text in notes.items():
        (vault / rel).write_text(text)
    result = Memory(vault, embedder=embedder).init(adopt=True)
    for rel, text in notes.items():
        after = (vault / rel).read_text()
        data, body = codec.split_frontmatter(after)  # never unparseable
        before, old_body = codec.split_frontmatter(text)
        assert body == old_body, rel
        assert {k: v for k, v in data.items() if k != "mem-id"} == before, rel
        assert data.get("mem-id"), rel
    assert result["entries"] == 3
    assert not any("cannot add a line" in s for s in result["skipped"])


def test_a_style_no_line_fits_is_skipped_with_a_warning_and_left_as_it_was(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    tagged = "---\n!!map\ntitle: Tagged\n---\nbody\n"  # valid; a line above the tag would break it
    (vault / "Notes/tagged.md").write_text(tagged)
    result = Memory(vault, embedder=embedder).init(adopt=True)
    assert (vault / "Notes/tagged.md").read_text() == tagged
    assert any("Notes/tagged.md" in s and "cannot add a line" in s for s in result["skipped"])
    fixed = mem(vault, "doctor", "--fix")
    assert (vault / "Notes/tagged.md").read_text() == tagged, fixed.stdout  # never quarantined


def test_a_toml_frontmatter_note_is_not_adopted_and_left_byte_for_byte(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "content").mkdir(parents=True)
    toml = '+++\ntitle = "toml"\n+++\nA Hugo page.\n'  # a YAML block in front of it would break Hugo and Zola
    (vault / "content/page.md").write_text(toml)
    result = Memory(vault, embedder=embedder).init(adopt=True)
    assert (vault / "content/page.md").read_text() == toml
    assert any("content/page.md" in s and "TOML" in s for s in result["skipped"]), result["skipped"]
    for args in (("sync",), ("doctor", "--fix")):
        assert mem(vault, *args).returncode == 0
        assert (vault / "content/page.md").read_text() == toml, args


def test_giving_a_note_its_id_keeps_its_modification_time_so_it_ages_from_the_users_edit(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "n").mkdir(parents=True)
    (vault / "n/k8s.md").write_text("# Kubernetes pods\n")
    old = 1704067200  # 2024-01-01, long before MEMSTRATA_NOW
    os.utime(vault / "n/k8s.md", (old, old))
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    assert (vault / "n/k8s.md").read_text().startswith("---\nmem-id: ")
    assert os.stat(vault / "n/k8s.md").st_mtime == old
    assert [e.tier for e in m.list()] != ["hot"]
    (vault / "n/later.md").write_text("Added by hand.\n")  # sync gives it its id
    os.utime(vault / "n/later.md", (old, old))
    assert mem(vault, "sync").returncode == 0
    assert "mem-id: " in (vault / "n/later.md").read_text() and os.stat(vault / "n/later.md").st_mtime == old


def test_a_vault_whose_config_md_mentions_memstrata_is_adopted_into_the_hidden_folder(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "Zettel").mkdir(parents=True)
    (vault / "config.md").write_text("# Config\nHow I set up memstrata\n")
    for name in ("a", "b"):  # the same user id twice: the user's, never rewritten
        (vault / f"Zettel/{name}.md").write_text(f"---\nid: 202301011200\n---\nNote {name}.\n")
    result = Memory(vault, embedder=embedder).init(adopt=True)
    assert result["entries"] == 3  # the vault's config.md is one of its notes
    assert (vault / ".memstrata/config.md").is_file()
    assert sorted(p.name for p in vault.iterdir()) == [".memstrata", "Zettel", "config.md"]
    assert re.fullmatch(r"---\nmem-id: [0-9a-f]{12}\n---\n\n# Config\nHow I set up memstrata\n",
                        (vault / "config.md").read_text())
    mem(vault, "doctor", "--fix")
    for name in ("a", "b"):
        data, _ = codec.split_frontmatter((vault / f"Zettel/{name}.md").read_text())
        assert data["id"] == "202301011200" and data["mem-id"]


def test_a_vault_that_lost_its_engine_settings_says_so_and_writes_nothing(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    (vault / "config.md").write_text("---\ntheme: dark\n---\nmy memstrata notes\n")
    (vault / "Notes/n.md").write_text("A note.\n")
    Memory(vault, embedder=embedder).init(adopt=True)
    (vault / ".memstrata/config.md").unlink()  # a peer's commit deleted it
    before = {p: p.read_bytes() for p in vault.rglob("*") if p.is_file() and ".memstrata" not in p.parts}
    for args in (("sync",), ("list",), ("doctor", "--fix")):
        run = mem(vault, *args)
        assert run.returncode != 0 and ".memstrata/config.md is missing" in run.stderr + run.stdout, args
    after = {p: p.read_bytes() for p in vault.rglob("*") if p.is_file() and ".memstrata" not in p.parts}
    assert after == before


def test_sync_never_overwrites_a_note_an_editor_saved_while_it_got_its_id(tmp_path, clock, embedder, monkeypatch):
    from memstrata.storage import adopt

    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    (vault / "Notes/old.md").write_text("An old note.\n")
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    note = vault / "Notes/new.md"
    note.write_text("First line.\n")
    real = adopt.text_with_id

    def editor_saves_meanwhile(text, entry_id, key="id"):  # the editor appends between read and replace
        with open(note, "a") as handle:
            handle.write("A line typed meanwhile.\n")
        monkeypatch.setattr(adopt, "text_with_id", real)
        return real(text, entry_id, key)

    monkeypatch.setattr(adopt, "text_with_id", editor_saves_meanwhile)
    result = m.sync()
    assert note.read_text() == "First line.\nA line typed meanwhile.\n"
    assert result["left_for_next_sync"] == ["Notes/new.md"]
    m.sync()  # the next sync gives it its id, every line kept
    data, body = codec.split_frontmatter(note.read_text())
    assert data["mem-id"] and body == "First line.\nA line typed meanwhile.\n"


def test_a_note_with_a_253_byte_name_gets_its_id_and_maintain_agrees_with_its_dry_run(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    (vault / "Notes/short.md").write_text("A short name.\n")
    Memory(vault, embedder=embedder).init(adopt=True)
    long = vault / "Notes" / ("é" * 100 + "a" * 50 + ".md")  # 253 bytes
    assert len(long.name.encode()) == 253
    long.write_text("A note with a long name.\n")
    dry = mem(vault, "maintain", "--dry-run", "--json")
    real = mem(vault, "maintain", "--json")
    assert dry.returncode == real.returncode == 0, real.stderr
    data, body = codec.split_frontmatter(long.read_text())
    assert data["mem-id"] and body == "A note with a long name.\n"
    assert not [p for p in (vault / "Notes").iterdir() if p.name.endswith(".tmp")]


def _dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_a_killed_writes_temp_copy_is_removed_by_sync_and_never_pushed(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "Cat3").mkdir(parents=True)
    (vault / "Cat3/n26.md").write_text("Note 26.\n")
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    stale = vault / f"Cat3/.n26.md.{_dead_pid()}.682a3a4a.tmp"
    stale.write_text("---\nmem-id: 0123\n---\nNote 26.\n")
    live = vault / f"Cat3/.n26.md.{os.getpid()}.0badcafe.tmp"  # a live writer's: kept, and not committed
    live.write_text("in the middle of a write\n")
    user_tmp = vault / "Cat3/.scratch.tmp"  # the user's own, not the engine's pattern
    user_tmp.write_text("mine\n")
    run = mem(vault, "sync")
    assert run.returncode == 0, run.stderr
    assert not stale.exists() and live.exists() and user_tmp.exists()
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True)
    git = ["git", "-C", str(vault), "-c", "user.name=u", "-c", "user.email=u@x"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin", str(tmp_path / "r.git")], check=True)
    m.sync_remote()
    tracked = subprocess.run([*git, "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    assert "Cat3/n26.md" in tracked and not [p for p in tracked if p.endswith("0badcafe.tmp")]


def test_init_again_keeps_the_modes_of_the_vault_root(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    (vault / "Notes/n.md").write_text("A note.\n")
    os.chmod(vault, 0o755)
    Memory(vault, embedder=embedder).init(adopt=True)
    for args in (("init", "--adopt"), ("init",)):
        run = mem(vault, *args)
        assert run.returncode == 0, run.stderr
        assert vault.stat().st_mode & 0o777 == 0o755, args
    assert (vault / ".memstrata").stat().st_mode & 0o777 == 0o700


def test_adopt_names_a_bad_name_as_the_doctor_does(tmp_path, clock, embedder):
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    (vault / "Notes/ok.md").write_text("A note.\n")
    os.close(os.open(os.fsencode(vault / "Notes") + b"/bad\xff.md", os.O_CREAT | os.O_WRONLY, 0o600))
    (vault / "Notes/two\nlines.md").write_text("x\n")
    skipped = Memory(vault, embedder=embedder).init(adopt=True)["skipped"]
    bad = [s for s in skipped if "bad" in s or "lines" in s]
    assert len(bad) == 2 and all("not UTF-8 or holds a line break" in s for s in bad), skipped
    assert not any("reserved name" in s for s in skipped)
    assert "not adopted: 'Notes/two\\nlines.md' (a name" in " ".join(skipped)  # escaped once (it was twice)
