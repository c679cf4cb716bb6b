"""The engine's exceptions: one base class, a few kinds, each mapped to an exit code."""
from __future__ import annotations


class MemstrataError(Exception):
    """Base class of every error the engine raises on purpose (one line, no traceback)."""

    exit_code = 1
    kind = "error"

    def __init__(self, message: str, **details):
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict:
        return {"error": self.kind, "message": self.message, **self.details}


class NotFound(MemstrataError):
    exit_code = 3
    kind = "not_found"


class InvalidInput(MemstrataError):
    exit_code = 2
    kind = "invalid_input"


class SecretDetected(MemstrataError):
    exit_code = 5
    kind = "secret_detected"


class Locked(MemstrataError):
    exit_code = 6
    kind = "locked"


class ChangedOnDisk(Locked):
    """An entry file changed on disk between the engine's read and its write (an editor saving it):
    nothing was written over it. `paths`: the files left as they were (relative to the root)."""

    kind = "changed_on_disk"

    def __init__(self, paths, what: str = "the change", reading: bool = False):
        paths = list(paths)
        shown = ", ".join(paths[:3]) + (f" (and {len(paths) - 3} more)" if len(paths) > 3 else "")
        if reading:  # the file was half-saved when read: it held no entry then
            text = f"{shown} changed on disk as it was read (an editor saving it?) and held no entry then: nothing done; try again"
        else:
            text = (f"{shown} changed on disk while {what} was being written (an editor saving it?): "
                    f"left as saved there, nothing written over it; try again")
        super().__init__(text, paths=paths)
        self.paths = paths


class IndexUnavailable(MemstrataError):
    exit_code = 7
    kind = "index_unavailable"


class CorruptEntry(MemstrataError):
    exit_code = 8
    kind = "corrupt_entry"


class Interrupted(MemstrataError):
    """A long call stopped by its caller (Ctrl-C, or the caller of a service call gone) at a safe point."""

    exit_code = 130
    kind = "interrupted"
