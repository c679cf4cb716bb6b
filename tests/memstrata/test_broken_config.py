"""A typo in config.md (`hot_days: [14`) or a truncated config.md: every command (the doctor too) says
"config.md cannot be read: ..." instead of "not a memory tree; run `mem init`", and neither `mem init`
nor `mem init --adopt` writes anything into the tree (adopting it gave every entry a second id, emptied
the trash list, cut history and hid the `.full/` originals). Real `mem` processes (issue 39, item 3)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from team_scenario import env, mem  # noqa: E402


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args], capture_output=True, text=True,
                          env=env(MEMSTRATA_MACHINE="laptop"), timeout=300)


def snapshot(root: Path) -> dict:
    """Every file of the tree but the derived ones, with its bytes."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".vectors", ".cache", "vectors", "cache")]
        for name in files:
            if name != ".lock":
                path = Path(folder) / name
                out[str(path.relative_to(root))] = path.read_bytes()
    return out


def a_tree_in_use(root: Path, adopted: bool = False) -> dict:
    """A tree with entries, a kept version, a trash item; the ids of what it holds."""
    if adopted:
        (root / "notes").mkdir(parents=True)
        (root / "notes" / "boat.md").write_text("The boat is moored at pier 4.\n")
        (root / "notes" / "kite.md").write_text("The kite needs a new line.\n")
        mem("init", "--adopt", "--root", str(root), machine="laptop")
        boat = mem("read", "notes/boat.md", "--root", str(root), machine="laptop")["id"]
        kite = mem("read", "notes/kite.md", "--root", str(root), machine="laptop")["id"]
    else:
        mem("init", "--root", str(root), machine="laptop")
        boat = mem("write", "The boat is moored at pier 4.", "--title", "Boat", "-c", "notes", "--root", str(root),
                   machine="laptop")["id"]
        kite = mem("write", "The kite needs a new line.", "--title", "Kite", "-c", "notes", "--root", str(root),
                   machine="laptop")["id"]
    mem("update", boat, "The boat is moored at pier 5 now.", "--root", str(root), machine="laptop")
    mem("delete", kite, "--root", str(root), machine="laptop")
    return {"boat": boat, "kite": kite}


@pytest.mark.parametrize("damage", ["typo", "truncated", "vault_typo"])
def test_a_broken_config_md_is_named_and_never_leads_to_damage(tmp_path, embedder, damage):
    root = tmp_path / "t"
    ids = a_tree_in_use(root, adopted=damage == "vault_typo")
    config = root / (".memstrata/config.md" if damage == "vault_typo" else "config.md")
    text = config.read_text()
    good = text
    if damage == "truncated":
        config.write_text(text[:30])  # "---\n# Settings changed from" : never closed
    else:
        config.write_text(text.replace("---\n", "---\nhot_days: [14\n", 1))
    before = snapshot(root)
    for args in (["list"], ["read", ids["boat"]], ["write", "More.", "-c", "notes"], ["doctor"], ["maintain"],
                 ["recall", "boat"], ["sync"], ["trash", "list"], ["history", ids["boat"]], ["stats"]):
        done = run(*args, "--root", str(root))
        err = done.stderr
        assert done.returncode != 0, (args, done.stdout)
        assert err.startswith("mem: error: ") and err.count("\n") == 1, (args, err)
        assert "config.md cannot be read: " in err and "not a memory tree" not in err, (args, err)
        assert ("malformed YAML" in err) if damage != "truncated" else ("never closed" in err), (args, err)
    for args in (["init"], ["init", "--adopt"]):
        done = run(*args, "--root", str(root))
        assert done.returncode != 0 and "config.md cannot be read: " in done.stderr, (args, done.stderr)
        assert "--adopt` makes them" not in done.stderr, done.stderr  # no advice that leads to damage
    assert snapshot(root) == before  # nothing was written: no second id, trash and history as they were
    config.write_text(good)  # the user fixes the typo: everything is there
    assert mem("read", ids["boat"], "--root", str(root), machine="laptop")["body"].startswith("The boat is moored at pier 5")
    assert [h["version"] for h in mem("history", ids["boat"], "--root", str(root), machine="laptop")["versions"]] == [1, 2]
    assert [i["id"] for i in mem("trash", "list", "--root", str(root), machine="laptop")["entries"]] == [ids["kite"]]


def test_a_missing_config_md_in_a_tree_is_said_and_init_writes_it_back_without_adopting(tmp_path, embedder):
    root = tmp_path / "t"
    ids = a_tree_in_use(root)
    (root / "config.md").unlink()
    done = run("list", "--root", str(root))
    assert done.returncode != 0 and "config.md is missing" in done.stderr, done.stderr
    adopt = run("init", "--adopt", "--root", str(root))
    assert adopt.returncode != 0 and "without --adopt" in adopt.stderr, adopt.stderr
    assert not (root / ".memstrata").exists()
    done = run("init", "--root", str(root), "--json")
    assert done.returncode == 0, done.stderr
    assert "config.md" in json.loads(done.stdout)["created"]
    assert mem("read", ids["boat"], "--root", str(root), machine="laptop")["id"] == ids["boat"]
    assert [i["id"] for i in mem("trash", "list", "--root", str(root), machine="laptop")["entries"]] == [ids["kite"]]
    assert "mem-id" not in (root / "notes" / "boat.md").read_text()  # never adopted: one id per entry


def test_a_vaults_own_unreadable_or_broken_config_md_never_blocks_adopting_it(tmp_path, embedder):
    """Only a tree's own settings file is judged: a vault's note named config.md (Latin-1, or YAML with a
    typo) is one of its notes, and `mem init --adopt` adopts the vault as before."""
    for n, raw in enumerate((b"caf\xe9 notes\n", b"---\ntheme: [dark\n---\nmy memstrata notes\n")):
        vault = tmp_path / f"v{n}"
        (vault / "notes").mkdir(parents=True)
        (vault / "config.md").write_bytes(raw)
        (vault / "notes" / "a.md").write_text("A note.\n")
        done = run("init", "--adopt", "--root", str(vault))
        assert done.returncode == 0, done.stderr
        assert (vault / ".memstrata" / "config.md").is_file() and (vault / "config.md").read_bytes() == raw
