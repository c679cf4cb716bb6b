"""`mem setup claude|codex`: memstrata's hooks, MCP server and skill put into an agent's own settings,
and taken out again (`uninstall`). What the agents document, and what each set-up writes, is in
claude.py and codex.py; the files memstrata ships are under plugins/ (`memstrata.plugins`).

Idempotent (a second run changes nothing), a dry run shows exactly what would change (a unified diff
per file, the commands it would run), every file it edits is backed up beside itself first
(`<name>.memstrata-<UTC time>.bak`), and only memstrata's own entries are touched.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from memstrata.errors import InvalidInput

AGENTS = ("claude", "codex")
COMMAND_TIMEOUT = 60  # seconds for one `claude mcp ...` call


def mem_program() -> list[str]:
    """How the agent should start this memstrata: the absolute path of the `mem` being run, else the
    one beside this Python, else the one on PATH, else `python -m memstrata.cli.app`."""
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) in ("mem", "memstrata") and os.path.isfile(argv0) and os.access(argv0, os.X_OK):
        return [os.path.abspath(argv0)]
    beside = Path(sys.executable).parent / "mem"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("mem")
    return [os.path.abspath(found)] if found else [sys.executable, "-m", "memstrata.cli.app"]


def setup(agent: str, *, root: str | None = None, uninstall: bool = False, dry_run: bool = False,
          environ: dict | None = None, program: list[str] | None = None) -> dict:
    """Install (or with `uninstall`, remove) memstrata for `agent` ("claude" or "codex").

    `root`: the memory tree the hooks and the MCP server use, written into them as `--root` (default:
    $MEMSTRATA_HOME when set: an agent started from a desktop launcher may not see it; else none, and
    they use ~/memory). `environ`: HOME, CLAUDE_CONFIG_DIR, CODEX_HOME, MEMSTRATA_HOME, PATH (default:
    this process's). Returns the report: each file's action, backup and diff, the
    commands run (or that would run), notes."""
    from memstrata.integrations import changes, claude, codex

    if agent not in AGENTS:
        raise InvalidInput(f"unknown agent {agent!r}: choose one of {', '.join(AGENTS)}")
    environ = dict(os.environ if environ is None else environ)
    program = list(program or mem_program())
    root = root or environ.get("MEMSTRATA_HOME") or None
    root = os.path.abspath(os.path.expanduser(root)) if root else None
    plan = (claude if agent == "claude" else codex).plan(environ, program, root, uninstall)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    rows = ([{"path": str(c.path), "action": c.action, "backup": None} for c in plan.changes] if dry_run
            else changes.apply(plan.changes, stamp))
    for row, change in zip(rows, plan.changes):
        row["diff"] = change.diff()
    commands = [_run(argv, environ, dry_run) for argv in plan.commands]
    notes = list(plan.notes) + ([] if uninstall else _tree_note(root, environ))
    return {"agent": agent, "uninstall": uninstall, "dry_run": dry_run, "program": program, "root": root,
            "changed": any(r["action"] != "unchanged" for r in rows) or any(c["status"] == "ran" for c in commands),
            "files": rows, "commands": commands, "notes": notes}


def _run(argv: list[str], environ: dict, dry_run: bool) -> dict:
    found = shutil.which(argv[0], path=environ.get("PATH"))
    if dry_run:
        return {"argv": argv, "status": "would run" if found else f"would not run: no `{argv[0]}` command on PATH"}
    if not found:
        return {"argv": argv, "status": f"not run: no `{argv[0]}` command on PATH; run it yourself"}
    try:
        done = subprocess.run([found, *argv[1:]], env=environ, capture_output=True, text=True, timeout=COMMAND_TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"argv": argv, "status": f"failed: {exc}"}
    if done.returncode != 0:
        reason = (done.stderr or done.stdout).strip().splitlines()
        return {"argv": argv, "status": f"failed (exit {done.returncode}): {reason[0] if reason else ''}".rstrip(": ")}
    return {"argv": argv, "status": "ran"}


def _tree_note(root: str | None, environ: dict) -> list[str]:
    """A note when the tree the hooks will use (as this environment resolves it) is not made yet."""
    from memstrata.storage.tree import is_initialised

    chosen = Path(root or os.path.join(environ.get("HOME") or "~", "memory")).expanduser()
    if not is_initialised(chosen):
        return [f"no memory tree at {chosen} yet: `mem init` makes one (until then the hooks load and capture nothing)"]
    from memstrata.storage import layout
    from memstrata.storage.config import load_settings
    from memstrata.storage.errors import MemstrataError

    try:
        capture_off = layout.is_adopted(chosen) and not load_settings(chosen).capture_in_vault
    except (MemstrataError, OSError, ValueError):  # settings that cannot be read: `mem doctor` says why
        capture_off = False
    if capture_off:
        return [f"{chosen} is an adopted vault: the hooks load memories from it but capture no session there "
                f"(`mem config set capture_in_vault true --root {chosen}` allows it, or point the hooks at a "
                "tree of its own with --root)"]
    return []
