"""`mem secrets allow` is this machine's word: team sync never shares the allow file (a teammate's index
kept a note allowed here after a revoke here), and a sync re-checks a note whose allowance changed
without its file changing (the allow file edited or deleted by hand)."""
import json
import random
import string
import sys
from pathlib import Path

import pytest

from memstrata import Memory

sys.path.insert(0, str(Path(__file__).parent))

from test_vault_team import git, vault_in_git  # noqa: E402  (a vault in git with a bare remote)

_rng = random.Random(41)
PASSWORD = "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(14))  # made at run time
NOTES = {"Welcome.md": "# Welcome\nThis vault is about sailing boats.\n",
         "ops/billing.md": "# Billing\n\nThe zebrafish reporting database:\n\n"
                           f"    postgres://billing:{PASSWORD}@reports.example.com:5432/billing\n"}
ALLOW = ".memstrata/secrets-allowed.json"
QUERY = "zebrafish reporting database"


@pytest.fixture(autouse=True)
def _no_service(monkeypatch):
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")


def found(m: Memory) -> list[str]:
    return [h.path for h in m.recall(QUERY).results]


def test_an_allowance_stays_on_its_machine(tmp_path, embedder):
    a, bare = vault_in_git(tmp_path, embedder, NOTES)
    b = Memory(tmp_path / "b", embedder=embedder)
    b.clone(str(bare), machine="desktop")
    a.secrets_allow("ops/billing.md")
    assert found(a)[:1] == ["ops/billing.md"]
    a.sync_remote()
    assert ALLOW not in git(a.root, "ls-files").split() and (a.root / ALLOW).is_file()
    b.sync_remote()
    assert not (b.root / ALLOW).exists() and "ops/billing.md" not in found(b)  # a teammate allows on theirs

    # an allow file an older release committed leaves the team's tree (it stays on this disk)
    git(a.root, "add", "-f", ALLOW)
    git(a.root, "commit", "-q", "-m", "an older release shared it")
    a.sync_remote()
    assert ALLOW not in git(a.root, "ls-files").split() and (a.root / ALLOW).is_file()
    assert found(a)[:1] == ["ops/billing.md"]


def adopted_notes(tmp_path, embedder):
    """NOTES adopted as a vault (no git): its root and its Memory."""
    root = tmp_path / "v"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    m = Memory(root, embedder=embedder)
    m.init(adopt=True)
    return root, m

def test_a_hand_edit_or_deletion_of_the_allow_file_is_seen_by_the_next_sync(tmp_path, embedder):
    root, m = adopted_notes(tmp_path, embedder)
    m.secrets_allow("ops/billing.md")
    m.sync()
    assert found(m)[:1] == ["ops/billing.md"]

    data = json.loads((root / ALLOW).read_text())
    data["notes"] = {}  # the user takes the allowance out by hand
    (root / ALLOW).write_text(json.dumps(data))
    assert "ops/billing.md" in m.sync().get("flagged", {})
    assert "ops/billing.md" not in found(m)
    assert not [f for f in m.doctor().findings if f.kind == "vectors_rows"]

    m.secrets_allow("ops/billing.md")
    assert found(m)[:1] == ["ops/billing.md"]
    (root / ALLOW).unlink()  # ... or deletes the file
    m.sync()
    assert "ops/billing.md" not in found(m)
    assert not [f for f in m.doctor().findings if f.kind == "vectors_rows"]


@pytest.mark.parametrize("bad", [{"salt": "zz"}, {"salt": 5}, {"notes": {"ops/billing.md": "oops"}},
                                 {"notes": {"ops/billing.md": [1, 2]}}])
def test_a_misshapen_allow_file_allows_nothing_and_says_so(tmp_path, embedder, bad):
    from memstrata.errors import MemstrataError

    root, m = adopted_notes(tmp_path, embedder)
    (root / ALLOW).write_text(json.dumps({"salt": "00ff", "notes": {}, **bad}))
    said = m.sync()  # was: internal error (ValueError, TypeError, AttributeError) from sync, doctor and allow
    assert "ops/billing.md" not in found(m)
    # sync and doctor named the note only and advised `mem secrets allow`, which refuses this file
    assert "secrets-allowed.json: not a list of allowed values" in said["allow_file"]
    (root / "ops" / "billing.md").write_text(NOTES["ops/billing.md"] + "\nEdited.\n")
    assert "secrets-allowed.json: not a list of allowed values" in m.sync()["flagged"]["ops/billing.md"]
    findings = m.doctor().findings
    assert [f.kind for f in findings] == ["secrets_allow_file", "secret"]
    assert findings[0].path == ALLOW and "move it away" in findings[0].action
    with pytest.raises(MemstrataError, match="secrets-allowed.json: not a list of allowed values"):
        m.secrets_allow("ops/billing.md")


def test_a_pulled_allow_file_allows_nothing_here_and_this_machines_is_kept(tmp_path, embedder, monkeypatch):
    from memstrata.storage import secret_allow

    a, bare = vault_in_git(tmp_path, embedder, NOTES)
    b = Memory(tmp_path / "b", embedder=embedder)
    b.clone(str(bare), machine="desktop")
    a.secrets_allow("ops/billing.md")
    assert found(a)[:1] == ["ops/billing.md"]
    mine = (a.root / ALLOW).read_text()

    # the teammate's machine has its own key: they allow the note there and force-add their file
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "b-state"))
    b.secrets_allow("ops/billing.md")
    git(b.root, "add", "-f", ALLOW)
    git(b.root, "commit", "-q", "-m", "share my allowances")
    git(b.root, "push", "-q", "origin", "HEAD")
    monkeypatch.undo()
    monkeypatch.setenv("MEMSTRATA_SERVICE", "off")
    assert secret_allow.key_path() != tmp_path / "b-state" / "memstrata" / secret_allow.KEY_FILE

    done = a.sync_remote()
    assert (a.root / ALLOW).read_text() == mine  # this machine's allowances are not lost
    assert any("this machine's is kept" in w for w in done["warnings"])
    assert ALLOW not in git(a.root, "ls-files").split()

    # the crafted file itself, put in place by hand (or by an older release's pull): it allows nothing here
    (a.root / ALLOW).write_text(git(b.root, "show", f"HEAD:{ALLOW}"))
    flagged = a.sync().get("flagged", {})
    assert "not made on this machine" in flagged["ops/billing.md"]
    assert "ops/billing.md" not in found(a)
    assert [r["here"] for r in a.secrets_allowed()["notes"]["ops/billing.md"]] == [False]
    a.secrets_allow("ops/billing.md")  # allowing it again here makes it this machine's
    assert found(a)[:1] == ["ops/billing.md"]
    assert all(r["here"] for r in a.secrets_allowed()["notes"]["ops/billing.md"])


def test_the_machine_key_is_made_once_private_and_outside_the_tree(tmp_path, monkeypatch):
    import stat

    from memstrata.storage import secret_allow

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    key = secret_allow.machine_key()
    p = tmp_path / "state" / "memstrata" / secret_allow.KEY_FILE
    assert secret_allow.key_path() == p and len(key) == 32
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    text = p.read_text()
    (tmp_path / "link").symlink_to(tmp_path / "state")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "link"))  # another spelling: read again, not cached
    assert secret_allow.machine_key() == key and p.read_text() == text  # made once, never replaced


def test_a_token_glued_to_an_allowed_key_is_flagged(tmp_path, embedder):
    """An allowed AWS key hid a GitHub token glued to it (`AKIA..._ghp_...`): sync embedded the note."""
    aws = "AKIA" + "".join(_rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))
    token = "ghp_" + "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    root = tmp_path / "v"
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "aws.md").write_text(f"# Zebrafish reporting database\n\nKey: {aws}\n")
    m = Memory(root, embedder=embedder)
    m.init(adopt=True)
    m.secrets_allow("ops/aws.md")
    assert not m.sync().get("flagged")
    with (root / "ops" / "aws.md").open("a") as f:
        f.write(f"Deploy token: {aws}_{token}\n")
    assert "ops/aws.md" in m.sync().get("flagged", {})
    assert "ops/aws.md" not in found(m)
