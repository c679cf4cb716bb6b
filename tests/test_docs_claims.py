"""Sentences of the docs that were false (issue 39, item 14), each checked against what the code does:
where the default tree is, which notes adoption takes, what `mem init` git-ignores, how recall shows an
old version, which importance numbers a write takes, which folders a tree holds, the demo's cut-off,
and what `mem export --json` prints."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from memstrata import Memory
from memstrata.storage.config import Settings

DOCS = Path(__file__).resolve().parents[1] / "docs"
README = Path(__file__).resolve().parents[1] / "README.md"


def mem(*args, cwd=None, **env):
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "MEMSTRATA_SERVICE": "off", **env}, timeout=300)


def test_the_default_tree_is_never_the_tree_you_are_in(tmp_path):
    here = tmp_path / "here"
    assert mem("init", "--root", str(here)).returncode == 0
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k != "MEMSTRATA_HOME"}
    done = subprocess.run([sys.executable, "-m", "memstrata.cli.app", "init", "--json"], capture_output=True,
                          text=True, cwd=here, env={**env, "HOME": str(home), "MEMSTRATA_SERVICE": "off"})
    assert json.loads(done.stdout)["root"] == str(home / "memory")  # not `here`
    line = next(x for x in (DOCS / "reference.md").read_text().splitlines() if x.startswith("mem init  "))
    assert "tree you are in" not in line and "$MEMSTRATA_HOME" in line and "~/memory" in line


def test_a_vaults_top_level_notes_are_adopted_as_the_reference_says(tmp_path, embedder):
    vault = tmp_path / "vault"
    (vault / "sub").mkdir(parents=True)
    (vault / "README.md").write_text("# Read me\n\nThe vault's own readme.\n")
    (vault / "top.md").write_text("A note at the top of the vault.\n")
    (vault / "sub" / "inner.md").write_text("A note in a folder.\n")
    m = Memory(vault, embedder=embedder)
    m.init(adopt=True)
    assert {"README.md", "top.md", "sub/inner.md"} <= {e.path for e in m.list()}
    text = " ".join((DOCS / "reference.md").read_text().split())
    assert "top-level notes are not adopted" not in text and "top-level notes (a `README.md` too) are adopted" in text


def test_what_versions_md_says_of_gitignore_and_old_versions_is_so(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    ignored = (m.root / ".gitignore").read_text().split()
    text = " ".join((DOCS / "versions.md").read_text().split())
    assert ".versions/" not in ignored
    assert "gitignored by `mem init`" not in text and "`.versions/` is not gitignored" in text
    r = m.write("The build runs on Jenkins with the old agents.", title="CI setup", category="ops")
    m.update(r.id, "The build moved to GitHub Actions.")
    hit = m.recall("jenkins agents", count_access=False, min_relevance=0).to_dict()["results"][0]
    assert hit["id"] == r.id and "version" not in hit  # the entry, not a version number
    assert "answers with the entry's id and the version number" not in text


def test_aging_md_says_which_importance_numbers_a_write_takes(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    refused = mem("write", "A note.", "--importance", "7", "--root", str(m.root))
    assert refused.returncode == 2 and "importance" in refused.stderr
    row = next(x for x in (DOCS / "aging.md").read_text().splitlines() if x.startswith("| a number 0-1"))
    assert "refused" in row and "1-10 is read as tenths" not in row


def test_the_readme_tree_sketch_names_every_folder_a_tree_in_use_holds(tmp_path, embedder, monkeypatch):
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-10-01T09:00:00Z")
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    r = m.write(" ".join(f"Sentence {i} on how the release train leaves every second Tuesday at noon." for i in
                         range(12)), title="Release train", category="ops")
    m.update(r.id, tags=["release"])
    m.read(r.id)
    m.delete(m.write("A short-lived note.", title="Scratch", category="ops").id)
    monkeypatch.setenv("MEMSTRATA_NOW", "2026-12-01T09:00:00Z")
    m.maintain()
    folders = {p.name for p in m.root.iterdir() if p.is_dir() and p.name.startswith(".")}
    assert {".access", ".full", ".versions", ".trash", ".vectors", ".cache"} <= folders
    sketch = README.read_text().split("## How it works, briefly", 1)[1].split("```")[1]
    assert not [f for f in folders if f + "/" not in sketch], sketch


def test_the_demo_names_the_cut_off_recall_uses_by_default(tmp_path):
    home = tmp_path / "demo"
    done = subprocess.run([sys.executable, "-m", "memstrata.demo"], capture_output=True, text=True,
                          env={**os.environ, "MEMSTRATA_HOME": str(home), "MEMSTRATA_SERVICE": "off"}, timeout=600)
    assert done.returncode == 0, done.stderr
    said = next(x for x in done.stdout.splitlines() if x.startswith("relevance is the likelihood"))
    assert f"under {Settings().recall_min_relevance:g}" in said and "are not shown" not in said, said


def test_export_help_says_what_json_prints(tmp_path, embedder):
    m = Memory(tmp_path / "mem", embedder=embedder)
    m.init()
    m.write("One.", title="One", category="ops")
    m.write("Two.", title="Two", category="ops")
    out = mem("export", "--json", "--root", str(m.root))
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and all(json.loads(x)["title"] in ("One", "Two") for x in lines)  # JSON Lines
    to_file = mem("export", str(tmp_path / "all.jsonl"), "--json", "--root", str(m.root))
    assert json.loads(to_file.stdout)["entries"] == 2  # one JSON document
    shown = " ".join(mem("export", "--help", COLUMNS="200").stdout.split())
    assert re.search(r"--json With a FILE: print the result .* as one JSON document\. To stdout the export "
                     r"itself is JSON Lines", shown), shown
