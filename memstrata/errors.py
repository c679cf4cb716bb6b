"""The engine's exceptions for the public API: defined in memstrata.storage.errors, the lowest layer."""
from __future__ import annotations

from memstrata.storage.errors import (ChangedOnDisk, CorruptEntry, IndexUnavailable, Interrupted, InvalidInput,
                                      Locked, MemstrataError, NotFound, SecretDetected)

__all__ = ["ChangedOnDisk", "CorruptEntry", "IndexUnavailable", "Interrupted", "InvalidInput", "Locked",
           "MemstrataError", "NotFound", "SecretDetected"]
