"""Where the agents keep their transcripts on this machine: Codex CLI ($CODEX_HOME, else ~/.codex) and
Claude Code ($CLAUDE_CONFIG_DIR, else ~/.claude)."""
from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from memstrata.capture import claude, codex
from memstrata.errors import InvalidInput

AGENT_FOLDERS = ("codex", "claude")


def codex_home() -> Path:
    return Path(os.path.expanduser(os.environ.get("CODEX_HOME") or "~/.codex"))


def claude_home() -> Path:
    return Path(os.path.expanduser(os.environ.get("CLAUDE_CONFIG_DIR") or "~/.claude"))


def agent_files(which: str, since=None) -> list[tuple[Path, str]]:
    """The transcripts of `which` (codex or claude) changed on or after `since` (a date or datetime,
    or None for all), oldest first, each with its agent."""
    from memstrata.storage.clock import parse_datetime

    if which not in AGENT_FOLDERS:
        raise InvalidInput(f"capture reads the folders of codex or claude, not {which!r}")
    cutoff = None
    if since is not None:
        moment = parse_datetime(since)
        cutoff = moment.timestamp()
    if which == "codex":
        home = codex_home()
        found = [p for folder in ("sessions", "archived_sessions") for p in (home / folder).rglob("rollout-*.jsonl")]
        agent = codex.AGENT
    else:
        home = claude_home()
        found = [p for p in (home / "projects").glob("*/*.jsonl")]
        agent = claude.AGENT
    out = []
    for path in found:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if path.is_file() and (cutoff is None or mtime >= cutoff):
            out.append((mtime, path))
    return [(p, agent) for _, p in sorted(out)]


def codex_rollout(thread: str) -> str | None:
    """The rollout file of a Codex thread (its session id ends the file name), newest day folders first."""
    if not thread or "/" in thread or "\\" in thread or "*" in thread:
        return None
    home = codex_home() / "sessions"
    today = datetime.now(timezone.utc)
    for back in range(3):  # today's folders first: a notify comes while the session runs
        day = datetime.fromtimestamp(today.timestamp() - back * 86400, tz=timezone.utc)
        for local in {day, day.astimezone()}:
            folder = home / f"{local:%Y}" / f"{local:%m}" / f"{local:%d}"
            hits = sorted(folder.glob(f"rollout-*{thread}.jsonl")) if folder.is_dir() else []
            if hits:
                return str(hits[-1])
    hits = sorted(home.rglob(f"rollout-*{thread}.jsonl"))
    return str(hits[-1]) if hits else None
