"""What every reader returns (turns, session facts, lines skipped by reason) and the text rules they share."""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field

USER, ASSISTANT = "user", "assistant"
TOOL_ARG_CHARS = 120        # a tool call's file or command, cut to this many characters
TOOL_MARK = "→"             # a tool call's line: `→ Tool: argument`

# Skipped-line reasons (the report counts lines per reason).
MALFORMED = "malformed"            # not JSON, or not an object
NOT_A_TURN = "not a turn"          # a known line type that holds no prompt or prose (summary, system, token counts ...)
UNKNOWN = "unknown type"           # a line type this reader does not know (a newer agent's): skipped, never fatal
SIDECHAIN = "sidechain"            # a sub-agent's chatter
META = "meta"                      # injected by the agent (isMeta, caveats, environment context)
COMPACTION = "compaction summary"  # the agent's own summary after a compaction
TOOL_OUTPUT = "tool output"        # a tool's result
COMMAND_OUTPUT = "command output"  # a local command's stdout/stderr
REASONING = "thinking"             # thinking / reasoning blocks
NO_TIME = "no timestamp"
NO_TEXT = "no text"
DUPLICATE = "duplicate"            # the same message written twice (a repeated line, Codex's event and item copies)
INTERRUPTION = "interruption"      # "[Request interrupted by user]"
SYNTHETIC = "synthetic"            # messages the agent made up itself (API errors)


@dataclass
class Turn:
    """One turn as read: a user prompt, or the assistant's prose and tool lines of one reply."""

    role: str
    timestamp: str          # exactly as the transcript wrote it
    text: str
    offset: int = 0         # byte offset of the line that began it (where a later read resumes)
    session: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.timestamp, self.role)


@dataclass
class ReadResult:
    """What a reader made of some lines of one transcript."""

    agent: str                               # claude-code | codex | jsonl
    turns: list[Turn] = field(default_factory=list)
    session: str | None = None               # the transcript's session id (the first one seen)
    cwd: str | None = None
    started: str | None = None               # the session's own start time (Codex session_meta), verbatim
    parent: str | None = None                # a sub-agent's parent session: the file is not captured
    skipped: Counter = field(default_factory=Counter)
    lines: int = 0
    hints: dict = field(default_factory=dict)  # what a later read of the same file must know (Codex's event mode)

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1


def parse_lines(lines, result: ReadResult):
    """(offset, object) for each line that is a JSON object, as the lines come (a transcript of many
    megabytes is never held parsed); the others are counted as malformed.
    `lines`: (byte offset, bytes or str) pairs of whole lines."""
    for offset, raw in lines:
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", "replace")
        raw = raw.strip()
        if not raw:
            continue
        result.lines += 1
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            result.skip(MALFORMED)
            continue
        if not isinstance(obj, dict):
            result.skip(MALFORMED)
            continue
        yield offset, obj


class TurnBuilder:
    """Assembles turns: a user prompt is a turn; the assistant's prose and tool lines up to the next
    prompt are one turn, with the timestamp of its first line."""

    def __init__(self, result: ReadResult):
        self.result = result
        self.current: Turn | None = None
        self._pieces: list[tuple[str, str]] = []

    def user(self, text: str, timestamp: str, offset: int, session: str | None = None) -> None:
        self.close()
        self.result.turns.append(Turn(USER, timestamp, clean_text(text), offset, session))

    def assistant(self, pieces: list[tuple[str, str]], timestamp: str, offset: int, session: str | None = None) -> None:
        """`pieces`: ("text", prose) and ("tool", line) in the order the agent wrote them."""
        if not pieces:
            return
        if self.current is None:
            self.current = Turn(ASSISTANT, timestamp, "", offset, session)
        self._pieces.extend(pieces)

    def close(self) -> None:
        if self.current is not None:
            self.current.text = clean_text(join_pieces(self._pieces))
            if self.current.text:
                self.result.turns.append(self.current)
        self.current, self._pieces = None, []


def join_pieces(pieces: list[tuple[str, str]]) -> str:
    """Prose paragraphs apart by a blank line; a tool line right under what came before it."""
    out: list[str] = []
    for kind, text in pieces:
        text = text.strip("\n")
        if not text.strip():
            continue
        if out:
            out.append("\n" if kind == "tool" else "\n\n")
        out.append(text)
    return "".join(out).strip()


# -- text rules ---------------------------------------------------------------------------------
_DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]{16,}")
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{200,}={0,2}(?![A-Za-z0-9+/=])")


def without_base64(text: str) -> str:
    """`text` with data URIs and long base64 runs replaced by a marker (never stored)."""
    if len(text) < 200 and "base64," not in text:
        return text
    text = _DATA_URI.sub("[base64 data]", text)
    return _BASE64_RUN.sub(lambda m: m.group(0) if _looks_like_words(m.group(0)) else "[base64 data]", text)


def _looks_like_words(run: str) -> bool:
    """A long run of letters only (a URL path, a hash-free identifier) is not base64: base64 mixes cases and digits."""
    return not (any(c.isdigit() for c in run) and any(c.isupper() for c in run) and any(c.islower() for c in run))


def cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was left out (0: no limit)."""
    if limit <= 0 or len(text) <= limit:
        return text
    return text[:limit].rstrip() + f"\n[... {len(text) - limit} characters not kept]"


def one_line(text: str, limit: int = TOOL_ARG_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def tool_line(name: str, argument: str | None) -> str:
    """`→ Tool: argument` (the argument on one line, cut to TOOL_ARG_CHARS)."""
    from memstrata.storage.secrets import redact

    name = one_line(name or "tool", 60)
    # redacted before it is cut: a credential cut in half is no longer found whole
    argument = one_line(redact(str(argument)[:4 * TOOL_ARG_CHARS + 4096])) if argument else ""
    return f"{TOOL_MARK} {name}: {argument}" if argument else f"{TOOL_MARK} {name}"


# The input keys that say best what a tool call did, in order of preference.
_ARG_KEYS = ("file_path", "notebook_path", "path", "command", "cmd", "pattern", "url", "query", "description",
             "prompt", "skill", "subject", "task_name", "message")


def tool_argument(arguments) -> str | None:
    """The file or command of a tool call's input (a dict, or a JSON string of one)."""
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except (ValueError, RecursionError):
            return arguments
        arguments = parsed
    if isinstance(arguments, dict):
        for key in _ARG_KEYS:
            value = arguments.get(key)
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                return " ".join(value)
            if isinstance(value, str) and value.strip():
                return value
        for value in arguments.values():
            if isinstance(value, str) and value.strip():
                return value
        return None
    if isinstance(arguments, list) and arguments and all(isinstance(v, str) for v in arguments):
        return " ".join(arguments)
    return None


# A timestamp as transcripts write it (ISO 8601, to the millisecond): it becomes a turn's heading, so
# a value with a space or a line break in it (a forged heading) is none.
_TIMESTAMP = re.compile(r"[0-9][0-9A-Za-z:.+\-]{0,63}")


def timestamp_of(value) -> str | None:
    """A line's timestamp as written (a string); None when missing, not a string or not one word of
    the characters an ISO 8601 time holds."""
    if isinstance(value, str) and _TIMESTAMP.fullmatch(value.strip()):
        return value.strip()
    return None


# What no turn keeps: NUL and the other control characters but tab and line feed (a NUL made the
# whole capture fail; a lone carriage return could make a line read as a turn's heading), and
# terminal colour sequences.
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f]")


def clean_text(text: str) -> str:
    """A turn's text with line ends made `\n` and control characters dropped."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text)
