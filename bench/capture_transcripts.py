"""LoCoMo conversations as coding-agent transcripts, for the benchmarks through `mem capture`.

Each LoCoMo session becomes one transcript: a Claude Code JSONL session file (lines of `type`
user/assistant with `message`, `timestamp`, `sessionId`, `cwd`, `uuid`, `parentUuid`, `isSidechain`)
or a Codex CLI rollout (`session_meta`, `turn_context`, then per turn an `event_msg`
user_message/agent_message and its `response_item` message, as the Codex CLI writes them).
speaker_a is the user, speaker_b the assistant; each turn's text is "Speaker: text" plus the photo
caption, as bench/locomo.py imports it, at its session's date and time plus 10 seconds per turn.
`where` maps (session id, timestamp as written) back to the LoCoMo turn (dia_id), so a recall hit's
`session` and `timestamp` say which turn it is.
"""
from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

AGENTS = ("claude-code", "codex")


def _stamp(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def sessions(conv_file: Path):
    """[(session number, [(dia_id, role, text, datetime)])] of one LoCoMo conversation."""
    data = json.loads(Path(conv_file).read_text())
    first = data["session_1"][0]["speaker"]
    out, n = [], 1
    while f"session_{n}" in data:
        start = datetime.strptime(data[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
        turns = []
        for i, turn in enumerate(data[f"session_{n}"]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f"\n[shared a photo: {turn['blip_caption']}]"
            role = "user" if turn["speaker"] == first else "assistant"
            turns.append((turn["dia_id"], role, text, start + timedelta(seconds=10 * i)))
        out.append((n, turns))
        n += 1
    return out


def session_id(conv: str, agent: str, n: int) -> str:
    """A stable session id per (conversation, agent, session): reruns write the same transcripts."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo/{conv}/{agent}/{n}"))


def claude_code(conv: str, n: int, turns, cwd: str) -> tuple[str, list[str], dict]:
    """(session id, JSONL lines, {(session, timestamp): dia_id})."""
    sid, lines, where, parent = session_id(conv, "claude-code", n), [], {}, None
    for k, (dia, role, text, at) in enumerate(turns):
        line_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{sid}/{k}"))
        stamp = _stamp(at)
        base = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": sid,
                "version": "1.0.0", "gitBranch": "", "type": role, "uuid": line_id, "timestamp": stamp}
        if role == "user":
            base["message"] = {"role": "user", "content": text}
        else:
            base["requestId"] = f"req_{line_id[:12]}"
            base["message"] = {"id": f"msg_{line_id[:12]}", "type": "message", "role": "assistant",
                               "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}],
                               "stop_reason": "end_turn", "stop_sequence": None}
        lines.append(json.dumps(base, ensure_ascii=False))
        where[(sid, stamp)] = dia
        parent = line_id
    return sid, lines, where


def codex(conv: str, n: int, turns, cwd: str) -> tuple[str, list[str], dict]:
    """(session id, rollout lines, {(session, timestamp): dia_id}): a turn's event_msg and its
    response_item (1 ms later) both map to it."""
    sid = session_id(conv, "codex", n)
    start = turns[0][3] - timedelta(seconds=2)
    lines = [json.dumps({"timestamp": _stamp(start), "type": "session_meta",
                         "payload": {"id": sid, "timestamp": _stamp(start), "cwd": cwd, "originator": "codex_cli_rs",
                                     "cli_version": "0.46.0", "source": "cli", "model_provider": "openai"}}),
             json.dumps({"timestamp": _stamp(start + timedelta(seconds=1)), "type": "turn_context",
                         "payload": {"cwd": cwd, "model": "gpt-5-codex", "approval_policy": "on-request",
                                     "sandbox_policy": {"type": "workspace-write"}}})]
    where = {}
    for dia, role, text, at in turns:
        event = {"type": "user_message", "message": text} if role == "user" else \
            {"type": "agent_message", "message": text}
        kind = "input_text" if role == "user" else "output_text"
        item = {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
        later = at + timedelta(milliseconds=1)
        lines.append(json.dumps({"timestamp": _stamp(at), "type": "event_msg", "payload": event}, ensure_ascii=False))
        lines.append(json.dumps({"timestamp": _stamp(later), "type": "response_item", "payload": item},
                                ensure_ascii=False))
        where[(sid, _stamp(at))] = where[(sid, _stamp(later))] = dia
    return sid, lines, where


def write(conv_file: Path, agent: str, folder: Path) -> tuple[list[tuple[str, Path, str]], dict]:
    """Write one conversation's transcripts for `agent` under `folder` (a project folder `locomo-<conv>`
    as their cwd). Returns ([(session id, transcript path, cwd)], {(session, timestamp): dia_id})."""
    conv = Path(conv_file).stem
    cwd = str(folder / f"locomo-{conv}")
    Path(cwd).mkdir(parents=True, exist_ok=True)
    out, where = [], {}
    for n, turns in sessions(conv_file):
        if agent == "claude-code":
            sid, lines, mapping = claude_code(conv, n, turns, cwd)
            path = folder / "claude" / "projects" / f"-locomo-{conv}" / f"{sid}.jsonl"
        else:
            sid, lines, mapping = codex(conv, n, turns, cwd)
            day = turns[0][3]
            path = (folder / "codex" / "sessions" / day.strftime("%Y/%m/%d")
                    / f"rollout-{day.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        out.append((sid, path, cwd))
        where.update(mapping)
    return out, where


def hook_payload(sid: str, path: Path, cwd: str) -> str:
    """The stdin of Claude Code's Stop hook (documented fields) for one transcript."""
    return json.dumps({"session_id": sid, "transcript_path": str(path), "cwd": cwd, "hook_event_name": "Stop",
                       "stop_hook_active": False})


def wait_drained(root: Path, timeout: float = 3600.0) -> None:
    """Until no hook's notice is pending and no capture holds the tree's capture lock."""
    from memstrata.capture import spool

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lock = spool.CaptureLock(root)
        if not spool.pending(root) and lock.acquire():
            lock.release()
            if not spool.pending(root):
                return
        time.sleep(0.5)
    raise SystemExit(f"the captures of {root} did not finish in {timeout:.0f} s")
