"""Reading a transcript file from where the last capture stopped: whole lines only, the start of the
last turn again (a reply may still be growing), from the first line when the file was rewritten."""
from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
from dataclasses import dataclass, field

from memstrata.capture import codex, detect, model, plain
from memstrata.capture.state import HEAD_BYTES, head_hash

BLOCK = 1 << 20
_UUID_TAIL = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")
_SESSION_STEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{7,127}")


FINISHED_SECONDS = 60.0  # a last line without a newline, in a file quiet this long, is whole: the file is done


class Lines:
    """(byte offset, line) of every whole line of a file from `start`; `end` is where the last whole
    line ends once iterated. A last line with no newline yet is left for later while it may still be
    being written; once the file has been quiet FINISHED_SECONDS and that line is a whole JSON object,
    it is a line too (a transcript whose writer ended without a final newline never grows again)."""

    def __init__(self, path: str, start: int):
        self.path, self.start, self.end = path, start, start

    def __iter__(self):
        with open_regular(self.path) as handle:
            handle.seek(self.start)
            offset, rest = self.start, b""
            while True:
                block = handle.read(BLOCK)
                if not block:
                    break
                data = rest + block
                parts = data.split(b"\n")
                rest = parts.pop()
                for line in parts:
                    yield offset, line
                    offset += len(line) + 1
                    self.end = offset
            if rest.strip() and _finished(handle.fileno()):  # the file is done: its last line is whole, or never
                if _whole_json(rest):
                    yield offset, rest
                self.end = offset + len(rest)  # (read once: a line that is no JSON is not read again)


def _finished(fd: int) -> bool:
    return time.time() - os.fstat(fd).st_mtime >= FINISHED_SECONDS


def _whole_json(line: bytes) -> bool:
    if not line.lstrip().startswith(b"{"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def open_regular(path: str):
    """The file at `path` opened for reading, OSError unless it is a regular file: a FIFO, /dev/zero or
    a link to one is never read (it would block, or never end). O_NONBLOCK: opening a FIFO never waits."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@dataclass
class FileRead:
    """What one read of a transcript found."""

    path: str
    agent: str
    result: model.ReadResult
    full: bool                       # read from the first line (a first read, a lost cache, a rewrite)
    record: dict                     # the cache record, stored once the turns are saved
    groups: dict = field(default_factory=dict)   # session id -> its turns, in order


def unchanged(path: str, cached: dict | None) -> bool:
    """The file is as the last capture left it (size, time and inode): nothing to read."""
    if not cached:
        return False
    try:
        st = os.stat(path)
    except OSError:
        return False
    if isinstance(cached.get("end"), int) and cached["end"] < st.st_size and \
            time.time() - st.st_mtime >= FINISHED_SECONDS:
        return False  # a last line was left unfinished: now the file is done, it is read
    return (cached.get("size"), cached.get("mtime_ns"), cached.get("ino")) == (st.st_size, st.st_mtime_ns, st.st_ino)


def read_file(path: str, cached: dict | None, agent: str | None = None, session: str | None = None,
              cwd: str | None = None) -> FileRead:
    """Read what is new in the transcript at `path` (OSError when it cannot be read)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", path)
    start = _resume_at(path, cached, st.st_size)
    record = dict(cached or {}) if start else {}
    lines = Lines(path, start)
    if not record.get("agent"):
        head = Lines(path, 0)
        first = []
        for item in head:
            first.append(item)
            if len(first) >= detect.LOOK_AT:
                break
        record["agent"] = agent if agent in detect.READERS else detect.detect(first, os.path.basename(path))
        if record["agent"] is None:
            raise ValueError("no line of a Claude Code, Codex or plain JSONL transcript")
    agent = record["agent"]
    hints = dict(record.get("hints") or {})
    if agent == codex.AGENT and not hints.get(codex.EVENTS):
        hints[codex.EVENTS] = _has_events(path)  # (looked for again while none: a file just begun has none yet)
    if agent == plain.AGENT:
        hints["session"] = session or _stem(path)
    result = detect.READERS[agent](lines, hints)
    record["hints"] = {k: v for k, v in result.hints.items() if k != "session"} if agent != plain.AGENT else {}
    record.setdefault("session", _file_session(path, agent, session, result))
    record.setdefault("cwd", result.cwd or cwd)
    if result.parent:
        record["parent"] = result.parent
    if result.started and agent == codex.AGENT:
        record.setdefault("started", result.started)
    read = FileRead(path, agent, result, start == 0, record)
    for turn in result.turns:
        key = turn.session if agent == plain.AGENT and turn.session else record["session"]
        read.groups.setdefault(key, []).append(turn)
    # where the next read starts: the last turn's first line (its reply may still grow), else what was read
    resume = result.turns[-1].offset if result.turns and agent != plain.AGENT else lines.end
    if not result.turns and start:
        resume = min(start, lines.end)
    record.update(offset=resume, end=lines.end, size=st.st_size, mtime_ns=st.st_mtime_ns, ino=st.st_ino,
                  sessions=sorted(set(record.get("sessions") or []) | set(read.groups)))
    if start == 0 or not record.get("head"):
        record["head_len"] = min(HEAD_BYTES, lines.end)
        record["head"] = head_hash(path, record["head_len"])
    return read


def _resume_at(path: str, cached: dict | None, size: int) -> int:
    """Where to read from: the cached resume offset when the file still starts as it did, else 0."""
    if not cached or not isinstance(cached.get("offset"), int) or not cached.get("head"):
        return 0
    length = int(cached.get("head_len") or 0)
    if size < int(cached.get("end") or 0) or size < length or length <= 0:
        return 0  # shorter than what was read: rewritten
    try:
        if head_hash(path, length) != cached["head"]:
            return 0
    except OSError:
        return 0
    return max(0, min(int(cached["offset"]), size))


def _has_events(path: str) -> bool:
    """Whether a rollout carries its messages as events (then its message items are their copies)."""
    for _, line in Lines(path, 0):
        if b'"event_msg"' in line and (b'"user_message"' in line or b'"agent_message"' in line):
            return True
    return False


def _stem(path: str) -> str:
    name = os.path.basename(path)
    return name[:-6] if name.endswith(".jsonl") else name


def _file_session(path: str, agent: str, hint: str | None, result: model.ReadResult) -> str:
    """The session a Claude Code or Codex transcript is: Claude Code names the file after it (a
    resumed session's file holds lines of the session it resumed: the file's own id wins), Codex
    writes it in session_meta and at the end of the file name."""
    stem = _stem(path)
    if agent == codex.AGENT:
        tail = _UUID_TAIL.search(stem)
        return result.session or (tail.group(1) if tail else None) or hint or stem
    if agent == plain.AGENT:
        return hint or stem
    if _SESSION_STEM.fullmatch(stem) and (hint is None or hint == stem):
        return stem
    return hint or result.session or stem
