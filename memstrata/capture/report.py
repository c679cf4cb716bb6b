"""What a capture reports: transcripts read, sessions and turns captured, lines skipped by reason."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class CaptureReport:
    files: int = 0                 # transcripts read (in part: from where the last capture stopped)
    unchanged: int = 0             # transcripts not read: as the last capture left them
    sessions: int = 0              # sessions that got new turns (or a new session id)
    new_sessions: int = 0
    turns: int = 0                 # turns written for the first time
    extended: int = 0              # turns that had grown since (a reply captured while being written)
    lines: int = 0                 # lines read
    skipped: Counter = field(default_factory=Counter)   # lines not kept, by reason
    skipped_files: list = field(default_factory=list)   # {"file", "reason"}
    errors: list = field(default_factory=list)          # {"file", "error"}
    entries: list = field(default_factory=list)         # {"id", "path", "session", "turns"}
    embedded: int = 0
    reindexed: int = 0
    used: list = field(default_factory=list)           # {id, title, promoted_from}: memories the replies used
    uses_written: int = 0          # of `used`, those the status's recent uses hold already
    warnings: list = field(default_factory=list)
    busy: bool = False             # a drain that found another capture running (that one takes the notices)
    seconds: float = 0.0
    temps_cleaned: bool = False

    def read(self, read) -> None:
        self.files += 1
        self.lines += read.result.lines
        self.skipped.update(read.result.skipped)

    def planned(self, change) -> None:
        if change.changes:
            self.sessions += 1
            self.new_sessions += int(change.created)
        self.turns += change.added
        self.extended += change.extended

    def saved(self, changes: list, counts: dict, index_error: str | None) -> None:
        self.embedded += int(counts.get("embedded", 0))
        for entry, _ in changes:
            self.entries.append({"id": entry.id, "path": entry.path, "session": entry.extra.get("session"),
                                 "agent": entry.agent, "turns": entry.extra.get("turns")})
        if counts.get("skipped") and not index_error:
            self._warn("vector index not updated (the model cannot load); recall will embed them on its next sync")
        if index_error:
            self._warn(index_error)

    def file_skipped(self, path: str, reason: str) -> None:
        self.skipped_files.append({"file": path, "reason": reason})

    def error(self, where: str, message: str) -> None:
        self.errors.append({"file": where, "error": message})

    def _warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def finish(self) -> dict:
        return {"files": self.files, "unchanged": self.unchanged, "sessions": self.sessions,
                "new_sessions": self.new_sessions, "turns": self.turns, "extended": self.extended,
                "lines": self.lines, "skipped": dict(sorted(self.skipped.items())),
                "skipped_files": self.skipped_files, "errors": self.errors, "entries": self.entries,
                "embedded": self.embedded, "reindexed": self.reindexed, "used": self.used, "warnings": self.warnings,
                "busy": self.busy, "seconds": round(self.seconds, 3)}
