"""`mem secrets allow|list|revoke` as a user runs them on an adopted vault: a flagged note is allowed, found
by recall, and a credential added to it later is flagged again; the allow list holds no value."""
import json
import os
import random
import string
import subprocess
import sys

import pytest

_rng = random.Random(99)
# assembled at run time: this file holds nothing a scanner would flag
PASSWORD = "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(14))
OTHER = "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(14))
NOTE = ("# Billing database\n\nThe billing service talks to the zebrafish reporting database:\n\n"
        f"    postgres://billing:{PASSWORD}@reports.example.com:5432/billing\n")


def run(root, *args):
    env = {**os.environ, "MEMSTRATA_HOME": str(root)}
    return subprocess.run([sys.executable, "-m", "memstrata.cli.app", *args], capture_output=True, text=True,
                          env=env, timeout=180)


def js(proc):
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def found(root, query="zebrafish reporting database") -> list[str]:
    return [r["path"] for r in js(run(root, "recall", query, "--json"))["results"]]


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    root = tmp_path_factory.mktemp("secrets") / "vault"
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "billing.md").write_text(NOTE)
    (root / "plain.md").write_text("# Plain\n\nNothing to see: a note about tea.\n")
    done = run(root, "init", "--adopt")
    assert done.returncode == 0, done.stderr
    assert "`mem secrets allow ops/billing.md`" in done.stderr  # the warning names the command
    return root


def test_allow_list_new_secret_and_revoke(vault):
    root = vault
    doctor = run(root, "doctor", "--json")
    assert doctor.returncode == 9 and "mem secrets allow" in doctor.stdout
    assert "ops/billing.md" not in found(root)

    data = js(run(root, "secrets", "allow", "ops/billing.md", "--json"))
    assert data["path"] == "ops/billing.md" and data["indexed"] and [a["kind"] for a in data["allowed"]] == [
        "connection string with password"]
    stored = (root / ".memstrata" / "secrets-allowed.json").read_text()
    assert PASSWORD not in stored and "fingerprint" in stored   # a fingerprint, never the value
    assert found(root)[0] == "ops/billing.md"
    assert run(root, "doctor", "--json").returncode == 0
    # the engine's own writes to the note pass the guard for the allowed value too
    assert run(root, "update", "ops/billing.md", "--tags", "db").returncode == 0
    listed = js(run(root, "secrets", "list", "--json"))
    assert listed["count"] == 1 and list(listed["notes"]) == ["ops/billing.md"]

    # a new credential in the same note is caught: the note leaves the index again
    with open(root / "ops" / "billing.md", "a") as f:
        f.write(f"\nThe replica: postgres://billing:{OTHER}@replica.example.com/billing\n")
    synced = js(run(root, "sync", "--json"))
    assert "ops/billing.md" in synced.get("flagged", {}) and "line 7" in synced["flagged"]["ops/billing.md"]
    assert run(root, "doctor", "--json").returncode == 9
    assert "ops/billing.md" not in found(root)

    js(run(root, "secrets", "allow", "ops/billing.md", "--json"))
    assert found(root)[0] == "ops/billing.md"
    revoked = js(run(root, "secrets", "revoke", "ops/billing.md", "--json"))
    # three values: the two in the note, and the first again in the version the tag update kept
    assert revoked["revoked"] == 3 and revoked["unindexed"]
    assert "ops/billing.md" not in found(root)
    assert js(run(root, "secrets", "list", "--json"))["count"] == 0


def test_errors_are_one_line(vault):
    for args in (["secrets", "allow", "plain.md"], ["secrets", "revoke", "plain.md"], ["secrets", "allow", "no.md"]):
        done = run(vault, *args)
        assert done.returncode != 0 and done.stderr.startswith("mem: error: ") and done.stderr.count("\n") == 1, args


def test_a_misshapen_allow_file_is_one_line_everywhere(vault):
    """A hand edit of the wrong shape gave `internal error: ValueError` (TypeError, AttributeError)."""
    allow = vault / ".memstrata" / "secrets-allowed.json"
    kept = allow.read_text()
    try:
        for bad in ({"salt": "zz", "notes": {}}, {"salt": 5, "notes": {}}, {"salt": None, "notes": {"a.md": "oops"}},
                    {"salt": None, "notes": {"ops/billing.md": [1, 2]}}):
            allow.write_text(json.dumps(bad))
            assert "ops/billing.md" not in found(vault)
            for args in (["sync"], ["doctor"], ["secrets", "list"]):
                done = run(vault, *args)
                assert "internal error" not in done.stderr + done.stdout, (bad, args)
            done = run(vault, "secrets", "allow", "ops/billing.md")
            assert done.returncode != 0 and done.stderr.count("\n") == 1 and done.stderr.startswith(
                "mem: error: .memstrata/secrets-allowed.json: not a list of allowed values"), (bad, done.stderr)
    finally:
        allow.write_text(kept)


def test_help_has_an_example():
    for sub in ("allow", "list", "revoke"):
        done = run("/nonexistent", "secrets", sub, "--help")
        assert done.returncode == 0 and "Example: mem secrets " + sub in done.stdout


def test_recall_by_grep_redacts_a_flagged_title(tmp_path):
    """`mem recall --strategy grep` printed a flagged note's title with its token (MCP recall and the hook
    redacted it): grep reads the files themselves."""
    token = "ghp_" + "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    root = tmp_path / "vault"
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "deploy.md").write_text(f"---\ntags: [{token}]\n---\n# Deploy notes billing {token}\n\n"
                                            "How the billing service deploys.\n")
    assert run(root, "init", "--adopt").returncode == 0
    plain = run(root, "recall", "deploy notes billing", "--strategy", "grep")
    answer = run(root, "recall", "deploy notes billing", "--strategy", "grep", "--json")
    assert plain.returncode == 0 and "[redacted]" in plain.stdout and token not in plain.stdout + plain.stderr
    assert js(answer)["results"][0]["path"] == "ops/deploy.md" and token not in answer.stdout
    listed = [run(root, "list"), run(root, "list", "--json")]  # the title and its tag showed it too
    assert all(p.returncode == 0 and token not in p.stdout.replace("\n", "").replace("│", "").replace(" ", "")
               for p in listed)
    assert js(listed[1])["entries"][0]["tags"] == ["[redacted]"]
