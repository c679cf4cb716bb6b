"""`mem capture --hook`: what an agent's hook runs. It returns at once and never fails the agent.

Stdlib only (no typer, no engine): the payload (Claude Code's Stop, SessionEnd, PreCompact, SubagentStop
JSON on stdin with `transcript_path`, `session_id`, `cwd`; or Codex's `notify` JSON as the last
argument, with `thread-id` and `cwd`) becomes a notice in the tree's `.cache/capture/pending/`, and a
detached process (`python -m memstrata.capture.drain`) captures it: through the warm service when one
runs, else in that process. Exit 0 whatever happens; nothing on stdout unless `--json` asks.
"""
from __future__ import annotations

import json
import os
import sys
import time

PAYLOAD_MAX_BYTES = 1024 * 1024
STDIN_WAIT = 0.5   # seconds the hook waits for its payload on stdin (an agent writes it at once)
LOG = "drain.log"
LOG_MAX_BYTES = 1024 * 1024


def run(args: list[str]) -> int:
    """The hook, from the CLI's arguments (`capture --hook [PAYLOAD] [--root R] [--json]`)."""
    from memstrata.capture import spool
    from memstrata.service import client

    answer: dict = {"queued": False}
    try:
        root = client.resolve_root(args)
        payload = _payload(args)
        notice = notice_of(payload)
        if notice is None:
            answer["reason"] = "the payload names no transcript (transcript_path) nor Codex thread (thread-id)"
        elif not client.is_tree(root):
            answer["reason"] = f"{root} is not a memory tree"
        else:
            spool.put(root, notice)
            # a capture running takes the notice (it looks for notices again once it lets go of the lock)
            running = not spool.CaptureLock(root).acquire(release=True)
            answer.update(queued=True, running=running, pid=None if running else spawn_drain(root))
    except Exception as exc:  # noqa: BLE001 - a hook never fails the agent
        answer["error"] = f"{type(exc).__name__}: {exc}"[:300]
    if "--json" in args:
        try:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
    return 0


def _payload(args: list[str]) -> dict | None:
    """The hook's JSON: an argument that is one (Codex's notify), else stdin (Claude Code's hooks)."""
    for arg in reversed(args):
        if arg.lstrip().startswith("{"):
            return _as_dict(arg.encode("utf-8", "surrogatepass"))
    try:
        fd = sys.stdin.fileno()
        if os.isatty(fd):
            return None
    except (AttributeError, OSError, ValueError):
        return None
    import select

    data, deadline = b"", time.monotonic() + STDIN_WAIT
    while len(data) <= PAYLOAD_MAX_BYTES:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    return _as_dict(data)


def _as_dict(data: bytes) -> dict | None:
    if not data or len(data) > PAYLOAD_MAX_BYTES:
        return None
    try:
        value = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def notice_of(payload: dict | None) -> dict | None:
    """The notice a payload gives: the transcript to capture (and its session and cwd), or None."""
    if not isinstance(payload, dict):
        return None
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    path = payload.get("transcript_path")
    if isinstance(path, str) and path.strip():
        path = os.path.expanduser(path.strip())
        if not os.path.isabs(path) and cwd:
            path = os.path.join(cwd, path)
        notice = {"path": os.path.abspath(path), "cwd": cwd,
                  "event": payload.get("hook_event_name") if isinstance(payload.get("hook_event_name"), str) else None}
        session = payload.get("session_id")
        if isinstance(session, str) and session.strip():
            notice["session"] = session.strip()
        return notice
    thread = payload.get("thread-id", payload.get("thread_id"))
    if isinstance(thread, str) and thread.strip():
        return {"codex_thread": thread.strip(), "cwd": cwd, "agent": "codex",
                "event": payload.get("type") if isinstance(payload.get("type"), str) else None}
    return None


def spawn_drain(root: str) -> int | None:
    """Start the capture of the pending notices in a process of its own (own session, no terminal,
    none of the hook's descriptors: the agent waits for the hook's output to close, never for it)."""
    import subprocess

    from memstrata.capture import spool

    log = os.path.join(spool.folder(root), LOG)
    try:
        if os.path.getsize(log) > LOG_MAX_BYTES:
            os.unlink(log)
    except OSError:
        pass
    try:
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    except OSError:
        out = subprocess.DEVNULL
    try:
        child = subprocess.Popen([sys.executable, "-m", "memstrata.capture.drain", "--root", root],
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=out, close_fds=True,
                                 start_new_session=True, cwd="/")
        return child.pid
    finally:
        if out != subprocess.DEVNULL:
            os.close(out)
