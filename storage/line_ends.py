"""A file's line-end style: which it is, and a new text written in it."""
from __future__ import annotations

from pathlib import Path

from memstrata.storage.entry_files import ENTRY_FILE_MAX_BYTES
from memstrata.storage.safe_io import read_regular_bytes


def line_end_of(text: str) -> str:
    """"\\r\\n" when every line of `text` ends so (a file written on Windows), else "\\n"."""
    breaks = text.count("\n")
    return "\r\n" if breaks and text.count("\r\n") == breaks else "\n"


def with_line_ends(text: str, line_end: str) -> str:
    """A text with LF line ends (every body given to a write is: engine/inputs.clean_body) with
    `line_end` instead, so a new body in a CRLF note does not leave the file with mixed ends."""
    return text if line_end == "\n" else text.replace("\n", line_end)


def file_line_end(path: Path) -> str:
    """The line-end style of the file at `path` ("\\n" when it cannot be read: a new file's)."""
    try:
        raw = read_regular_bytes(path, ENTRY_FILE_MAX_BYTES)
    except OSError:
        return "\n"
    return line_end_of(raw.decode("utf-8", "replace"))
