"""Which agent wrote a transcript, from its first lines (pure), and the reader of each."""
from __future__ import annotations

import json

from memstrata.capture import claude, codex, plain

READERS = {claude.AGENT: claude.read, codex.AGENT: codex.read, plain.AGENT: plain.read}
AGENTS = tuple(READERS)
LOOK_AT = 50  # lines read to decide


def detect(lines, name: str = "") -> str | None:
    """claude-code, codex or jsonl for the (offset, line) pairs of a transcript's start; None when no
    line says (an empty file, or no line any reader knows)."""
    votes = {agent: 0 for agent in AGENTS}
    for n, (_, raw) in enumerate(lines):
        if n >= LOOK_AT:
            break
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError, TypeError):
            continue
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        if kind in ("session_meta", "turn_context", "event_msg", "response_item", "compacted") and "payload" in obj:
            votes[codex.AGENT] += 2
        elif kind in ("user", "assistant") and isinstance(obj.get("message"), (dict, str)):
            votes[claude.AGENT] += 2
        elif "sessionId" in obj or kind in ("summary", "file-history-snapshot", "queue-operation"):
            votes[claude.AGENT] += 1
        elif kind == "message" and isinstance(obj.get("content"), list) and "role" in obj:
            votes[codex.AGENT] += 2  # the legacy rollout format's bare items
        elif n == 0 and kind is None and "id" in obj and "timestamp" in obj and len(obj) <= 4:
            votes[codex.AGENT] += 1
        elif "role" in obj and any(isinstance(obj.get(k), str) for k in ("text", "content", "message")):
            votes[plain.AGENT] += 2
    best = max(votes, key=lambda a: votes[a])
    if votes[best] == 0:
        return codex.AGENT if name.startswith("rollout-") else None
    return best
