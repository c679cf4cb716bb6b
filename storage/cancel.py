"""Cooperative cancellation of a long call: the warm service marks a call cancelled when its caller goes away."""
from __future__ import annotations

import threading

_local = threading.local()


def set_event(event: threading.Event | None) -> None:
    """The event that cancels the calls of this thread (None: nothing cancels them)."""
    _local.event = event


def cancelled() -> bool:
    """True when this thread's call was cancelled (its caller went away)."""
    event = getattr(_local, "event", None)
    return event is not None and event.is_set()
